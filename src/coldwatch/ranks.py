"""Where a start is stuck: each server process mapped to its rank, its stack classified as working,
waiting, blocked, idle or dead, and the culprit named.

Pure: no clock, no I/O but reading the packaged vocabulary (``phases/rules/waits.toml``). The
stack sampler (``probes/stacks.py``) hands in ``ProcStack`` readings; the judge asks whether anyone
is working (a rank that spins in a collective is not) and, for a verdict, who holds the others up.
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from coldwatch.phases.rules import ENGINES
from coldwatch.phases.rules import PHASES as PHASE_ORDER
from coldwatch.sanitise import clean

STATES = ("working", "waiting", "blocked", "idle", "dead")
ACTIVITY = ("cpu", "gpu_util")
"""Evidence kinds that are activity, not progress: they count only while a rank is working."""
WORKING_CPU = 10.0
"""Per cent of one core a thread must use over the sample's window to count as working."""
TOP = 12
"""How many of a stack's innermost frames are searched for a waiting frame."""

# Process titles (setproctitle) of the engines' rank processes, from their sources:
# SGLang: "sglang::scheduler_TP3", "sglang::scheduler_DP1_TP3", "sglang::gpu_worker_TP3_PP0",
#   "sglang::semi_pd_scheduler_PREFILL_TP3"; vLLM: "VLLM::Worker_TP3", "VLLM::Worker_DP0_PP1_TP3_EP3",
#   "VLLM::Worker" (one GPU), "VLLM::EngineCore", "VLLM::EngineCore_DP1" (the prefix is
#   VLLM_PROCESS_NAME_PREFIX, "VLLM" by default).
_TITLE = re.compile(
    r"^(?:sglang::(?:scheduler|gpu_worker|semi_pd_scheduler)(?:_(?:PREFILL|DECODE|OTHER|MIXED))?"
    r"|[A-Za-z][\w-]*::(?:Worker|EngineCore))"
    r"((?:_(?:DP|PP|PCP|TP|DCP|EP|CP|RP)\d+)*)(?=$|[\s:])"
)
_PART = re.compile(r"_([A-Z]+)(\d+)")
# the engines' own words about ranks: SGLang's loading barrier, PyTorch's NCCL watchdog
_LOADED = re.compile(r"\bTP rank (\d+) could finish the model loading, but there are other ranks that didn't finish loading")
_WATCHDOG = re.compile(r"\[(?:PG [^\]]*?)?Rank (\d+)\][^\n]*?Watchdog caught collective operation timeout: WorkNCCL\([^)]*?OpType=(\w+)")
_COLLAPSE = re.compile(r"\s+")

# syscall numbers of the calls the vocabulary names, per machine
SYSCALLS: dict[str, dict[int, str]] = {
    "x86_64": {
        0: "read", 7: "poll", 17: "pread64", 19: "readv", 23: "select", 24: "sched_yield", 34: "pause",
        35: "nanosleep", 40: "sendfile", 43: "accept", 45: "recvfrom", 47: "recvmsg", 61: "wait4",
        128: "rt_sigtimedwait", 130: "rt_sigsuspend", 202: "futex", 208: "io_getevents", 230: "clock_nanosleep",
        232: "epoll_wait", 247: "waitid", 270: "pselect6", 271: "ppoll", 275: "splice", 281: "epoll_pwait",
        288: "accept4", 295: "preadv", 327: "preadv2", 426: "io_uring_enter", 441: "epoll_pwait2",
    },
    "aarch64": {
        4: "io_getevents", 22: "epoll_pwait", 63: "read", 65: "readv", 67: "pread64", 69: "preadv",
        71: "sendfile", 72: "pselect6", 73: "ppoll", 76: "splice", 95: "waitid", 98: "futex", 101: "nanosleep",
        115: "clock_nanosleep", 124: "sched_yield", 133: "rt_sigsuspend", 137: "rt_sigtimedwait",
        202: "accept", 207: "recvfrom", 212: "recvmsg", 242: "accept4", 260: "wait4", 286: "preadv2",
        426: "io_uring_enter", 441: "epoll_pwait2",
    },
}  # fmt: skip


