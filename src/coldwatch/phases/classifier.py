"""The cold-start classifier: pure, no clock, no I/O.

``Classifier.feed(line)`` takes one normalised log line and returns the signals it caused
(phase changes, progress, failure, ready). Service and HTTP evidence arrive through
``note_ready`` and ``note_death``. The same object drives ``replay`` (log clock) and
``wait`` (monitor clock), so both reach the same verdict from the same lines.

The classifier routes each line; its parts do the work: ``tracker`` (which phase each rank is in,
the spans), ``tracebacks`` (frames and exception lines), ``causes`` (a failure's kind and phase).
"""

from __future__ import annotations

import re
import sys
from dataclasses import replace

from coldwatch.normalise import LogLine, service_of
from coldwatch.phases.causes import CauseRanker
from coldwatch.phases.prefilter import Prefilter, prefilter
from coldwatch.phases.rules import RuleSet, builtin_rules, scoped
from coldwatch.phases.state import Failure, Outbox, Signal, Span, State
from coldwatch.phases.structure import MESSAGE_KEY, structure_map
from coldwatch.phases.tracebacks import TracebackReader
from coldwatch.phases.tracker import PhaseTracker

__all__ = ["MISS_BUDGET", "MISS_LONGEST", "Classifier", "Failure", "Signal", "Span", "State", "parse_bar", "step"]

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
            if text[j - 1 : j] in (" ", "\t") and not text[i + 1 :].strip() and text[:j].rstrip().endswith(":"):
                return text[:j].rstrip().rstrip(":").strip(), int(text[j:i]), 100  # its percent alone ('shards: 100%')
            return None
        return text[:j].rstrip().rstrip(":").strip(), int(m.group(1)), int(m.group(2))
    m = _NT.search(text, k)
    if m is None:
        if text[k + 1 :].strip(_BAR_DRAWN) or len(text) - k > 120:
            return None
        # cut after its bar, before the counts ('Capturing batches (bs=2 avail_mem=14.40 GB):   0%|'): its percent
        return text[:j].rstrip().rstrip(":").strip(), int(text[j:i]), 100
    gap = text[k + 1 : m.start()]
    if len(gap) > 80 and any(c.isalpha() for c in gap):
        return None  # a bar of any width is drawn in blocks, '#' or digits: letters mean it is no bar
    return text[:j].rstrip().rstrip(":").strip(), int(m.group(1)), int(m.group(2))


_BAR_DRAWN = " #▏▎▍▌▋▊▉█"
"""What a tqdm bar is drawn with, between its '|'s."""
_DIGITS = str.maketrans("", "", "0123456789")
MISS_BUDGET = 2 << 20
"""Bytes of remembered non-matching line shapes; the memory is cleared and refilled past it."""
MISS_LONGEST = 2048
HIT_SHAPES = 4096
"""Line shapes whose rule hits are remembered (cleared when full)."""
"""Lines longer than this are searched every time, never remembered (they rarely repeat)."""
_VALUE_CLASS = re.compile(r"((?:\\.|[^\\\[\](){}|*+?^$])+)\[[1-9]-\d\]")
"""A rule's literal text right before a digit class that leaves out 0 ('Running: [1-9]', 'status=[1-9]'):
lines that differ only there do not match the same rules."""


def value_cues(patterns: list[str]) -> tuple[str, ...]:
    """The literal text before each digit class of ``patterns`` that depends on a number's value: a line
    that holds one is never remembered by its shape ('Running: 0 reqs' misses where 'Running: 1 reqs' hits)."""
    cues = set()
    for p in patterns:
        for m in _VALUE_CLASS.finditer(p):
            cue = re.sub(r"\\(.)", r"\1", m.group(1))[-12:].strip()
            if cue:
                cues.add(cue)
    return tuple(sorted(cues))


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


