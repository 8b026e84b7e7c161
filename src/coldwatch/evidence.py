"""Typed evidence: every reading the edges (probes, HTTP, supervisors, the log) hand to the judge,
and every action the judge hands back. Pure data: the only home of these types.

A reading goes in through ``Judge.observe(reading, t)``; the judge answers with a list of actions
(probe now, follow a new start's log, probe fast until, watch this pid, sample stacks) that the
driver applies to the node's probe through its ``NodeControl``: no thread reads the judge.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from coldwatch.bandwidth import IoSample, LoadTarget
from coldwatch.normalise import LogLine
from coldwatch.ranks import StackSample  # one stack sample of a node's server processes (probes/stacks.py)

__all__ = [
    "Action",
    "CheckResult",
    "ConnectionLost",
    "GpuReading",
    "GpuSample",
    "HttpState",
    "LogEnded",
    "LogLine",
    "NodeLost",
    "ProbeFailed",
    "ProbeFast",
    "ProbeNow",
    "ProbeWarning",
    "ProcFailed",
    "ProcReading",
    "ProcSample",
    "ProcUnavailable",
    "Reading",
    "ReadingsDropped",
    "Reconnected",
    "Rescope",
    "SampleStacks",
    "SamplerOff",
    "ServedAt",
    "ServiceState",
    "StackSample",
    "SupervisorReading",
    "SupervisorState",
    "WatchPid",
]


# ---- samples: what one run of a probe says ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GpuSample:
    index: int
    used_mib: int | None
    total_mib: int | None
    util: int | None

    def as_dict(self) -> dict[str, Any]:
        return {"index": self.index, "used_mib": self.used_mib, "total_mib": self.total_mib, "util": self.util}


@dataclass(frozen=True, slots=True)
class ServiceState:
    known: bool
    active: str = ""
    sub: str = ""
    result: str = ""
    restarts: int | None = None
    main_pid: int | None = None
    exec_status: int | None = None
    invocation: str = ""
    load: str = ""
    active_since: str = ""
    props: dict[str, str] = field(default_factory=dict)

    @property
    def dead(self) -> bool:
        return self.known and (self.active in ("failed", "inactive") or self.sub in ("failed", "dead"))


@dataclass(frozen=True, slots=True)
class ProcSample:
    alive: bool
    cpu_s: float = 0.0
    read_bytes: int = 0
    rss_kb: int = 0
    procs: int = 0
    children: tuple[str, ...] = ()
    cmdline: str = ""
    model_bytes: int | None = None
    # who listens on the probed port, seen from the server's network namespace: "own" (a process of
    # the server's tree), "free", "other" (owner_pid/owner_name when readable), "unknown" (the tree's
    # sockets cannot be read, e.g. another user's server), or None when not asked
    port: str | None = None
    owner_pid: int | None = None
    owner_name: str | None = None
    owner_older: bool = False  # the holder started before the server: it was there before this start
    load: LoadTarget | None = None  # where the weights live (sent once per command line)
    io: IoSample | None = None  # the storage's counters this interval (while the weights' place is known)


@dataclass(frozen=True, slots=True)
class HttpState:
    """One rung of the readiness ladder."""

    state: str  # refused | timeout | status | ready | error
    status: int | None = None
    detail: str = ""
    model: str | None = None


@dataclass(frozen=True, slots=True)
class SupervisorState:
    """What the server's supervisor (a systemd unit, later a container runtime) says of it.

    ``start_id`` names the current start (systemd's InvocationID, a container's StartedAt): a new
    one, or a higher ``restarts`` counter, is a restart. ``waiting`` means the supervisor is between
    a failure and the restart it has scheduled.
    """

    known: bool
    running: bool = False
    dead: bool = False
    waiting: bool = False
    restarts: int | None = None
    start_id: str = ""
    since: str = ""
    """When the current start began, as the supervisor prints it (scopes the log)."""
    main_pid: int | None = None
    death_kind: str | None = None  # killed | oom | exited, when dead
    death_reason: str = ""
    not_found: bool = False


# ---- readings: what a node's probe emits ----------------------------------------------------------
# (``LogLine``, one normalised log line, and ``HttpState``, one rung of the HTTP ladder, are readings
# as they are.)


@dataclass(frozen=True, slots=True)
class GpuReading:
    """One GPU sample: a row per GPU, or ``None`` with a ``problem`` (the GPU command is missing,
    or printed something that is not its CSV)."""

    samples: tuple[GpuSample, ...] | None
    problem: str | None = None


@dataclass(frozen=True, slots=True)
class SupervisorReading:
    """The supervisor's state; ``initial``: the first look, before the watch began."""

    state: SupervisorState
    initial: bool = False


