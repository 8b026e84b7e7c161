"""What the live panel shows, without the Live machinery: a view of the event stream
(``PanelState``) and a priority layout (``render_panel``: state + terminal size -> renderable).

The layout never crops the important part: blocks are laid out in priority order (header,
verdict, current phase, elapsed and ETA, warnings, phase list, nodes, GPUs, log tail) and, when
the terminal is short, the lower blocks fold first (log tail, GPU rows, finished phases...) until
the panel fits. Every row is one line: long text ends in an ellipsis, never wraps.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.text import Text

from coldwatch import sanitise
from coldwatch.phases.rules import PHASES
from coldwatch.render.plain import size

QUIET_AFTER = 10.0
"""Seconds of silent log after which the panel says what else shows the server is alive."""
LOG_LINES = 5
WARNINGS = 3
BAR_MAX = 40
UNITS = {"weight_load": "shards", "draft_init": "shards", "graph_capture": "batches"}
HTTP_RUNG = {
    "refused": "port not bound yet",
    "timeout": "no answer",
    "status": "answering",
    "ready": "ready",
    "error": "probe error",
}


# ---- text helpers ------------------------------------------------------------------------
def clean(s: Any) -> str:
    """Remote text for a terminal: the one sanitiser, uncapped (the layout truncates)."""
    return sanitise.clean(s, None)


def dur(s: float | None) -> str:
    if s is None:
        return ""
    s = max(s, 0.0)
    h, rest = divmod(int(s), 3600)
    m, sec = divmod(rest, 60)
    if h:
        return f"{h}h{m:02d}m"
    return f"{m}m{sec:02d}s" if m else f"{sec}s"


def line(*parts: str | tuple[str, str], width: int, style: str = "") -> Text:
    """One row: the parts joined, cut to ``width`` cells with an ellipsis, never wrapped."""
    t = Text.assemble(*parts, style=style, no_wrap=True, overflow="ellipsis")
    t.truncate(max(width, 1), overflow="ellipsis")
    return t


def bar(done: float, total: float, width: int, style: str = "cyan") -> Text:
    """A progress bar of ``width`` cells (half cells with ╸)."""
    width = max(width, 1)
    frac = min(max(done / total, 0.0), 1.0) if total else 0.0
    halves = int(frac * width * 2)
    full, half = divmod(halves, 2)
    t = Text("━" * full, style=style, end="")
    if half:
        t.append("╸", style=style)
    t.append("━" * (width - full - half), style="grey23")
    return t


def wrap(text: str, width: int, lines: int, style: str = "") -> list[Text]:
    """Word-wrapped into at most ``lines`` rows; the last one ends in an ellipsis when cut."""
    words = clean(text).split()
    rows: list[str] = []
    cur = ""
    for w in words:
        if not cur:
            cur = w
        elif len(cur) + 1 + len(w) <= width:
            cur += " " + w
        else:
            rows.append(cur)
            cur = w
    if cur:
        rows.append(cur)
    if len(rows) > lines:
        rows = rows[: lines - 1] + [" ".join(rows[lines - 1 :])]
    return [line(r, width=width, style=style) for r in rows]


def rate_text(phase: str, per_s: float, unit: str | None) -> str:
    if unit == "bytes":
        return f"{size(per_s)}/s"
    what = UNITS.get(phase, "steps")
    if per_s >= 1 or per_s <= 0:
        return f"{per_s:.1f} {what}/s"
    return f"{1 / per_s:.1f} s/{what.rstrip('s')}"


def short_model(model: str) -> str:
    """A model path on the host reads as its last two parts (``/models/org/name`` -> ``org/name``)."""
    if model.startswith("/"):
        parts = [p for p in model.split("/") if p]
        return "/".join(parts[-2:])
    return model


def http_text(ev: dict[str, Any]) -> str:
    """The HTTP ladder's rung, said once: the label, then only what the detail adds."""
    state = str(ev.get("state") or "")
    status = ev.get("status")
    detail = clean(ev.get("detail") or "")
    if state == "refused" and "port not bound yet" in detail:
        return "port not bound yet (connection refused)"
    if state == "ready":
        code = f" ({status})" if status is not None else ""
        return f"ready: {detail or 'completion returned'}{code}"
    if state == "status":
        if detail and str(status) in detail:
            return detail
        return f"answering {status}" + (f": {detail}" if detail else "")
    label = HTTP_RUNG.get(state, state)
    return f"{label}: {detail}" if detail else label