def rank_of(title: str) -> str | None:
    """The rank a process title names ('TP3', 'DP1 TP3', 'TP3 PP0'), '' for an engine's single rank
    process ('VLLM::Worker', 'VLLM::EngineCore'), None for any other process."""
    m = _TITLE.match(title.strip())
    if m is None:
        return None
    parts = _PART.findall(m.group(1))
    return " ".join(f"{k}{v}" for k, v in parts)


def _rank_key(rank: str) -> tuple[int, ...]:
    return tuple(int(d) for d in re.findall(r"\d+", rank)) or (0,)


# ---- the vocabulary ----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Vocabulary:
    frames: tuple[re.Pattern[str], ...]
    syscalls: frozenset[str]
    wchans: tuple[re.Pattern[str], ...]
    reads: frozenset[str]
    transparent: frozenset[str]

    def waiting_frame(self, frame: Frame) -> bool:
        path = frame.file.replace("\\", "/")
        return any(pat.fullmatch(frame.name) or pat.fullmatch(f"{path}:{frame.name}") for pat in self.frames)

    def waiting_wchan(self, wchan: str) -> bool:
        return any(p.fullmatch(wchan) for p in self.wchans)


def parse_vocabulary(data: dict[str, Any], engine: str | None) -> Vocabulary:
    """The vocabulary from the TOML's tables: [common] plus the engine's (all engines when unknown)."""
    sections = [data.get("common") or {}]
    if engine:
        sections.append(data.get(engine) or {})
    else:
        sections.extend(v for k, v in data.items() if k != "common" and isinstance(v, dict))

    def items(key: str) -> list[str]:
        out: list[str] = []
        for s in sections:
            vals = s.get(key) or []
            if not isinstance(vals, list) or not all(isinstance(v, str) for v in vals):
                raise ValueError(f"waits: {key} must be a list of strings")
            out.extend(vals)
        return out

    try:
        frames = tuple(re.compile(p) for p in items("frames"))
        wchans = tuple(re.compile(p) for p in items("wchans"))
    except re.error as exc:
        raise ValueError(f"waits: bad pattern: {exc}") from None
    return Vocabulary(frames, frozenset(items("syscalls")), wchans, frozenset(items("reads")), frozenset(items("transparent")))


_VOCAB: dict[str | None, Vocabulary] = {}


def vocabulary(engine: str | None = None) -> Vocabulary:
    """The shipped vocabulary for an engine (cached)."""
    if engine not in _VOCAB:
        text = (resources.files("coldwatch.phases") / "rules" / "waits.toml").read_text(encoding="utf-8")
        _VOCAB[engine] = parse_vocabulary(tomllib.loads(text), engine if engine in ENGINES else None)
    return _VOCAB[engine]


# ---- readings ----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Frame:
    name: str
    file: str = ""
    line: int | None = None

    def short(self) -> str:
        base = self.file.rsplit("/", 1)[-1]
        return f"{self.name} ({base}:{self.line})" if base and self.line else self.name


@dataclass(frozen=True, slots=True)
class ThreadStack:
    """One thread: /proc's view (state, wchan, syscall, CPU over the window) and, with py-spy, its
    Python frames (innermost first; None when py-spy did not see it)."""

    tid: int
    state: str = "?"
    wchan: str = ""
    syscall: str = ""
    cpu_pct: float = 0.0
    name: str = ""
    frames: tuple[Frame, ...] | None = None


@dataclass(frozen=True, slots=True)
class ProcStack:
    """One server process in one stack sample."""

    pid: int
    title: str
    alive: bool = True
    state: str = "?"
    read_bytes: int = 0
    """Bytes its read calls returned during the window (rchar: files, pipes and network storage)."""
    threads: tuple[ThreadStack, ...] = ()
    pyspy: bool = False
    """py-spy saw this process's Python threads."""
    error: str = ""