class Classifier:
    """Events in, state and signals out. Deterministic and pure."""

    def __init__(self, rules: RuleSet | None = None, engine: str | None = None) -> None:
        self.rules = rules or builtin_rules()
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
        self._box = Outbox()
        self._hits = _ShapeHits(self._pre, value_cues(patterns)).hits
        self._state = state = State(engine=engine)
        self._causes = CauseRanker(self.rules, state, self._structure, self._box)
        self._tracker = PhaseTracker(self.rules, state, self._causes, self._box)
        self._tracebacks = TracebackReader(state, self._causes, self._box)
        self._held: LogLine | None = None

    @property
    def state(self) -> State:
        """Everything the classifier knows (its parts share it)."""
        return self._state

    @state.setter
    def state(self, state: State) -> None:
        self._state = self._causes.state = self._tracker.state = self._tracebacks.state = state

    # ---- events ------------------------------------------------------------------------
    def feed(self, line: LogLine) -> list[Signal]:
        """One log line in; the signals it caused out. An exception's type alone on its line ('ValueError:',
        its message wrapped onto the next) waits for that line and is read with it."""
        held, self._held = self._held, None
        if held is not None:
            nxt = line.text.strip()
            if nxt and not nxt.startswith(("Traceback", 'File "')) and _EXC_HEAD.fullmatch(nxt) is None:
                return self._feed(replace(held, text=f"{held.text} {nxt}", raw=f"{held.raw} {nxt}"))
            first = self._feed(held)
            return first + self.feed(line)
        if line.text.endswith(":") and _EXC_HEAD.fullmatch(line.text) is not None:
            self._held = line
            return []
        return self._feed(line)

    def _feed(self, line: LogLine) -> list[Signal]:
        out = self._box.items = []
        st = self._state
        st.lines += 1
        t = line.t
        if t is not None:
            st.last_t = t
        text = line.text
        if not text:
            return out
        self._starting(text, t)
        if st.engine is None:
            self._detect_engine(line.raw)
            if st.engine is not None and not st.service:
                st.service = service_of(line.raw)  # (until a line moves the start: its container is the engine's)
            if st.engine == "vllm":
                self._tracker.uvicorn_was_ready()
        if st.ready:  # errors and shutdown after ready do not change a ready start; they are counted
            self._late(text)
            return out
        if self._tracebacks.ignored(text):
            return out
        if "ERROR" in line.raw and st.applies("vllm") and self._structure.serving_site(line.raw) is not None:
            self._tracker.served(t, text)  # an error while it served a request: the API server was up
            return out
        st.last_line = text[:500]
        if not (text.startswith("(") and ")" not in text and len(text) < 60):  # (not a process tag cut off: '(VllmWorker rank=1')
            st.last_record = line.raw
        self._tracebacks.read(text, t)
        if "%" in text:
            bar = parse_bar(text)
            if bar is not None:
                self._tracker.bar(line, *bar, t)
                return out
        self._tracker.not_bar()
        if st.failure is None:
            self._named_phase(line)
        f = st.failure
        if f is not None and not f.definitive and f.rule == "common.nccl_error_path" and text.endswith(" - Init COMPLETE"):
            # NCCL's error path inside its set-up ('NCCL INFO plugin/net.cc:118 -> 2': a network plugin it
            # probed and passed over), then the communicator built ('ncclCommInitRank comm ... - Init COMPLETE')
            self._tracker.went_on(t)
        hits = self._hits(text)
        if hits is None:
            self._error_site(line)
            return out
        self._notes(hits, text, t)
        rank = self._tracker.rank(line)
        for i in sorted(i for i in hits if self._at_failure <= i < self._at_start):  # (in the rules' order)
            fr = self.rules.failure[i - self._at_failure]
            if st.applies(fr.engine):
                self._causes.fail(fr.kind, fr.id, text, t, fr.role)
                break
        else:
            self._error_site(line)
        if not st.source_line:  # a frame's source line is code: its words name no step of the start
            self._apply_phases(line, hits, rank)
        return out

    def _named_phase(self, line: LogLine) -> None:
        """The module a vLLM line was logged from names its phase: before any marker a rule knows, and
        later where it names a phase further on (see _tag_moves_on); SGLang's lines name no module: the
        message names the code that logs it (the same rule)."""
        st, text = self._state, line.text
        if ".py:" in line.raw:
            said = self._structure.tag_phase(line.raw)
        elif st.engine != "vllm" and len(text) >= MESSAGE_KEY:
            said = self._structure.message_phase(text)
        else:
            return
        if said is not None and (st.phase == "starting" or _tag_moves_on(st.phase, said)):
            self._tracker.enter(self._tracker.rank(line), said, line.t, text)

    def _apply_phases(self, line: LogLine, hits: set[int], rank: str) -> None:
        """The line's phase rules, unless it is another container's request answered (a gateway's health
        check is not the engine serving); the container whose line first moves the start is the engine's."""
        st = self._state
        svc = service_of(line.raw)
        if svc and st.service and svc != st.service and _enters_ready(self.rules, hits):
            return
        before = st.phase
        self._tracker.apply(rank, hits, line.text, line.t, summary=_ray_summary(line.raw))
        if svc and not st.service_moved and st.phase != before:
            st.service, st.service_moved = svc, True

    def _starting(self, text: str, t: float | None) -> None:
        """The start's first line opens `starting`; a stamp seen later gives it its start time."""
        st = self._state
        first = st.spans.get("starting")
        if first is None:
            if not self._tracker.first_line:
                st.spans["starting"] = Span("starting", t, None, text[:200])
                self._tracker.first_line = st.lines
        elif t is not None and first.start is None:
            first.start = t

    def _error_site(self, line: LogLine) -> None:
        """An ERROR line logged at one of vLLM's fatal sites (the structure map's error_sites, read from
        its source) that is not a traceback's own line: the start is failing (the message, or one line
        of it, is what it says)."""
        if "ERROR" not in line.raw:
            return
        st = self._state
        if st.failure is not None and st.failure.definitive:
            return
        text = line.text
        if not text or text[0].isspace() or text.startswith(("Traceback", "File ", "^", "~")) or st.in_traceback:
            return
        if st.applies("vllm") and self._structure.error_site(line.raw) is not None:
            self._causes.fail("exception", "vllm.error_site", text, line.t, "fatal")
        elif st.failure is None and not st.orphan_exc and st.applies("vllm") and self._structure.exception_site(line.raw):
            # the engine logged what it caught (logger.exception(e)): the message of the exception whose
            # traceback follows, an exception line without its type should the traceback be cut
            st.orphan_exc = text

    def _detect_engine(self, raw: str) -> None:
        for eng, rx in self._detect.items():
            if rx.search(raw):
                self._state.engine = eng
                break

    def _late(self, text: str) -> None:
        """A line after ready: a fatal-looking one is counted (it does not change a ready start)."""
        late = self._pre.which(text) if self._pre is not None else set()
        if late:
            st = self._state
            base = self._at_failure
            for k, fr in enumerate(self.rules.failure):
                if fr.role == "fatal" and st.applies(fr.engine) and base + k in late:
                    st.late_errors += 1
                    st.late_error = text[:500]
                    break

    def _notes(self, hits: set[int], text: str, t: float | None) -> None:
        """The rules that note without moving the start: a restart, a cause, a warning, a timing."""
        st = self._state
        if text.startswith("Engine startup timings (s):"):
            st.engine_timings = _timings(text)
        if not any(i >= self._at_start for i in hits):
            return  # (no start, cause, warning or timing rule among them)
        for k, sr in enumerate(self.rules.start):
            if self._at_start + k in hits and st.applies(sr.engine):
                self._box.emit("start", t, rule=sr.id, evidence=text[:200])
                break
        for k, cr in enumerate(self.rules.cause):
            if self._at_cause + k in hits:
                st.cause = (cr.label, text[:500])
                break
        for k, wr in enumerate(self.rules.warning):
            if self._at_warning + k in hits and wr.label not in self._warned:
                self._warned.add(wr.label)
                self._box.emit("warning", t, message=f"{wr.label}: {text[:200]}")
        for k, tr in enumerate(self.rules.timing):
            if self._at_timing + k in hits and (m := tr.regex.search(text)) is not None:
                st.engine_timings[tr.label] = float(m.group("s"))
                if "s2" in tr.regex.groupindex and m.group("s2") and "key2" in tr.regex.groupindex:
                    st.engine_timings[m.group("key2")] = float(m.group("s2"))

    # ---- evidence from outside the log -------------------------------------------------
    def note_ready(self, t: float | None, evidence: str) -> list[Signal]:
        """The HTTP ladder proved readiness (a good completion)."""
        out = self._box.items = []
        st = self._state
        if not st.ready:
            self._tracker.all_enter("ready", t, evidence)
            st.ready, st.ready_t = True, t
            st.ready_evidence = evidence
            st.failure = None if (st.failure and not st.failure.definitive) else st.failure
            self._box.emit("ready", t, evidence=evidence, source="http")
        return out

    def note_activity(self, t: float | None, phase: str, evidence: str) -> list[Signal]:
        """Evidence from outside the log that a phase is running (a JIT compiler child process)."""
        out = self._box.items = []
        st = self._state
        if not st.ready and not (st.failure and st.failure.definitive) and st.phase != phase:
            self._tracker.enter(st.lead or "", phase, t, evidence)
        return out

    def note_death(self, t: float | None, kind: str, reason: str) -> list[Signal]:
        """The server process or unit is gone: a pending cause becomes the verdict."""
        out = self._box.items = []
        st = self._state
        if st.ready:
            return out
        if st.failure is None:
            st.failure = Failure(kind, reason, "service", t, definitive=True)
            self._causes.emit_failed(t)
        elif not st.failure.definitive:
            st.failure.definitive = True
            self._causes.emit_failed(t)
        return out

    def finish(self) -> list[Signal]:
        """End of the log: a pending traceback is the cause of a failure; a traceback cut before its
        exception line is a failure whose phase and kind come from its frames."""
        held, self._held = self._held, None
        first = self._feed(held) if held is not None else []
        out = self._box.items = first
        self._tracker.not_bar()
        st = self._state
        if st.ready:
            return out
        self._tracebacks.end()
        f = st.failure
        if f is not None and not f.definitive:
            f.definitive = True
            self._causes.emit_failed(st.last_t)
        elif f is not None and f.root is None:
            self._causes.refine(f)  # its cause unnamed: the lines after it (a cut traceback's, a build's) may place it
        return out