# ---- the view of the events --------------------------------------------------------------
@dataclass
class Progress:
    done: float
    total: float
    t: float
    unit: str | None = None
    t0: float = 0.0
    done0: float = 0.0
    rate: float | None = None  # per second, from the event (bytes) or measured here (counters)
    eta: float | None = None

    def per_s(self) -> float | None:
        if self.rate is not None:
            return self.rate
        if self.t - self.t0 >= 0.5 and self.done > self.done0:
            return (self.done - self.done0) / (self.t - self.t0)
        return None

    def left(self) -> float | None:
        if self.eta is not None:
            return self.eta
        r = self.per_s()
        if r and self.total > self.done:
            return (self.total - self.done) / r
        return 0.0 if self.done >= self.total > 0 else None


@dataclass
class LogEntry:
    text: str
    count: int = 1
    ranks: set[str] = field(default_factory=set)


@dataclass
class PanelState:
    """Everything the panel shows, folded from the event stream (``apply``); no clock, no I/O."""

    target: str = ""
    unit: str | None = None
    container: str | None = None
    engine: str | None = None
    version: str | None = None
    model: str | None = None
    tp: int | None = None
    nodes: list[str] | None = None
    deadline: float = 0.0
    baseline: dict[str, float] = field(default_factory=dict)
    t: float = 0.0
    current: str = "starting"
    started: dict[str, float] = field(default_factory=dict)
    ended: dict[str, float] = field(default_factory=dict)
    progress: dict[str, Progress] = field(default_factory=dict)
    bytes_progress: Progress | None = None
    evidence: str = ""
    gpus: list[dict[str, Any]] = field(default_factory=list)
    http: dict[str, Any] | None = None
    log: deque[LogEntry] = field(default_factory=lambda: deque(maxlen=LOG_LINES))
    warnings: deque[str] = field(default_factory=lambda: deque(maxlen=WARNINGS))
    disk_rate: float | None = None
    jit: list[str] = field(default_factory=list)
    last_log_t: float = 0.0
    eta_total: float | None = None  # the history's usual total, as the monitor knows it
    eta: dict[str, Any] | None = None  # the judge's last per-phase estimate (an ``eta`` event)
    load_line: str = ""  # why the weight load runs at its speed (bandwidth.py), latest interval
    rows: list[dict[str, Any]] = field(default_factory=list)  # one per node or fleet target
    ranks: list[dict[str, Any]] = field(default_factory=list)  # each rank's state, once a start stops moving
    slow_phases: set[str] = field(default_factory=set)  # the phases the judge found slower than usual
    result: dict[str, Any] | None = None

    # ---- folding events --------------------------------------------------------------
    def apply(self, ev: dict[str, Any]) -> None:
        kind = ev.get("event")
        t = float(ev.get("t") or 0.0)
        self.t = max(self.t, t)
        if kind == "phase":
            self._phase(str(ev.get("phase")), t, clean(ev.get("evidence") or ""))
        elif kind == "progress":
            self._progress(ev, t)
        elif kind == "gpu":
            self.gpus = [g for g in ev.get("gpus") or [] if isinstance(g, dict)]
        elif kind == "http":
            self.http = ev
        elif kind == "_log":
            self._log(clean(ev.get("text") or ""), clean(ev.get("rank") or ""), t)
        elif kind == "_disk":
            self.disk_rate = ev.get("rate")
        elif kind == "_jit":
            self.jit = [clean(n) for n in ev.get("names") or []]
        elif kind == "_info":
            self._info(ev)
        elif kind == "_launch":
            self._launch(ev)
        elif kind == "_slow":
            self.slow_phases.add(str(ev.get("phase")))
        elif kind == "eta":
            self.eta = ev
        elif kind in ("_load", "load"):
            self.load_line = clean(ev.get("line") or "")
        elif kind == "_rows":
            self.rows = list(ev.get("rows") or [])
        elif kind in ("warning", "stall"):
            self.warnings.append(clean(ev.get("message") or ""))
            if ev.get("ranks"):
                self.ranks = [r for r in ev["ranks"] if isinstance(r, dict)]
        elif kind == "_ranks":
            self.ranks = [r for r in ev.get("ranks") or [] if isinstance(r, dict)]
        elif kind == "result":
            self._result(ev, t)

    def _phase(self, ph: str, t: float, evidence: str) -> None:
        if self.current in self.started and self.current != ph:
            self.ended.setdefault(self.current, t)
        self.started.setdefault(ph, t)
        self.ended.pop(ph, None)
        self.current = ph
        self.evidence = evidence

    def _progress(self, ev: dict[str, Any], t: float) -> None:
        phase = str(ev.get("phase"))
        done, total = float(ev.get("done") or 0), float(ev.get("total") or 0)
        if ev.get("unit") == "bytes":
            rate = ev.get("rate_mb_s")
            self.bytes_progress = Progress(done, total, t, "bytes", rate=rate * 1e6 if rate is not None else None, eta=ev.get("eta_s"))
            return
        old = self.progress.get(phase)
        if old is None or old.total != total or done < old.done:
            old = Progress(done, total, t, t0=t, done0=done)
            self.progress[phase] = old
        old.done, old.t = done, t
        if ev.get("eta_s") is not None:
            self.eta_total = float(ev["eta_s"]) + t

    def _log(self, text: str, rank: str, t: float) -> None:
        self.last_log_t = t
        if not text:
            return
        is_bar = "% Completed" in text or "%|" in text
        if is_bar and self.log and ("% Completed" in self.log[-1].text or "%|" in self.log[-1].text):
            self.log[-1] = LogEntry(text)
            return
        for e in self.log:  # the same line from several ranks is one entry
            if e.text == text:
                e.count += 1
                if rank:
                    e.ranks.add(rank)
                return
        self.log.append(LogEntry(text, 1, {rank} if rank else set()))

    def _launch(self, ev: dict[str, Any]) -> None:
        """What the judge read of the server from its banner, where the watch was not told."""
        for key in ("engine", "version", "model"):
            if getattr(self, key) is None and isinstance(ev.get(key), str):
                setattr(self, key, clean(ev[key])[:120])
        if self.tp is None and isinstance(ev.get("tp"), int):
            self.tp = ev["tp"]

    def _info(self, ev: dict[str, Any]) -> None:
        for key in ("target", "unit", "container", "engine", "version", "model"):
            if ev.get(key):
                setattr(self, key, clean(ev[key])[:120])
        if isinstance(ev.get("tp"), int):
            self.tp = ev["tp"]
        if isinstance(ev.get("nodes"), list):
            self.nodes = [clean(n) for n in ev["nodes"]]
        if ev.get("deadline") is not None:
            self.deadline = float(ev["deadline"])
        if isinstance(ev.get("baseline"), dict):
            self.baseline = {str(k): float(v) for k, v in ev["baseline"].items() if isinstance(v, int | float)}

    def _result(self, ev: dict[str, Any], t: float) -> None:
        self.result = ev
        self._final_rows(ev)
        if ev.get("model"):
            self.model = self.model or clean(ev["model"])
        spans = ev.get("phases")
        if isinstance(spans, list) and spans:
            # the judge's own timeline is the final word on durations
            self.started = {s["phase"]: s["start"] or 0.0 for s in spans if isinstance(s, dict) and "phase" in s}
            self.ended = {s["phase"]: s["end"] for s in spans if isinstance(s, dict) and s.get("end") is not None}
        if ev.get("outcome") == "ready":
            self.ended.setdefault(self.current, t)
            self.started.setdefault("ready", t)
            self.current = "ready"
        else:
            ph = ev.get("phase") or self.current
            self.current = str(ph)
            self.started.setdefault(self.current, t)
            self.ended[self.current] = self.ended.get(self.current, t)

    def _final_rows(self, ev: dict[str, Any]) -> None:
        """The last frame agrees with the verdict: each node's or target's row takes its outcome from
        the result (the last table was drawn before it, when a ready target still said warmup); under
        READY every node of the server is ready."""
        if not self.rows:
            return
        per: dict[str, dict[str, Any]] = {}
        for r in [*(ev.get("targets") or []), *(ev.get("nodes") or [])]:
            if isinstance(r, dict):
                per[str(r.get("target") or r.get("node") or "")] = r
        ready = ev.get("outcome") == "ready"
        rows = []
        for row in self.rows:
            row = dict(row)
            name = str(row.get("name") or "")
            r = per.get(name) or per.get(name.removesuffix(" BLIND").removesuffix(" (head)"))
            outcome = r.get("outcome") if r is not None else None
            if row.get("kind") == "nodes" and ready and outcome in (None, "pending", "ready"):
                outcome = "ready"
            if outcome not in (None, "pending"):
                row["verdict"] = outcome
                row["phase"] = "ready" if outcome == "ready" else (r or {}).get("phase") or row.get("phase")
                row["progress"] = None if outcome == "ready" else row.get("progress")
            rows.append(row)
        self.rows = rows

    @property
    def fleet(self) -> bool:
        """The panel of a fleet: its table is the story (no server's phases of its own)."""
        return bool(self.rows) and self.rows[0].get("kind") == "targets"

    # ---- derived ---------------------------------------------------------------------
    def usual_total(self) -> float | None:
        if "total" in self.baseline:
            return self.baseline["total"]
        return self.eta_total

    def duration(self, ph: str) -> float | None:
        if ph not in self.started:
            return None
        end = self.ended.get(ph)
        return (end if end is not None else self.t) - self.started[ph]

    def slow(self, ph: str) -> bool:
        """The judge found the phase slower than usual (its ``_slow`` event)."""
        return ph in self.slow_phases

    def failed_mark(self) -> str | None:
        if self.result is None or self.result.get("outcome") == "ready":
            return None
        return "■" if self.result.get("outcome") == "interrupted" else "✗"


