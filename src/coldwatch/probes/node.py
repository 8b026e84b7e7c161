"""One node's probe: its threads, its schedule, its reconnects; typed readings out.

A ``NodeProbe`` watches one host of the server. Its threads (the log follower, the streaming
sampler or the per-sample fallbacks, the keepalive ping, and on the head the HTTP ladder) type what
they read where they read it and hand it to ``emit`` as readings (``coldwatch.evidence``). What the
judge wants back (probe now, probe fast, watch this pid, follow a new start's log) arrives through
``apply(actions)`` and a small ``NodeControl`` that the threads read: no thread touches the judge.

A dropped or hung connection is the probe's own business: a thread of its own reconnects with
capped exponential backoff, emitting ``ConnectionLost``, then ``Reconnected`` (and resuming the
log) or ``NodeLost``; the judging thread never sleeps on it. ``once()`` is one sample of each
stream, for ``status``.
"""

from __future__ import annotations

import threading
import time
import urllib.parse
import zlib
from collections.abc import Callable, Iterator
from typing import Any

from coldwatch.errors import ConfigError, UnreachableError
from coldwatch.evidence import (
    Action,
    ConnectionLost,
    EarlierEnded,
    EarlierLine,
    GpuReading,
    HttpState,
    LogEnded,
    NodeLost,
    ProbeFailed,
    ProbeFast,
    ProbeNow,
    ProbeWarning,
    ProcFailed,
    ProcReading,
    ProcSample,
    ProcUnavailable,
    Reading,
    Reconnected,
    Rescope,
    SamplerOff,
    SampleStacks,
    ServedAt,
    StackSample,
    SupervisorReading,
    SupervisorState,
    WatchPid,
)
from coldwatch.hosts.base import Follower, Host, RunResult, q
from coldwatch.http import Ladder, make_client
from coldwatch.normalise import LogLine, Normaliser, split_records
from coldwatch.probes import stacks
from coldwatch.probes.log import HOST_CLOCK, EarlierRun, LogSource, earlier_run
from coldwatch.probes.parse import PROC_SCRIPT, gpu_evidence, parse_proc_sample, proc_from_dict
from coldwatch.probes.sampler import SamplerRecord, parse_record, sampler_command
from coldwatch.settings import Settings
from coldwatch.supervisors import NOT_LISTENING, Supervisor, server_url, supervisor_for

NVIDIA_SMI = "nvidia-smi --query-gpu=index,memory.used,memory.total,utilization.gpu --format=csv,noheader,nounits"
PING_EVERY = 5.0
PING_TIMEOUT = 10.0
"""A connection whose server does not answer a keepalive within this many seconds is hung."""
FAST_PROBE = 0.2
"""Once the log says the server is about to listen (warm-up) or ready, a refused port is probed this
often: the log line can come a moment before the bind (vLLM logs "Application startup complete" as
uvicorn starts), and a refused connect costs one channel-open round trip."""
PROBE_REFRESH = 5.0
"""While the last probe was refused and every process sample since says nothing listens on the probed
port, the probe is sent at most this often (in --interval steps): the sample has answered it already,
and a refused probe costs a channel open on the SSH connection and on the host's sshd (at fleet scale,
most of the watcher's CPU). A sample that sees a listener wakes the probe at once."""
LOOPBACK = ("127.0.0.1", "localhost", "::1", "0.0.0.0", "::")
BACKOFF_FIRST = 0.5
BACKOFF_MAX = 10.0
EARLIER_BURST = 3.0
"""Seconds after a --log-cmd follower starts in which an old-stamped line is taken for what the log held
already (an earlier run's); a line written later is this start's, whatever its stamp says (a container
logging UTC on a host in another zone)."""
EARLIER_HOLD = 5000
"""At most this many earlier-run lines are kept, to be judged after all if the stream ends on them."""

