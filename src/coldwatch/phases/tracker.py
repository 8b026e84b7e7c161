"""Phase tracking: which phase each rank is in, and the timeline's spans.

A phase's span runs from the first rank entering it to the last one leaving; the start's phase is
the lead rank's (rank 0, or untagged lines). Phase rules and progress bars move ranks between
phases. Pure, no clock, no I/O.
"""

from __future__ import annotations

from coldwatch.normalise import LogLine
from coldwatch.phases.causes import CauseRanker
from coldwatch.phases.rules import PHASES, BarRule, RuleSet
from coldwatch.phases.state import Outbox, Signal, Span, State


def _is_zero_rank(rank: str) -> bool:
    digits = [c for c in rank if c.isdigit()]
    return bool(digits) and all(c == "0" for c in digits)


class PhaseTracker:
    """Moves ranks between phases and keeps the spans; emits phase, progress and ready signals."""

    def __init__(self, rules: RuleSet, state: State, causes: CauseRanker, box: Outbox) -> None:
        self.rules = rules
        self.state = state
        self._causes = causes
        self._box = box
        self._bar_cache: dict[str, BarRule | None] = {}
        self._unlabelled: tuple[LogLine, int, float | None] | None = None
        self.first_line = 0
        """The number of the log's first non-empty line (0: none yet)."""

    def rank(self, line: LogLine) -> str:
        """The rank a line speaks for: its tag, else the lead rank ('' before one is known)."""
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

    def apply(self, rank: str, hits: set[int], text: str, t: float | None, summary: bool = False) -> None:
        """The phase rules among a line's hits (a rule's index is its place in ``rules.phase``). A
        ``summary`` line (Ray's '[repeated 7x across cluster]' reprint of lines already shown) moves no
        rank back: every rule is early for it."""
        st = self.state
        flags = st.rank_flags.setdefault(rank, set())
        phase_rules = self.rules.phase
        for k in sorted(hits):  # (in the rules' order: the first that moves the rank wins)
            if k >= len(phase_rules):
                break
            rule = phase_rules[k]
            if not st.applies(rule.engine):
                continue
            if rule.requires and rule.requires not in flags:
                continue
            if rule.unless and rule.unless in flags:
                continue
            if (rule.early or summary) and rule.enter and PHASES.index(st.phase) > PHASES.index(rule.enter):
                continue
            if summary and not rule.reprint:
                continue
            if st.failure is not None and st.failure.definitive:
                break  # after a failure the timeline stops; only the cause is refined
            cur = st.rank_phase.get(rank)
            if rule.stay_in and cur in rule.stay_in:
                pass
            elif rule.is_global and rule.enter:
                self.all_enter(rule.enter, t, text)
                if rule.enter == "ready":
                    self._ready(t, text)
            elif rule.enter:
                self.enter(rank, rule.enter, t, text)
            elif rule.end:
                self._leave(rank, rule.end, t, text, rule.resume)
            if rule.sets:
                flags.add(rule.sets)
            if rule.enter or rule.end:
                break

    def _dec(self, phase: str, t: float | None) -> None:
        st = self.state
        n = st.count.get(phase, 0) - 1
        st.count[phase] = max(n, 0)
        if n <= 0 and phase in st.spans:
            st.spans[phase].end = t
            st.spans[phase].closed = True

    def _ready(self, t: float | None, text: str) -> None:
        st = self.state
        st.ready, st.ready_t = True, t
        st.ready_evidence = text
        self._box.emit("ready", t, evidence=text, source="log")

    def went_on(self, t: float | None) -> None:
        """The start went on after a pending failure (a traceback, a collective's error path): it was not
        fatal; an OOM or collective error it named stays the explanation of a later failure that names
        none (the first root error)."""
        st = self.state
        assert st.failure is not None
        self._box.emit("warning", t, message=f"start continued after: {st.failure.cause}")
        named = self._causes.text_kind(st.failure.root) or self._causes.text_kind(st.failure.trigger)
        if named in ("oom", "nccl") and st.cause is None:
            st.cause = (named, st.failure.cause[:500])
        st.failure = None
        st.frames_done = False

    def enter(self, rank: str, phase: str, t: float | None, evidence: str) -> None:
        """``rank`` is in ``phase`` from ``t``."""
        st = self.state
        prev = st.rank_phase.get(rank)
        if prev == phase:
            return
        if st.failure is not None and not st.failure.definitive:
            self.went_on(t)
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
            self._box.emit("phase", t, phase=phase, rank=rank or None, evidence=evidence)

    def _close_starting(self, t: float | None, evidence: str) -> None:
        spans = self.state.spans
        span = spans.get("starting")
        if span is not None and not span.closed:
            if span.start == t and span.evidence == evidence[:200] and self.state.lines == self.first_line:
                del spans["starting"]  # the log's first line is already a phase: nothing came before it
            else:
                span.end, span.closed = t, True

    def _leave(self, rank: str, phases: tuple[str, ...], t: float | None, evidence: str, resume: bool = False) -> None:
        st = self.state
        cur = st.rank_phase.get(rank)
        if cur is not None and cur in phases:
            st.rank_phase[rank] = None
            self._dec(cur, t)
            st.spans[cur].ended = True
            back = st.rank_prev.pop(rank, None)
            if resume and back is not None and back not in phases:
                self.enter(rank, back, t, evidence)
            elif resume and st.phase == cur and st.count.get(cur, 0) == 0:
                # an untagged nested phase ended: the start is where its ranks still are
                still = [p for p, n in st.count.items() if n > 0 and p != "starting"]
                if still:
                    st.phase = max(still, key=PHASES.index)
                    self._box.emit("phase", t, phase=st.phase, rank=rank or None, evidence=evidence)
            return
        first = phases[0]
        if first not in st.spans:  # an end marker is evidence the phase happened
            st.spans[first] = Span(first, t, t, evidence, closed=True, ended=True)
            self._close_starting(t, evidence)
            if st.phase == "starting" or PHASES.index(first) > PHASES.index(st.phase):
                st.phase = first
                self._box.emit("phase", t, phase=first, rank=rank or None, evidence=evidence)
        elif st.count.get(first, 0) == 0:
            # a span already closed by its own last line stays closed: a later summary line that ends
            # several phases at once ('max_total_num_tokens=' after capture) does not stretch it
            span = st.spans[first]
            span.ended = True
            if not span.closed:
                span.end, span.closed = t, True

    def all_enter(self, phase: str, t: float | None, evidence: str) -> None:
        """Every rank is in ``phase`` from ``t`` (the main process speaks for all: ready)."""
        st = self.state
        for rank, cur in list(st.rank_phase.items()):
            if cur is not None and cur != phase:
                st.rank_phase[rank] = None
                self._dec(cur, t)
        self.enter("", phase, t, evidence)
        for rank in list(st.rank_phase):
            if rank != "":
                st.rank_phase[rank] = phase
        st.count[phase] = len(st.rank_phase)
        if st.lead is not None:
            st.lead = None  # from here the main process speaks for all ranks

    def uvicorn_was_ready(self) -> None:
        """The engine turned out to be vLLM after uvicorn's 'Application startup complete.' was read as an
        SGLang server's warm-up (an excerpt that begins there): vLLM's API server starts uvicorn only once
        its engine is up, so the start was ready from that line on."""
        st = self.state
        span = st.spans.get("warmup")
        if st.phase == "warmup" and st.failure is None and span is not None and "Application startup complete" in span.evidence:
            self.served(span.start, span.evidence)

    def served(self, t: float | None, text: str) -> None:
        """The server answered (or was answering) a request: every rank is ready."""
        self.all_enter("ready", t, text)
        self._ready(t, text)

    def _bar_rule(self, desc: str) -> BarRule | None:
        """The bar rule for a description, cached by its stem ('Capturing batches (bs=..)' -> 'Capturing batches')."""
        key = desc.split(" (", 1)[0]
        if key in self._bar_cache:
            return self._bar_cache[key]
        found = None
        for rule in self.rules.bar:
            if self.state.applies(rule.engine) and rule.regex.search(desc):
                found = rule
                break
        if self.state.engine is not None:  # rules depend on the engine once it is known
            self._bar_cache[key] = found
        return found

    def bar(self, line: LogLine, desc: str, done: int, total: int, t: float | None) -> None:
        """A progress bar's update. A bar's first frame with no description yet (tqdm draws '  0%| | 0/35'
        before SGLang's capture loop names it 'Capturing batches (bs=256 ...)') waits for the next record:
        when that names a bar of the same length, the frame was that bar's, not the current phase's."""
        held = self._unlabelled
        if held is not None:
            self._unlabelled = None
            if not (desc and total == held[1]):
                self._bar(held[0], "", 0, held[1], held[2])
        if not desc and done == 0 and total > 0:
            self._unlabelled = (line, total, t)
            return
        self._bar(line, desc, done, total, t)

    def not_bar(self) -> None:
        """A record that is no bar: a bar's first frame held back was the current phase's."""
        held, self._unlabelled = self._unlabelled, None
        if held is not None:
            self._bar(held[0], "", 0, held[1], held[2])

    def _bar(self, line: LogLine, desc: str, done: int, total: int, t: float | None) -> None:
        """A progress bar's update: its rule may move the rank; the phase's progress is noted."""
        st = self.state
        if st.failure is not None and st.failure.definitive:
            return
        rank = self.rank(line)
        cur = st.rank_phase.get(rank)
        phase = cur or (st.phase if st.phase != "starting" else None)
        rule = self._bar_rule(desc) if desc else None
        if rule is not None and rule.phase == "ready":
            # a bar of requests being answered (vLLM's offline 'Processed prompts'): the engine serves
            self.served(t, line.text)
            return
        if rule is not None:
            phase = rule.phase
            if rule.stay_in and cur in rule.stay_in:
                phase = cur
            elif cur != rule.phase:
                self.enter(rank, rule.phase, t, line.text)
            if (
                rule.complete_enter
                and done >= total > 0
                and st.rank_phase.get(rank) == rule.phase
                and (rule.complete_requires is None or rule.complete_requires in st.rank_flags.get(rank, ()))
            ):
                self.enter(rank, rule.complete_enter, t, line.text)
        if phase is None:
            return
        span = st.spans.get(phase)
        if span is not None:
            span.done, span.total = done, total
        self._box.items.append(Signal("progress", t, {"phase": phase, "done": done, "total": total, "desc": desc}))
