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
from coldwatch.exitcodes import ExitCode
from coldwatch.hosts.base import Host, RunResult, q
from coldwatch.http import Ladder, make_client
from coldwatch.judge import Judge, Policy
from coldwatch.normalise import Normaliser, split_records
from coldwatch.phases import load_rules
from coldwatch.probes.log import LogSource
from coldwatch.probes.parse import PROC_SCRIPT, gpu_evidence, parse_proc_sample, proc_from_dict
from coldwatch.probes.sampler import parse_record, sampler_command
from coldwatch.render import Sink
from coldwatch.settings import Settings
from coldwatch.supervisors import Supervisor, server_url, supervisor_for

NVIDIA_SMI = "nvidia-smi --query-gpu=index,memory.used,memory.total,utilization.gpu --format=csv,noheader,nounits"
PING_EVERY = 5.0
PING_TIMEOUT = 10.0
"""A connection whose server does not answer a keepalive within this many seconds is hung."""
FAST_PROBE = 0.2
"""Once the log says the server is about to listen (warm-up) or ready, a refused port is probed this
often: the log line can come a moment before the bind (vLLM logs "Application startup complete" as
uvicorn starts), and a refused connect costs one channel-open round trip."""
LOOPBACK = ("127.0.0.1", "localhost", "::1", "0.0.0.0", "::")


def local_port(url: str) -> int | None:
    """The probed port when the URL points at the host itself (what the sampler can see), else None."""
    try:
        u = urllib.parse.urlsplit(url)
        if (u.hostname or "") not in LOOPBACK:
            return None
        return u.port or (443 if u.scheme == "https" else 80)
    except ValueError:
        return None


def policy_for(settings: Settings, baseline: dict[str, float]) -> Policy:
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
    )