@dataclass(frozen=True, slots=True)
class StackSample:
    """What one run of the stack sampler saw on one node."""

    procs: tuple[ProcStack, ...]
    pyspy: str | None = None
    """py-spy's path on the host, None when it is not there."""
    window: float = 0.0
    elapsed_ms: float = 0.0
    pyspy_ms: tuple[float, ...] = ()
    """Milliseconds of each py-spy dump (each pauses its process for about that long)."""
    errors: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RankState:
    """A rank's state in the contract's form, with what a verdict says of it."""

    rank: str
    node: str
    pid: int
    state: str
    frames: tuple[str, ...] = ()
    where: str = ""
    """The frame (or, without py-spy, the syscall or wchan) it sits in, with its callers."""
    detail: str = ""
    cpu_pct: float = 0.0
    phase: str | None = None
    progress: str = ""

    @property
    def label(self) -> str:
        return self.rank or f"pid {self.pid}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank or None,
            "node": self.node or None,
            "pid": self.pid,
            "state": self.state,
            "frames": list(self.frames),
            "where": self.where,
            "detail": self.detail,
            "cpu_pct": round(self.cpu_pct, 1),
        }

    def says(self) -> str:
        """'TP1 blocked in read_shard ← load_weights, 40 % of shards' (one rank, for a verdict)."""
        verb = {"working": "working", "waiting": "waiting", "blocked": "blocked", "idle": "idle", "dead": "gone"}[self.state]
        text = f"{self.label} {verb}"
        if self.where:
            text += f" in {self.where}"
        if self.detail:
            text += f" ({self.detail})"
        if self.progress:
            text += f", {self.progress}"
        return text


# ---- classification ----------------------------------------------------------------------------
def _thread_state(th: ThreadStack, vocab: Vocabulary, reading: bool) -> tuple[str, int | None]:
    """(state, index of the frame it sits in) of one thread."""
    frames = th.frames or ()
    for i, f in enumerate(frames[:TOP]):
        if vocab.waiting_frame(f):
            return "waiting", i
    busy = th.cpu_pct >= WORKING_CPU
    if th.state == "D" and not reading:
        return "blocked", 0 if frames else None
    if th.syscall in vocab.reads and not busy:
        return ("working" if reading else "blocked"), 0 if frames else None
    if busy or th.state == "R":
        return "working", 0 if frames else None
    if th.syscall in vocab.syscalls or (th.wchan and vocab.waiting_wchan(th.wchan)):
        return "waiting", 0 if frames else None
    return "idle", 0 if frames else None


def _chain(frames: tuple[Frame, ...], at: int, vocab: Vocabulary, n: int = 1) -> str:
    """'read_shard ← load_weights': the frame at ``at`` and its nearest callers that are not wrappers."""
    names = [clean(frames[at].name, 60)]
    for f in frames[at + 1 :]:
        if len(names) > n:
            break
        if f.name.rsplit(".", 1)[-1] in vocab.transparent or f.name.startswith("<"):
            continue
        names.append(clean(f.name, 60))
    return " ← ".join(names)


def _proc_where(th: ThreadStack) -> str:
    if th.syscall and th.syscall != "running":
        return th.syscall + (f" (wchan {clean(th.wchan, 40)})" if th.wchan and th.wchan != "0" else "")
    if th.wchan and th.wchan != "0":
        return f"wchan {clean(th.wchan, 40)}"
    return ""


_ORDER = {"working": 0, "blocked": 1, "waiting": 2, "idle": 3}


