"""Traceback reading: the frames of the current traceback and its exception line.

Frames are kept as 'PATH in FUNCTION' (outermost first) for cause ranking to place a failure;
an exception line becomes the root of the pending failure. Handles the text's damage too: a frame
split over two lines by a wrap, a wrapper's prefix on every line, an excerpt cut before the
header or before the exception line. Pure, no clock, no I/O.
"""

from __future__ import annotations

import re

from coldwatch.phases.causes import TB_HEAD, CauseRanker
from coldwatch.phases.state import Failure, Outbox, State

_FRAME = re.compile(r'(?:^|\s)File "?([^",]+)"?,? [Ll]ine \d+,? in (\w+|<\w+>)')
"""A traceback frame, wherever it sits in the line (behind a wrapper no rule strips); a module's own
code (an import: ``in <module>``) and a lambda's or comprehension's are frames too."""
_IPY_FRAME = re.compile(r"(?:^|\s)File \[?(~?/[^\]:\s]+\.py):\d+(?:\]\([^)\s]*\))?, in (?:\w+\.)*(\w+|<\w+>)\(")
"""IPython's frame ('File ~/x/cache_engine.py:49, in CacheEngine.__init__(self, ...)', in a notebook's HTML
export with the path as a link: 'File [~/x/cache_engine.py:49](http://...), in CacheEngine.__init__(')."""
_CALL = re.compile(r"^(?:[\w.]+(?:, *[\w.]+)* = )?(?:self\.)?(?:\w+\.)*(\w+)\(")
_SELF_CALL = re.compile(r"^(?:[\w.]+(?:, *[\w.]+)* = )?self\.\w+\(")
_RPC = re.compile(r"""\b(?:collective_rpc|_run_workers|run_workers|_run_workers_in_batch|execute_method)\(\s*["'](\w+)["']""")
"""An executor asking its workers to run one of their methods by name ('self.collective_rpc("load_model")'):
the call it makes is that method's."""
_CUT_SELF_CALL = re.compile(r"(?:^|[=(,]\s*)self\.(\w+)$")
_CUT_HEAD = re.compile(r"(?:^|\) )(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)(?: [\d:. -]*)?(?:\[[\w./:-]*)?$")
"""A log's last line that stops inside a record's header ('(EngineCore_DP0 pid=1) ERROR 09-17 06:49:42 [core.py'):
the excerpt was cut there, its message not in the text."""
_CANN_REPORT = "common.cann_inner_error"
EXC_TAIL = 8
"""Lines an exception line that ends a log may have after it (its message's own further lines: a
build's output, a list it prints, Ascend CANN's error report: 'ERR00100 PTA call acl api failed',
'EE9999: Inner Error!' and its details) and still be the log's last word."""
_EXC = re.compile(
    r"^(?:[A-Za-z_]\w*\. ?)*\w*(?:Error|Exception|Exit|Interrupt|Failure)(?:\([\w.]+\))?(?::|$)|^(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)\([\w.]*$"
)
"""An exception line: ``Type: message`` (and Ray's wrapper, ``ray.exceptions.RayTaskError(ValueError): ...``,
also when the excerpt cuts it inside the wrapped type: ``ray.exceptions.RayTaskError(Ty``)."""
_FLAT_EXC = re.compile(r"\s((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure)): ")
"""The exception line inside a traceback flattened onto one line: its type after the last frame."""
_BARE_NAME = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Z][a-z]\w*(?:Error|Exception)\s*$")
"""An exception line without a message ('AssertionError' of an assert with none): the last line of a
traceback whose frames the excerpt cut away."""
_TB_EXC = re.compile(r"^(?:[a-z_]\w*\.)*[A-Z]\w*(?:Timeout|Warning|Iteration|Empty|Full)(?::\s|$)")
"""Inside a traceback, also the exceptions whose names end otherwise (``httpx.ReadTimeout: ...``,
``StopIteration``, ``queue.Empty``): the traceback ends there."""
_UNRAISABLE = "Exception ignored in"
"""CPython's unraisable-exception report (sys.unraisablehook: an error in a destructor, a weakref or atexit
callback, a thread's cleanup): printed and dropped, nothing failed because of it."""
_CHAIN = ("During handling of the above exception", "The above exception was the direct cause")


