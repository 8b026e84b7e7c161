"""The `wait` driver: threads gather evidence from one host into one queue; the judge decides;
sinks render. The monitor keeps only threads, the queue and reconnects."""

from __future__ import annotations

import contextlib
import queue
import threading
import time
import urllib.parse
import zlib
from collections.abc import Callable
from typing import Any

from coldwatch import history
from coldwatch.checks import run_check
from coldwatch.errors import ConfigError, Terminated, UnreachableError
from coldwatch.evidence import SupervisorState
from coldwatch.exitcodes import ExitCode
from coldwatch.group import GroupJudge, NodeView, phase_of, ranks
from coldwatch.hosts.base import Host, RunResult, q
from coldwatch.http import Ladder, make_client
from coldwatch.judge import Judge, Policy, Verdict, result
from coldwatch.normalise import Normaliser, split_records
from coldwatch.phases import load_rules
from coldwatch.probes.log import HOST_CLOCK, EarlierRun, LogSource, earlier_run
from coldwatch.probes.parse import PROC_SCRIPT, gpu_evidence, parse_proc_sample, proc_from_dict
from coldwatch.probes.sampler import parse_record, sampler_command
from coldwatch.render import Sink
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
LOOPBACK = ("127.0.0.1", "localhost", "::1", "0.0.0.0", "::")
EARLIER_BURST = 3.0
"""Seconds after a --log-cmd follower starts in which an old-stamped line is taken for what the log held
already (an earlier run's); a line written later is this start's, whatever its stamp says (a container
logging UTC on a host in another zone)."""
EARLIER_HOLD = 5000


def local_port(url: str) -> int | None:
    """The probed port when the URL points at the host itself (what the sampler can see), else None."""
    try:
        u = urllib.parse.urlsplit(url)
        if (u.hostname or "") not in LOOPBACK:
            return None
        return u.port or (443 if u.scheme == "https" else 80)
    except ValueError:
        return None


def policy_for(settings: Settings, baseline: dict[str, float], records: list[dict[str, Any]] | None = None) -> Policy:
    """The judge's parameters for a live watch of these settings."""
    return Policy(
        timeout=settings.timeout,
        stall_after=settings.stall_after,
        max_restarts=settings.max_restarts,
        confirm="http",
        baseline=baseline,
        port=local_port(settings.url),
        pid=settings.pid,
        unit=f"container {settings.container}" if settings.container else settings.unit,
        tail=True,
        history=records or [],
        target=settings.target_name(),
        launch=True,
        listen_port=listen_port(settings),
    )


def listen_port(settings: Settings) -> int | None:
    """The port the server should log that it listens on: the URL's (a container's own port when its
    published port is probed: --port); None when they cannot be compared (a container's --url)."""
    if settings.container:
        return settings.port if not settings.url_given else None
    try:
        u = urllib.parse.urlsplit(settings.url)
        return u.port or (443 if u.scheme == "https" else 80)
    except ValueError:
        return None


class Node:
    """One host of the watched server: its connection, supervisor, judge, log and sampler state.
    A single-host watch has one node (the head); a multi-node server adds its workers."""

    def __init__(self, name: str, settings: Settings, host: Host | None, judge: Judge, head: bool, blind: str | None = None) -> None:
        self.name = name
        self.s = settings
        self.host = host
        self.judge = judge
        self.head = head
        self.blind = blind
        self.supervisor: Supervisor = supervisor_for(settings.unit, settings.log_cmd, settings.pid, settings.container, settings.runtime)
        self.gen = 0  # bumps on a restart: stale log lines are dropped
        self.log_seq = 0
        self.sampler_seq = 0
        self.svc_known = False
        self.streaming = True  # the streaming sampler runs (else the per-sample threads)
        self.followers: list[Any] = []
        self.log_followers: list[Any] = []
        self.reconnects = 0
        self.log = LogSource(settings.log_cmd, settings.unit, None, self.supervisor)
        self.parked = False
        """A new start's log waits until the supervisor says it runs (a container between two runs)."""
        self.earlier: EarlierRun | None = None
        """A --log-cmd stream's lines from an earlier run (an appended log): shown, never judged."""