# ---- blocks ------------------------------------------------------------------------------
@dataclass
class Levels:
    """How much of each block to show; the layout lowers these until the panel fits."""

    log: int = LOG_LINES
    gpu: str = "full"  # full | grid | summary | none
    phases: str = "full"  # full | fold_done | fold_all | none
    rows: str = "full"  # full | summary | none
    warnings: int = WARNINGS
    evidence: bool = True
    detail: bool = True
    header: bool = True


def header_block(s: PanelState, w: int) -> list[Text]:
    parts: list[str] = []
    if s.container:
        parts.append(f"container {s.container}")
    elif s.unit and not s.target.endswith(f"/{s.unit}"):
        parts.append(f"unit {s.unit}")
    if s.engine:
        parts.append(f"{s.engine} {s.version}" if s.version else s.engine)
    if s.model:
        parts.append(short_model(s.model))
    if s.nodes and len(s.nodes) > 1:
        parts.append(f"{len(s.nodes)} nodes")
    if s.tp:
        parts.append(f"TP{s.tp}")
    if not parts:
        return []
    return [line(" · ".join(parts), width=w, style="bold")]


def verdict_block(s: PanelState, w: int) -> list[Text]:
    r = s.result
    if r is None:
        return []
    code = r.get("exit_code")
    took = f" after {dur(r.get('t') or s.t)}"
    if r.get("outcome") == "ready":
        return [line(("✓ READY", "bold green"), f" (exit {code}){took}", width=w)]
    kind = f" [{r['failure_kind']}]" if r.get("failure_kind") else ""
    phase = r.get("phase") or "start-up (before any phase)"
    head = line((f"{s.failed_mark()} {str(r.get('outcome', '')).upper()}{kind}", "bold red"), f" in {phase} (exit {code}){took}", width=w)
    return [head, *wrap(r.get("reason") or "", w, 3, style="red")]