def classify(p: ProcStack, vocab: Vocabulary, rank: str, node: str = "") -> RankState:
    """One process's state: its main thread's, unless another of its Python threads does the work
    (a loader pool under a main thread waiting on its futures) or is blocked."""
    if not p.alive or p.state in ("Z", "X"):
        return RankState(rank, node, p.pid, "dead", detail="process gone")
    threads = list(p.threads)
    if not threads:
        return RankState(rank, node, p.pid, "idle", detail=clean(p.error, 120) if p.error else "no threads readable")
    main = next((t for t in threads if t.tid == p.pid), threads[0])
    reading = p.read_bytes > 0
    # without py-spy only the main thread and D-state threads speak: native helper threads (an
    # NCCL proxy, a watchdog) spin or sleep whatever the rank does
    others = [t for t in threads if t is not main and (t.frames or t.state == "D")] if p.pyspy else []
    if not p.pyspy:
        others = [t for t in threads if t is not main and t.state == "D"]
    state, at = _thread_state(main, vocab, reading)
    chosen = main
    if state != "working":
        for t in others:
            s, i = _thread_state(t, vocab, reading)
            if _ORDER[s] < _ORDER[state]:
                state, at, chosen = s, i, t
    frames = chosen.frames or ()
    where = _chain(frames, at, vocab) if frames and at is not None else _proc_where(chosen)
    detail = ""
    if not frames:
        bits = [f"{chosen.state} state"] if chosen.state not in ("?", "") else []
        bits.append(f"{chosen.cpu_pct:.0f} % CPU")
        detail = ", ".join(bits)
    elif state == "blocked" and chosen.state == "D":
        detail = "D state"
    if chosen is not main and frames:
        detail = (detail + ", " if detail else "") + f"thread {clean(chosen.name or str(chosen.tid), 40)}"
    shown = tuple(clean(f.short(), 120) for f in frames[:8])
    return RankState(rank, node, p.pid, state, shown, where, detail, chosen.cpu_pct)


def rank_states(sample: StackSample, vocab: Vocabulary, node: str = "", root: int | None = None) -> list[RankState]:
    """The ranks of one sample: processes with a rank title; without any, every process of the tree
    (an engine whose processes carry no rank title: any of them may be doing the work)."""
    out: list[RankState] = []
    for p in sample.procs:
        r = rank_of(p.title)
        if r is not None:
            out.append(classify(p, vocab, r, node))
    if not out:
        out = [classify(p, vocab, "", node) for p in sample.procs if p.alive]
    out.sort(key=lambda s: (_rank_key(s.rank), s.pid))
    return out


def with_log(states: list[RankState], rank_phase: dict[str, str | None], phase: str | None, progress: str) -> list[RankState]:
    """Add what the log says of each rank (its phase; the node's bar for the one furthest behind)."""
    out = []
    for s in states:
        ph = rank_phase.get(s.rank) or rank_phase.get(s.rank.replace(" ", "_")) or phase
        out.append(RankState(s.rank, s.node, s.pid, s.state, s.frames, s.where, s.detail, s.cpu_pct, ph, ""))
    if progress and out:
        lag = culprit(out)
        if lag is not None and lag.state != "waiting" and lag.phase == phase:
            out = [RankState(**{**_fields(s), "progress": progress}) if s is lag else s for s in out]
    return out


def _fields(s: RankState) -> dict[str, Any]:
    return {k: getattr(s, k) for k in s.__slots__}


def working(states: list[RankState]) -> bool:
    return any(s.state == "working" for s in states)


def culprit(states: list[RankState]) -> RankState | None:
    """The rank holding the others up: gone, blocked, or working while others wait; else the one
    furthest behind in the log's phases; ties to the lowest rank."""
    if not states:
        return None
    first = {"dead": 0, "blocked": 1, "working": 2, "idle": 3, "waiting": 4}

    def key(s: RankState) -> tuple[int, int, tuple[int, ...]]:
        ph = PHASE_ORDER.index(s.phase) if s.phase in PHASE_ORDER else len(PHASE_ORDER)
        return (first[s.state], ph, _rank_key(s.rank))

    return min(states, key=key)


def informative(states: list[RankState]) -> bool:
    """The states say something a verdict should name: real ranks, frames, or a blocked or gone
    process (not just a tree of untitled processes idle in unknown places)."""
    return any(s.rank or s.frames or s.state in ("blocked", "dead") for s in states)


