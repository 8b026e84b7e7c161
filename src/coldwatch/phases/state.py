"""What the classifier knows and what it concludes: the timeline's spans, a failure, signals, the state.

Plain data shared by the classifier's parts (phase tracking, cause ranking, traceback reading);
pure, no clock, no I/O.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from coldwatch.phases.rules import PHASES

MAX_FRAMES = 64
"""Frames kept of the current traceback (the innermost ones: the deque drops the oldest, outermost first)."""


@dataclass(slots=True)
class Span:
    """One phase on the timeline: first entry to last exit, in log-clock seconds."""

    phase: str
    start: float | None
    end: float | None = None
    evidence: str = ""
    done: int | None = None
    total: int | None = None
    closed: bool = False
    """The phase has ended (its end time may still be unknown: a log without timestamps)."""
    ended: bool = False
    """Its own end marker was seen ('Graph capturing finished'), even if a later line re-entered it."""

    def as_dict(self) -> dict[str, Any]:
        return {"phase": self.phase, "start": self.start, "end": self.end}


@dataclass(slots=True)
class Failure:
    kind: str
    trigger: str
    rule: str
    t: float | None
    definitive: bool
    root: str | None = None
    phase: str | None = None
    rule_kind: str | None = None
    """The kind its rule gave, before refinement (refinement starts from it each time)."""
    later: str = ""
    """A later fatal line of the same failure (the engine's wrapper re-raising it: SGLang's 'Capture cuda
    graph failed: CUDA out of memory ...' after the kernel's own OOM): its words can place it."""
    context: str = ""
    """The lines just before it when it was recorded, and the lines after it while its cause is unnamed (a
    frame's source line naming the call that failed: 'self.NCCL_CHECK(self._funcs["ncclCommInitRank"](...)',
    a build's output after the engine's fatal site): its words can place it too."""

    @property
    def cause(self) -> str:
        return self.root or self.trigger


@dataclass(frozen=True, slots=True)
class Signal:
    """Something the classifier concluded: kind is phase | progress | failed | ready | warning | start."""

    kind: str
    t: float | None
    data: dict[str, Any]


@dataclass(slots=True)
class State:
    """Everything the classifier knows. Owned by one Classifier."""

    engine: str | None = None
    service: str = ""
    """The engine's container (compose's service, a kubectl pod): the one whose line named the engine, then
    the one whose line first moved the start. In a log of several containers another one's answered
    request is not the engine serving (a gateway's health checks)."""
    service_moved: bool = False
    phase: str = "starting"
    spans: dict[str, Span] = field(default_factory=dict)
    rank_phase: dict[str, str | None] = field(default_factory=dict)
    rank_flags: dict[str, set[str]] = field(default_factory=dict)
    count: dict[str, int] = field(default_factory=dict)
    lead: str | None = None
    failure: Failure | None = None
    ready: bool = False
    ready_t: float | None = None
    ready_evidence: str = ""
    frames: deque[str] = field(default_factory=lambda: deque(maxlen=MAX_FRAMES))
    """The current traceback's frames as 'PATH in FUNCTION', outermost first."""
    root_frames: list[str] = field(default_factory=list)
    """The frames of a traceback read after its failure's root was known (printed bare before it): they
    place the failure if the traceback ends on that same root."""
    frames_done: bool = False
    """The failure's own stack is complete (a later traceback is a consequence's: its frames are not the failure's)."""
    rank_prev: dict[str, str] = field(default_factory=dict)
    """The phase each rank left for the one it is in (a phase rule with ``resume`` returns it there)."""
    in_traceback: bool = False
    after_frame: bool = False
    """The line read last was a traceback frame: this one is its source line (code, not a message)."""
    source_line: bool = False
    """The line being read is a frame's source line ('from sglang.srt.mem_cache.memory_pool import SWAKVPool')."""
    frame_part: str = ""
    """The first half of a traceback frame that a wrap split over two lines."""
    call: str = ""
    """The call the last frame's source line makes ('self.load_model()'): where a traceback cut after it went."""
    lines: int = 0
    last_t: float | None = None
    last_line: str = ""
    last_record: str = ""
    """The last record as read (a record cut inside its process tag aside): whether the log ends on an error."""
    tb_prefix: str = ""
    """What preceded the last traceback header on its line (a wrapper's prefix: stripped from its exception line)."""
    cut: bool = False
    """The text shows it is an excerpt where a cause may be missing: frames without their header, a traceback cut at the end."""
    chain_next: bool = False
    """A chained-exception marker ('During handling of the above exception ...') was read: the next
    traceback is the outer one, whose frames show where the engine was when the first one was raised."""
    chain_at: int = -1
    """Inside that outer traceback: where its next frame goes (before the inner one's, outermost first)."""
    recent: deque[str] = field(default_factory=lambda: deque(maxlen=6))
    """The last lines read (a chain marker's lines before it are the first exception's message)."""
    chain_text: str = ""
    """The lines before a chain marker when the first exception's own line is not in the text (an excerpt
    that starts inside its message): its words can still say where it happened."""
    last_error: bool = False
    """The previous line was torch's 'Last error:' (ProcessGroupNCCL's getNcclErrorDetailStr): the next
    line is the collective library's own last error, the innermost one."""
    unraisable: int = 0
    """Lines left of Python's report of an exception it could not raise ('Exception ignored in: <function
    X.__del__ ...>', then a traceback and its exception line): no failure of the start."""
    unraisable_prefix: str = ""
    unraisable_tb: bool = False
    """Inside that report's traceback (its header line read)."""
    orphan_exc: str = ""
    """An exception line outside any traceback (another rank's, whose frames came before the excerpt
    or are interleaved with this one's): the cause of a traceback cut before its own exception line."""
    last_exc: tuple[str, int, str] | None = None
    """(line, line number, phase) of the latest exception line outside any traceback before a failure: a
    log that ends on it, the start not moved on since, ended with that exception (its traceback cut away,
    or never printed: an import that failed, a model architecture refused)."""
    cause: tuple[str, str] | None = None
    """(kind, line) of the latest line that explains a failure without being one (see [[cause]] rules)."""
    engine_timings: dict[str, float] = field(default_factory=dict)
    """The engine's own per-phase figures in seconds (SGLang's 'Engine startup timings (s): ...',
    'cuda_graph.decode' for nested ones; vLLM's '... took N s' lines, see [[timing]]): shown beside coldwatch's."""
    late_errors: int = 0
    """Fatal-looking lines after ready (they do not change a ready start; `status` reports them)."""
    late_error: str = ""

    def applies(self, engine: str) -> bool:
        """A rule for ``engine`` applies: any engine's ('*'), or the engine is not yet known or is it."""
        return engine == "*" or self.engine is None or engine == self.engine

    @property
    def outcome(self) -> str:
        """ready | failed | pending (a candidate failure is still pending)."""
        if self.ready:
            return "ready"
        if self.failure is not None and self.failure.definitive:
            return "failed"
        return "pending"

    def recent_text(self) -> str:
        """The last lines read, joined: a failure's context when it is recorded."""
        return " ".join(self.recent)[-1000:]

    def last_phase(self) -> str | None:
        """The phase to report: where a failure happened, else the latest phase reached."""
        if self.failure is not None and not self.ready and self.failure.phase:
            return self.failure.phase
        if self.phase == "starting":
            return "starting" if self.lines else None  # null only for a start without a line
        return self.phase

    def timeline(self) -> list[Span]:
        """The phases in the order they ran. A phase whose start is unknown (an excerpt without
        timestamps) sits where its place in the phase order puts it among the known ones."""
        spans = [s for s in self.spans.values() if s.phase != "starting" or s.closed]
        known = sorted((PHASES.index(s.phase), s.start) for s in spans if s.start is not None)

        def key(s: Span) -> tuple[float, int]:
            i = PHASES.index(s.phase)
            if s.start is not None:
                return (s.start, i)
            later = [start for j, start in known if j > i]
            return (min(later) if later else float("inf"), i)

        return sorted(spans, key=key)


class Outbox:
    """The signals of the call in progress; each entry point of the classifier starts a new list."""

    __slots__ = ("items",)

    def __init__(self) -> None:
        self.items: list[Signal] = []

    def emit(self, signal: str, t: float | None, **data: Any) -> None:
        self.items.append(Signal(signal, t, data))
