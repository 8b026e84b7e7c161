"""Cause ranking: what a failure was (its kind) and where it happened (its phase).

A failure's kind comes from its cause: the root exception, then the trigger, then what the
traceback's frames show, then a line logged earlier that explains it; a consequence never decides
it. Pure, no clock, no I/O.
"""

from __future__ import annotations

import re
from collections import deque

from coldwatch.phases.rules import RuleSet
from coldwatch.phases.state import Failure, Outbox, Span, State
from coldwatch.phases.structure import StructureMap

TB_HEAD = "Traceback (most recent call last)"
_BARE_EXC = re.compile(r"^[\w.]+$")
_NCCL_LINE = re.compile(r"^\S+:\d+:\d+ \[\d+\] (?:\S+:\d+ )?[NR]CCL (?:INFO|WARN) ")
"""NCCL's own log line ('host:pid:tid [dev] NCCL WARN ...'), a C logger's: no Python frame follows it."""


_TB_HEADS = ("common.traceback", "common.cut_traceback")
_EXC_NAME = re.compile(r"[A-Za-z]\w*(?:Error|Exception|Interrupt)\b")
"""An exception's name in a message (an engine's own words about a failure may name none)."""
_NAMED_HEAD = "common.ipython_traceback"
"""IPython's header names the exception before its frames ('RayTaskError(KeyError)      Traceback (most
recent call last)'): cut before its last line, the type is still in the text."""
_WRAPPED_MESSAGE = re.compile(r"while processing method \w+: (?!Traceback)\S")
"""V0's worker wrapper with the exception's message in it ('Exception in worker VllmWorkerProcess while
processing method load_model: Torch SPDA does not support logits soft cap., Traceback ...'): an exception
whose words are known, even with its traceback cut."""
_WRAPPERS = ("vllm.proc_exception",)
"""An engine's line that only announces the traceback after it ('Exception in worker VllmWorkerProcess
while processing method init_device.', 'Error executing method init_device. This might cause deadlock
...'): cut before its exception line, the failure is as unknown as a bare traceback's."""