def summary(states: list[RankState], with_nodes: bool = False, limit: int = 4) -> str:
    """The verdict's words: the culprit first, then what the others do (grouped when many); empty
    when the states are not informative."""
    lag = culprit(states)
    if lag is None or not informative(states):
        return ""
    parts = [_say(lag, with_nodes)]
    rest = [s for s in states if s is not lag]
    for s in rest[:limit]:
        parts.append(_say(s, with_nodes))
    if len(rest) > limit:
        counts: dict[str, int] = {}
        for s in rest[limit:]:
            counts[s.state] = counts.get(s.state, 0) + 1
        parts.append("and " + ", ".join(f"{n} more {st}" for st, n in counts.items()))
    return "; ".join(parts)


def _say(s: RankState, with_nodes: bool) -> str:
    text = s.says()
    return f"{s.node} {text}" if with_nodes and s.node else text


def helpers_busy(sample: StackSample) -> bool:
    """A process of the tree that is not a rank burns CPU (a compile worker pool, a loader child):
    the ranks may wait on it, so the start is working."""
    if not any(rank_of(p.title) is not None for p in sample.procs):
        return False  # without rank titles every process is classified as one already
    return any(p.alive and rank_of(p.title) is None and sum(t.cpu_pct for t in p.threads) >= WORKING_CPU for p in sample.procs)


def no_frames_hint(sample: StackSample) -> bool:
    """True when py-spy would have shown frames (it is not on the host, or saw none)."""
    return sample.pyspy is None or not any(p.pyspy for p in sample.procs)