class TracebackReader:
    """Follows tracebacks line by line into the state's frames and failure."""

    def __init__(self, state: State, causes: CauseRanker, box: Outbox) -> None:
        self.state = state
        self._causes = causes
        self._box = box

    def ignored(self, text: str) -> bool:
        """Whether the line belongs to an unraisable-exception report (its header, its traceback, its
        exception line): such a report is read past, it is never the start's failure."""
        st = self.state
        i = text.find(_UNRAISABLE) if "ignored" in text else -1
        if i >= 0 and not st.in_traceback:
            st.unraisable, st.unraisable_prefix, st.unraisable_tb = 60, text[:i], False  # its traceback: at most 60 lines
            return True
        if not st.unraisable:
            return False
        st.unraisable -= 1
        body = (text[len(st.unraisable_prefix) :] if text.startswith(st.unraisable_prefix) else text).lstrip()
        if _EXC.match(body):
            st.unraisable = 0  # its exception line ends it
            return True
        if TB_HEAD in body or st.unraisable_tb:
            st.unraisable_tb = True  # inside its traceback: every line up to the exception line
            return True
        st.unraisable = 0  # no traceback after the header: a line of the log again
        return False

    def _failure(self, kind: str, trigger: str, rule: str, t: float | None, definitive: bool, root: str | None = None) -> Failure:
        """A failure this reader found, with the lines just before it (the words that may place it)."""
        return Failure(kind, trigger, rule, t, definitive, root=root, context=self.state.recent_text())

    def _remember(self, text: str) -> None:
        """The recent lines; and a failure whose cause is not named yet keeps the lines after it (they may
        still say where it was: a build's output after the engine's fatal site)."""
        st = self.state
        st.recent.append(text)
        if (f := st.failure) is not None and f.root is None and len(f.context) < 2000:
            f.context += " " + text

    def read(self, text: str, t: float | None) -> None:
        """One line of the log (every line passes here, before any rule)."""
        st = self.state
        st.source_line, st.after_frame = st.after_frame and st.in_traceback, False
        part = st.frame_part
        if part:  # a frame split over two lines (a terminal's or a paste's wrap)
            st.frame_part = ""
            for joined in (part + text, part + " " + text):
                if _FRAME.search(joined):
                    text = joined
                    break
        if ('File "' in text or text.startswith("File ")) and self._frame_line(text, t):
            return
        if st.last_error:
            st.last_error = False
            self._detail(text)
        i = text.find(TB_HEAD) if "Traceback" in text else -1
        if i >= 0 or text.startswith(("Current thread 0x", "Thread 0x", "Stack (most recent call first)")):
            self._header(text, i)
            return
        if text.startswith(_CHAIN):
            if not st.chain_text and (st.failure is None or st.failure.root is None):
                st.chain_text = " ".join(st.recent)[:1000]
            st.in_traceback = True
            st.chain_next = True
            return
        self._remember(text)
        if (
            "Last error:" in text
            and (text.strip() == "Last error:" or text.rstrip().endswith(" Last error:"))
            and st.failure is not None
            and st.failure.root is not None
        ):
            st.last_error = True
            return
        if st.in_traceback:
            self._body(text, t)
        elif st.failure is None and (": " in text or _BARE_NAME.match(text)) and _EXC.match(text):
            st.orphan_exc = st.orphan_exc or text
            st.last_exc = (text, st.lines, st.phase)
        elif (
            (f := st.failure) is not None
            and f.root is None
            and _EXC.match(text)
            and (f.rule == "vllm.error_site" or (not f.trigger.startswith("raise ") and self._causes.consequence_only(f)))
        ):
            # vLLM's fatal site logged the traceback's lines one ERROR record each, their indentation lost
            # (a log viewer's export), or a consequence ('EngineCore failed to start.') is followed by the
            # exception line without its traceback (not the consequence's own, raised on the line before):
            # that exception line is the failure's root
            f.root = text
            self._causes.refine(f)
            self._box.emit("failed", t, kind=f.kind, cause=f.cause, phase=st.last_phase())

    def _header(self, text: str, i: int) -> None:
        """A traceback's header at ``i`` of the line (-1: a faulthandler's or a stack dump's first line)."""
        st = self.state
        f = st.failure
        if st.chain_next and i >= 0 and st.frames:
            # the outer traceback of a chain: its frames go before the inner one's (outermost first)
            st.chain_at = 0
        elif f is not None and f.definitive and st.frames:
            st.frames_done = True  # e.g. a faulthandler dump, then the parent's traceback about it
        elif f is None or f.root is None:
            st.frames.clear()
        if not st.chain_next:
            st.chain_at = -1
        st.chain_next = False
        st.in_traceback = True
        st.root_frames.clear()
        prefix = text[:i] if i > 0 else ""
        # (not an exception whose message is a traceback, Ray Serve's 'RuntimeError: Traceback (most recent
        # call last):' re-raising one it formatted: its lines carry no prefix, its last line is the error)
        st.tb_prefix = "" if prefix and _EXC.match(prefix.strip()) else prefix

    def _frame_line(self, text: str, t: float | None) -> bool:
        """A line with a traceback frame (or its first half, its wrap cut before the line number; or a
        traceback flattened onto one line): read, True; False when it holds no frame after all."""
        st = self.state
        m = _FRAME.search(text) or _IPY_FRAME.search(text)
        if m is None and len(text) < 600 and text.lstrip().startswith('File "') and "line" not in text[-12:]:
            k = text.find('File "') + 6
            if st.in_traceback or '"' not in text[k:]:  # (outside a traceback: a path its wrap cut short)
                st.frame_part = text[text.find("File") :]
                return True
        if m is None:
            return False
        if text.count('File "') < 2:
            self._frame(m)
            st.after_frame = True
        else:
            self._flattened(text, t)
        return True

    def _flattened(self, text: str, t: float | None) -> None:
        """A traceback a page or a digest put on one line: each frame in turn, then the exception line
        after the last frame's source ('... File "x.py", line 300, in f out = op(...) torch.AcceleratorError:
        CUDA error: ...')."""
        frames = list(_FRAME.finditer(text))
        for fm in frames:
            self._frame(fm)
        e = _FLAT_EXC.search(text, frames[-1].end())
        if e is not None:
            self._body(text[e.start(1) :], t)

    def _frame(self, m: re.Match[str]) -> None:
        st = self.state
        st.call = ""
        if not st.in_traceback:
            st.cut = True  # frames without their header: the paste starts mid-traceback
        f = st.failure
        frame = f"{m.group(1)} in {m.group(2)}"
        if st.chain_at >= 0 and not st.frames_done:
            # a chain's outer traceback: where the engine was (the inner exception keeps the kind)
            if len(st.frames) < (st.frames.maxlen or 0):
                st.frames.insert(st.chain_at, frame)
                st.chain_at += 1
            if f is not None and f.definitive:
                self._causes.refine(f)
        elif (f is None or f.root is None) and not st.frames_done:
            st.frames.append(frame)
            if f is not None and f.definitive:
                self._causes.refine(f)  # the frames may say what failed and where
        elif not st.frames and len(st.root_frames) < (st.frames.maxlen or 0):
            st.root_frames.append(frame)
        st.in_traceback = True

    def _body(self, text: str, t: float | None) -> None:
        """A line inside a traceback that is no frame: a frame's source line or the exception line."""
        st = self.state
        if st.frames and (c := _CALL.match(text)) is not None:
            rpc = _RPC.search(text)
            st.call = rpc.group(1) if rpc else c.group(1)  # the source line of the last frame: the call it was making
            f = st.failure
            if (
                _SELF_CALL.match(text)
                and not st.frames_done
                and st.chain_at < 0
                and (f is None or f.root is None)
                and len(st.frames) < (st.frames.maxlen or 0)
            ):
                # a method of the frame's own object ('self._initialize_kv_caches(vllm_config)'): the step it
                # was in, even when the next frames are a decorator's wrapper or the excerpt ends here
                path = st.frames[-1].rsplit(" in ", 1)[0]
                st.frames.append(f"{path} in {st.call}")
        if st.tb_prefix and text.startswith(st.tb_prefix):
            text = text[len(st.tb_prefix) :].lstrip()
        if _EXC.match(text) or _TB_EXC.match(text):
            st.in_traceback = False
            st.chain_at = -1  # the outer traceback of a chain ends with its own exception line
            f = st.failure
            if f is None:
                st.failure = self._failure("exception", text, "common.exception_line", t, False, root=text)
            elif f.root is None:
                f.root = text
                f.context = f.context or st.recent_text()
                if f.definitive:
                    self._causes.refine(f)
                    self._box.emit("failed", t, kind=f.kind, cause=f.cause, phase=st.last_phase())
            elif text == f.root and f.definitive and not st.frames and st.root_frames:
                # the root, printed bare first, then again under its traceback: its frames place it
                st.frames.extend(st.root_frames)
                self._causes.refine(f)
            st.root_frames.clear()

    def _detail(self, text: str) -> None:
        """The collective library's own last error after torch's 'Last error:' (an NCCL error that wraps
        a CUDA failure: "Cuda failure 'out of memory'"): part of the root, and the innermost error, so
        it can decide the kind."""
        f = self.state.failure
        if f is None or f.root is None or not text.strip():
            return
        f.root = f"{f.root} / {text.strip()}"[:500]
        if f.definitive:
            self._causes.refine(f)

    def end(self) -> None:
        """End of the log inside a traceback cut before its exception line: the excerpt is cut, and
        the call the last frame made counts as a frame; a traceback alone is a (pending) failure."""
        st = self.state
        f = st.failure
        if st.unraisable and st.unraisable_tb:
            st.cut = True  # the log ends inside an unraisable-exception report: the excerpt is cut
        last = st.last_line.strip()
        k = last.rfind("Trac")
        if (len(last) >= 3 and TB_HEAD.startswith(last)) or (k >= 0 and TB_HEAD.startswith(last[k:]) and last[k:] != TB_HEAD):
            st.cut = True  # the log's last line ends inside a traceback's header ('Tra', '... exception: Traceback (most recent call')
            if f is None and last[k:].startswith("Traceback ("):
                st.in_traceback = True  # a traceback began ('[rank0]: Traceback (most recent call las'): cut before its frames
        elif len(last) < 120 and _CUT_HEAD.search(last):
            st.cut = True  # it stops inside a record's header: cut mid-line
        if st.in_traceback and (f is None or f.root is None):
            st.cut = True
            cut_call = _CUT_SELF_CALL.search(st.last_line)
            if cut_call and st.frames and not st.frames_done and len(cut_call.group(1)) >= 4:
                # the excerpt ends inside the source line's call ('... = self.init_t'): the engine's own
                # function of that module it can only be, when the name's start says which
                path = st.frames[-1].rsplit(" in ", 1)[0]
                name = self._causes._structure.complete(path, cut_call.group(1))
                if name is not None:
                    st.frames.append(f"{path} in {name}")
            elif st.call and st.frames and not st.frames_done:
                st.frames.append(f"(call) in {st.call}")  # cut after the source line: the call it made
            part = st.frame_part[st.frame_part.find('"') + 1 :] if st.frame_part else ""
            if part.count("/") >= 3 and st.frames and not st.frames_done:
                # the excerpt ends inside the next frame's path ('File ".../sglang/srt/speculative/eagle_worke'):
                # the module it names, in a function the text does not say
                st.frames.append(f"{part} in ?")
            if f is None and st.orphan_exc:  # ranks fail together: the exception another rank logged
                st.failure = self._failure("exception", st.orphan_exc, "common.exception_line", st.last_t, False, root=st.orphan_exc)
            elif f is not None and st.orphan_exc:
                f.root = st.orphan_exc
            elif f is None:
                st.failure = self._failure("other", "traceback cut before its exception line", "common.cut_traceback", st.last_t, False)
        elif (f is None or (f.rule == _CANN_REPORT and not f.definitive)) and st.last_exc is not None:
            text, at, phase = st.last_exc
            if st.lines - at <= EXC_TAIL and st.phase == phase:
                # the log ends on an exception line, the start not moved on since: it ended with it (CANN's
                # report after it is its detail, not another failure)
                st.failure = self._failure("exception", text, "common.exception_line", st.last_t, False, root=text)
        if st.failure is None and error_record(st.last_record) and st.orphan_exc:
            # the log ends on an error record after the engine logged an exception it caught (an exception
            # site's ERROR line, its message: 'Consistency check failed: file should be of size ...'): that one
            st.failure = self._failure("exception", st.orphan_exc, "common.exception_line", st.last_t, False, root=st.orphan_exc)
        elif st.failure is None and error_record(st.last_record):
            # the log's last record was logged at ERROR level and nothing follows it: the start ended on
            # that error (its message cut, or words no rule knows), its cause unnamed
            reason = f"log ended on an error record: {st.last_line.strip()}"
            st.failure = self._failure("other", reason, "common.error_tail", st.last_t, False)