Emit = Callable[["Reading | tuple[Reading, ...]", int], None]
"""Where a probe's readings go: (a reading, or several read together in order, and the log generation
they belong to). A batch is one queue item for the driver: the lines of one read chunk, the readings
of one sampler record."""


def local_port(url: str) -> int | None:
    """The probed port when the URL points at the host itself (what the sampler can see), else None."""
    try:
        u = urllib.parse.urlsplit(url)
        if (u.hostname or "") not in LOOPBACK:
            return None
        return u.port or (443 if u.scheme == "https" else 80)
    except ValueError:
        return None


def every(
    interval: Callable[[], float],
    step: Callable[[], bool],
    stop: threading.Event,
    wake: threading.Event | None = None,
    wait_first: bool = False,
    now: Callable[[], float] = time.monotonic,
) -> None:
    """Run ``step`` every ``interval()`` seconds on a schedule that does not drift by the step's own
    time, until it returns False or ``stop`` is set. A set ``wake`` runs the next step at once and
    restarts the schedule from there; a step that overran its slot starts the next one at once,
    without a burst of catch-up runs."""
    nxt = now() + (interval() if wait_first else 0.0)
    while True:
        delay = max(0.0, nxt - now())
        if wake is not None:
            if wake.wait(delay):
                wake.clear()
                nxt = now()
        elif delay and stop.wait(delay):
            return
        if stop.is_set() or not step():
            return
        nxt = max(nxt + interval(), now() - interval())


class NodeControl:
    """What the driver tells one node's probe, from the judge's actions. Plain attributes (each
    write is atomic) and two events; the probe's threads read it, nobody reads the judge."""

    def __init__(self, pid: int | None = None, port: int | None = None) -> None:
        self.pid = pid
        """The process tree to sample (--pid, else the supervisor's main PID)."""
        self.port = port
        """The probed port whose holder the sampler reports (None: not on this host)."""
        self.fast_until = -1.0
        """Until this watch second a refused port is probed every FAST_PROBE seconds."""
        self.probe_now = threading.Event()
        self.stacks_wanted = threading.Event()
        """Set by a SampleStacks action; the stacks probe takes and clears it."""
        self.stacks_reason = ""
        self.port_free_at = -1.0
        """When (time.monotonic()) the latest process sample said nothing listens on the probed port;
        -1 when the latest one did not, or none came."""

    def port_seen(self, sample: ProcSample) -> None:
        """A process sample's word on the probed port: free (a probe now would be refused), or taken,
        which wakes a probe held back by a free port at once."""
        if sample.port == "free" and sample.alive:
            self.port_free_at = time.monotonic()
        elif self.port_free_at >= 0:
            self.port_free_at = -1.0
            if sample.port is not None:
                self.probe_now.set()


