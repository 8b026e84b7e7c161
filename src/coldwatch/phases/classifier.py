"""The cold-start classifier: pure, no clock, no I/O.

``Classifier.feed(line)`` takes one normalised log line and returns the signals it caused
(phase changes, progress, failure, ready). Service and HTTP evidence arrive through
``note_ready`` and ``note_death``. The same object drives ``replay`` (log clock) and
``wait`` (monitor clock), so both reach the same verdict from the same lines.
"""

from __future__ import annotations

import re
import sys
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from coldwatch.normalise import LogLine
from coldwatch.phases.prefilter import prefilter
from coldwatch.phases.rules import PHASES, BarRule, RuleSet, builtin_rules, scoped
from coldwatch.phases.structure import structure_map

_NT = re.compile(r"(\d+)/(\d+)")
_NT_BARE = re.compile(r" +(\d+)/(\d+) \[")
_NAMED = re.compile(r"\(\?P<\w+>")
_TIMING = re.compile(r"(\w+)=(\{[^}]*\}|\d+(?:\.\d+)?)")


def parse_bar(text: str) -> tuple[str, int, int] | None:
    """A tqdm update ('desc: 37% Completed | 60/163 [...]' or 'desc:  14%|█▍ | 1/7 [...]') -> (desc, n, total)."""
    i = text.find("%")
    j = i
    while j > 0 and "0" <= text[j - 1] <= "9":
        j -= 1
    if j == i or i - j > 3:
        return None
    k = text.find("|", i + 1, i + 14)
    if k < 0:
        # no bar drawn ('[AutoTuner]: Tuning op:  50% 11/22 [06:15<07:51, 42.84s/profile]')
        m = _NT_BARE.match(text, i + 1)
        if m is None:
            return None
        return text[:j].rstrip().rstrip(":").strip(), int(m.group(1)), int(m.group(2))
    m = _NT.search(text, k)
    if m is None:
        return None
    gap = text[k + 1 : m.start()]
    if len(gap) > 80 and any(c.isalpha() for c in gap):
        return None  # a bar of any width is drawn in blocks, '#' or digits: letters mean it is no bar
    return text[:j].rstrip().rstrip(":").strip(), int(m.group(1)), int(m.group(2))


_FRAME = re.compile(r'(?:^|\s)File "?([^",]+)"?,? [Ll]ine \d+,? in (\w+)')
"""A traceback frame, wherever it sits in the line (behind a wrapper no rule strips)."""
_TB_HEAD = "Traceback (most recent call last)"
_CALL = re.compile(r"^(?:[\w.]+ = )?(?:self\.)?(?:\w+\.)*(\w+)\(")
_BARE_EXC = re.compile(r"^[\w.]+$")
_EXC = re.compile(r"^(?:[A-Za-z_]\w*\.)*\w*(?:Error|Exception|Exit|Interrupt|Failure)(?::|$)")
_CHAIN = ("During handling of the above exception", "The above exception was the direct cause")
_MAX_FRAMES = 64
_DIGITS = str.maketrans("", "", "0123456789")
MISS_BUDGET = 2 << 20
"""Bytes of remembered non-matching line shapes; the memory is cleared and refilled past it."""
MISS_LONGEST = 2048
"""Lines longer than this are searched every time, never remembered (they rarely repeat)."""


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
    frames: deque[str] = field(default_factory=lambda: deque(maxlen=_MAX_FRAMES))
    """The current traceback's frames as 'PATH in FUNCTION', outermost first."""
    frames_done: bool = False
    """The failure's own stack is complete (a later traceback is a consequence's: its frames are not the failure's)."""
    rank_prev: dict[str, str] = field(default_factory=dict)
    """The phase each rank left for the one it is in (a phase rule with ``resume`` returns it there)."""
    in_traceback: bool = False
    frame_part: str = ""
    """The first half of a traceback frame that a wrap split over two lines."""
    call: str = ""
    """The call the last frame's source line makes ('self.load_model()'): where a traceback cut after it went."""
    lines: int = 0
    last_t: float | None = None
    last_line: str = ""
    tb_prefix: str = ""
    """What preceded the last traceback header on its line (a wrapper's prefix: stripped from its exception line)."""
    cut: bool = False
    """The text shows it is an excerpt where a cause may be missing: frames without their header, a traceback cut at the end."""
    cause: tuple[str, str] | None = None
    """(kind, line) of the latest line that explains a failure without being one (see [[cause]] rules)."""
    engine_timings: dict[str, float] = field(default_factory=dict)
    """The engine's own per-phase figures in seconds (SGLang's 'Engine startup timings (s): ...',
    'cuda_graph.decode' for nested ones; vLLM's '... took N s' lines, see [[timing]]): shown beside coldwatch's."""
    late_errors: int = 0
    """Fatal-looking lines after ready (they do not change a ready start; `status` reports them)."""
    late_error: str = ""

    @property
    def outcome(self) -> str:
        """ready | failed | pending (a candidate failure is still pending)."""
        if self.ready:
            return "ready"
        if self.failure is not None and self.failure.definitive:
            return "failed"
        return "pending"

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


