"""The per-phase ETA: how long a cold start still needs, from the history of earlier starts.

Pure: records and the time come in as arguments; no clock, no I/O.

A start is cut into consecutive *segments*, one per phase: from the phase's first entry to the next
phase's first entry (the last one ends at ready). Phase spans overlap (kv_alloc holds the graph
capture, the draft's own load re-enters dist_init), segments never do, so their medians add up to a
start's usual total. At time ``now`` in phase P the remaining time is

    max(median(P) - time spent in P, floor)  +  the medians of every phase not entered yet

and, while P shows a progress bar (shards, batches) or the server's read rate covers the weights
left, P's share is the bar's own estimate instead once enough of it has been measured.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from coldwatch.phases.rules import PHASES

FLOOR_S = 1.0
FLOOR_SHARE = 0.05
"""The current phase is never given less than max(FLOOR_S, FLOOR_SHARE x its median): it has not ended."""
MEASURED_SHARE = 0.1
"""A bar's rate is trusted once it covered this share of its total (and MEASURED_S seconds)."""
MEASURED_S = 2.0
WHOLE_PHASE_BARS = ("weight_load",)
"""Phases whose progress bar (or the weights' bytes) covers the whole phase."""

_MODEL = re.compile(r"\bmodel(?:_path)?='([^']{1,300})'")
_TP = re.compile(r"\b(?:tp_size|tensor_parallel_size)=(\d{1,4})\b")


@dataclass(frozen=True, slots=True)
class Baseline:
    """Median seconds per phase segment over earlier ready starts, and where they came from."""

    segments: dict[str, float]
    total: float | None
    source: str  # "target": this target's own starts | "model": the same model and TP elsewhere
    starts: int


@dataclass(frozen=True, slots=True)
class Estimate:
    """Seconds left until ready, at ``t``."""

    remaining: float
    phase: str
    basis: str  # "history": the phase's median | "progress": the phase's own bar or read rate
    source: str
    starts: int

    def as_event(self) -> dict[str, Any]:
        return {
            "remaining_s": round(self.remaining, 1),
            "phase": self.phase,
            "basis": self.basis,
            "history": self.source,
            "starts": self.starts,
        }


def segments(record: Mapping[str, Any]) -> dict[str, float] | None:
    """Phase -> seconds from its first entry to the next phase's, for one history record.

    Needs the record's phase starts (``starts``, written since the per-phase ETA); an older record
    gives None and counts only towards the total."""
    starts = record.get("starts")
    total = record.get("total")
    if not isinstance(starts, dict) or not isinstance(total, int | float) or isinstance(total, bool):
        return None
    marks = sorted(
        (float(t), _rank(str(ph)), str(ph))
        for ph, t in starts.items()
        if isinstance(t, int | float) and not isinstance(t, bool) and ph != "ready"
    )
    if not marks:
        return None
    out: dict[str, float] = {}
    for i, (t, _, ph) in enumerate(marks):
        end = marks[i + 1][0] if i + 1 < len(marks) else float(total)
        out[ph] = out.get(ph, 0.0) + max(end - t, 0.0)
    return out


def select(records: Iterable[Mapping[str, Any]], target: str, model: str | None = None, tp: int | None = None) -> Baseline | None:
    """The baseline from this target's ready starts; else from ready starts of the same model (and
    TP when known) on other targets; else None."""
    ready = [r for r in records if r.get("outcome") == "ready"]
    mine = [r for r in ready if r.get("target") == target]
    source = "target"
    if not mine and model:
        mine = [
            r
            for r in ready
            if model in (r.get("model"), r.get("model_path")) and (tp is None or r.get("tp") == tp) and r.get("target") != target
        ]
        source = "model"
    if not mine:
        return None
    per: dict[str, list[float]] = {}
    totals: list[float] = []
    n = 0  # records with phase starts (older ones give only their total)
    for r in mine:
        total = r.get("total")
        if isinstance(total, int | float) and not isinstance(total, bool):
            totals.append(float(total))
        segs = segments(r)
        if segs is not None:
            n += 1
            for ph, secs in segs.items():
                per.setdefault(ph, []).append(secs)
    if not totals:
        return None
    # a phase seen in only some starts counts its median scaled by how often it happened
    segs = {ph: statistics.median(v) * min(len(v) / n, 1.0) for ph, v in per.items()}
    return Baseline(segs, statistics.median(totals), source, len(mine))


@dataclass(frozen=True, slots=True)
class BarRate:
    """A progress bar (or the weights' bytes) measured from its first sample to its latest."""

    phase: str
    t0: float
    done0: float
    t: float
    done: float
    total: float

    def left(self) -> float | None:
        """Seconds to the bar's end at its measured rate; None until enough of it was measured."""
        if self.total <= 0 or self.done <= self.done0 or self.t - self.t0 < MEASURED_S:
            return None
        if (self.done - self.done0) < MEASURED_SHARE * self.total:
            return None
        if self.done >= self.total:
            return None  # the bar is full; what follows in the phase is not measured
        rate = (self.done - self.done0) / (self.t - self.t0)
        return (self.total - self.done) / rate