def current_block(s: PanelState, w: int, lv: Levels) -> list[Text]:
    """The phase now: name, time in it, its bar, rate and ETA; then its evidence."""
    if s.result is not None:
        return []
    ph = s.current
    out: list[Text] = []
    head = f"▶ {ph} {dur(s.duration(ph) or 0.0)}"
    usual = s.baseline.get(ph)
    p = s.progress.get(ph)
    bp = s.bytes_progress if ph in ("starting", "dist_init", "weight_load") else None
    shown = p if p is not None and p.total else (bp if bp is not None and bp.total else None)
    if shown is None:
        extra = f"  usual {dur(usual)}" if usual else ""
        out.append(line((head, "bold cyan"), extra, ("  ▲ slower than usual" if s.slow(ph) else "", "yellow"), width=w))
    else:
        count = f"{size(shown.done)}/{size(shown.total)}" if shown.unit == "bytes" else f"{int(shown.done)}/{int(shown.total)}"
        pct = f"{100 * shown.done / shown.total:3.0f}%"
        per = shown.per_s()
        tail = [pct]
        left = shown.left()
        if left is not None:
            tail.append(f"ETA {dur(left)}")
        elif usual:
            tail.append(f"usual {dur(usual)}")
        if per:
            tail.append(rate_text(ph, per, shown.unit))
        if s.slow(ph):
            tail.append("▲ slow")
        right = "  ".join(tail)
        fixed = len(head) + 1 + len(count) + 2 + 2 + len(right)
        if w - fixed >= 10:
            bw = min(BAR_MAX, w - fixed)
            out.append(Text.assemble((head, "bold cyan"), " ", count, " ", bar(shown.done, shown.total, bw), "  ", right, no_wrap=True))
        else:
            out.append(line((head, "bold cyan"), f" {count}  {right}", width=w))
            out.append(Text.assemble("  ", bar(shown.done, shown.total, max(w - 2, 1)), no_wrap=True))
    if lv.detail and bp is not None and bp.total and shown is not bp:
        eta = f" · ~{dur(bp.eta)} left" if bp.eta is not None else ""
        per = bp.per_s()
        rate = f" · {size(per)}/s" if per else ""
        out.append(line(f"  weights read {size(bp.done)} of {size(bp.total)}{rate}{eta}", width=w))
    if lv.detail and s.load_line and ph in ("weight_load", "marlin_repack", "draft_init"):
        out.append(line(f"  load: {s.load_line}", width=w))
    quiet = s.t - s.last_log_t
    if lv.detail and quiet > QUIET_AFTER:
        why = []
        if s.disk_rate:
            why.append(f"still reading {size(s.disk_rate)}/s from disk")
        if s.jit:
            why.append(f"JIT: {', '.join(s.jit)} running")
        if any((g.get("util") or 0) > 0 for g in s.gpus):
            why.append("GPUs busy")
        out.append(line(f"  log quiet for {quiet:.0f}s" + (" — " + "; ".join(why) if why else ""), width=w, style="yellow"))
    if lv.evidence and s.evidence:
        out.append(line(f"  evidence: {s.evidence}", width=w, style="dim"))
    return out