class Monitor:
    def __init__(
        self,
        settings: Settings,
        host: Host,
        sinks: list[Sink],
        now: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.s = settings
        self.host = host
        self.sinks = sinks
        self.now = now
        self.t0 = now()
        self.epoch0 = wall()
        self.supervisor: Supervisor = supervisor_for(settings.unit, settings.log_cmd, settings.pid, settings.container, settings.runtime)
        rules = load_rules(settings.rules)
        engine = None if settings.engine == "auto" else settings.engine
        self.judge = Judge(policy_for(settings, history.baseline(settings.target_name())), rules, engine, self.epoch0)
        self.q: queue.Queue[tuple[str, Any, int]] = queue.Queue(maxsize=10000)
        self.stop = threading.Event()
        self.trigger = threading.Event()
        self.gen = 0  # bumps on a restart: stale log lines are dropped
        self.reconnects = 0
        self.log_seq = 0
        self.sampler_seq = 0
        self.svc_known = False
        self.streaming = True  # the streaming sampler runs (else the per-sample threads)
        self.threads: list[threading.Thread] = []
        self.followers: list[Any] = []
        self.client = make_client(host, verify=not settings.insecure, timeout=max(5.0, settings.interval * 2))
        self.ladder = Ladder(self.client, settings.url, settings.model, settings.api_key)

    # ---- plumbing ----------------------------------------------------------------------
    def t(self) -> float:
        return self.now() - self.t0

    def flush(self) -> None:
        """Send the judge's events to the sinks; act on what it asked for."""
        j = self.judge
        for ev in j.drain():
            for sink in self.sinks:
                sink.emit(ev)
        if j.probe_now:
            j.probe_now = False
            self.trigger.set()
        if j.rescope is not None:
            svc, j.rescope = j.rescope, None
            self.resolve_url(initial=False)
            if not self.s.log_cmd:  # a --log-cmd stream (docker logs -f) simply goes on
                self.gen += 1
                for f in self.followers:
                    f.close()
                self.log.rescope(svc)
                gen = self.gen
                self.spawn(f"log{gen}", lambda: self._log_thread(gen))

    def put(self, kind: str, payload: Any, gen: int | None = None) -> None:
        with contextlib.suppress(queue.Full):
            self.q.put((kind, payload, self.gen if gen is None else gen), timeout=1.0)

    def spawn(self, name: str, fn: Callable[[], None]) -> None:
        def wrapped() -> None:
            try:
                fn()
            except UnreachableError as exc:
                self.put("lost", str(exc))
            except Exception as exc:  # noqa: BLE001 - a probe must never take the monitor down
                self.put("probe_error", f"{name}: {type(exc).__name__}: {exc}")

        th = threading.Thread(target=wrapped, name=f"coldwatch-{name}", daemon=True)
        th.start()
        self.threads.append(th)

    def sleep(self, seconds: float) -> bool:
        """Sleep unless stopping; True means keep going."""
        return not self.stop.wait(seconds)

    def remote(self, cmd: str, timeout: float, stdin: bytes | None = None) -> RunResult | None:
        """Run on the host; None while the connection is down (the main loop reconnects)."""
        try:
            r = self.host.run(cmd, timeout=timeout, stdin=stdin)
        except UnreachableError as exc:
            self.put("lost", str(exc))
            return None
        if r.rc is None and not self.host.alive():
            self.put("lost", "SSH connection lost")
            return None
        return r

    # ---- evidence threads ----------------------------------------------------------------
    def _log_thread(self, gen: int) -> None:
        self.log_seq += 1
        seq = self.log_seq
        follower = self.host.follow(self.log.command())
        self.followers.append(follower)
        norm = Normaliser()
        started = self.now()
        for rec in self.log.records(follower.chunks()):
            if self.stop.is_set():
                break
            for line in norm.lines(rec):
                self.put("line", line, gen)
        if not self.stop.is_set():
            self.put("log_end", (follower.exit_status, self.now() - started, seq), gen)

    def _sampler_thread(self) -> None:
        """One long-lived channel: a JSON record per interval (GPUs, supervisor, process tree)."""
        self.sampler_seq += 1
        seq = self.sampler_seq
        cmd = sampler_command(
            self.s.interval,
            self.s.gpu_cmd or NVIDIA_SMI,
            self.s.gpu_cmd is not None,
            self.supervisor.state_command() if self.svc_known else None,
            self.s.pid,
            self.judge.p.port,
            self.supervisor.pid_pattern,
        )
        follower = self.host.follow(cmd)
        self.followers.append(follower)
        records = 0
        for rec in split_records(follower.chunks()):
            if self.stop.is_set():
                return
            parsed = parse_record(rec)
            if parsed is not None:
                records += 1
                self.put("sample", parsed)
        if self.stop.is_set() or seq != self.sampler_seq:
            return
        if records == 0 and self.host.alive():
            # no python3 on the host (or it cannot run the sampler): one command per sample instead
            self.put("sampler_off", follower.exit_status)
        elif not self.host.alive():
            self.put("lost", "SSH connection lost")

    def _fallback_threads(self) -> None:
        self.spawn("gpu", self._gpu_thread)
        if self.svc_known:
            self.spawn("service", self._service_thread)
        self.spawn("proc", self._proc_thread)

    def _gpu_thread(self) -> None:
        cmd = self.s.gpu_cmd or NVIDIA_SMI
        while not self.stop.is_set():
            r = self.remote(cmd, max(5.0, self.s.interval * 2))
            if r is not None:
                self.put("gpu", (r.rc, r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")))
                if r.rc == 127 and not self.s.gpu_cmd:
                    return
            if not self.sleep(self.s.interval):
                return

    def _service_thread(self) -> None:
        cmd = self.supervisor.state_command() or "true"
        while self.sleep(self.s.interval):
            r = self.remote(cmd, 10.0)
            if r is not None and r.rc is not None:
                self.put("service", (r.rc, r.stdout.decode("utf-8", "replace")))

    def _proc_thread(self) -> None:
        # the script travels zlib-compressed on stdin (about a third of its size), every sample
        script = zlib.compress(PROC_SCRIPT.encode(), 9)
        unpack = q("import sys, zlib; exec(zlib.decompress(sys.stdin.buffer.read()))")
        first = True
        while not self.stop.is_set():
            pid = self.judge.pid
            if pid is not None:
                r = self.remote(f"python3 -c {unpack} {int(pid)} {1 if first else 0} {self.judge.p.port or 0}", 10.0, script)
                if r is None:
                    if not self.sleep(self.s.interval):
                        return
                    continue
                sample = parse_proc_sample(r.stdout.decode("utf-8", "replace")) if r.rc == 0 else None
                if sample is None and r.rc is not None:
                    self.put("proc_unavailable", r.stderr.decode("utf-8", "replace")[:200])
                    return
                if sample is not None:
                    self.put("proc", (pid, sample))
                    first = False
            if not self.sleep(self.s.interval):
                return

    def _ping_thread(self) -> None:
        """Notice a hung connection: no answer to a keepalive within PING_TIMEOUT."""
        while self.sleep(PING_EVERY):
            n = self.reconnects  # a failed ping of a connection already replaced says nothing
            if self.host.alive() and not self.host.ping(PING_TIMEOUT) and not self.stop.is_set():
                self.put("hung", (n, f"no answer from the SSH server for {PING_TIMEOUT:g}s"))

    def _http_thread(self) -> None:
        while not self.stop.is_set():
            st = self.ladder.probe()
            self.put("http", st)
            fast = st.state == "refused" and self.t() < self.judge.fast_until
            self.trigger.wait(min(FAST_PROBE, self.s.interval) if fast else self.s.interval)
            self.trigger.clear()

    # ---- the run -----------------------------------------------------------------------
    def start(self) -> None:
        """Scope the log to the supervisor's current start, then start every stream."""
        cmd = self.supervisor.state_command()
        svc = None
        if cmd is not None:
            r = self.host.run(cmd, timeout=10.0)
            svc = self.supervisor.first_state(r.rc, r.stdout.decode("utf-8", "replace"))
            self.judge.supervisor(svc, self.t(), initial=True)
            self.svc_known = svc.known
        self.resolve_url()
        info = {
            "event": "_info",
            "t": 0.0,
            "target": self.s.target_name(),
            "unit": self.s.unit if self.svc_known and not self.s.container else None,
            "container": self.s.container,
            "engine": self.judge.engine,
            "model": self.s.model,
            "deadline": self.s.timeout,
            "baseline": self.judge.p.baseline,
        }
        for sink in self.sinks:
            sink.emit(info)
        self.log = LogSource(self.s.log_cmd, self.s.unit, svc, self.supervisor)
        self.spawn("log", lambda: self._log_thread(self.gen))
        self.spawn("sampler", self._sampler_thread)
        self.spawn("http", self._http_thread)
        if self.s.host:
            self.spawn("ping", self._ping_thread)
        self.flush()

    def resolve_url(self, initial: bool = True) -> None:
        """Without --url, a container is probed where its serving port is published, which may move when
        it restarts (a dynamically published port)."""
        try:
            url, own_socket = server_url(self.s.url, self.s.url_given, self.supervisor, self.s.port, self.s.engine)
        except ConfigError as exc:
            if initial:
                raise
            self.judge.warn("url", f"after the restart: {exc}", self.t())
            return
        if url != self.s.url:
            self.s.url = url
            self.ladder = Ladder(self.client, url, self.s.model, self.s.api_key)
            self.judge.p.port = local_port(url) if own_socket else None  # a published port: the runtime's proxy holds it

    def run(self) -> dict[str, Any]:
        """Watch until a verdict; always returns the result event (also emitted to the sinks)."""
        j = self.judge
        try:
            self.start()
            while j.verdict is None:
                try:
                    kind, payload, gen = self.q.get(timeout=0.2)
                except queue.Empty:
                    kind, payload, gen = "tick", None, self.gen
                    for sink in self.sinks:
                        sink.emit({"event": "_tick", "t": round(self.t(), 3)})
                if gen == self.gen:
                    self.dispatch(kind, payload)
                j.tick(self.t())
                self.flush()
        except KeyboardInterrupt:
            j.end("interrupted", ExitCode.INTERRUPTED, "interrupted (Ctrl-C)", self.t())
        except Terminated:
            j.end("interrupted", ExitCode.TERMINATED, "terminated (SIGTERM)", self.t())
        except UnreachableError as exc:
            j.end("unreachable", ExitCode.UNREACHABLE, str(exc), self.t())
        finally:
            self.close()
        if j.verdict is not None and j.verdict.outcome == "ready" and self.s.check:
            self.run_checks()
        self.flush()
        res = j.result(
            self.t(),
            model=j.model or self.s.model,
            host=self.s.host,
            restarts=j.restarts,
            reconnects=self.reconnects,
            ssh_bytes=dict(zip(("sent", "received"), getattr(self.host, "bytes", (0, 0)), strict=True)) if self.s.host else None,
            log_lines=j.c.state.lines,
        )
        for sink in self.sinks:
            sink.emit(res)
        self.record(res)
        return res

    def close(self) -> None:
        self.stop.set()
        self.trigger.set()
        for f in self.followers:
            f.close()

    def dispatch(self, kind: str, payload: Any) -> None:
        """One item of evidence from a thread -> the judge (typed at this edge)."""
        j = self.judge
        t = self.t()
        if kind == "line":
            j.line(payload, t)
        elif kind == "sample":
            if payload.gpu is not None:
                self.on_gpu(t, *payload.gpu)
            if payload.svc is not None:
                self.on_service(t, *payload.svc)
            if payload.proc is not None and payload.pid is not None:
                if "error" in payload.proc:
                    j.warn("proc", f"process sampling failed on the host: {str(payload.proc['error'])[:160]}", t)
                sample = proc_from_dict(payload.proc)
                if sample is not None:
                    j.proc(payload.pid, sample, t)
        elif kind == "gpu":
            self.on_gpu(t, *payload)
        elif kind == "service":
            self.on_service(t, *payload)
        elif kind == "proc":
            j.proc(payload[0], payload[1], t)
        elif kind == "proc_unavailable":
            j.proc_unavailable(payload, t)
        elif kind == "sampler_off":
            if self.streaming:
                self.streaming = False
                j.warn(
                    "sampler", f"the streaming sampler did not start on the host (python3?, status {payload}); one command per sample", t
                )
                self._fallback_threads()
        elif kind == "http":
            j.http(payload, t)
        elif kind == "log_end":
            status, ran, seq = payload
            if seq != self.log_seq:
                return  # a follower replaced after a reconnect
            if not self.host.alive():
                self.reconnect("SSH connection lost")
                return
            j.log_ended(t)
            if ran < 2.0 and status not in (None, 0):
                j.warn("log_end", f"log command exited with status {status}; watching without the log", t)
            elif j.c.state.outcome != "failed":
                j.warn("log_end", "the log stream ended", t)
        elif kind == "lost":
            self.reconnect(payload)
        elif kind == "hung":
            if payload[0] == self.reconnects:
                self.reconnect(payload[1], hung=True)
        elif kind == "probe_error":
            j.warn(payload.split(":")[0], f"probe error: {payload}", t)

    def on_gpu(self, t: float, rc: int | None, out: str, err: str) -> None:
        samples, problem = gpu_evidence(rc, out, err)
        if problem:
            self.judge.warn("gpu" if samples is None else "gpu_parse", problem, t)
        if samples:
            self.judge.gpu(samples, t)

    def on_service(self, t: float, rc: int | None, out: str) -> None:
        self.judge.supervisor(self.supervisor.parse(rc, out), t)

    def reconnect(self, why: str, hung: bool = False) -> None:
        """Reconnect with capped exponential backoff for up to --reconnect-for; resume the log."""
        if self.host.alive() and not hung:
            return
        lost_at = self.t()
        self.judge.emit("warning", lost_at, message=f"SSH connection lost ({why}); reconnecting for up to {self.s.reconnect_for:g}s")
        self.flush()
        for f in self.followers:
            f.close()
        self.followers.clear()
        delay = 0.5
        while True:
            try:
                self.host.reconnect()
                break
            except UnreachableError as exc:
                gap = self.t() - lost_at
                if gap >= self.s.reconnect_for:
                    st = self.judge.c.state
                    raise UnreachableError(
                        f"SSH connection lost for {gap:.0f}s (--reconnect-for {self.s.reconnect_for:g}s): {exc}; "
                        f"last phase {st.last_phase() or 'none'}, {self.t():.0f}s elapsed"
                    ) from None
                if self.s.timeout and self.t() >= self.s.timeout:
                    return
                time.sleep(min(delay, max(self.s.reconnect_for - gap, 0.1)))
                delay = min(delay * 2, 10.0)
        self.log.resume()
        self.reconnects += 1
        how = "from the journal cursor" if self.log.journal else f"skipping {self.log._skip} records already seen"
        self.judge.emit("warning", self.t(), message=f"SSH reconnected after a {self.t() - lost_at:.1f}s gap; log resumed {how}")
        self.spawn(f"log-r{self.t():.0f}", lambda: self._log_thread(self.gen))
        if self.streaming:
            self.spawn(f"sampler-r{self.t():.0f}", self._sampler_thread)

    def run_checks(self) -> None:
        deadline = time.monotonic() + self.s.timeout - self.t() if self.s.timeout else None  # --check obeys --timeout
        for name in self.s.check:
            ok, what = run_check(name, self.client, self.ladder.base, self.judge.model or "", self.ladder.headers, deadline)
            late = not ok and deadline is not None and time.monotonic() >= deadline
            self.judge.check(name, ok, what, self.t(), late)

    def record(self, res: dict[str, Any]) -> None:
        if not self.s.record:
            return
        last = self.judge.last_proc
        rec = history.make_record(
            self.s.target_name(),
            res,
            host=self.s.host or "localhost",
            unit=self.s.unit,
            model=self.judge.model,
            cmd_hash=history.cmd_hash(last.cmdline if last else None),
            source="wait",
        )
        try:
            history.append(rec)
        except Exception as exc:  # noqa: BLE001 - history must never change the verdict
            self.judge.emit("warning", self.t(), message=f"history not written: {exc}")
            self.flush()