class Monitor:
    def __init__(
        self,
        settings: Settings,
        host: Host,
        sinks: list[Sink],
        now: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        workers: list[tuple[str, Settings, Host | None, str | None]] | None = None,
    ) -> None:
        """``workers``: the other nodes of a multi-node server as (name, settings, host or None,
        why it could not be reached)."""
        self.s = settings
        self.sinks = sinks
        self.now = now
        self.t0 = now()
        self.epoch0 = wall()
        self.multi = bool(workers)
        recs = history.load()
        baseline = history.baseline(settings.target_name(), records=recs)
        head_name = settings.host or "localhost"
        self.nodes = [Node(head_name, settings, host, self._judge(settings, baseline, http=True, records=recs), head=True)]
        for name, ws, wh, why in workers or []:
            self.nodes.append(Node(name, ws, wh, self._judge(ws, {}, http=False), head=False, blind=why))
        self.group = GroupJudge([NodeView(n.name, n.judge, n.head, n.blind) for n in self.nodes], settings.timeout) if self.multi else None
        self.q: queue.Queue[tuple[int, str, Any, int]] = queue.Queue(maxsize=10000)
        self.stop = threading.Event()
        self.trigger = threading.Event()
        self.threads: list[threading.Thread] = []
        self.client = make_client(host, verify=not settings.insecure, timeout=max(5.0, settings.interval * 2))
        self.ladder = Ladder(self.client, settings.url, settings.model, settings.api_key)
        self._rows_at = -1.0
        self.first_http: str | None = None
        """The head's first HTTP answer: "ready" means the server was up before the watch (an attach)."""
        self.not_ready_seen = False
        """An answer other than a completion came: a start happened during the watch (an old server's answers
        at first, then this start's), so it is not an attach."""

    def _judge(self, s: Settings, baseline: dict[str, float], http: bool, records: list[dict[str, Any]] | None = None) -> Judge:
        policy = policy_for(s, baseline, records)
        if self.multi:
            policy.timeout = 0.0  # the server's deadline is the group's
        if not http:
            policy.port = None
            policy.tail = False
            policy.listen_port = None
        engine = None if s.engine == "auto" else s.engine
        return Judge(policy, load_rules(s.rules), engine, self.epoch0)

    @property
    def head(self) -> Node:
        return self.nodes[0]

    @property
    def judge(self) -> Judge:
        """The head's judge (the whole server's for a single host)."""
        return self.nodes[0].judge

    @property
    def verdict(self) -> Verdict | None:
        return self.group.verdict if self.group is not None else self.judge.verdict

    # ---- plumbing ----------------------------------------------------------------------
    def t(self) -> float:
        return self.now() - self.t0

    def flush(self) -> None:
        """Send the judges' events to the sinks (tagged with the node when there are several); act
        on what each judge asked for."""
        for i, n in enumerate(self.nodes):
            j = n.judge
            for ev in j.drain():
                if self.multi:
                    ev["node"] = n.name
                for sink in self.sinks:
                    sink.emit(ev)
            if j.probe_now:
                j.probe_now = False
                if n.head:
                    self.trigger.set()
            if j.rescope is not None:
                svc, j.rescope = j.rescope, None
                if n.head:
                    self.resolve_url(initial=False)
                if not n.s.log_cmd:  # a --log-cmd stream (docker logs -f) simply goes on
                    n.gen += 1
                    for f in n.log_followers:  # the sampler goes on: it says when a parked start runs
                        f.close()
                    n.log_followers.clear()
                    n.log.rescope(svc)
                    n.parked = svc.known and not svc.running  # a container between two runs: its log follows once it runs
                    if not n.parked:
                        self._follow_log(i)
        if self.group is not None and self.t() - self._rows_at >= 1.0:
            self._rows_at = self.t()
            rows = {"event": "_rows", "t": round(self.t(), 3), "rows": self.group.rows(self.t())}
            for sink in self.sinks:
                sink.emit(rows)

    def put(self, i: int, kind: str, payload: Any, gen: int | None = None) -> None:
        with contextlib.suppress(queue.Full):
            self.q.put((i, kind, payload, self.nodes[i].gen if gen is None else gen), timeout=1.0)

    def spawn(self, name: str, fn: Callable[[], None], i: int = 0) -> None:
        def wrapped() -> None:
            try:
                fn()
            except UnreachableError as exc:
                self.put(i, "lost", str(exc))
            except Exception as exc:  # noqa: BLE001 - a probe must never take the monitor down
                self.put(i, "probe_error", f"{name}: {type(exc).__name__}: {exc}")

        tag = f"-{self.nodes[i].name}" if self.multi else ""
        th = threading.Thread(target=wrapped, name=f"coldwatch-{name}{tag}", daemon=True)
        th.start()
        self.threads.append(th)

    def sleep(self, seconds: float) -> bool:
        """Sleep unless stopping; True means keep going."""
        return not self.stop.wait(seconds)

    def remote(self, i: int, cmd: str, timeout: float, stdin: bytes | None = None) -> RunResult | None:
        """Run on node i's host; None while the connection is down (the main loop reconnects)."""
        host = self.nodes[i].host
        assert host is not None
        try:
            r = host.run(cmd, timeout=timeout, stdin=stdin)
        except UnreachableError as exc:
            self.put(i, "lost", str(exc))
            return None
        if r.rc is None and not host.alive():
            self.put(i, "lost", "SSH connection lost")
            return None
        return r

    # ---- evidence threads ----------------------------------------------------------------
    def _log_thread(self, i: int, gen: int) -> None:
        n = self.nodes[i]
        assert n.host is not None
        n.log_seq += 1
        seq = n.log_seq
        follower = n.host.follow(n.log.command())
        n.followers.append(follower)
        n.log_followers.append(follower)
        norm = Normaliser()
        started = self.now()
        held: list[Any] = []  # the earlier run's lines, until this start's first line says they were
        for rec in n.log.records(follower.chunks()):
            if self.stop.is_set():
                break
            for line in norm.lines(rec):
                ea = n.earlier
                if ea is not None and not ea.done and self.now() - started < EARLIER_BURST and ea.earlier(line):
                    if len(held) < EARLIER_HOLD:
                        held.append(line)
                    self.put(i, "earlier", line, gen)
                    continue
                if ea is not None:
                    ea.done = True  # a line stamped in this start, or written since the watch began: this start's
                held.clear()
                self.put(i, "line", line, gen)
        if held and not self.stop.is_set():
            # the stream ended on them (a stopped container's `docker logs -f`): they were this start's last words
            self.put(i, "earlier_end", len(held), gen)
            for line in held:
                self.put(i, "line", line, gen)
        if not self.stop.is_set():
            self.put(i, "log_end", (follower.exit_status, self.now() - started, seq), gen)

    def _sampler_thread(self, i: int) -> None:
        """One long-lived channel: a JSON record per interval (GPUs, supervisor, process tree)."""
        n = self.nodes[i]
        assert n.host is not None
        n.sampler_seq += 1
        seq = n.sampler_seq
        cmd = sampler_command(
            n.s.interval,
            n.s.gpu_cmd or NVIDIA_SMI,
            n.s.gpu_cmd is not None,
            n.supervisor.state_command() if n.svc_known else None,
            n.s.pid,
            n.judge.p.port,
            n.supervisor.pid_pattern,
        )
        follower = n.host.follow(cmd)
        n.followers.append(follower)
        records = 0
        for rec in split_records(follower.chunks()):
            if self.stop.is_set():
                return
            parsed = parse_record(rec)
            if parsed is not None:
                records += 1
                self.put(i, "sample", parsed)
        if self.stop.is_set() or seq != n.sampler_seq:
            return
        if records == 0 and n.host.alive():
            # no python3 on the host (or it cannot run the sampler): one command per sample instead
            self.put(i, "sampler_off", follower.exit_status)
        elif not n.host.alive():
            self.put(i, "lost", "SSH connection lost")

    def _fallback_threads(self, i: int) -> None:
        self.spawn("gpu", lambda: self._gpu_thread(i), i)
        if self.nodes[i].svc_known:
            self.spawn("service", lambda: self._service_thread(i), i)
        self.spawn("proc", lambda: self._proc_thread(i), i)

    def _gpu_thread(self, i: int) -> None:
        s = self.nodes[i].s
        cmd = s.gpu_cmd or NVIDIA_SMI
        while not self.stop.is_set():
            r = self.remote(i, cmd, max(5.0, s.interval * 2))
            if r is not None:
                self.put(i, "gpu", (r.rc, r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")))
                if r.rc == 127 and not s.gpu_cmd:
                    return
            if not self.sleep(s.interval):
                return

    def _service_thread(self, i: int) -> None:
        n = self.nodes[i]
        cmd = n.supervisor.state_command() or "true"
        while self.sleep(n.s.interval):
            r = self.remote(i, cmd, 10.0)
            if r is not None and r.rc is not None:
                self.put(i, "service", (r.rc, r.stdout.decode("utf-8", "replace")))

    def _proc_thread(self, i: int) -> None:
        n = self.nodes[i]
        # the script travels zlib-compressed on stdin (about a third of its size), every sample
        script = zlib.compress(PROC_SCRIPT.encode(), 9)
        unpack = q("import sys, zlib; exec(zlib.decompress(sys.stdin.buffer.read()))")
        first = True
        while not self.stop.is_set():
            pid = n.judge.pid
            if pid is not None:
                r = self.remote(i, f"python3 -c {unpack} {int(pid)} {1 if first else 0} {n.judge.p.port or 0}", 10.0, script)
                if r is None:
                    if not self.sleep(n.s.interval):
                        return
                    continue
                sample = parse_proc_sample(r.stdout.decode("utf-8", "replace")) if r.rc == 0 else None
                if sample is None and r.rc is not None:
                    self.put(i, "proc_unavailable", r.stderr.decode("utf-8", "replace")[:200])
                    return
                if sample is not None:
                    self.put(i, "proc", (pid, sample))
                    first = False
            if not self.sleep(n.s.interval):
                return

    def _ping_thread(self, i: int) -> None:
        """Notice a hung connection: no answer to a keepalive within PING_TIMEOUT."""
        n = self.nodes[i]
        assert n.host is not None
        while self.sleep(PING_EVERY):
            k = n.reconnects  # a failed ping of a connection already replaced says nothing
            if n.host.alive() and not n.host.ping(PING_TIMEOUT) and not self.stop.is_set():
                self.put(i, "hung", (k, f"no answer from the SSH server for {PING_TIMEOUT:g}s"))

    def _http_thread(self) -> None:
        while not self.stop.is_set():
            st = self.ladder.probe()
            self.put(0, "http", st)
            fast = st.state == "refused" and self.t() < self.judge.fast_until
            self.trigger.wait(min(FAST_PROBE, self.s.interval) if fast else self.s.interval)
            self.trigger.clear()

    # ---- the run -----------------------------------------------------------------------
    def start_node(self, i: int) -> None:
        """Scope the node's log to its supervisor's current start, then start its streams."""
        n = self.nodes[i]
        if n.blind is not None or n.host is None:
            n.judge.warn("blind", f"node {n.name} cannot be reached ({n.blind}); the start is judged on the other nodes", self.t())
            return
        cmd = n.supervisor.state_command()
        svc = None
        if cmd is not None:
            r = n.host.run(cmd, timeout=10.0)
            svc = n.supervisor.first_state(r.rc, r.stdout.decode("utf-8", "replace"))
            n.judge.supervisor(svc, self.t(), initial=True)
            n.svc_known = svc.known
        if n.head:
            self.resolve_url()
        if n.s.log_cmd is not None:
            r = n.host.run(HOST_CLOCK, timeout=10.0)
            n.earlier = earlier_run(r.stdout.decode("ascii", "replace"), svc, n.s.log_cmd)
        n.log = LogSource(n.s.log_cmd, n.s.unit, svc, n.supervisor)
        self.spawn("log", lambda: self._log_thread(i, n.gen), i)
        self.spawn("sampler", lambda: self._sampler_thread(i), i)
        if n.s.host:
            self.spawn("ping", lambda: self._ping_thread(i), i)

    def start(self) -> None:
        for i in range(len(self.nodes)):
            self.start_node(i)
        info = {
            "event": "_info",
            "t": 0.0,
            "target": self.s.target_name(),
            "unit": self.s.unit if self.head.svc_known and not self.s.container else None,
            "container": self.s.container,
            "engine": self.judge.engine,
            "model": self.s.model,
            "deadline": self.s.timeout,
            "baseline": self.judge.p.baseline,
            "nodes": [n.name for n in self.nodes] if self.multi else None,
        }
        for sink in self.sinks:
            sink.emit(info)
        self.spawn("http", self._http_thread)
        self.flush()

    def resolve_url(self, initial: bool = True) -> None:
        """Without --url, a container is probed where its serving port is published, which may move when
        it restarts (a dynamically published port)."""
        head = self.head
        try:
            url, own_socket = server_url(self.s.url, self.s.url_given, head.supervisor, self.s.port, self.s.engine)
        except ConfigError as exc:
            if initial:
                raise
            self.judge.warn("url", f"after the restart: {exc}", self.t())
            return
        if url == NOT_LISTENING and not initial:
            return  # between two runs: probed where it was until a sample shows it running
        note = getattr(head.supervisor, "note", "")
        if note:
            self.judge.warn("url-stopped", note, self.t())
        if url != self.s.url:
            self.s.url = url
            self.ladder = Ladder(self.client, url, self.s.model, self.s.api_key)
            self.judge.p.port = local_port(url) if own_socket else None  # a published port: the runtime's proxy holds it

    def tick(self) -> None:
        t = self.t()
        if self.group is not None:
            self.group.tick(t)
        else:
            self.judge.tick(t)

    def run(self) -> dict[str, Any]:
        """Watch until a verdict; always returns the result event (also emitted to the sinks)."""
        try:
            self.start()
            while self.verdict is None:
                try:
                    i, kind, payload, gen = self.q.get(timeout=0.2)
                except queue.Empty:
                    i, kind, payload, gen = 0, "tick", None, self.nodes[0].gen
                    for sink in self.sinks:
                        sink.emit({"event": "_tick", "t": round(self.t(), 3)})
                if gen == self.nodes[i].gen:
                    self.dispatch(i, kind, payload)
                self.tick()
                self.flush()
        except KeyboardInterrupt:
            self.end("interrupted", ExitCode.INTERRUPTED, "interrupted (Ctrl-C)")
        except Terminated:
            self.end("interrupted", ExitCode.TERMINATED, "terminated (SIGTERM)")
        except UnreachableError as exc:
            self.end("unreachable", ExitCode.UNREACHABLE, str(exc))
        finally:
            self.close()
        j = self.judge
        if self.verdict is not None and self.verdict.outcome == "ready" and self.s.check:
            self.run_checks()
        attached = self.attached()
        self.flush()
        hosts = [n.host for n in self.nodes if n.host is not None]
        sent = sum(getattr(h, "bytes", (0, 0))[0] for h in hosts)
        received = sum(getattr(h, "bytes", (0, 0))[1] for h in hosts)
        extra: dict[str, Any] = {
            "model": j.model or self.s.model,
            "host": self.s.host,
            "restarts": j.restarts,
            "reconnects": sum(n.reconnects for n in self.nodes),
            "ssh_bytes": {"sent": sent, "received": received} if self.s.host else None,
            "log_lines": j.c.state.lines,
        }
        if self.group is not None:
            v = self.group.verdict or self.group.end("incomplete", ExitCode.TIMEOUT, "the watch ended", self.t())
            nodes = []
            for n in self.nodes:
                nv = n.judge.verdict
                nodes.append(
                    {
                        "node": n.name,
                        "head": n.head,
                        "ranks": ranks(n.judge),
                        "phase": phase_of(n.judge),
                        "outcome": nv.outcome if nv is not None else ("unreachable" if n.blind else "pending"),
                        "failure_kind": nv.failure_kind if nv is not None else None,
                        "reason": (nv.reason if nv is not None else n.blind or "")[:300],
                    }
                )
            res = result(v, self.t(), self.epoch0, j.state.timeline(), nodes=nodes, **extra)
        else:
            res = j.result(self.t(), **extra)
        if attached:
            res["attached"] = True
            res["reason"] = f"{attached}; {res['reason']}"[:500]
        for sink in self.sinks:
            sink.emit(res)
        self.record(res)
        return res

    def attached(self) -> str:
        """Why this watch was an attach, not a cold start (its first probe was already served a
        completion), with the supervisor's start of the run when it says; "" for a cold start. An
        attach is said at once and never recorded into the ETA baseline."""
        if self.verdict is None or self.verdict.outcome != "ready" or self.first_http != "ready" or self.not_ready_seen:
            return ""
        svc = self.judge.svc
        since = f"since {svc.since}" if svc is not None and svc.known and svc.since and svc.since != "n/a" else "when the watch began"
        why = f"already up {since}: an attach, not a cold start (not recorded in the ETA baseline)"
        self.judge.warn("attached", why, self.t())
        return why

    def cancel(self, why: str) -> None:
        """End the watch from another thread (a fleet's --fail-fast): incomplete, exit 124."""
        self.put(0, "cancel", why)

    def end(self, outcome: str, code: ExitCode, why: str) -> None:
        if self.group is not None:
            self.group.end(outcome, code, why, self.t())
        else:
            self.judge.end(outcome, code, why, self.t())

    def close(self) -> None:
        self.stop.set()
        self.trigger.set()
        for n in self.nodes:
            for f in n.followers:
                f.close()

    def dispatch(self, i: int, kind: str, payload: Any) -> None:
        """One item of evidence from a thread -> that node's judge (typed at this edge)."""
        n = self.nodes[i]
        j = n.judge
        t = self.t()
        if kind == "line":
            j.line(payload, t)
        elif kind == "earlier_end":
            j.warn("earlier_end", f"the log ended on {payload} line(s) stamped before this start: judged as this start's last lines", t)
        elif kind == "earlier":
            why = n.earlier.why if n.earlier is not None else "this start"
            j.earlier(payload, t, f"log lines stamped before {why} are an earlier run's: shown as such, never judged")
        elif kind == "sample":
            if payload.gpu is not None:
                self.on_gpu(j, t, *payload.gpu)
            if payload.svc is not None:
                svc = n.supervisor.parse(*payload.svc)
                j.supervisor(svc, t)
                self._unparked(i, svc)
            if payload.proc is not None and payload.pid is not None:
                if "error" in payload.proc:
                    j.warn("proc", f"process sampling failed on the host: {str(payload.proc['error'])[:160]}", t)
                sample = proc_from_dict(payload.proc)
                if sample is not None:
                    j.proc(payload.pid, sample, t)
        elif kind == "gpu":
            self.on_gpu(j, t, *payload)
        elif kind == "service":
            svc = n.supervisor.parse(*payload)
            j.supervisor(svc, t)
            self._unparked(i, svc)
        elif kind == "proc":
            j.proc(payload[0], payload[1], t)
        elif kind == "proc_unavailable":
            j.proc_unavailable(payload, t)
        elif kind == "sampler_off":
            if n.streaming:
                n.streaming = False
                j.warn(
                    "sampler", f"the streaming sampler did not start on the host (python3?, status {payload}); one command per sample", t
                )
                self._fallback_threads(i)
        elif kind == "http":
            if self.first_http is None or payload.state != "ready":
                self.first_http = self.first_http or payload.state
                self.not_ready_seen = self.not_ready_seen or payload.state != "ready"
            j.http(payload, t)
        elif kind == "log_end":
            status, ran, seq = payload
            if seq != n.log_seq:
                return  # a follower replaced after a reconnect
            if n.host is not None and not n.host.alive():
                self.reconnect(i, "SSH connection lost")
                return
            j.log_ended(t)
            if ran < 2.0 and status not in (None, 0):
                j.warn("log_end", f"log command exited with status {status}; watching without the log", t)
            elif j.c.state.outcome != "failed":
                j.warn("log_end", "the log stream ended", t)
        elif kind == "lost":
            self.reconnect(i, payload)
        elif kind == "hung":
            if payload[0] == n.reconnects:
                self.reconnect(i, payload[1], hung=True)
        elif kind == "probe_error":
            j.warn(payload.split(":")[0], f"probe error: {payload}", t)
        elif kind == "cancel":
            self.end("incomplete", ExitCode.TIMEOUT, payload)

    def _follow_log(self, i: int) -> None:
        gen = self.nodes[i].gen
        self.spawn(f"log{gen}", lambda: self._log_thread(i, gen), i)

    def _unparked(self, i: int, svc: SupervisorState) -> None:
        """A container watched while it was not running: once it runs, its port is probed where it is
        published and the new run's log is followed from its start."""
        n = self.nodes[i]
        if not (svc.known and svc.running):
            return
        if n.head and self.s.url == NOT_LISTENING:
            self.resolve_url(initial=False)
        if n.parked and self.verdict is None and n.judge.verdict is None:
            n.parked = False
            n.log.rescope(svc)
            self._follow_log(i)

    def on_gpu(self, j: Judge, t: float, rc: int | None, out: str, err: str) -> None:
        samples, problem = gpu_evidence(rc, out, err)
        if problem:
            j.warn("gpu" if samples is None else "gpu_parse", problem, t)
        if samples:
            j.gpu(samples, t)

    def reconnect(self, i: int, why: str, hung: bool = False) -> None:
        """Reconnect with capped exponential backoff for up to --reconnect-for; resume the log. The
        head's connection lost for good ends the watch (unreachable); a worker's leaves it blind."""
        n = self.nodes[i]
        host = n.host
        if host is None or n.blind is not None or (host.alive() and not hung):
            return
        lost_at = self.t()
        where = f"node {n.name}: " if self.multi else ""
        n.judge.emit("warning", lost_at, message=f"{where}SSH connection lost ({why}); reconnecting for up to {n.s.reconnect_for:g}s")
        self.flush()
        for f in n.followers:
            f.close()
        n.followers.clear()
        n.log_followers.clear()
        delay = 0.5
        while True:
            try:
                host.reconnect()
                break
            except UnreachableError as exc:
                gap = self.t() - lost_at
                if gap >= n.s.reconnect_for:
                    st = n.judge.c.state
                    msg = f"{where}SSH connection lost for {gap:.0f}s (--reconnect-for {n.s.reconnect_for:g}s): {exc}"
                    if n.head:
                        raise UnreachableError(msg) from None  # the verdict adds the last phase and the time
                    msg += f"; last phase {st.last_phase() or 'none'}, {self.t():.0f}s elapsed"
                    n.blind = msg
                    if self.group is not None:
                        self.group.nodes[i].blind = msg
                    n.judge.warn("blind", msg + "; the start is judged on the other nodes", self.t())
                    return
                if self.s.timeout and self.t() >= self.s.timeout:
                    return
                time.sleep(min(delay, max(n.s.reconnect_for - gap, 0.1)))
                delay = min(delay * 2, 10.0)
        n.log.resume()
        n.reconnects += 1
        how = "from the journal cursor" if n.log.journal else f"skipping {n.log._skip} records already seen"
        n.judge.emit("warning", self.t(), message=f"{where}SSH reconnected after a {self.t() - lost_at:.1f}s gap; log resumed {how}")
        self.spawn(f"log-r{self.t():.0f}", lambda: self._log_thread(i, n.gen), i)
        if n.streaming:
            self.spawn(f"sampler-r{self.t():.0f}", lambda: self._sampler_thread(i), i)

    def run_checks(self) -> None:
        deadline = time.monotonic() + self.s.timeout - self.t() if self.s.timeout else None  # --check obeys --timeout
        for name in self.s.check:
            ok, what = run_check(name, self.client, self.ladder.base, self.judge.model or "", self.ladder.headers, deadline)
            late = not ok and deadline is not None and time.monotonic() >= deadline
            self.judge.check(name, ok, what, self.t(), late)
        if self.group is not None and self.group.verdict is not None and self.judge.verdict is not None:
            self.group.verdict = self.judge.verdict

    def record(self, res: dict[str, Any]) -> None:
        if not self.s.record or res.get("attached"):
            return
        last = self.judge.last_proc
        rec = history.make_record(
            self.s.target_name(),
            res,
            host=self.s.host or "localhost",
            unit=self.s.unit,
            model=self.judge.model,
            model_path=self.judge.etas.model,
            tp=self.judge.etas.tp,
            cmd_hash=history.cmd_hash(last.cmdline if last else None),
            source="wait",
        )
        try:
            history.append(rec)
        except Exception as exc:  # noqa: BLE001 - history must never change the verdict
            self.judge.emit("warning", self.t(), message=f"history not written: {exc}")
            self.flush()