class NodeProbe:
    """The probe of one node. ``emit`` must not block for long (the driver's queue); ``t`` is the
    watch clock (seconds since the watch began), the one the judge's windows are in."""

    def __init__(
        self,
        name: str,
        settings: Settings,
        host: Host,
        emit: Emit,
        t: Callable[[], float],
        http: bool = False,
        tag: str = "",
        where: str = "",
    ) -> None:
        self.name = name
        self.s = settings
        self.host = host
        self._emit = emit
        self.t = t
        self.tag = tag
        self.where = where
        self.supervisor: Supervisor = supervisor_for(settings.unit, settings.log_cmd, settings.pid, settings.container, settings.runtime)
        self.control = NodeControl(settings.pid, local_port(settings.url) if http else None)
        self.url = settings.url
        self.http = http
        self.ladder: Ladder | None = None
        self.client: Any = None
        """The head's HTTP client (the driver's: post-ready checks use it too)."""
        self.stop = threading.Event()
        self.gen = 0
        """Bumps on a new start's log: readings of the old one are stale."""
        self.log = LogSource(settings.log_cmd, settings.unit, None, self.supervisor)
        self.log_seq = 0
        self.sampler_seq = 0
        self.svc_known = False
        self.streaming = True
        self.reconnects = 0
        self.gave_up: str | None = None
        self.followers: list[Follower] = []
        self._log_follower: Follower | None = None
        self.threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._reconnecting = False
        self._stacks_running = False
        self.parked = False
        """A new start's log waits until the supervisor says it runs (a container between two runs)."""
        self._park_lock = threading.Lock()
        self.earlier: EarlierRun | None = None
        """A --log-cmd stream's lines from an earlier run (an appended log): shown, never judged."""

    # ---- plumbing ----------------------------------------------------------------------
    def emit(self, r: Reading, gen: int | None = None) -> None:
        self._emit(r, self.gen if gen is None else gen)
        if isinstance(r, SupervisorReading) and not r.initial:
            self._unparked(r.state)
        elif isinstance(r, ProcReading):
            self.control.port_seen(r.sample)

    def emit_batch(self, readings: tuple[Reading, ...], gen: int | None = None) -> None:
        """Several readings read together, in their order, as one item for the driver."""
        if not readings:
            return
        if len(readings) == 1:
            self.emit(readings[0], gen)
            return
        self._emit(readings, self.gen if gen is None else gen)
        for r in readings:
            if isinstance(r, SupervisorReading) and not r.initial:
                self._unparked(r.state)
            elif isinstance(r, ProcReading):
                self.control.port_seen(r.sample)

    def spawn(self, name: str, fn: Callable[[], None]) -> None:
        def wrapped() -> None:
            try:
                fn()
            except UnreachableError as exc:
                self.lost(str(exc))
            except Exception as exc:  # noqa: BLE001 - a probe must never take the watch down
                self.emit(ProbeFailed(name, f"{type(exc).__name__}: {exc}"))

        th = threading.Thread(target=wrapped, name=f"coldwatch-{name}{self.tag}", daemon=True)
        th.start()
        self.threads.append(th)

    def remote(self, cmd: str, timeout: float, stdin: bytes | None = None) -> RunResult | None:
        """Run on the host; None while the connection is down (the probe reconnects)."""
        try:
            r = self.host.run(cmd, timeout=timeout, stdin=stdin)
        except UnreachableError as exc:
            self.lost(str(exc))
            return None
        if r.rc is None and not self.host.alive():
            self.lost("SSH connection lost")
            return None
        return r

    def _follow(self, cmd: str) -> Follower:
        f = self.host.follow(cmd)
        self.followers.append(f)
        if self.stop.is_set():  # closed while this thread opened it: it ends here, not at exit
            f.close()
        return f

    def _close_followers(self) -> None:
        for f in list(self.followers):
            f.close()
        self.followers.clear()

    # ---- the way back: the judge's actions -----------------------------------------------------
    def apply(self, actions: list[Action]) -> None:
        for a in actions:
            if isinstance(a, ProbeNow):
                self.control.probe_now.set()
            elif isinstance(a, ProbeFast):
                self.control.fast_until = max(self.control.fast_until, a.until)
            elif isinstance(a, WatchPid):
                self.control.pid = a.pid
            elif isinstance(a, SampleStacks):
                self.control.stacks_reason = a.reason
                self.control.stacks_wanted.set()
                self._stacks_on_demand()
            elif isinstance(a, Rescope):
                self.rescope(a.state)

    def rescope(self, svc: SupervisorState) -> None:
        """A new start: probe where it serves, follow its log from its beginning."""
        if self.http:
            self.resolve_url(initial=False)
        if self.s.log_cmd:  # a --log-cmd stream (docker logs -f) simply goes on
            return
        self.gen += 1
        old = self._log_follower
        self.log_seq += 1  # the old follower's end is stale from here on
        if old is not None:
            old.close()  # the sampler goes on: it says when a parked start runs
        with self._park_lock:
            self.parked = svc.known and not svc.running  # a container between two runs: its log follows once it runs
            if self.parked:
                return
        self.log.rescope(svc)
        self._start_log(f"log{self.gen}")

    def _unparked(self, svc: SupervisorState) -> None:
        """A container watched while it was not running: once it runs, its port is probed where it is
        published and the new run's log is followed from its start."""
        if not (svc.known and svc.running) or self.stop.is_set():
            return
        if self.http and self.url == NOT_LISTENING:
            self.resolve_url(initial=False)
        with self._park_lock:
            if not self.parked:
                return
            self.parked = False
        self.log.rescope(svc)
        self._start_log(f"log{self.gen}")

    def resolve_url(self, initial: bool = True) -> None:
        """Without --url, a container is probed where its serving port is published, which may move when
        it restarts (a dynamically published port)."""
        try:
            url, own_socket = server_url(self.s.url, self.s.url_given, self.supervisor, self.s.port, self.s.engine)
        except ConfigError as exc:
            if initial:
                raise
            self.emit(ProbeWarning("url", f"after the restart: {exc}"))
            return
        if url == NOT_LISTENING and not initial:
            return  # between two runs: probed where it was until a sample shows it running
        note = getattr(self.supervisor, "note", "")
        if note:
            self.emit(ProbeWarning("url-stopped", note))
        if url != self.url:
            self.url = url
            if self.client is not None:
                self.ladder = Ladder(self.client, url, self.s.model, self.s.api_key)
            self.control.port = local_port(url) if own_socket else None  # a published port: the runtime's proxy holds it
            self.emit(ServedAt(url, self.control.port))

    # ---- start and stop ------------------------------------------------------------------
    def first_state(self) -> SupervisorState | None:
        """The supervisor's state before the watch (None without a supervisor command)."""
        cmd = self.supervisor.state_command()
        if cmd is None:
            return None
        r = self.host.run(cmd, timeout=10.0)
        svc = self.supervisor.first_state(r.rc, r.stdout.decode("utf-8", "replace"))
        self.svc_known = svc.known
        return svc

    def start(self, client: Any = None) -> None:
        """Scope the log to the supervisor's current start, then start the streams."""
        svc = self.first_state()
        if svc is not None:
            self.emit(SupervisorReading(svc, initial=True))
            if svc.main_pid and self.s.pid is None:
                self.control.pid = svc.main_pid
        if self.http:
            self.resolve_url()
            self.client = client
            self.ladder = Ladder(client, self.url, self.s.model, self.s.api_key)
        self.earlier = self._earlier_run(svc)
        self.log = LogSource(self.s.log_cmd, self.s.unit, svc, self.supervisor)
        self._start_log("log")
        self._start_sampler("sampler")
        if self.s.host:
            self.spawn("ping", self._ping_thread)
        if self.http:
            self.spawn("http", lambda: probe_http(self))

    def _stacks_on_demand(self) -> None:
        """The stacks thread runs only while the judge wants samples (most watches never do): a fleet's
        100 targets kept 100 threads asleep for it."""
        with self._lock:
            if self._stacks_running or self.stop.is_set():
                return
            self._stacks_running = True
        self.spawn("stacks", self._stacks_thread)

    def _stacks_thread(self) -> None:
        """A stack sample of the server's processes for each SampleStacks; it ends when none is pending."""
        try:
            while not self.stop.is_set():
                with self._lock:
                    if not self.control.stacks_wanted.is_set():
                        self._stacks_running = False
                        return
                    self.control.stacks_wanted.clear()
                self.emit(self.stacks_now())
        except BaseException:
            with self._lock:
                self._stacks_running = False
            raise

    def stacks_now(self, budget: float = stacks.BUDGET) -> StackSample:
        """One stack sample now (probes/stacks.py), on this thread."""
        if self.control.pid is None:
            return StackSample((), errors=("stack sample: the server's main PID is not known",))
        try:
            return stacks.take(self.host, self.control.pid, budget=budget)
        except UnreachableError as exc:
            return StackSample((), errors=(f"stack sample: {exc}",))

    def _earlier_run(self, svc: SupervisorState | None) -> EarlierRun | None:
        """The earlier-run filter of a --log-cmd stream, from the host's clock (None without one)."""
        if self.s.log_cmd is None:
            return None
        r = self.host.run(HOST_CLOCK, timeout=10.0)
        return earlier_run(r.stdout.decode("ascii", "replace"), svc, self.s.log_cmd)

    def close(self) -> None:
        self.stop.set()
        self.control.probe_now.set()
        self.control.stacks_wanted.set()
        self._close_followers()

    # ---- the streams ---------------------------------------------------------------------
    def _start_log(self, name: str) -> None:
        self.log_seq += 1
        seq, gen = self.log_seq, self.gen
        self.spawn(name, LogReader(self, gen, seq).run)

    def _start_sampler(self, name: str) -> None:
        self.sampler_seq += 1
        seq = self.sampler_seq
        self.spawn(name, lambda: stream_samples(self, seq))

    def _ping_thread(self) -> None:
        """Notice a hung connection: no answer to a keepalive within PING_TIMEOUT."""

        def step() -> bool:
            k = self.reconnects  # a failed ping of a connection already replaced says nothing
            if self.host.alive() and not self.host.ping(PING_TIMEOUT) and not self.stop.is_set() and k == self.reconnects:
                self.lost(f"no answer from the SSH server for {PING_TIMEOUT:g}s", hung=True)
            return True

        every(lambda: PING_EVERY, step, self.stop, wait_first=True)

    # ---- reconnects ------------------------------------------------------------------------
    def lost(self, why: str, hung: bool = False) -> None:
        """The connection dropped (or hangs): reconnect on a thread of the probe's own."""
        with self._lock:
            if self._reconnecting or self.stop.is_set() or self.gave_up is not None:
                return
            if self.host.alive() and not hung:
                return
            self._reconnecting = True
        self.spawn(f"reconnect{self.reconnects}", lambda: reconnect(self, why))

    def once(self, http_budget: float) -> Iterator[Reading]:
        """One sample of each stream, for ``status`` (see ``sample_once``)."""
        return sample_once(self, http_budget)