def status_block(s: PanelState, w: int) -> list[Text]:
    """Elapsed against the deadline, the overall ETA, and the HTTP ladder's rung."""
    clock = f"elapsed {dur(s.t)}" + (f" / {dur(s.deadline)}" if s.deadline else "")
    eta = ""
    if s.result is None:
        total = s.usual_total()
        if s.eta is not None and isinstance(s.eta.get("remaining_s"), int | float):
            left = max(float(s.eta["remaining_s"]) - (s.t - float(s.eta.get("t") or 0.0)), 0.0)
            how = "at this load's rate" if s.eta.get("basis") == "progress" else "per phase"
            if s.eta.get("history") == "model":
                how += ", same model elsewhere"
            eta = f"ETA ~{dur(left)} ({how}" + (f"; usual {dur(total)})" if total else ")")
        elif total is None:
            eta = "ETA ? (no earlier start in history)"
        elif total > s.t:
            eta = f"ETA ~{dur(total - s.t)} (usual {dur(total)})"
        else:
            eta = f"past the usual {dur(total)}"
    first = clock + (f" · {eta}" if eta else "")
    http = f"HTTP {http_text(s.http)}" if s.http else ""
    if http and len(first) + 3 + len(http) <= w:
        return [line((first, "bold"), "   ", http, width=w)]
    rows = [line(first, width=w, style="bold")]
    if http:
        rows.append(line(http, width=w))
    return rows


def warnings_block(s: PanelState, w: int, n: int) -> list[Text]:
    if n <= 0:
        return []
    said = clean(s.result.get("reason") or "") if s.result is not None else None
    shown = [m for m in s.warnings if m != said]  # a stall's message is the verdict's reason: said once
    return [line(f"⚠ {m}", width=w, style="yellow") for m in shown[-n:]]