@dataclass(slots=True)
class RankWatch:
    """A node's rank states over time, for the judge: when to sample, who works, since when no one does."""

    node: str = ""
    engine: str | None = None
    states: list[RankState] = field(default_factory=list)
    sampled_at: float | None = None
    quiet_since: float | None = None
    """When the current run of samples in which no rank works began (None: someone works, or unknown)."""
    pending: bool = False
    frames_seen: dict[int, tuple[str, ...]] = field(default_factory=dict)
    samples: int = 0
    pyspy: bool | None = None
    said: dict[str, str] = field(default_factory=dict)
    """What the engine's log said of ranks (rank -> words), for the verdict."""

    def note_line(self, text: str) -> None:
        """A log line: keep what it says of a rank (SGLang's 'TP rank N could finish the model
        loading, but there are other ranks that didn't', PyTorch's NCCL watchdog timeout)."""
        if "Rank" not in text and "TP rank" not in text:
            return
        m = _LOADED.search(text)
        if m:
            self.said[f"TP{m.group(1)}"] = "finished loading, other ranks did not"
            return
        m = _WATCHDOG.search(text)
        if m:
            self.said[f"rank {m.group(1)}"] = f"timed out waiting in {clean(m.group(2), 40)} (NCCL watchdog)"

    def log_words(self) -> str:
        if not self.said:
            return ""
        return "the log: " + ", ".join(f"{k} {v}" for k, v in sorted(self.said.items())[:4])

    def due(self, t: float, evidence: dict[str, float], stall_after: float) -> bool:
        """A sample is due: no progress (activity aside) for a quarter of the stall budget (at least
        5 s), and none taken for as long. A quarter: a stall is then declared at most a quarter of
        the budget late, and a start that makes progress is never sampled."""
        if self.pending or not stall_after:
            return False
        last_progress = max((v for k, v in evidence.items() if k not in ACTIVITY), default=0.0)
        every = max(5.0, stall_after / 4)
        if t - last_progress < every:
            return False
        return self.sampled_at is None or t - self.sampled_at >= every

    def feed(self, sample: StackSample, t: float, root: int | None = None) -> tuple[list[RankState], bool]:
        """A sample's rank states; True when a rank's frames changed since the last one (progress)."""
        self.pending = False
        self.sampled_at = t
        if not sample.procs:  # the sample failed (its errors say why): what was known stays
            return self.states, False
        self.samples += 1
        vocab = vocabulary(self.engine)
        states = rank_states(sample, vocab, self.node, root)
        seen = {s.pid for s in states}
        for old in self.states:  # a rank seen before and gone now died
            if old.pid not in seen and old.state != "dead":
                states.append(RankState(old.rank, old.node, old.pid, "dead", detail="process gone"))
        changed = False
        for s in states:
            prev = self.frames_seen.get(s.pid)
            if s.frames and prev is not None and prev != s.frames and s.state != "waiting":
                changed = True
            if s.frames:
                self.frames_seen[s.pid] = s.frames
        self.states = states
        self.pyspy = not no_frames_hint(sample)
        if working(states) or changed or helpers_busy(sample):
            self.quiet_since = None
        elif self.quiet_since is None:
            self.quiet_since = t
        return states, changed

    # ---- for the judge ---------------------------------------------------------------------
    def last_life(self, evidence: dict[str, float], origin: float = 0.0) -> float:
        """The last sign of life: progress, and activity (CPU, GPU use) only up to the moment the
        stacks showed that no rank works (a rank spinning in a collective is not alive); ``origin``
        when there was none (the first reading of the host)."""
        last = max(evidence.values(), default=origin)
        if self.quiet_since is None:
            return last
        progress = max((v for k, v in evidence.items() if k not in ACTIVITY), default=origin)
        return max(progress, min(last, self.quiet_since))

    def observe(self, sample: StackSample, t: float, root: int | None, evidence: dict[str, float]) -> list[tuple[str, str]]:
        """Take a sample in; the warnings (key, message) it calls for."""
        _, changed = self.feed(sample, t, root)
        if changed:
            evidence["stack"] = t
        out = [("stacks", clean(e, 240)) for e in sample.errors[:1] if not sample.procs]
        if sample.procs and sample.pyspy is None:
            out.append(
                (
                    "pyspy",
                    "py-spy is not on the host's PATH: rank states come from /proc (thread state, wchan); "
                    "install py-spy on the host (pip install py-spy) to see each rank's frames",
                )
            )
        elif sample.procs and not self.pyspy and sample.errors:
            out.append(
                (
                    "pyspy",
                    f"py-spy could not read the server's stacks ({clean(sample.errors[0], 200)}); it needs ptrace rights over the server",
                )
            )
        return out

    def annotated(self, st: Any, spans: dict[str, Any] | None = None) -> list[RankState]:
        phase = st.phase
        span = (spans or st.spans).get(phase)
        progress = ""
        if span is not None and span.total:
            pct = 100 * (span.done or 0) // span.total
            progress = f"{pct} % of shards" if phase == "weight_load" else f"{pct} % of {phase}"
        return with_log(self.states, dict(st.rank_phase), phase, progress)

    def stall_words(self, msg: str, st: Any, t: float, evidence: dict[str, float], budget: float) -> tuple[str, dict[str, Any]]:
        """The stall message with the culprit first, and the stall event's ``ranks``."""
        states = self.annotated(st)
        if not informative(states):
            return msg, {}
        if self.quiet_since is not None:
            progress = max((v for k, v in evidence.items() if k not in ACTIVITY), default=0.0)
            busy = [k for k in ACTIVITY if k in evidence and t - evidence[k] < budget]
            msg = (
                f"no progress for {t - progress:.0f}s (budget {budget:.0f}s) in {st.phase}, and no rank working for "
                f"{t - self.quiet_since:.0f}s" + (f" ({' and '.join(busy).replace('_', ' ')} still busy: waiting spins)" if busy else "")
            )
        words = self.log_words()
        return f"{summary(states)}; {msg}" + (f"; {words}" if words else ""), {"ranks": [s.as_dict() for s in states]}

    def verdict_words(self, v: Any, st: Any) -> tuple[Any, dict[str, Any]]:
        """A non-ready verdict with the ranks' states: the result's ``ranks``; a reason naming the
        culprit (a stall's reason names it already)."""
        if v.outcome == "ready" or (not self.states and not self.said):
            return v, {}
        states = self.annotated(st)
        more = {"ranks": [s.as_dict() for s in states]} if informative(states) else {}
        if v.outcome == "stalled":
            return v, more
        words = "; ".join(w for w in (summary(states), self.log_words()) if w and w not in v.reason)
        return (dataclasses.replace(v, reason=f"{v.reason}; {words}") if words else v), more