class CauseRanker:
    """Records failures as the log shows them and decides their kind and phase."""

    def __init__(self, rules: RuleSet, state: State, structure: StructureMap, box: Outbox) -> None:
        self.rules = rules
        self.state = state
        self._structure = structure
        self._box = box

    def fail(self, kind: str, rule: str, text: str, t: float | None, role: str) -> None:
        """A failure rule matched ``text``: a new failure, or a better text for the pending one."""
        st = self.state
        f = st.failure
        if f is None:
            # a consequence ('Server process exited with code -9') after an exception line that no traceback
            # framed ('ValueError: ...' a CI harness printed): that exception is the root error; so for a
            # process's exit status (systemd's 'code=exited, status=1') after one
            root = st.orphan_exc if st.orphan_exc and (role == "consequence" or kind == "exited") else None
            st.failure = Failure("exception" if root else kind, text, rule, t, definitive=(role != "candidate"), root=root)
            st.failure.context = st.recent_text()
            # a candidate opens a traceback (its frames may follow), except the collective library's own
            # C log lines ('NCCL INFO file.cc:12 -> 1'), CANN's report, torch's C++ error log and a shell's words, which no Python
            # frame follows
            native = _NCCL_LINE.match(text) is not None or rule in (
                "common.command_not_found",
                "common.cann_inner_error",
                "common.c10_error",
            )
            st.in_traceback = (role == "candidate" and not native) or "Traceback" in text
            if role != "candidate" and not st.in_traceback:
                st.frames.clear()
            if st.failure.definitive:
                self.emit_failed(t)
            return
        if role != "consequence" and f.root is None and self.consequence_only(f):
            # the cause logged after its consequence (ranks interleave: 'Worker ... died, exit code: -6', then
            # the other rank's NCCL watchdog timeout): the error is the cause, the death its consequence
            f.trigger, f.rule, f.kind, f.rule_kind = text, rule, kind, kind
            if f.definitive:
                self.refine(f)
            return
        if role == "fatal" and not f.later and text != f.trigger:
            f.later = text
            if f.definitive and f.root is None:
                self.refine(f)  # its words may place it ('Capture cuda graph failed: ...' after the scheduler's report)
        if role == "fatal" and f.root is None and f.rule.endswith(("traceback", "exception_line", "sigquit")):
            f.trigger, f.rule, f.kind, f.rule_kind = text, rule, kind, kind
        elif role == "fatal" and f.root is not None and _BARE_EXC.match(f.root):
            # a bare exception name ("EOFError" from a pipe whose writer died) says less than the
            # engine's own fatal line that follows it ("Rank 0 scheduler died ... (exit code: -9)")
            f.root, f.trigger, f.rule, f.kind, f.rule_kind = text, text, rule, kind, kind
        if not f.definitive and role != "candidate":
            f.definitive = True
            self.emit_failed(t)

    def emit_failed(self, t: float | None) -> None:
        f = self.state.failure
        assert f is not None
        self.refine(f)
        self._box.emit("failed", t, kind=f.kind, cause=f.cause, phase=self.state.last_phase())

    def refine(self, f: Failure) -> None:
        """The failure's kind comes from its cause: the root exception, then the trigger, then what
        the frames show, then a line logged earlier that explains it; a consequence never decides it."""
        if f.rule_kind is None:
            f.rule_kind = f.kind
        f.kind = f.rule_kind
        kind = self._kind_of(f)
        if kind is not None:
            f.kind = kind
        elif (
            f.root is None
            and self.state.cut
            and _WRAPPED_MESSAGE.search(f.trigger) is None
            and (
                f.rule in _TB_HEADS
                or ("Traceback (most" in f.trigger and f.rule != _NAMED_HEAD)
                or (f.rule in _WRAPPERS and (self.state.frames or self.state.in_traceback))
            )
        ):
            f.kind = "other"  # a traceback (bare or behind the engine's wrapper) whose exception line the excerpt does not hold
        elif f.root is None and f.rule == "vllm.error_site" and _EXC_NAME.search(f.trigger) is None:
            f.kind = "other"  # a fatal site's message that names no exception, and no exception line after it
        elif self.consequence_only(f) and self._orphan_root(f):
            f.kind = self.text_kind(f.root) or "exception"
        elif self.consequence_only(f):
            # a consequence ("See root cause above") with no cause in the text: when the text is a
            # cut excerpt the cause is unknown; when it is whole, the process died without a word
            f.kind = "other" if self.state.cut else "killed"
        self._place(f)

    def _kind_of(self, f: Failure) -> str | None:
        kind = self.text_kind(f.root)
        if kind is not None:
            return kind
        if f.root:
            for r in self.rules.failure:
                if r.role == "fatal" and r.kind != "exception" and self.state.applies(r.engine) and r.regex.search(f.root):
                    return r.kind
        kind = self.text_kind(f.trigger)
        if "exited" in (kind, f.rule_kind) and f.root is not None and not self.consequence_only(f):
            return "exception"  # a process that exited says less than the exception it logged first
        if f.root is None and kind in (None, "other"):
            # no exception line: where it died says more than a signal's name ('Fatal Python error: Aborted')
            kind = self._frame_kind() or self._crash_site() or kind
        if kind is not None:
            return kind
        if self.state.cause is not None and (f.root is None or self.consequence_only(f)):
            return self.state.cause[0]
        return None

    def _orphan_root(self, f: Failure) -> bool:
        """A traceback that ends on a consequence ('RuntimeError: Engine process failed to start.') after an
        exception line that no traceback framed ('ValueError: Bfloat16 is only supported on GPUs with compute
        capability of at least 8.0 ...', the engine process's, its own traceback cut away): that exception
        is the root error, and becomes the failure's root."""
        orphan = self.state.orphan_exc
        if not orphan or orphan == f.root or any(r.regex.search(orphan) for r in self.rules.failure if r.role == "consequence"):
            return False
        f.root = orphan
        return True

    def _crash_site(self) -> str | None:
        """A signal's own report of where it struck ('PC: @ 0x7fcf... (unknown) addProxyOpIfNeeded()',
        a native frame of the collective library): the innermost error decides the kind."""
        c = self.state.cause
        return c[0] if c is not None and c[1].startswith("PC: @") else None

    def consequence_only(self, f: Failure) -> bool:
        """The failure's only text is a consequence of something not logged (or not in the excerpt)."""
        consequences = [r for r in self.rules.failure if r.role == "consequence" and self.state.applies(r.engine)]
        if f.root:
            # the launcher's EOFError: the pipe's writer (a scheduler) died; that death is the cause
            return f.root.startswith("EOFError") or any(r.regex.search(f.root) for r in consequences)
        return any(r.id == f.rule for r in consequences)

    def text_kind(self, text: str | None) -> str | None:
        """The failure kind a text names ([[kind]] rules), if any."""
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
        f.phase = self._frame_phase() or self._text_phase(f) or self._log_phase() or self._raise_phase(f) or self._kind_phase(f)
        if f.phase is not None and f.phase not in st.spans:
            st.spans[f.phase] = Span(f.phase, f.t, f.t, "traceback frame", closed=True)

    def _kind_phase(self, f: Failure) -> str | None:
        """Where the failure's own words put it when nothing else does: a [[kind]] rule's phase, when the
        failure is of that kind and that rule's words are in it (an NCCL communicator being set up), or a
        fallback [[frame]] text rule's (a kernel build that failed before any marker)."""
        texts = (f.root, f.trigger, f.later, self.state.chain_text, self.state.cause[1] if self.state.cause else None, f.context)
        for rule in self.rules.kind_phase:
            if rule.kind in ("", f.kind) and any(t and rule.regex.search(t) for t in texts):
                return rule.phase
        return None

    def _text_phase(self, f: Failure) -> str | None:
        """Where the error's own words put it ([[frame]] text rules): an error that can only happen in
        one phase (CUDA refuses an operation 'when stream is capturing' only while a graph is captured)."""
        for rule in self.rules.text_phase:
            for text in (f.root, f.trigger, f.later, self.state.chain_text):
                if text and rule.regex.search(text):
                    return rule.label
        return None

    def _raise_phase(self, f: Failure) -> str | None:
        """Where the engines' code raises the failure's exception message (the structure map's raises), when
        neither frames nor the log place it: a lone 'RuntimeError: Cannot find any model weights with ...'
        is the loader's."""
        for text in (f.root, f.trigger):
            if text and (phase := self._structure.raise_phase(text)) is not None:
                return phase
        return None

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
        if jit:  # a kernel being built or tuned: the phase is where the log says the start was, or
            # a non-engine frame around it says (torch's CUDA-graph capture inside a compiled graph)
            return self._log_phase() or self._hand_frame_phase(frames, skip="jit_compile") or "jit_compile"
        phase = self._hand_frame_phase(frames)
        if phase == "jit_compile":  # a kernel built from a step's own code: that step's frame decides (a capture's)
            return self._hand_frame_phase(frames, skip="jit_compile") or phase
        return phase

    def _hand_frame_phase(self, frames: deque[str] | list[str], skip: str = "") -> str | None:
        st = self.state
        for rule in self.rules.frame:
            if rule.label == skip:
                continue
            if rule.after and not (
                st.phase == rule.after and (span := st.spans.get(rule.after)) is not None and (span.closed or span.ended)
            ):
                continue
            if rule.unless is not None and (f := st.failure) is not None and any(t and rule.unless.search(t) for t in (f.root, f.trigger)):
                continue
            for frame in frames:
                if rule.regex.search(frame) and not frame.endswith(" in <module>"):  # (an import's frame: no step)
                    return rule.label
        return None