_LEVEL = re.compile(r"(?<![\w.])(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\b")


def error_record(raw: str) -> bool:
    """The record's header logs it at ERROR level: the first level word of its start ('ERROR 04-28
    14:47:02 [loader.py:449]', '(Worker_TP7 pid=1) ERROR', '2025-08-28 21:19:34 ERROR 125765 [',
    'ERROR:    ', '[ERROR]') is ERROR, CRITICAL or FATAL."""
    # (behind a collector's prefix too: journald's ISO stamp, host and unit)
    if raw.find("ERROR", 0, 160) < 0 and raw.find("CRITICAL", 0, 160) < 0 and raw.find("FATAL", 0, 160) < 0:
        return False
    m = _LEVEL.search(raw, 0, 160)
    return m is not None and m.group(0) in ("ERROR", "CRITICAL", "FATAL") and _HTTP_ANSWER.search(raw) is None


_HTTP_ANSWER = re.compile(
    r'\buri=/|"(?:GET|POST|PUT|HEAD|DELETE|OPTIONS|PATCH) /|\bStatus code: \d{3}\b|\btower_http::trace::on_failure\b'
    r"|\b[45]\d\d (?:Service Unavailable|Not Found|Bad Request|Internal Server Error|Bad Gateway|Gateway Timeout)\b"
)
"""An HTTP request's answer logged at ERROR level (a Rust front end's tower_http 'response failed
classification=Status code: 503 Service Unavailable ... uri=/live', a liveness probe while the engine still
starts): the request's error, not the start's."""