def _timings(text: str) -> dict[str, float]:
    """'Engine startup timings (s): load_weight=12.02, cuda_graph={prefill=22.96, decode=12.26}, ...' -> figures."""
    out: dict[str, float] = {}
    for key, value in _TIMING.findall(text.split(":", 1)[1]):
        if value.startswith("{"):
            for k2, v2 in _TIMING.findall(value[1:-1]):
                if not v2.startswith("{"):
                    out[f"{key}.{k2}"] = float(v2)
        else:
            out[key] = float(value)
    return out


def _is_zero_rank(rank: str) -> bool:
    digits = [c for c in rank if c.isdigit()]
    return bool(digits) and all(c == "0" for c in digits)


class Classifier:
    """Events in, state and signals out. Deterministic and pure."""

    def __init__(self, rules: RuleSet | None = None, engine: str | None = None) -> None:
        self.rules = rules or builtin_rules()
        self.state = State(engine=engine)
        patterns = [r.regex.pattern for r in self.rules.phase] + [r.regex.pattern for r in self.rules.failure]
        patterns += [r.regex.pattern for r in self.rules.start] + [r.regex.pattern for r in self.rules.cause]
        patterns += [r.regex.pattern for r in self.rules.warning] + [r.regex.pattern for r in self.rules.timing]
        self._structure = structure_map()
        self._warned: set[str] = set()
        joined = "|".join(f"(?:{_NAMED.sub('(?:', scoped(p))})" for p in patterns)  # names may repeat across rules
        self._any = re.compile(joined) if patterns else None
        self._pre = prefilter(patterns, self._any) if patterns else None
        # each rule's index in the prefilter's pattern list: a rule not in a line's hits cannot match it
        nf = len(self.rules.phase)
        self._at_failure = nf
        self._at_start = nf + len(self.rules.failure)
        self._at_cause = self._at_start + len(self.rules.start)
        self._at_warning = self._at_cause + len(self.rules.cause)
        self._at_timing = self._at_warning + len(self.rules.warning)
        self._detect = self.rules.detect
        self._out: list[Signal] = []
        self._bar_cache: dict[str, BarRule | None] = {}
        self._misses: set[str] = set()
        self._first_line = 0
        self._miss_bytes = 0

    # ---- helpers -----------------------------------------------------------------------
    def _emit(self, signal: str, t: float | None, **data: Any) -> None:
        self._out.append(Signal(signal, t, data))

    def _active(self, engine: str) -> bool:
        return engine == "*" or self.state.engine is None or engine == self.state.engine

    def _rank(self, line: LogLine) -> str:
        st = self.state
        rank = line.rank
        if rank:
            if st.lead is None and _is_zero_rank(rank):
                st.lead = rank
                if "" in st.rank_phase:  # untagged evidence so far belonged to rank 0
                    old = st.rank_phase.pop("")
                    flags = st.rank_flags.pop("", set())
                    st.rank_flags.setdefault(rank, set()).update(flags)
                    if old is not None and rank not in st.rank_phase:
                        st.rank_phase[rank] = old
                    elif old is not None:
                        self._dec(old, line.t)
            return rank
        return st.lead or ""

    def _dec(self, phase: str, t: float | None) -> None:
        st = self.state
        n = st.count.get(phase, 0) - 1
        st.count[phase] = max(n, 0)
        if n <= 0 and phase in st.spans:
            st.spans[phase].end = t
            st.spans[phase].closed = True

    def _enter(self, rank: str, phase: str, t: float | None, evidence: str) -> None:
        st = self.state
        prev = st.rank_phase.get(rank)
        if prev == phase:
            return
        if st.failure is not None and not st.failure.definitive:
            # the start went on after a traceback: it was not fatal; an OOM or collective error it
            # named stays the explanation of a later failure that names none (the first root error)
            self._emit("warning", t, message=f"start continued after: {st.failure.cause}")
            named = self._text_kind(st.failure.root) or self._text_kind(st.failure.trigger)
            if named in ("oom", "nccl") and st.cause is None:
                st.cause = (named, st.failure.cause[:500])
            st.failure = None
            st.frames_done = False
        if prev is not None:
            self._dec(prev, t)
            st.rank_prev[rank] = prev
        st.rank_phase[rank] = phase
        st.count[phase] = st.count.get(phase, 0) + 1
        st.frames.clear()
        span = st.spans.get(phase)
        new = span is None
        if span is None:
            st.spans[phase] = Span(phase, t, None, evidence)
        else:
            span.end, span.closed = None, False
        self._close_starting(t, evidence)
        if (new or st.lead is None or rank == st.lead or rank == "") and st.phase != phase:
            st.phase = phase
            self._emit("phase", t, phase=phase, rank=rank or None, evidence=evidence)

    def _close_starting(self, t: float | None, evidence: str) -> None:
        spans = self.state.spans
        span = spans.get("starting")
        if span is not None and not span.closed:
            if span.start == t and span.evidence == evidence[:200] and self.state.lines == self._first_line:
                del spans["starting"]  # the log's first line is already a phase: nothing came before it
            else:
                span.end, span.closed = t, True

    def _leave(self, rank: str, phases: tuple[str, ...], t: float | None, evidence: str, resume: bool = False) -> None:
        st = self.state
        cur = st.rank_phase.get(rank)
        if cur is not None and cur in phases:
            st.rank_phase[rank] = None
            self._dec(cur, t)
            back = st.rank_prev.pop(rank, None)
            if resume and back is not None and back not in phases:
                self._enter(rank, back, t, evidence)
            elif resume and st.phase == cur and st.count.get(cur, 0) == 0:
                # an untagged nested phase ended: the start is where its ranks still are
                still = [p for p, n in st.count.items() if n > 0 and p != "starting"]
                if still:
                    st.phase = max(still, key=PHASES.index)
                    self._emit("phase", t, phase=st.phase, rank=rank or None, evidence=evidence)
            return
        first = phases[0]
        if first not in st.spans:  # an end marker is evidence the phase happened
            st.spans[first] = Span(first, t, t, evidence, closed=True)
            self._close_starting(t, evidence)
            if st.phase == "starting" or PHASES.index(first) > PHASES.index(st.phase):
                st.phase = first
                self._emit("phase", t, phase=first, rank=rank or None, evidence=evidence)
        elif st.count.get(first, 0) == 0:
            # a span already closed by its own last line stays closed: a later summary line that ends
            # several phases at once ('max_total_num_tokens=' after capture) does not stretch it
            span = st.spans[first]
            if not span.closed:
                span.end, span.closed = t, True

    def _global(self, phase: str, t: float | None, evidence: str) -> None:
        st = self.state
        for rank, cur in list(st.rank_phase.items()):
            if cur is not None and cur != phase:
                st.rank_phase[rank] = None
                self._dec(cur, t)
        self._enter("", phase, t, evidence)
        for rank in list(st.rank_phase):
            if rank != "":
                st.rank_phase[rank] = phase
        st.count[phase] = len(st.rank_phase)
        if st.lead is not None:
            st.lead = None  # from here the main process speaks for all ranks

    def _fail(self, kind: str, rule: str, text: str, t: float | None, role: str) -> None:
        st = self.state
        f = st.failure
        if f is None:
            st.failure = Failure(kind, text, rule, t, definitive=(role != "candidate"))
            st.in_traceback = role == "candidate" or "Traceback" in text
            if role != "candidate" and not st.in_traceback:
                st.frames.clear()
            if st.failure.definitive:
                self._emit_failed(t)
            return
        if role == "fatal" and f.root is None and f.rule.endswith(("traceback", "exception_line", "sigquit")):
            f.trigger, f.rule, f.kind, f.rule_kind = text, rule, kind, kind
        elif role == "fatal" and f.root is not None and _BARE_EXC.match(f.root):
            # a bare exception name ("EOFError" from a pipe whose writer died) says less than the
            # engine's own fatal line that follows it ("Rank 0 scheduler died ... (exit code: -9)")
            f.root, f.trigger, f.rule, f.kind, f.rule_kind = text, text, rule, kind, kind
        if not f.definitive and role != "candidate":
            f.definitive = True
            self._emit_failed(t)

    def _emit_failed(self, t: float | None) -> None:
        f = self.state.failure
        assert f is not None
        self._refine(f)
        self._emit("failed", t, kind=f.kind, cause=f.cause, phase=self.state.last_phase())

    def _refine(self, f: Failure) -> None:
        """The failure's kind comes from its cause: the root exception, then the trigger, then what
        the frames show, then a line logged earlier that explains it; a consequence never decides it."""
        if f.rule_kind is None:
            f.rule_kind = f.kind
        f.kind = f.rule_kind
        kind = self._kind_of(f)
        if kind is not None:
            f.kind = kind
        elif f.root is None and self.state.cut and (f.rule in ("common.traceback", "common.cut_traceback") or _TB_HEAD in f.trigger):
            f.kind = "other"  # a traceback (bare or behind the engine's wrapper) whose exception line the excerpt does not hold
        elif self._consequence_only(f):
            # a consequence ("See root cause above") with no cause in the text: when the text is a
            # cut excerpt the cause is unknown; when it is whole, the process died without a word
            f.kind = "other" if self.state.cut else "killed"
        self._place(f)

    def _kind_of(self, f: Failure) -> str | None:
        kind = self._text_kind(f.root)
        if kind is not None:
            return kind
        if f.root:
            for r in self.rules.failure:
                if r.role == "fatal" and r.kind != "exception" and self._active(r.engine) and r.regex.search(f.root):
                    return r.kind
        kind = self._text_kind(f.trigger)
        if f.root is None and kind in (None, "other"):
            # no exception line: where it died says more than a signal's name ('Fatal Python error: Aborted')
            kind = self._frame_kind() or self._crash_site() or kind
        if kind is not None:
            return kind
        if self.state.cause is not None and (f.root is None or self._consequence_only(f)):
            return self.state.cause[0]
        return None

    def _crash_site(self) -> str | None:
        """A signal's own report of where it struck ('PC: @ 0x7fcf... (unknown) addProxyOpIfNeeded()',
        a native frame of the collective library): the innermost error decides the kind."""
        c = self.state.cause
        return c[0] if c is not None and c[1].startswith("PC: @") else None

    def _consequence_only(self, f: Failure) -> bool:
        """The failure's only text is a consequence of something not logged (or not in the excerpt)."""
        consequences = [r for r in self.rules.failure if r.role == "consequence" and self._active(r.engine)]
        if f.root:
            # the launcher's EOFError: the pipe's writer (a scheduler) died; that death is the cause
            return f.root.startswith("EOFError") or any(r.regex.search(f.root) for r in consequences)
        return any(r.id == f.rule for r in consequences)

    def _text_kind(self, text: str | None) -> str | None:
        if text:
            for k in self.rules.kind:
                if k.regex.search(text):
                    return k.label
        return None

    def _frame_kind(self) -> str | None:
        for rule in self.rules.frame_kind:
            for frame in self.state.frames:
                if rule.regex.search(frame):
                    return rule.label
        return None

    def _place(self, f: Failure) -> None:
        """Put the failure in a phase: its traceback's frames first, else the current phase."""
        st = self.state
        f.phase = self._frame_phase() or self._log_phase() or self.rules.kind_phase.get(f.kind)
        if f.phase is not None and f.phase not in st.spans:
            st.spans[f.phase] = Span(f.phase, f.t, f.t, "traceback frame", closed=True)

    def _log_phase(self) -> str | None:
        """Where the log says the start is; a kernel being built during capture or warm-up is still in
        capture or warm-up (the phase is where the engine was, the kernel is the cause)."""
        st = self.state
        if st.phase == "starting":
            return None
        if st.phase == "jit_compile":
            outer = st.rank_prev.get(st.lead or "")
            if outer in ("graph_capture", "warmup"):
                return outer
        return st.phase

    def _frame_phase(self) -> str | None:
        """The engines' structure first (the generated map), then the hand-written frame rules for
        what it cannot say (plugins, wrappers, paths that are not the engine's package)."""
        frames = self.state.frames
        if not frames:
            return None
        phase, jit = self._structure.stack([tuple(f.rsplit(" in ", 1)) for f in frames])  # type: ignore[misc]
        if phase is not None:
            return phase
        if jit:  # a kernel being built or tuned: the phase is where the log says the start was
            return self._log_phase() or "jit_compile"
        for rule in self.rules.frame:
            for frame in frames:
                if rule.regex.search(frame):
                    return rule.label
        return None

    # ---- events ------------------------------------------------------------------------
    def feed(self, line: LogLine) -> list[Signal]:
        """One log line in; the signals it caused out."""
        self._out = []
        st = self.state
        st.lines += 1
        t = line.t
        if t is not None:
            st.last_t = t
        text = line.text
        if not text:
            return self._out
        first = st.spans.get("starting")
        if first is None:
            if not self._first_line:
                st.spans["starting"] = Span("starting", t, None, text[:200])
                self._first_line = st.lines
        elif t is not None and first.start is None:
            first.start = t
        if st.engine is None:
            for eng, rx in self._detect.items():
                if rx.search(line.raw):
                    st.engine = eng
                    break
        if st.ready:  # errors and shutdown after ready do not change a ready start; they are counted
            late = self._pre.which(text) if self._pre is not None else set()
            if late:
                base = self._at_failure
                for k, fr in enumerate(self.rules.failure):
                    if fr.role == "fatal" and self._active(fr.engine) and base + k in late:
                        st.late_errors += 1
                        st.late_error = text[:500]
                        break
            return self._out
        st.last_line = text[:500]
        self._traceback(text, t)
        if "%" in text:
            bar = parse_bar(text)
            if bar is not None:
                self._bar(line, *bar, t)
                return self._out
        if st.phase == "starting" and st.failure is None and ".py:" in line.raw:
            # before any marker a rule knows: the module a vLLM line was logged from names its phase
            tagged = self._structure.tag_phase(line.raw)
            if tagged is not None:
                self._enter(self._rank(line), tagged, t, text)
        hits: set[int] = set()
        if self._pre is not None:
            # lines that differ only in numbers match the same rules: remember the misses
            shape = text.translate(_DIGITS) if len(text) <= MISS_LONGEST else None
            if shape is not None and shape in self._misses:
                return self._out
            hits = self._pre.which(text)
            if not hits:
                if shape is not None:
                    size = sys.getsizeof(shape)
                    if self._miss_bytes + size > MISS_BUDGET:
                        self._misses.clear()
                        self._miss_bytes = 0
                    self._misses.add(shape)
                    self._miss_bytes += size
                return self._out
        for k, sr in enumerate(self.rules.start):
            if self._at_start + k in hits and self._active(sr.engine):
                self._emit("start", t, rule=sr.id, evidence=text[:200])
                break
        for k, cr in enumerate(self.rules.cause):
            if self._at_cause + k in hits:
                st.cause = (cr.label, text[:500])
                break
        for k, wr in enumerate(self.rules.warning):
            if self._at_warning + k in hits and wr.label not in self._warned:
                self._warned.add(wr.label)
                self._emit("warning", t, message=f"{wr.label}: {text[:200]}")
        if text.startswith("Engine startup timings (s):"):
            st.engine_timings = _timings(text)
        for k, tr in enumerate(self.rules.timing):
            if self._at_timing + k in hits and (m := tr.regex.search(text)) is not None:
                st.engine_timings[tr.label] = float(m.group("s"))
                if "s2" in tr.regex.groupindex and m.group("s2") and "key2" in tr.regex.groupindex:
                    st.engine_timings[m.group("key2")] = float(m.group("s2"))
        rank = self._rank(line)
        for k, fr in enumerate(self.rules.failure):
            if self._at_failure + k in hits and self._active(fr.engine):
                self._fail(fr.kind, fr.id, text, t, fr.role)
                break
        flags = st.rank_flags.setdefault(rank, set())
        for k, rule in enumerate(self.rules.phase):
            if k not in hits or not self._active(rule.engine):
                continue
            if rule.requires and rule.requires not in flags:
                continue
            if rule.unless and rule.unless in flags:
                continue
            if rule.early and rule.enter and PHASES.index(st.phase) > PHASES.index(rule.enter):
                continue
            if st.failure is not None and st.failure.definitive:
                break  # after a failure the timeline stops; only the cause is refined
            cur = st.rank_phase.get(rank)
            if rule.stay_in and cur in rule.stay_in:
                pass
            elif rule.is_global and rule.enter:
                self._global(rule.enter, t, text)
                if rule.enter == "ready":
                    st.ready, st.ready_t = True, t
                    st.ready_evidence = text
                    self._emit("ready", t, evidence=text, source="log")
            elif rule.enter:
                self._enter(rank, rule.enter, t, text)
            elif rule.end:
                self._leave(rank, rule.end, t, text, rule.resume)
            if rule.sets:
                flags.add(rule.sets)
            if rule.enter or rule.end:
                break
        return self._out

    def _traceback(self, text: str, t: float | None) -> None:
        st = self.state
        part = st.frame_part
        if part:  # a frame split over two lines (a terminal's or a paste's wrap)
            st.frame_part = ""
            for joined in (part + text, part + " " + text):
                if _FRAME.search(joined):
                    text = joined
                    break
        if 'File "' in text or text.startswith("File "):
            m = _FRAME.search(text)
            if m is None and st.in_traceback and len(text) < 600 and text.lstrip().startswith('File "') and "line" not in text[-12:]:
                st.frame_part = text[text.find("File") :]
                return
            if m:
                st.call = ""
                if not st.in_traceback:
                    st.cut = True  # frames without their header: the paste starts mid-traceback
                f = st.failure
                if (f is None or f.root is None) and not st.frames_done:
                    st.frames.append(f"{m.group(1)} in {m.group(2)}")
                    if f is not None and f.definitive:
                        self._refine(f)  # the frames may say what failed and where
                st.in_traceback = True
                return
        i = text.find(_TB_HEAD) if "Traceback" in text else -1
        if i >= 0 or text.startswith(("Current thread 0x", "Thread 0x", "Stack (most recent call first)")):
            f = st.failure
            if f is not None and f.definitive and st.frames:
                st.frames_done = True  # e.g. a faulthandler dump, then the parent's traceback about it
            elif f is None or f.root is None:
                st.frames.clear()
            st.in_traceback = True
            st.tb_prefix = text[:i] if i > 0 else ""
            return
        if text.startswith(_CHAIN):
            st.in_traceback = True
            return
        if not st.in_traceback:
            return
        if st.frames and (c := _CALL.match(text)) is not None:
            st.call = c.group(1)  # the source line of the last frame: the call it was making
        if st.tb_prefix and text.startswith(st.tb_prefix):
            text = text[len(st.tb_prefix) :].lstrip()
        if _EXC.match(text):
            st.in_traceback = False
            f = st.failure
            if f is None:
                st.failure = Failure("exception", text, "common.exception_line", t, definitive=False, root=text)
            elif f.root is None:
                f.root = text
                if f.definitive:
                    self._refine(f)
                    self._emit("failed", t, kind=f.kind, cause=f.cause, phase=st.last_phase())

    def _bar_rule(self, desc: str) -> BarRule | None:
        """The bar rule for a description, cached by its stem ('Capturing batches (bs=..)' -> 'Capturing batches')."""
        key = desc.split(" (", 1)[0]
        if key in self._bar_cache:
            return self._bar_cache[key]
        found = None
        for rule in self.rules.bar:
            if self._active(rule.engine) and rule.regex.search(desc):
                found = rule
                break
        if self.state.engine is not None:  # rules depend on the engine once it is known
            self._bar_cache[key] = found
        return found

    def _bar(self, line: LogLine, desc: str, done: int, total: int, t: float | None) -> None:
        st = self.state
        if st.failure is not None and st.failure.definitive:
            return
        rank = self._rank(line)
        cur = st.rank_phase.get(rank)
        phase = cur or (st.phase if st.phase != "starting" else None)
        rule = self._bar_rule(desc) if desc else None
        if rule is not None:
            phase = rule.phase
            if rule.stay_in and cur in rule.stay_in:
                phase = cur
            elif cur != rule.phase:
                self._enter(rank, rule.phase, t, line.text)
            if (
                rule.complete_enter
                and done >= total > 0
                and st.rank_phase.get(rank) == rule.phase
                and (rule.complete_requires is None or rule.complete_requires in st.rank_flags.get(rank, ()))
            ):
                self._enter(rank, rule.complete_enter, t, line.text)
        if phase is None:
            return
        span = st.spans.get(phase)
        if span is not None:
            span.done, span.total = done, total
        self._out.append(Signal("progress", t, {"phase": phase, "done": done, "total": total, "desc": desc}))

    # ---- evidence from outside the log -------------------------------------------------
    def note_ready(self, t: float | None, evidence: str) -> list[Signal]:
        """The HTTP ladder proved readiness (a good completion)."""
        self._out = []
        st = self.state
        if not st.ready:
            self._global("ready", t, evidence)
            st.ready, st.ready_t = True, t
            st.ready_evidence = evidence
            st.failure = None if (st.failure and not st.failure.definitive) else st.failure
            self._emit("ready", t, evidence=evidence, source="http")
        return self._out

    def note_activity(self, t: float | None, phase: str, evidence: str) -> list[Signal]:
        """Evidence from outside the log that a phase is running (a JIT compiler child process)."""
        self._out = []
        st = self.state
        if not st.ready and not (st.failure and st.failure.definitive) and st.phase != phase:
            self._enter(st.lead or "", phase, t, evidence)
        return self._out

    def note_death(self, t: float | None, kind: str, reason: str) -> list[Signal]:
        """The server process or unit is gone: a pending cause becomes the verdict."""
        self._out = []
        st = self.state
        if st.ready:
            return self._out
        if st.failure is None:
            st.failure = Failure(kind, reason, "service", t, definitive=True)
            self._emit_failed(t)
        elif not st.failure.definitive:
            st.failure.definitive = True
            self._emit_failed(t)
        return self._out

    def finish(self) -> list[Signal]:
        """End of the log: a pending traceback is the cause of a failure; a traceback cut before its
        exception line is a failure whose phase and kind come from its frames."""
        self._out = []
        st = self.state
        if st.ready:
            return self._out
        f = st.failure
        if st.in_traceback and (f is None or f.root is None):
            st.cut = True
            if st.call and st.frames and not st.frames_done:
                st.frames.append(f"(call) in {st.call}")  # cut after the source line: the call it made
            if f is None:
                st.failure = f = Failure("other", "traceback cut before its exception line", "common.cut_traceback", st.last_t, False)
        if f is not None and not f.definitive:
            f.definitive = True
            self._emit_failed(st.last_t)
        elif f is not None and st.cut and f.root is None:
            self._refine(f)
        return self._out


def step(state: State, line: LogLine, rules: RuleSet | None = None) -> State:
    """Functional form: feed one line to a classifier holding ``state``; returns the state."""
    c = Classifier(rules)
    c.state = state
    c.feed(line)
    return c.state