class LogReader:
    """One follower of the server's log, on its own thread: records typed into lines where they are
    read, and the lines of one read chunk handed to the driver as one batch (a burst of 70 bar
    redraws was 70 queue items and 70 turns of the judging loop). An earlier run's lines are held
    back, shown as such, and judged after all if the stream ends on them."""

    def __init__(self, probe: NodeProbe, gen: int, seq: int) -> None:
        self.p = probe
        self.gen = gen
        self.seq = seq
        self.out: list[Reading] = []
        self.started = time.monotonic()

    def flush(self) -> None:
        if self.out:
            batch, self.out = tuple(self.out), []
            self.p.emit_batch(batch, self.gen)

    def chunks(self, follower: Follower) -> Iterator[bytes]:
        for chunk in follower.chunks():
            yield chunk
            self.flush()  # asked for the next chunk: every record of this one is typed

    def run(self) -> None:
        p, gen, seq = self.p, self.gen, self.seq
        follower = p._follow(p.log.command())
        p._log_follower = follower
        if seq != p.log_seq:
            follower.close()
            return
        norm = p.log.norm
        self.started = time.monotonic()
        lumpy: str | None = None
        held: list[LogLine] = []  # the earlier run's lines, until this start's first line says they were
        for rec in p.log.records(self.chunks(follower), hold_tail=True, live=lambda: seq == p.log_seq):
            if p.stop.is_set():
                break
            self.take(norm, rec, held)
            if lumpy is None and (lumpy := p.log.lumps.warning()) is not None:
                self.out.append(ProbeWarning("log_lumps", lumpy))
        ended = not p.stop.is_set() and seq == p.log_seq and p.host.alive()
        if ended and (rest := p.log.rest()) is not None:
            self.take(norm, rest, held)  # unterminated, and the stream ended by itself: the log's last words
        self.flush()
        if held and not p.stop.is_set() and seq == p.log_seq:
            # the stream ended on them (a stopped container's `docker logs -f`): they were this start's last words
            p.emit_batch((EarlierEnded(len(held)), *held), gen)
        if p.stop.is_set() or seq != p.log_seq:
            return  # stopping, or a follower replaced after a reconnect
        if not p.host.alive():
            p.lost("SSH connection lost")
            return
        p.emit(LogEnded(follower.exit_status, time.monotonic() - self.started), gen)

    def take(self, norm: Normaliser, rec: bytes, held: list[LogLine]) -> None:
        """One record's lines to the batch, an earlier run's held back."""
        for line in norm.lines(rec):
            if self.is_earlier(line):
                if len(held) < EARLIER_HOLD:
                    held.append(line)
                continue
            held.clear()
            self.out.append(line)

    def is_earlier(self, line: LogLine) -> bool:
        """An earlier run's line (emitted as such): stamped before this start, and already in the log
        when the follower began (within EARLIER_BURST); the first line that is not ends the filter."""
        ea = self.p.earlier
        if ea is None or ea.done:
            return False
        if time.monotonic() - self.started < EARLIER_BURST and ea.earlier(line):
            self.out.append(EarlierLine(line, ea.why))
            return True
        ea.done = True  # a line stamped in this start, or written since the watch began: this start's
        return False