def step(state: State, line: LogLine, rules: RuleSet | None = None) -> State:
    """Functional form: feed one line to a classifier holding ``state``; returns the state."""
    c = Classifier(rules)
    c.state = state
    c._feed(line)  # one line, one state: nothing waits for a next line
    return c.state


def _ray_summary(raw: str) -> bool:
    """Ray's reprint of lines its log deduplicated (' [repeated 7x across cluster]'), the suffix whole or
    cut by the excerpt's end (' [repeate')."""
    tail = raw.rstrip()[-40:]
    i = tail.rfind(" [rep")
    return i >= 0 and "[repeated 1x across cluster]".startswith(re.sub(r"\d+", "1", tail[i + 1 :]))


_EXC_HEAD = re.compile(r"(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception):")
"""An exception's type alone on its line, its message on the next ('AssertionError:' / 'Error in memory profiling ...')."""

_TAG_LATER = ("kv_alloc", "jit_compile", "graph_capture", "warmup")
"""The phases a logger tag moves a start on to once a marker has placed it: the steps after the load,
in the engine's order. A repack or a draft needs its own evidence (a quantized model's post-processing
and a draft's modules log in every model's load)."""


class _ShapeHits:
    """The rules the prefilter says may match a line, remembered by the line's shape (its digits as one
    digit): a log repeats a few shapes millions of times."""

    def __init__(self, pre: Prefilter | None, cues: tuple[str, ...]) -> None:
        self._pre = pre
        self._misses: set[str] = set()
        self._hit_shapes: dict[str, set[int]] = {}
        self._miss_bytes = 0
        self._value_cue = re.compile("|".join(map(re.escape, cues))).search if cues else None

    def hits(self, text: str) -> set[int] | None:
        """The rules the prefilter says may match the line; None when none can (lines that differ only in
        numbers match the same rules: the misses are remembered by shape; a line whose rules look at a
        number's value, by its exact text)."""
        if self._pre is None:
            return set()
        if len(text) > MISS_LONGEST:
            shape = None
        elif self._value_cue is not None and self._value_cue(text) is not None:
            shape = "\0" + text  # 'Running: 0' misses where 'Running: 1' hits; the same text misses again
        else:
            shape = text.translate(_DIGITS)
        if shape is not None:
            if shape in self._misses:
                return None
            if (known := self._hit_shapes.get(shape)) is not None:
                return known  # a frequent line a rule matches ('Prefill batch, #new-seq: 1, ...'), by shape too
        hits = self._pre.which(text)
        if not hits:
            if shape is not None:
                self._miss(shape)
            return None
        if shape is not None:
            if len(self._hit_shapes) >= HIT_SHAPES:
                self._hit_shapes.clear()
            self._hit_shapes[shape] = hits
        return hits

    def _miss(self, shape: str) -> None:
        """Remember a line shape that no rule matches, within the memory's budget."""
        size = sys.getsizeof(shape)
        if self._miss_bytes + size > MISS_BUDGET:
            self._misses.clear()
            self._miss_bytes = 0
        self._misses.add(shape)
        self._miss_bytes += size


def _enters_ready(rules: RuleSet, hits: set[int]) -> bool:
    """A phase rule among the line's hits enters ready."""
    phase = rules.phase
    return any(k < len(phase) and phase[k].enter == "ready" for k in hits)


def _tag_moves_on(phase: str, tagged: str) -> bool:
    """A tag names a later step than the one the start is in ('[kernel_warmup.py:170]' after the KV
    cache's lines: the autotune has begun although its own line was cut)."""
    if tagged not in _TAG_LATER:
        return False
    return phase not in _TAG_LATER or _TAG_LATER.index(tagged) > _TAG_LATER.index(phase)