def phase_list(s: PanelState) -> list[str]:
    """The phases to list: the fixed vocabulary, 'starting' only when it is where things stand."""
    order = [p for p in PHASES if p != "starting" or (s.current == "starting" and s.result is not None)]
    order += [p for p in s.started if p not in order and p != "starting"]
    return order


def phase_row(s: PanelState, ph: str, w: int, usual_col: bool) -> Text:
    mark, style = "·", "dim"
    failed = s.failed_mark()
    if ph == s.current and failed is not None:
        mark, style = failed, "bold red"
    elif ph == s.current and s.result is None:
        mark, style = "▶", "bold cyan"
    elif ph in s.started:
        mark, style = "✓", "green"
    d = s.duration(ph) if ph in s.started and ph != "ready" else None
    parts: list[str | tuple[str, str]] = [(f"{mark} {ph:<13}", style), f" {dur(d):>6}"]
    med = s.baseline.get(ph)
    if usual_col:
        parts.append((f"  usual {dur(med):>6}" if med else " " * 14, "dim"))
    p = s.progress.get(ph)
    if p is not None and p.total:
        parts.append((f"  {int(p.done)}/{int(p.total)}", "dim"))
    if s.slow(ph):
        parts.append(("  ▲ slower than usual", "yellow"))
    return line(*parts, width=w)


def phases_block(s: PanelState, w: int, mode: str) -> list[Text]:
    if mode == "none":
        return []
    order = phase_list(s)
    usual_col = bool(s.baseline) and w >= 48
    done = [p for p in order if p in s.started and p != s.current]
    pending = [p for p in order if p not in s.started]
    out: list[Text] = []
    if mode != "full" and s.current in PHASES:  # folded: phases skipped before this one are not "to go"
        pending = [p for p in pending if p not in PHASES or PHASES.index(p) > PHASES.index(s.current)]
    if mode == "full":
        shown = order
    else:
        if done:
            total = sum(s.duration(p) or 0.0 for p in done if p != "ready")
            names = " · ".join(f"{p} {dur(s.duration(p))}" if p != "ready" else p for p in done)
            out.append(line((f"✓ {len(done)} done", "green"), f" ({dur(total)}): {names}", width=w))
        shown = [s.current] + (pending if mode == "fold_done" else [])
    for p in shown:
        out.append(phase_row(s, p, w, usual_col))
        if p == s.current and s.failed_mark() is not None and s.result is not None:
            out.append(line(f"  └ {clean(s.result.get('reason') or '')}", width=w, style="red"))
    if mode == "fold_all" and pending:
        out.append(line(f"· {len(pending)} to go: {', '.join(pending)}", width=w, style="dim"))
    return out


def _gb(mib: float | None) -> float:
    return (mib or 0) / 1024


def gpus_equal(gpus: list[dict[str, Any]]) -> bool:
    """All GPUs within a GB (or 2 %) of each other and 10 points of utilisation."""
    if len(gpus) < 2:
        return True
    used = [g.get("used_mib") or 0 for g in gpus]
    util = [g.get("util") or 0 for g in gpus]
    total = max(g.get("total_mib") or 0 for g in gpus)
    return max(used) - min(used) <= max(1024, 0.02 * total) and max(util) - min(util) <= 10