def _rank(phase: str) -> int:
    return PHASES.index(phase) if phase in PHASES else len(PHASES)


def current_phase(entered: Mapping[str, float]) -> str:
    """The phase whose segment runs now: the latest entered (ties in the phases' usual order)."""
    if not entered:
        return "starting"
    return max(entered, key=lambda ph: (entered[ph], _rank(ph)))


def estimate(base: Baseline, entered: Mapping[str, float], now: float, bar: BarRate | None = None) -> Estimate:
    """Seconds left at ``now``: ``entered`` maps each phase this start reached to its first entry;
    ``bar`` is a progress bar (or the weights' bytes) of the phase now, when it shows one."""
    current = current_phase(entered)
    if current == "ready":
        return Estimate(0.0, current, "history", base.source, base.starts)
    spent = max(now - entered.get(current, now), 0.0)
    med = base.segments.get(current)
    basis = "history"
    # a phase the history never saw here: nothing to say about it but that it has not ended
    cur = FLOOR_S if med is None else max(med - spent, FLOOR_S, FLOOR_SHARE * med)
    if bar is not None and bar.phase == current:
        left = bar.left()
        if left is not None and (current in WHOLE_PHASE_BARS or med is None or left > cur):
            # a load's bar (shards, bytes) spans its phase: its rate says when the phase ends; other
            # bars (capture batches, JIT) are one part of theirs: they only say it lasts at least that long
            cur, basis = max(left, 0.0), "progress"
    rest = sum(secs for ph, secs in base.segments.items() if ph not in entered and ph != current)
    return Estimate(cur + rest, current, basis, base.source, base.starts)


def total_based(base: Baseline | None, now: float) -> float | None:
    """Today's estimate, for comparison: the usual total minus the time elapsed."""
    if base is None or base.total is None:
        return None
    return max(base.total - now, 0.0)


_VERSION = (re.compile(r"vLLM API server version ([\w.+-]{1,40})"), re.compile(r"LLM engine \(v([\w.+-]{1,40})\)"))


def launch_version(text: str) -> str | None:
    """The engine version a start's banner names (vLLM's API server and engine lines)."""
    for pattern in _VERSION:
        m = pattern.search(text)
        if m:
            return m.group(1)
    return None


def launch_info(text: str) -> tuple[str | None, int | None]:
    """The model path and TP size a server's argument banner names (SGLang ServerArgs, vLLM args)."""
    m = _MODEL.search(text)
    t = _TP.search(text)
    return (m.group(1) if m else None), (int(t.group(1)) if t else None)


EVERY_S = 5.0
"""An ``eta`` event at most this often, besides one at every phase change."""


class Tracker:
    """The judge's ETA state for one start: the baseline, the bars seen, when it last spoke.

    Pure like the judge: every method takes the time; nothing reads a clock."""

    def __init__(
        self, records: list[dict[str, Any]], target: str, learn: bool = False, model: str | None = None, total: float | None = None
    ) -> None:
        self.records = records
        self.target = target
        self.model = model
        self.tp: int | None = None
        self.base = select(records, target, model) if records else None
        if self.base is None and total is not None:
            # only a usual total is known (no per-phase records): today's estimate
            self.base = Baseline({}, total, "target", 0)
        self.want_launch = learn
        """Read the launch banner for the model and TP (the fallback baseline, the history record)."""
        self.bars: dict[str, BarRate] = {}
        self.last: tuple[float, str] | None = None

    def line(self, text: str) -> None:
        """A log line: the launch banner names the model and TP (same-model fallback, history record)."""
        if "model" not in text and "tp_size" not in text and "parallel_size" not in text:
            return
        model, tp = launch_info(text)
        if model is None and tp is None:
            return
        self.model = self.model or model
        self.tp = self.tp or tp
        if self.records and (self.base is None or self.base.source != "target"):
            base = select(self.records, self.target, self.model, self.tp)
            if base is not None:
                self.base = base
        if self.model is not None and self.tp is not None:
            self.want_launch = False

    def progress(self, phase: str, done: float, total: float, t: float) -> None:
        """A progress bar's (or the weights' bytes') state at ``t``; a new bar restarts the measure."""
        old = self.bars.get(phase)
        if old is None or old.total != total or done < old.done:
            self.bars[phase] = BarRate(phase, t, done, t, done, total)
        else:
            self.bars[phase] = BarRate(phase, old.t0, old.done0, t, done, total)

    def estimate(self, entered: Mapping[str, float], now: float) -> Estimate | None:
        if self.base is None:
            return None
        if not self.base.segments:
            left = total_based(self.base, now) or 0.0
            return Estimate(left, current_phase(entered), "total", self.base.source, self.base.starts)
        return estimate(self.base, entered, now, self.bars.get(current_phase(entered)))

    def due(self, entered: Mapping[str, float], now: float) -> Estimate | None:
        """The estimate when an ``eta`` event is due (a new phase, or EVERY_S since the last)."""
        est = self.estimate(entered, now)
        if est is None:
            return None
        if self.last is not None and self.last[1] == est.phase and now - self.last[0] < EVERY_S:
            return None
        self.last = (now, est.phase)
        return est