def probe_http(self: NodeProbe) -> None:
    """The head's HTTP thread: the readiness ladder every --interval, at once when the judge asks, every
    FAST_PROBE seconds while a refused port is expected to bind soon."""
    fast = False
    refused_at = -1.0  # when the last probe sent was refused (time.monotonic()); -1: it was not

    def interval() -> float:
        return min(FAST_PROBE, self.s.interval) if fast else self.s.interval

    def step() -> bool:
        nonlocal fast, refused_at
        assert self.ladder is not None
        now = time.monotonic()
        free_at = self.control.port_free_at
        if (
            refused_at >= 0
            and self.t() >= self.control.fast_until
            and free_at > refused_at
            and now - free_at <= 2 * self.s.interval + 1.0
            and now - refused_at < max(PROBE_REFRESH, self.s.interval)
        ):
            return not self.stop.is_set()  # refused again, as a sample since the last one says: not sent
        st: HttpState = self.ladder.probe()
        self.emit(st)
        refused_at = now if st.state == "refused" else -1.0
        fast = st.state == "refused" and self.t() < self.control.fast_until
        return not self.stop.is_set()

    every(interval, step, self.stop, wake=self.control.probe_now)


def reconnect(p: NodeProbe, why: str) -> None:
    """Capped exponential backoff for up to --reconnect-for; then the log resumes (a probe's reconnect thread)."""
    lost_at = p.t()
    retry_for = p.s.reconnect_for
    p.emit(ConnectionLost(why, retry_for, p.where))
    p.log_seq += 1  # the followers of the lost connection end stale
    p.sampler_seq += 1
    p._close_followers()
    delay = BACKOFF_FIRST
    while not p.stop.is_set():
        try:
            p.host.reconnect()
            break
        except UnreachableError as exc:
            gap = p.t() - lost_at
            if gap >= retry_for:
                p.gave_up = f"{p.where}SSH connection lost for {gap:.0f}s (--reconnect-for {retry_for:g}s): {exc}"
                p.emit(NodeLost(p.gave_up))
                return
            p.stop.wait(min(delay, max(retry_for - gap, 0.1)))
            delay = min(delay * 2, BACKOFF_MAX)
    if p.stop.is_set():
        return
    p.log.resume()
    p.reconnects += 1
    how = "from the journal cursor" if p.log.journal else f"skipping {p.log._skip} records already seen"
    p.emit(Reconnected(p.t() - lost_at, how, p.where))
    with p._lock:
        p._reconnecting = False
    p._start_log(f"log-r{p.reconnects}")
    if p.streaming:
        p._start_sampler(f"sampler-r{p.reconnects}")