def gpu_block(s: PanelState, w: int, mode: str) -> list[Text]:
    g = s.gpus
    if not g or mode == "none":
        return []
    if mode == "full":
        out = []
        for x in g[:64]:
            used, total = x.get("used_mib") or 0, x.get("total_mib") or 0
            label = f"GPU{x.get('index')}"
            nums = f" {_gb(used):5.1f}/{_gb(total):.0f} GB {x.get('util') or 0:3d}%"
            bw = min(BAR_MAX, w - len(label) - 1 - len(nums))
            if bw < 6:
                out.append(line(label + nums, width=w))
            else:
                out.append(Text.assemble(label, " ", bar(used, max(total, 1), bw, "magenta"), nums, no_wrap=True))
        return out
    if mode == "grid":
        cells = [f"{x.get('index')}:{_gb(x.get('used_mib')):.0f}/{_gb(x.get('total_mib')):.0f}G {x.get('util') or 0:>3}%" for x in g]
        cw = max(len(c) for c in cells) + 2
        per = max(w // cw, 1)
        rows = [cells[i : i + per] for i in range(0, len(cells), per)]
        return [line("".join(c.ljust(cw) for c in r).rstrip(), width=w) for r in rows]
    used = [x.get("used_mib") or 0 for x in g]
    util = [x.get("util") or 0 for x in g]
    total = max(x.get("total_mib") or 0 for x in g)
    n = f"{len(g)} GPUs" if len(g) > 1 else f"GPU{g[0].get('index')}"
    if gpus_equal(g):
        nums = f" {_gb(max(used)):.1f}/{_gb(total):.0f} GB{' each' if len(g) > 1 else ''} {max(util):3d}%"
        bw = min(BAR_MAX, w - len(n) - 1 - len(nums))
        if bw >= 6:
            return [Text.assemble(n, " ", bar(max(used), max(total, 1), bw, "magenta"), nums, no_wrap=True)]
        return [line(n + nums, width=w)]
    low = min(range(len(g)), key=lambda i: used[i])
    return [
        line(
            f"{n} {_gb(min(used)):.1f}–{_gb(max(used)):.1f}/{_gb(total):.0f} GB · util {min(util)}–{max(util)}% · lowest GPU{g[low].get('index')}",
            width=w,
        )
    ]


def log_block(s: PanelState, w: int, n: int) -> list[Text]:
    if n <= 0:
        return []
    out = []
    for e in list(s.log)[-n:]:
        times = ""
        if e.count > 1:
            times = f" ×{max(e.count, len(e.ranks))} ranks" if e.ranks else f" ×{e.count}"
        out.append(
            line(("│ ", "dim"), (e.text, "dim"), (times, "cyan"), width=w) if len(e.text) + 2 + len(times) <= w else _tail(e.text, times, w)
        )
    return out


def _tail(text: str, times: str, w: int) -> Text:
    """A long log line keeps its ×N count: the text is cut, not the count."""
    body = line("│ " + text, width=max(w - len(times), 1), style="dim")
    body.append(times, style="cyan")
    return body


def render_rows(rows: list[dict[str, Any]], w: int, mode: str = "full") -> list[Text]:
    """One row per node (multi-node) or per target (fleet): name, phase, progress, GPU memory,
    age of the last liveness evidence, verdict. ``summary`` folds them into one line."""
    if not rows or mode == "none":
        return []
    if mode == "summary":
        by: dict[str, int] = {}
        for r in rows:
            key = str(r.get("verdict") or r.get("phase") or "?")
            by[key] = by.get(key, 0) + 1
        return [line(f"{len(rows)} {rows[0].get('kind', 'nodes')}: " + ", ".join(f"{n} {k}" for k, n in by.items()), width=w)]
    name_w = min(max(len(clean(r.get("name", ""))) for r in rows), 24)
    out = []
    for r in rows:
        verdict = r.get("verdict")
        style = "green" if verdict == "ready" else "bold red" if verdict else ""
        mark = "✓" if verdict == "ready" else "✗" if verdict else "▶"
        head = f"{mark} {clean(r.get('name', ''))[:name_w]:<{name_w}} {clean(r.get('phase') or '?'):<13}"
        right = []
        mem = r.get("gpu_mem")
        if isinstance(mem, tuple | list) and len(mem) == 2 and mem[1]:
            right.append(f"{_gb(mem[0]):.0f}/{_gb(mem[1]):.0f} GB")
        age = r.get("age")
        if age is not None and not verdict:
            right.append(f"alive {dur(age)} ago")
        if verdict:
            right.append(str(verdict).upper())
        tail = "  " + "  ".join(right) if right else ""
        prog = r.get("progress")
        if isinstance(prog, tuple | list) and len(prog) == 2 and prog[1]:
            count = f" {int(prog[0])}/{int(prog[1])} "
            bw = min(20, w - len(head) - len(count) - len(tail))
            if bw >= 6:
                out.append(Text.assemble((head, style), count, bar(prog[0], prog[1], bw), tail, no_wrap=True))
                continue
            out.append(line((head, style), count, tail, width=w))
            continue
        out.append(line((head, style), tail, width=w))
    return out


RANK_STYLE = {"working": "green", "waiting": "yellow", "blocked": "bold red", "dead": "bold red", "idle": "dim"}
RANK_LINES = 8


def ranks_block(s: PanelState, w: int) -> list[Text]:
    """One line per rank (its node, state and where it sits), once a start stopped moving and its
    stacks were sampled: 'TP1  blocked  read_shard ← load_weights'."""
    if not s.ranks:
        return []
    multi = len({r.get("node") for r in s.ranks}) > 1
    out = []
    for r in s.ranks[:RANK_LINES]:
        state = clean(r.get("state") or "?")
        name = clean(r.get("rank") or f"pid {r.get('pid')}")
        if multi and r.get("node"):
            name = f"{clean(r.get('node'))} {name}"
        where = clean(r.get("where") or "")
        detail = clean(r.get("detail") or "")
        text = where + (f" ({detail})" if detail else "")
        out.append(line(("  " + f"{name[:28]:<12} ", "bold"), (f"{state:<8} ", RANK_STYLE.get(state, "")), text, width=w))
    if len(s.ranks) > RANK_LINES:
        out.append(line(f"  … {len(s.ranks) - RANK_LINES} more ranks", width=w, style="dim"))
    return out


# ---- the layout --------------------------------------------------------------------------
def shrink_steps(s: PanelState) -> list[tuple[str, Any]]:
    """What to fold, in order, when the panel does not fit. GPUs that all read the same go straight
    to one summary row; GPUs that differ keep a grid (one per cell) until late."""
    same = gpus_equal(s.gpus)
    return [
        ("log", 3),
        ("gpu", "summary" if same else "grid"),
        ("log", 1),
        ("phases", "fold_done"),
        ("warnings", 1),
        ("gpu", "summary"),
        ("phases", "fold_all"),
        ("rows", "summary"),
        ("log", 0),
        ("evidence", False),
        ("detail", False),
        ("gpu", "none"),
        ("phases", "none"),
        ("warnings", 0),
        ("header", False),
    ]


def body(s: PanelState, w: int, lv: Levels) -> list[Text]:
    return [
        *(header_block(s, w) if lv.header else []),
        *verdict_block(s, w),
        *(current_block(s, w, lv) if not s.fleet else []),
        *status_block(s, w),
        *warnings_block(s, w, lv.warnings),
        *ranks_block(s, w),
        *(phases_block(s, w, lv.phases) if not s.fleet else []),
        *render_rows(s.rows, w, lv.rows),
        *gpu_block(s, w, lv.gpu),
        *log_block(s, w, lv.log),
    ]


def layout(s: PanelState, w: int, h: int) -> list[Text]:
    """The richest set of rows that fits ``h`` rows of ``w`` cells; cut at the bottom only if even
    the folded panel is taller (then the top rows, the most important, stay)."""
    lv = Levels()
    rows = body(s, w, lv)
    taken: list[tuple[str, Any]] = []
    for key, value in shrink_steps(s):
        if len(rows) <= h:
            break
        taken.append((key, getattr(lv, key)))
        setattr(lv, key, value)
        rows = body(s, w, lv)
    # a late fold may have freed enough room for an early one: give back what still fits
    for key, old in reversed(taken[:-1]):
        now = getattr(lv, key)
        setattr(lv, key, old)
        more = body(s, w, lv)
        if len(more) <= h:
            rows = more
        else:
            setattr(lv, key, now)
    return rows[: max(h, 0)]


def render_panel(s: PanelState, width: int, height: int) -> RenderableType:
    """The panel for a terminal of ``width`` x ``height`` cells: never taller, never wider."""
    title = f"coldwatch · {s.target}" if s.target else "coldwatch"
    if width < 20 or height < 4:
        return Group(*layout(s, max(width, 1), max(height, 1)))
    # rows stop one cell short of the padding: text that reaches the border was cut by someone else
    inner = layout(s, width - 5, height - 2)
    if len(title) > width - 6:
        title = title[: max(width - 7, 1)] + "…"
    return Panel(Group(*inner), title=title, title_align="left", box=box.ROUNDED, width=width, padding=(0, 1))