@dataclass(frozen=True, slots=True)
class ProcReading:
    """One sample of the server's process tree rooted at ``pid``."""

    pid: int
    sample: ProcSample


@dataclass(frozen=True, slots=True)
class ProcFailed:
    """The process sampler raised on the host (one sample lost, sampling goes on)."""

    detail: str


@dataclass(frozen=True, slots=True)
class ProcUnavailable:
    """The host cannot sample processes (no python3): liveness and the port rule go without it."""

    detail: str


@dataclass(frozen=True, slots=True)
class SamplerOff:
    """The streaming sampler did not start (status ``status``); one command per sample instead."""

    status: int | None


@dataclass(frozen=True, slots=True)
class LogEnded:
    """The log's follow command ended (``docker logs -f`` of a stopped container), after ``ran_s``."""

    status: int | None
    ran_s: float


@dataclass(frozen=True, slots=True)
class ConnectionLost:
    """The node's connection dropped or hung; its probe reconnects for up to ``retry_for`` seconds."""

    why: str
    retry_for: float
    where: str = ""
    """"node NAME: " for a node of a multi-node server, else ""."""


@dataclass(frozen=True, slots=True)
class Reconnected:
    """The connection is back after ``gap`` seconds; the log resumed ``how``."""

    gap: float
    how: str
    where: str = ""


@dataclass(frozen=True, slots=True)
class NodeLost:
    """The connection stayed down past --reconnect-for: the head's loss ends the watch
    (unreachable); a worker's leaves it blind."""

    message: str


@dataclass(frozen=True, slots=True)
class ProbeFailed:
    """A probe thread raised (a bug or an unexpected host answer); the watch goes on without it."""

    probe: str
    detail: str


@dataclass(frozen=True, slots=True)
class ProbeWarning:
    """Something the probe noticed that the user should read (once per ``key``)."""

    key: str
    message: str


@dataclass(frozen=True, slots=True)
class EarlierLine:
    """A ``--log-cmd`` line of an earlier run of the server (an appended log's old lines, stamped
    before ``why``): shown, never judged."""

    line: LogLine
    why: str


@dataclass(frozen=True, slots=True)
class EarlierEnded:
    """The log stream ended on ``count`` old-stamped lines (a stopped container's log): they were
    this start's last lines after all, and follow as ``LogLine`` readings."""

    count: int


@dataclass(frozen=True, slots=True)
class ReadingsDropped:
    """``count`` readings in all were dropped because the judging queue was full."""

    count: int


@dataclass(frozen=True, slots=True)
class ServedAt:
    """The server is probed at ``url``; ``port`` is the local port whose holder the sampler can
    see (None: a runtime's proxy holds a published port, or the URL is not on the host)."""

    url: str
    port: int | None


@dataclass(frozen=True, slots=True)
class CheckResult:
    """A post-ready functional check; ``late``: not answered by the deadline."""

    name: str
    ok: bool
    detail: str
    late: bool = False


Reading = (
    LogLine
    | HttpState
    | GpuReading
    | SupervisorReading
    | ProcReading
    | ProcFailed
    | ProcUnavailable
    | SamplerOff
    | LogEnded
    | ConnectionLost
    | Reconnected
    | NodeLost
    | ProbeFailed
    | ProbeWarning
    | EarlierLine
    | EarlierEnded
    | ReadingsDropped
    | ServedAt
    | CheckResult
    | StackSample
)
"""Everything ``Judge.observe`` takes."""


# ---- actions: what the judge asks of the node's probe -------------------------------------------


@dataclass(frozen=True, slots=True)
class ProbeNow:
    """Probe HTTP at once (the log said ready; a held answer may count now)."""


@dataclass(frozen=True, slots=True)
class Rescope:
    """A new start: follow its log from its beginning."""

    state: SupervisorState


@dataclass(frozen=True, slots=True)
class ProbeFast:
    """Probe a refused port quickly until ``until`` (watch seconds): the bind is due."""

    until: float


@dataclass(frozen=True, slots=True)
class WatchPid:
    """Sample this process tree (the supervisor named a new main PID)."""

    pid: int


@dataclass(frozen=True, slots=True)
class SampleStacks:
    """Sample every rank's stack now (the node's stacks probe answers with a ``StackSample``)."""

    reason: str = ""


Action = ProbeNow | Rescope | ProbeFast | WatchPid | SampleStacks
"""Everything ``Judge.observe`` may return."""
