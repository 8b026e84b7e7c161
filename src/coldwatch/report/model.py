"""What a start's report shows, folded from the event stream: pure, bounded, no I/O, no clock.

A ``Collector`` takes every event a sink gets (the contract's events and the internal ``_log``,
``_disk``, ``_load`` and ``_info`` ones) and keeps only what the page draws, each part capped, so a
long start with a chatty log costs a bounded amount of memory. ``Collector.report()`` turns it
into a ``Report``: plain data the HTML writer lays out.

All text here is still raw remote text; the writer sanitises and escapes it.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field
from typing import Any

MAX_LANES = 64
MAX_POINTS = 4000
"""Per series; past it every other point is dropped (the series keeps its shape)."""
MAX_TICKS = 1500
"""Log activity marks per lane (rounded to TICK_RES seconds)."""
TICK_RES = 0.5
BANNER_LINES = 5000
"""The launch banner is looked for in this many first lines of the start."""
MAX_EXCERPTS = 40
CONTEXT = 2
"""Log lines kept before and after a phase boundary."""
FAIL_CONTEXT = 12
"""Log lines kept before the verdict of a start that did not become ready."""
SLOW_RATIO = 1.25
SLOW_MARGIN = 5.0
"""A phase is slower than its history median when it took SLOW_RATIO x the median and SLOW_MARGIN s more."""

_AVAIL = re.compile(r"\bavail[ _]mem=\s*([0-9]+(?:\.[0-9]+)?)\s*GB", re.IGNORECASE)
_RANK_GPU = re.compile(r"(?:TP|GPU|rank)\s*(\d{1,4})", re.IGNORECASE)
_BANNER = (
    (re.compile(r"\bmodel_path='([^']{1,300})'"), "model"),
    (re.compile(r"\bmodel='([^']{1,300})'"), "model"),
    (re.compile(r"\b(?:tp_size|tensor_parallel_size)=(\d{1,4})\b"), "tp"),
    (re.compile(r"\b(?:dp_size|data_parallel_size)=(\d{1,4})\b"), "dp"),
    (re.compile(r"\b(?:pp_size|pipeline_parallel_size)=(\d{1,4})\b"), "pp"),
    (re.compile(r"vLLM API server version ([\w.+-]{1,40})"), "version"),
    (re.compile(r"LLM engine \(v([\w.+-]{1,40})\)"), "version"),
    (re.compile(r"\bsglang(?: version|==|: )\s*v?([0-9][\w.+-]{0,39})", re.IGNORECASE), "version"),
)


class Banner:
    """A sink that reads the engine, its version, the model and the parallel sizes from the start's
    own launch lines (``_log`` events)."""

    takes_internal = True  # it reads the launch lines from the log tail (render.Pipeline)

    def __init__(self) -> None:
        self.found: dict[str, Any] = {}
        self.seen = 0

    def emit(self, ev: dict[str, Any]) -> None:
        if ev.get("event") == "_log":
            self.line(str(ev.get("text") or ""))

    def line(self, text: str) -> None:
        self.seen += 1
        if self.seen > BANNER_LINES:  # the launch lines are long past
            return
        found = self.found
        if "engine" not in found:
            if "ServerArgs(" in text or "sglang" in text[:200].lower():
                found["engine"] = "sglang"
            elif "vLLM" in text or "LLM engine (v" in text:
                found["engine"] = "vllm"
        if len(found) < len(_BANNER) + 1:
            for pattern, key in _BANNER:
                if key not in found:
                    m = pattern.search(text)
                    if m:
                        found[key] = int(m.group(1)) if key in ("tp", "dp", "pp") else m.group(1)

    def fields(self, res: dict[str, Any] | None = None) -> dict[str, Any]:
        """What a history record keeps: engine, version, model_path (the banner's), tp (dp, pp when logged)."""
        out = dict(self.found)
        if "model" in out:
            out["model_path"] = out.pop("model")
        if res and isinstance(res.get("engine"), str):
            out["engine"] = res["engine"]
        return out

    def close(self) -> None:
        pass


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


@dataclass(slots=True)
class Series:
    """Points (t, value) of one line on a chart, thinned past MAX_POINTS."""

    name: str
    points: list[tuple[float, float]] = field(default_factory=list)

    def add(self, t: float, v: float) -> None:
        self.points.append((t, v))
        if len(self.points) > MAX_POINTS:
            self.points = self.points[::2]


@dataclass(slots=True)
class Lane:
    """One node or rank: when it logged, which phases it was seen entering, what the stacks say."""

    node: str | None
    rank: str | None
    ticks: set[float] = field(default_factory=set)
    entries: list[tuple[float, str]] = field(default_factory=list)
    state: str | None = None
    frame: str | None = None
    culprit: bool = False

    @property
    def label(self) -> str:
        parts = [p for p in (self.node, self.rank) if p]
        return " ".join(parts) if parts else "server"


@dataclass(slots=True)
class Excerpt:
    """Log lines around a moment: a phase boundary or the failure."""

    title: str
    t: float
    lines: list[tuple[float, str, bool]]
    """(t, text, is the line the moment is about)."""


@dataclass(slots=True)
class Span:
    phase: str
    start: float
    end: float
    open: bool = False
    """The start ended (failed, stalled, out of time) while in this phase."""


@dataclass(slots=True)
class Compare:
    """One phase of this start against the history median."""

    phase: str
    seconds: float
    median: float | None
    slower: bool


@dataclass(slots=True)
class Report:
    target: str
    engine: str | None
    version: str | None
    model: str | None
    tp: int | None
    dp: int | None
    pp: int | None
    outcome: str
    exit_code: int | None
    failure_kind: str | None
    reason: str
    total: float
    started_at: str | None
    command: str
    spans: list[Span]
    bands: list[Span]
    """The current phase over time (non-overlapping): the charts' background."""
    mark: tuple[float, str] | None
    """Where the start failed, stalled or ran out of time: (t, label)."""
    lanes: list[Lane]
    gpu: list[Series]
    gpu_unit: str
    gpu_source: str
    gpu_capacity: float | None
    """The largest GPU's memory (GiB), when the samples gave it: the chart's top."""
    load_rate: Series
    disk_rate: Series
    load_verdict: str | None
    load_line: str | None
    compare: list[Compare]
    history_starts: int
    usual_total: float | None
    excerpts: list[Excerpt]
    ranks: list[dict[str, Any]]
    nodes: list[dict[str, Any]]
    warnings: list[str]
    snapshot: dict[str, Any] | None = None


class Collector:
    """Fold events (``emit``) into the report's data; ``report()`` once the result is in."""

    def __init__(self, target: str = "", command: str = "wait") -> None:
        self.target = target
        self.command = command
        self.info: dict[str, Any] = {}
        self._banner = Banner()
        self.banner = self._banner.found
        self.seq: list[tuple[float, str]] = []
        self.lanes: dict[tuple[str | None, str | None], Lane] = {}
        self.gpu: dict[str, Series] = {}
        self.gpu_total: dict[str, float] = {}
        self.log_mem: dict[str, Series] = {}
        self.load_rate = Series("server read rate")
        self.disk_rate = Series("disk delivered")
        self.load_verdict: str | None = None
        self.load_line: str | None = None
        self.recent: deque[tuple[float, str]] = deque(maxlen=FAIL_CONTEXT)
        self.excerpts: list[Excerpt] = []
        self._open: list[tuple[Excerpt, int]] = []  # excerpts still taking lines after their moment
        self.stall_t: float | None = None
        self.warnings: list[str] = []
        self.result: dict[str, Any] | None = None
        self.snapshot: dict[str, Any] | None = None
        self.epoch0: float | None = None

    # ---- folding -----------------------------------------------------------------------
    def emit(self, ev: dict[str, Any]) -> None:
        kind = ev.get("event")
        t = _num(ev.get("t")) or 0.0
        if kind == "_log":
            self._log(t, str(ev.get("text") or ""), ev.get("rank"), ev.get("node"))
        elif kind == "phase":
            self._phase(t, str(ev.get("phase")), ev.get("rank"), ev.get("node"), str(ev.get("evidence") or ""))
        elif kind == "gpu":
            self._gpu(t, ev.get("gpus"), ev.get("node"))
        elif kind == "_disk":
            rate = _num(ev.get("rate"))
            if rate is not None:
                self.load_rate.add(t, rate / 1e6)
        elif kind == "_load":
            disk = _num(ev.get("disk_mb_s"))
            if disk is not None:
                self.disk_rate.add(t, disk)
            if ev.get("line"):
                self.load_line = str(ev["line"])
        elif kind == "load":
            self.load_verdict = str(ev.get("verdict")) if ev.get("verdict") else self.load_verdict
            self.load_line = str(ev.get("line") or self.load_line or "")
        elif kind == "_info":
            self.info.update({k: v for k, v in ev.items() if v is not None})
        elif kind == "stall":
            self.stall_t = t
        elif kind == "warning" and len(self.warnings) < 50:
            self.warnings.append(str(ev.get("message") or ""))
        elif kind == "result":
            self.result = ev
        elif kind == "status":
            self.snapshot = ev
        if self.epoch0 is None and isinstance(ev.get("ts"), str) and ev.get("t") is not None:
            self.epoch0 = _epoch(ev["ts"], t)

    def _lane(self, node: Any, rank: Any) -> Lane | None:
        key = (str(node) if node else None, str(rank) if rank else None)
        lane = self.lanes.get(key)
        if lane is None:
            if len(self.lanes) >= MAX_LANES:
                return None
            lane = self.lanes[key] = Lane(*key)
        return lane

    def _log(self, t: float, text: str, rank: Any, node: Any) -> None:
        self._banner.line(text)
        if rank or node:
            lane = self._lane(node, rank)
            if lane is not None and len(lane.ticks) < MAX_TICKS:
                lane.ticks.add(round(t / TICK_RES) * TICK_RES)
        m = _AVAIL.search(text) if "mem=" in text else None
        if m:
            who = str(rank) if rank else "server"
            if node:
                who = f"{node} {who}"
            self.log_mem.setdefault(who, Series(who)).add(t, float(m.group(1)))
        if rank or node:
            text = f"[{' '.join(str(x) for x in (node, rank) if x)}] {text}"
        still: list[tuple[Excerpt, int]] = []
        for ex, left in self._open:
            ex.lines.append((t, text, False))
            if left > 1:
                still.append((ex, left - 1))
        self._open = still
        self.recent.append((t, text))

    def _phase(self, t: float, phase: str, rank: Any, node: Any, evidence: str) -> None:
        if not self.seq or self.seq[-1][1] != phase:
            self.seq.append((t, phase))
        if rank or node:
            lane = self._lane(node, rank)
            if lane is not None and len(lane.entries) < 200:
                lane.entries.append((t, phase))
        if len(self.excerpts) >= MAX_EXCERPTS:
            return
        before = list(self.recent)
        # the phase's own line is usually the last one logged: mark it rather than repeat it
        if before and evidence and evidence[:200] in before[-1][1]:
            lines = [(bt, bx, False) for bt, bx in before[-CONTEXT - 1 : -1]] + [(before[-1][0], before[-1][1], True)]
        else:
            lines = [(bt, bx, False) for bt, bx in before[-CONTEXT:]] + ([(t, evidence, True)] if evidence else [])
        where = f" ({' '.join(str(x) for x in (node, rank) if x)})" if (rank or node) else ""
        ex = Excerpt(f"{phase} begins{where}", t, lines)
        self.excerpts.append(ex)
        self._open.append((ex, CONTEXT))

    def _gpu(self, t: float, gpus: Any, node: Any) -> None:
        if not isinstance(gpus, list):
            return
        for g in gpus[:64]:
            if not isinstance(g, dict):
                continue
            used = _num(g.get("used_mib"))
            if used is None:
                continue
            name = f"GPU{g.get('index')}" if g.get("index") is not None else "GPU"
            if node:
                name = f"{node} {name}"
            self.gpu.setdefault(name, Series(name)).add(t, used / 1024.0)
            total = _num(g.get("total_mib"))
            if total:
                self.gpu_total[name] = total / 1024.0

    # ---- the report --------------------------------------------------------------------
    def report(self, baseline: dict[str, float] | None = None, history_starts: int = 0) -> Report:
        res = self.result or {}
        snap = self.snapshot
        end = _num(res.get("t"))
        if end is None:
            end = max([t for t, _ in self.seq] + [0.0])
        outcome = str(res.get("outcome") or (snap or {}).get("outcome") or "incomplete")
        spans = self._spans(res, end, outcome)
        ready = next((s.start for s in spans if s.phase == "ready"), None)
        total = ready if ready is not None else end
        bands = self._bands(end)
        baseline = baseline if baseline is not None else _floats(self.info.get("baseline"))
        compare = _compare(spans, baseline)
        ranks = [r for r in res.get("ranks") or [] if isinstance(r, dict)][:MAX_LANES]
        nodes = [n for n in res.get("nodes") or [] if isinstance(n, dict)][:MAX_LANES]
        lanes = self._lanes_with(ranks, str(res.get("reason") or ""))
        mark = self._mark(res, outcome, end)
        gpu, unit, source = self._gpu_series()
        excerpts = self._excerpts_for(res, outcome)
        info = self.info
        return Report(
            target=str(info.get("target") or res.get("target") or self.target or "this machine"),
            engine=_s(info.get("engine")) or _s(res.get("engine")) or self._engine(),
            version=_s(info.get("version")) or _s(self.banner.get("version")),
            model=_s(res.get("model")) or _s(info.get("model")) or _s(self.banner.get("model")) or _s((snap or {}).get("model")),
            tp=_i(info.get("tp")) or _i(self.banner.get("tp")),
            dp=_i(self.banner.get("dp")),
            pp=_i(self.banner.get("pp")),
            outcome=outcome,
            exit_code=_i(res.get("exit_code")) if res else _i((snap or {}).get("exit_code")),
            failure_kind=_s(res.get("failure_kind")) or _s((snap or {}).get("failure_kind")),
            reason=str(res.get("reason") or (snap or {}).get("cause") or (snap or {}).get("last_line") or ""),
            total=total,
            started_at=_iso(self.epoch0),
            command=self.command,
            spans=spans,
            bands=bands,
            mark=mark,
            lanes=lanes,
            gpu=gpu,
            gpu_unit=unit,
            gpu_source=source,
            gpu_capacity=max(self.gpu_total.values()) if self.gpu and self.gpu_total else None,
            load_rate=self.load_rate,
            disk_rate=self.disk_rate,
            load_verdict=self.load_verdict,
            load_line=self.load_line,
            compare=compare,
            history_starts=history_starts,
            usual_total=baseline.get("total"),
            excerpts=excerpts,
            ranks=ranks,
            nodes=nodes,
            warnings=self.warnings,
            snapshot=snap,
        )

    def _mark(self, res: dict[str, Any], outcome: str, end: float) -> tuple[float, str] | None:
        """Where the timeline marks how the start ended (none for a ready start or a bare snapshot)."""
        if outcome not in ("ready", "incomplete") or (outcome == "incomplete" and res):
            at = self.stall_t if outcome == "stalled" and self.stall_t is not None else end
            return (at, f"{outcome.upper()}" + (f" [{res['failure_kind']}]" if res.get("failure_kind") else ""))
        return None

    def _gpu_series(self) -> tuple[list[Series], str, str]:
        """The memory chart's series, unit and source: the GPU samples, else the log's avail mem= lines."""
        if self.gpu:
            return merged(list(self.gpu.values())), "GiB used", "the GPU samples during the watch"
        return list(self.log_mem.values()), "GB free", "the log's avail mem= lines"

    def _excerpts_for(self, res: dict[str, Any], outcome: str) -> list[Excerpt]:
        """The phases' excerpts, and for a start that did not get ready the last lines before its end."""
        excerpts = list(self.excerpts)
        if outcome not in ("ready",) and self.recent:
            reason = str(res.get("reason") or "")
            lines = [(t, x, bool(reason) and reason[:120] in x) for t, x in self.recent]
            excerpts.append(Excerpt(f"the last lines before {outcome}", lines[-1][0], lines))
        return excerpts

    def _engine(self) -> str | None:
        return _s(self.banner.get("engine"))

    def _spans(self, res: dict[str, Any], end: float, outcome: str) -> list[Span]:
        out: list[Span] = []
        phases = res.get("phases")
        if isinstance(phases, list) and phases:
            for p in phases:
                if not isinstance(p, dict) or _num(p.get("start")) is None:
                    continue
                start = float(p["start"])
                stop = _num(p.get("end"))
                if p.get("phase") == "ready":
                    out.append(Span("ready", start, start))
                    continue
                out.append(Span(str(p.get("phase")), start, stop if stop is not None else max(end, start), stop is None))
            return out
        for i, (t, ph) in enumerate(self.seq):  # no result timeline (status): the phases as they came
            stop = self.seq[i + 1][0] if i + 1 < len(self.seq) else end
            out.append(Span(ph, t, t if ph == "ready" else stop, i + 1 == len(self.seq) and ph != "ready"))
        return out

    def _bands(self, end: float) -> list[Span]:
        out = []
        for i, (t, ph) in enumerate(self.seq):
            stop = self.seq[i + 1][0] if i + 1 < len(self.seq) else end
            if stop > t or i + 1 == len(self.seq):
                out.append(Span(ph, t, max(stop, t)))
        return out

    def _lanes_with(self, ranks: list[dict[str, Any]], reason: str) -> list[Lane]:
        """The lanes seen in the log, with each rank's state and top frame from the result's ``ranks``;
        the culprit is the rank the reason names (or the only one not waiting)."""
        for r in ranks:
            rank = r.get("rank")
            node = _s(r.get("node"))
            lane = self._match(node, rank)
            if lane is None:
                lane = self._lane(node, f"rank {rank}" if rank is not None else None)
            if lane is None:
                continue
            lane.state = _s(r.get("state"))
            frames = r.get("frames")
            if isinstance(frames, list) and frames:
                lane.frame = str(frames[0])[:200]
        named = [ln for ln in self.lanes.values() if ln.state and _names(reason, ln)]
        if not named:
            busy = [ln for ln in self.lanes.values() if ln.state in ("blocked", "working", "dead")]
            named = busy if len(busy) == 1 and any(ln.state == "waiting" for ln in self.lanes.values()) else []
        for ln in named[:1]:
            ln.culprit = True
        return sorted(self.lanes.values(), key=lambda ln: (ln.node or "", _rank_key(ln.rank)))

    def _match(self, node: str | None, rank: Any) -> Lane | None:
        if rank is None:
            return None
        want = str(rank)
        for (n, r), lane in self.lanes.items():
            if r is None or (node and n and n != node):
                continue
            nums = _RANK_GPU.findall(r)
            if r == want or (nums and nums[-1] == want):
                return lane
        return None


def _names(reason: str, lane: Lane) -> bool:
    if not lane.rank:
        return False
    if re.search(rf"(?<![\w-]){re.escape(lane.rank)}(?![\w])", reason):  # TP2, not TP25
        return lane.node is None or lane.node in reason
    return False


def _rank_key(rank: str | None) -> tuple[int, str]:
    if not rank:
        return (-1, "")
    nums = re.findall(r"\d+", rank)
    return (int(nums[-1]) if nums else 0, rank)


def _s(v: Any) -> str | None:
    return str(v) if isinstance(v, str) and v else None


def _i(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _compare(spans: list[Span], baseline: dict[str, float]) -> list[Compare]:
    """Each phase (but ready) against its history median: slower when both the ratio and the margin say so."""
    compare = []
    for s in spans:
        if s.phase == "ready":
            continue
        med = baseline.get(s.phase)
        secs = s.end - s.start
        slower = med is not None and secs >= SLOW_RATIO * med and secs - med >= SLOW_MARGIN
        compare.append(Compare(s.phase, secs, med, slower))
    return compare


def _floats(v: Any) -> dict[str, float]:
    if not isinstance(v, dict):
        return {}
    return {str(k): float(x) for k, x in v.items() if isinstance(x, int | float) and not isinstance(x, bool)}


def _epoch(ts: str, t: float) -> float | None:
    import datetime as dt

    try:
        return dt.datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp() - t
    except ValueError:
        return None


def _iso(epoch: float | None) -> str | None:
    if epoch is None:
        return None
    import datetime as dt

    return dt.datetime.fromtimestamp(epoch, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def merged(series: list[Series]) -> list[Series]:
    """Series with the same points drawn once, named together (eight identical GPUs are one line)."""
    out: list[Series] = []
    for s in series:
        same = next((o for o in out if o.points == s.points), None)
        if same is None:
            out.append(Series(s.name, list(s.points)))
        else:
            same.name = f"{same.name}, {s.name}"
    return out