def stream_samples(self: NodeProbe, seq: int) -> None:
    """A probe's sampler thread: one long-lived channel, a JSON record per interval (GPUs, supervisor,
    process tree), each record's readings one batch; without python3 on the host, the per-sample fallbacks."""
    s = self.s
    svc_cmd = self.supervisor.state_command() if self.svc_known else None
    cmd = sampler_command(
        s.interval, s.gpu_cmd or NVIDIA_SMI, s.gpu_cmd is not None, svc_cmd, s.pid, self.control.port, self.supervisor.pid_pattern
    )
    follower = self._follow(cmd)
    records = 0
    for line in split_records(follower.chunks()):
        if self.stop.is_set() or seq != self.sampler_seq:
            return
        rec = parse_record(line)
        if rec is not None:
            records += 1
            self.emit_batch(tuple(typed(rec, self.supervisor)))
    if self.stop.is_set() or seq != self.sampler_seq:
        return
    if records == 0 and self.host.alive():
        # no python3 on the host (or it cannot run the sampler): one command per sample instead
        self.emit(SamplerOff(follower.exit_status))
        if self.streaming:
            self.streaming = False
            Fallback(self).start()
    elif not self.host.alive():
        self.lost("SSH connection lost")


def typed(rec: SamplerRecord, supervisor: Supervisor) -> Iterator[Reading]:
    """One sampler record as readings: GPUs, then the supervisor, then the process tree."""
    if rec.gpu is not None:
        yield gpu_reading(*rec.gpu)
    if rec.svc is not None:
        yield SupervisorReading(supervisor.parse(*rec.svc))
    if rec.proc is not None and rec.pid is not None:
        if "error" in rec.proc:
            yield ProcFailed(str(rec.proc["error"]))
        sample = proc_from_dict(rec.proc)
        if sample is not None:
            yield ProcReading(rec.pid, sample)


def gpu_reading(rc: int | None, out: str, err: str) -> GpuReading:
    """One run of the GPU command as a reading."""
    samples, problem = gpu_evidence(rc, out, err)
    return GpuReading(tuple(samples) if samples is not None else None, problem)


class Fallback:
    """The per-sample commands of a host without python3 for the streaming sampler: GPUs,
    the supervisor and the process tree, each on its own drift-free schedule."""

    def __init__(self, probe: NodeProbe) -> None:
        self.p = probe

    def start(self) -> None:
        p = self.p
        p.spawn("gpu", self._gpu_thread)
        if p.svc_known:
            p.spawn("service", self._service_thread)
        p.spawn("proc", self._proc_thread)

    def _every(self, step: Callable[[], bool], wait_first: bool = False) -> None:
        every(lambda: self.p.s.interval, step, self.p.stop, wait_first=wait_first)

    def _gpu_thread(self) -> None:
        p = self.p
        s = p.s
        cmd = s.gpu_cmd or NVIDIA_SMI

        def step() -> bool:
            r = p.remote(cmd, max(5.0, s.interval * 2))
            if r is not None:
                p.emit(gpu_reading(r.rc, r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")))
                return not (r.rc == 127 and not s.gpu_cmd)
            return True

        self._every(step)

    def _service_thread(self) -> None:
        p = self.p
        cmd = p.supervisor.state_command() or "true"

        def step() -> bool:
            r = p.remote(cmd, 10.0)
            if r is not None and r.rc is not None:
                p.emit(SupervisorReading(p.supervisor.parse(r.rc, r.stdout.decode("utf-8", "replace"))))
            return True

        self._every(step, wait_first=True)

    @staticmethod
    def proc_sample(p: NodeProbe, pid: int, first: bool) -> Reading | None:
        """One process-tree sample by one command (the script travels zlib-compressed on stdin, about
        a third of its size); None while the connection is down."""
        script = zlib.compress(PROC_SCRIPT.encode(), 9)
        unpack = q("import sys, zlib; exec(zlib.decompress(sys.stdin.buffer.read()))")
        r = p.remote(f"python3 -c {unpack} {int(pid)} {1 if first else 0} {p.control.port or 0}", 10.0, script)
        if r is None:
            return None
        sample = parse_proc_sample(r.stdout.decode("utf-8", "replace")) if r.rc == 0 else None
        if sample is not None:
            return ProcReading(pid, sample)
        if r.rc is not None:
            return ProcUnavailable(r.stderr.decode("utf-8", "replace")[:200])
        return None

    def _proc_thread(self) -> None:
        first = True

        def step() -> bool:
            nonlocal first
            pid = self.p.control.pid
            if pid is None:
                return True
            r = self.proc_sample(self.p, pid, first)
            if r is not None:
                self.p.emit(r)
                first = False
            return not isinstance(r, ProcUnavailable)

        self._every(step)


def sample_once(self: NodeProbe, http_budget: float) -> Iterator[Reading]:
    """One sample of each stream, in the order ``wait`` first sees them: the supervisor, the log
    of the current start so far, the sampler's first record (supervisor, GPUs, process tree),
    one HTTP probe (``NodeProbe.once``). A generator: the caller applies the judge's actions between readings (the
    supervisor's main PID is the process tree to sample)."""
    svc = self.first_state()
    if svc is not None:
        yield SupervisorReading(svc, initial=True)
        if svc.main_pid and self.s.pid is None:
            self.control.pid = svc.main_pid
    url, own_socket = server_url(self.s.url, self.s.url_given, self.supervisor, self.s.port, self.s.engine)
    self.url = url
    self.control.port = local_port(url) if own_socket else None
    yield ServedAt(url, self.control.port)
    note = getattr(self.supervisor, "note", "")
    if note:
        yield ProbeWarning("url-stopped", note)
    old = self._earlier_run(svc)
    source = LogSource(self.s.log_cmd, self.s.unit, svc, self.supervisor)
    started = time.monotonic()
    r = self.host.run(source.command(follow=False), timeout=15)
    norm = Normaliser()
    held: list[LogLine] = []  # old-stamped lines: an earlier run's once a newer line follows
    for rec in source.records([r.stdout]):
        for line in norm.lines(rec):
            if old is not None and old.earlier(line):
                held.append(line)
                continue
            yield from (EarlierLine(h, old.why) for h in held if old is not None)
            held.clear()
            yield line
    yield from held  # the log holds nothing newer: they are the last start's
    if self.s.log_cmd is not None and r.rc not in (None, 124):
        # the log command ended before its time limit (`docker logs -f` of a stopped container,
        # a `cat`): the log stream ended, as wait's follower would see it end
        yield LogEnded(r.rc, time.monotonic() - started)
    if svc is not None and svc.known:
        yield SupervisorReading(svc)  # the sampler's first record says it again, as it does in wait
    g = self.host.run(self.s.gpu_cmd or NVIDIA_SMI, timeout=10)
    yield gpu_reading(g.rc, g.stdout.decode("utf-8", "replace"), g.stderr.decode("utf-8", "replace"))
    if self.control.pid is not None:
        sample = Fallback.proc_sample(self, self.control.pid, False)
        if sample is not None:
            yield sample
    yield from _probe_once(self, http_budget)


def _probe_once(self: NodeProbe, budget: float) -> Iterator[Reading]:
    with make_client(self.host, verify=not self.s.insecure) as client:
        ladder = Ladder(client, self.url, self.s.model, self.s.api_key)
        yield ladder.probe(deadline=time.monotonic() + budget)
