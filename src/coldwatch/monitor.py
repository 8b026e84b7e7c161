"""The monitor: probes feed one queue; the classifier turns events into state; the monitor
enforces the deadline and the stall budget and decides the verdict. Sinks only render."""

from __future__ import annotations

import contextlib
import dataclasses
import queue
import threading
import time
import urllib.parse
import zlib
from collections.abc import Callable
from typing import Any

from coldwatch import history
from coldwatch.checks import run_check
from coldwatch.errors import Terminated, UnreachableError
from coldwatch.events import event, from_signal, result
from coldwatch.exitcodes import ExitCode
from coldwatch.hosts.base import Host, RunResult, q
from coldwatch.http import HttpState, Ladder, make_client
from coldwatch.normalise import LogLine, Normaliser
from coldwatch.phases import Classifier, Signal, load_rules
from coldwatch.probes.log import LogSource
from coldwatch.probes.parse import (
    COMPILERS,
    PROC_SCRIPT,
    GpuSample,
    ProcSample,
    ServiceState,
    parse_gpu_csv,
    parse_proc_sample,
    parse_systemctl_show,
)
from coldwatch.render import Sink
from coldwatch.replay import Verdict
from coldwatch.settings import Settings

NVIDIA_SMI = "nvidia-smi --query-gpu=index,memory.used,memory.total,utilization.gpu --format=csv,noheader,nounits"
SERVICE_PROPS = "ActiveState,SubState,Result,NRestarts,MainPID,ExecMainStatus,InvocationID,LoadState,ActiveEnterTimestamp"
FAIL_GRACE = 0.4
"""Seconds to keep reading after a fatal line, so the traceback's root error is the cause."""
PING_EVERY = 5.0
PING_TIMEOUT = 10.0
"""A connection whose server does not answer a keepalive within this many seconds is hung."""
RESTART_WAIT = 15.0
"""With --max-restarts left, seconds to wait after a failure for systemd to restart the server."""
DEATH_GRACE = 1.5
"""Seconds to wait for the log after the process died, so the logged cause wins."""
# Once the log says the server is about to listen (warm-up) or ready, a refused port is probed this
# often for FAST_FOR seconds: the log line can come a moment before the bind (vLLM logs "Application
# startup complete" as uvicorn starts), and a refused connect costs one channel-open round trip.
FAST_PROBE = 0.2
FAST_FOR = 30.0
# A process outside the server's tree that listens on the probed port: its answers are not the
# server's. Front proxies and tunnels are expected there; another inference server (a stale one still
# holding the port) is not, and its answers must not make a start READY.
LOOPBACK = ("127.0.0.1", "localhost", "::1", "0.0.0.0", "::")
SERVER_NAMES = (
    "python",
    "sglang",
    "vllm",
    "VLLM",
    "uvicorn",
    "ray::",
    "trtllm",
    "text-generation",
    "lmdeploy",
    "tritonserver",
    "llama-server",
)


def local_port(url: str) -> int | None:
    """The probed port when the URL points at the host itself (what the sampler can see), else None."""
    try:
        u = urllib.parse.urlsplit(url)
        if (u.hostname or "") not in LOOPBACK:
            return None
        return u.port or (443 if u.scheme == "https" else 80)
    except ValueError:
        return None


def service_cmd(unit: str) -> str:
    return f"systemctl show -p {SERVICE_PROPS} --no-pager -- {q(unit)}"  # '--': a unit name is never an option


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
        self.rules = load_rules(settings.rules)
        self.engine = None if settings.engine == "auto" else settings.engine
        self.c = Classifier(self.rules, self.engine)
        self.q: queue.Queue[tuple[str, Any, int]] = queue.Queue(maxsize=10000)
        self.stop = threading.Event()
        self.trigger = threading.Event()
        self.t0 = now()
        self.epoch0 = wall()
        self.gen = 0  # bumps on a restart: stale log lines are dropped
        self.evidence: dict[str, float] = {}
        self.svc: ServiceState | None = None
        self.restarts = 0
        self.reconnects = 0
        self.last_cause = "no cause in the log"
        self.log_seq = 0
        self.read0: int | None = None
        self.proc_t = 0.0
        self.base_restarts: int | None = None
        self.http_state: HttpState | None = None
        self.model: str | None = settings.model
        self.last_gpu: list[GpuSample] = []
        self.last_proc: ProcSample | None = None
        self.pid: int | None = settings.pid
        self.port = local_port(settings.url)
        self.foreign: tuple[int, str] | None = None  # another server holding the probed port
        self.proc_off = False
        self.held = False  # a ready answer was held back until the port's owner is known
        self.fast_until = 0.0
        self.failed_at: float | None = None
        self.death: tuple[float, str, str] | None = None
        self.warned: set[str] = set()
        self.threads: list[threading.Thread] = []
        self.followers: list[Any] = []
        self.baseline = history.baseline(settings.target_name())
        self.slow_warned: set[str] = set()
        self.client = make_client(host, verify=not settings.insecure, timeout=max(5.0, settings.interval * 2))
        self.ladder = Ladder(self.client, settings.url, settings.model, settings.api_key)

    # ---- plumbing ----------------------------------------------------------------------
    def t(self) -> float:
        return self.now() - self.t0

    def emit(self, event_name: str, **data: Any) -> None:
        ev = event(event_name, self.t(), self.epoch0, **data)
        for sink in self.sinks:
            sink.emit(ev)

    def warn(self, key: str, message: str) -> None:
        if key not in self.warned:
            self.warned.add(key)
            self.emit("warning", message=message)

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

    # ---- probes (threads) ----------------------------------------------------------------
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

    def _gpu_thread(self) -> None:
        cmd = self.s.gpu_cmd or NVIDIA_SMI
        while not self.stop.is_set():
            r = self.remote(cmd, max(5.0, self.s.interval * 2))
            if r is not None:
                self.put("gpu", r)
                if r.rc == 127 and not self.s.gpu_cmd:
                    return
            if not self.sleep(self.s.interval):
                return

    def _service_thread(self) -> None:
        cmd = service_cmd(self.s.unit)
        while self.sleep(self.s.interval):
            r = self.remote(cmd, 10.0)
            if r is not None and r.rc is not None:
                self.put("service", parse_systemctl_show(r.stdout.decode("utf-8", "replace")) if r.rc == 0 else None)

    def _proc_thread(self) -> None:
        # the script travels zlib-compressed on stdin (about a third of its size), every sample
        script = zlib.compress(PROC_SCRIPT.encode(), 9)
        unpack = q("import sys, zlib; exec(zlib.decompress(sys.stdin.buffer.read()))")
        first = True
        while not self.stop.is_set():
            pid = self.pid
            if pid is not None:
                r = self.remote(f"python3 -c {unpack} {int(pid)} {1 if first else 0} {self.port or 0}", 10.0, script)
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
            if self.host.alive() and not self.host.ping(PING_TIMEOUT) and not self.stop.is_set():
                self.put("hung", f"no answer from the SSH server for {PING_TIMEOUT:g}s")

    def _http_thread(self) -> None:
        while not self.stop.is_set():
            st = self.ladder.probe()
            self.put("http", st)
            fast = st.state == "refused" and self.now() < self.fast_until
            self.trigger.wait(min(FAST_PROBE, self.s.interval) if fast else self.s.interval)
            self.trigger.clear()

    # ---- the run -----------------------------------------------------------------------
    def start(self) -> None:
        """Scope the log to the unit's current start, then start every stream."""
        if self.s.log_cmd is None or self.pid is None:
            r = self.host.run(service_cmd(self.s.unit), timeout=10.0)
            svc = parse_systemctl_show(r.stdout.decode("utf-8", "replace")) if r.rc == 0 else None
            self.on_service(svc, initial=True)
        self.log = LogSource(self.s.log_cmd, self.s.unit, self.svc)
        self.spawn("log", lambda: self._log_thread(self.gen))
        self.spawn("gpu", self._gpu_thread)
        if self.svc is not None and self.svc.known:
            self.spawn("service", self._service_thread)
        self.spawn("proc", self._proc_thread)
        self.spawn("http", self._http_thread)
        if self.s.host:
            self.spawn("ping", self._ping_thread)

    def run(self) -> dict[str, Any]:
        """Watch until a verdict; always returns the result event (also emitted to the sinks)."""
        verdict: Verdict | None = None
        try:
            self.start()
            while verdict is None:
                try:
                    kind, payload, gen = self.q.get(timeout=0.2)
                except queue.Empty:
                    kind, payload, gen = "tick", None, self.gen
                    self.emit_internal("_tick")
                if gen == self.gen:
                    verdict = self.dispatch(kind, payload)
                verdict = verdict or self.decide()
        except KeyboardInterrupt:
            verdict = self.unfinished("interrupted", ExitCode.INTERRUPTED, "interrupted (Ctrl-C)")
        except Terminated:
            verdict = self.unfinished("interrupted", ExitCode.TERMINATED, "terminated (SIGTERM)")
        except UnreachableError as exc:
            verdict = self.unfinished("unreachable", ExitCode.UNREACHABLE, str(exc))
        finally:
            self.close()
        if verdict.outcome == "ready" and self.s.check:
            verdict = self.run_checks(verdict)
        res = result(
            verdict,
            self.t(),
            self.epoch0,
            self.c.state.timeline(),
            model=self.model,
            host=self.s.host,
            restarts=self.restarts,
            reconnects=self.reconnects,
            ssh_bytes=dict(zip(("sent", "received"), getattr(self.host, "bytes", (0, 0)), strict=True)) if self.s.host else None,
            log_lines=self.c.state.lines,
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

    # ---- evidence --------------------------------------------------------------------------
    def dispatch(self, kind: str, payload: Any) -> Verdict | None:
        t = self.t()
        if kind == "line":
            line: LogLine = dataclasses.replace(payload, t=t)
            self.evidence["log"] = t
            self.emit_internal("_log", text=line.text[:300])
            for sig in self.c.feed(line):
                self.on_signal(sig)
        elif kind == "log_end":
            status, ran, seq = payload
            if seq != self.log_seq:
                return None  # a follower replaced after a reconnect
            if not self.host.alive():
                self.reconnect("SSH connection lost")
                return None
            if ran < 2.0 and status not in (None, 0):
                self.warn("log_end", f"log command exited with status {status}; watching without the log")
            elif self.c.state.outcome != "failed":
                self.warn("log_end", "the log stream ended")
        elif kind == "gpu":
            self.on_gpu(payload)
        elif kind == "service":
            self.on_service(payload)
        elif kind == "proc":
            self.on_proc(*payload)
        elif kind == "proc_unavailable":
            self.proc_off = True
            self.warn("proc", f"process sampling unavailable on the host (python3?): {payload}")
        elif kind == "http":
            return self.on_http(payload)
        elif kind == "lost":
            self.reconnect(payload)
        elif kind == "hung":
            self.reconnect(payload, hung=True)
        elif kind == "probe_error":
            self.warn(payload.split(":")[0], f"probe error: {payload}")
        return None

    def emit_internal(self, event_name: str, **data: Any) -> None:
        """Events only the live panel reads (names start with '_'; JSON and plain skip them)."""
        ev = {"event": event_name, "t": round(self.t(), 3), **data}
        for sink in self.sinks:
            sink.emit(ev)

    def on_signal(self, sig: Signal) -> None:
        if sig.kind == "progress":
            self.evidence["progress"] = self.t()
        if sig.kind == "failed" and self.failed_at is None:
            self.failed_at = self.t()
        if sig.kind == "ready" or (sig.kind == "phase" and sig.data.get("phase") == "warmup"):
            self.fast_until = self.now() + FAST_FOR
        if sig.kind == "ready":
            self.trigger.set()  # probe now instead of at the next tick
        ev = from_signal(sig, self.epoch0)
        if ev is not None:
            if ev["event"] == "progress":
                eta = self.eta(ev["phase"])
                if eta is not None:
                    ev["eta_s"] = eta
            ev["t"] = round(self.t(), 3)
            for sink in self.sinks:
                sink.emit(ev)

    def on_gpu(self, r: Any) -> None:
        if r.rc == 127 or (r.rc not in (0, None) and not r.stdout):
            err = (r.stderr or b"").decode("utf-8", "replace").strip().splitlines()
            self.warn("gpu", f"GPU stream off: {(err[-1] if err else 'command failed')[:160]}")
            return
        if r.rc is None:
            return
        samples, problems = parse_gpu_csv(r.stdout.decode("utf-8", "replace"))
        if problems:
            self.warn("gpu_parse", "GPU sample: " + "; ".join(problems[:3]))
        if not samples:
            return
        t = self.t()
        old = {g.index: g for g in self.last_gpu}
        for g in samples:
            prev = old.get(g.index)
            if prev is not None and g.used_mib is not None and prev.used_mib != g.used_mib:
                self.evidence["gpu_mem"] = t
            if g.util:
                self.evidence["gpu_util"] = t
        self.last_gpu = samples
        self.emit("gpu", gpus=[g.as_dict() for g in samples])

    def on_service(self, svc: ServiceState | None, initial: bool = False) -> None:
        if svc is None or not svc.known:
            if initial:
                self.svc = svc
                self.warn("service", f"no systemd unit state for {self.s.unit} (container?); service stream off")
            return
        prev = self.svc
        self.svc = svc
        if svc.main_pid and self.s.pid is None:
            self.pid = svc.main_pid
        if svc.load == "not-found" and initial and not self.s.log_cmd:
            self.warn("unit", f"unit {self.s.unit} is not loaded on the host")
        if self.base_restarts is None:
            self.base_restarts = svc.restarts or 0
        restarted = (
            prev is not None
            and prev.known
            and ((svc.restarts or 0) > (prev.restarts or 0) or (svc.invocation and prev.invocation and svc.invocation != prev.invocation))
        )
        if restarted:
            self.on_restart(svc)
            return
        if svc.dead and not initial and self.death is None:
            kind = "killed" if svc.result in ("signal", "core-dump", "watchdog") else "oom" if svc.result == "oom-kill" else "exited"
            status = f", status={svc.exec_status}" if svc.exec_status is not None else ""
            self.death = (self.t(), kind, f"unit {self.s.unit} is {svc.active}/{svc.sub} (Result={svc.result}{status})")

    def on_restart(self, svc: ServiceState) -> None:
        self.restarts = (svc.restarts or 0) - (self.base_restarts or 0) or self.restarts + 1
        cause = self.c.state.failure.cause if self.c.state.failure else "no cause in the log"
        self.emit("warning", message=f"server restarted (restart {self.restarts}); last failure: {cause[:200]}")
        self.last_cause = cause
        if self.restarts > self.s.max_restarts:
            return
        # a new start: a new timeline; the journal is re-scoped to the new invocation (a --log-cmd
        # stream such as docker logs -f simply goes on)
        self.c = Classifier(self.rules, self.engine)
        self.failed_at = None
        self.death = None
        if self.s.log_cmd:
            return
        self.gen += 1
        for f in self.followers:
            f.close()
        self.log.rescope(svc)
        gen = self.gen
        self.spawn(f"log{gen}", lambda: self._log_thread(gen))

    def on_proc(self, pid: int, sample: ProcSample) -> None:
        t = self.t()
        prev = self.last_proc
        if not sample.alive:
            if self.death is None and (self.svc is None or not self.svc.known):
                self.death = (t, "killed", f"server process {pid} is gone")
            return
        loading = self.c.state.phase == "weight_load"
        if loading and self.read0 is None:
            self.read0 = prev.read_bytes if prev is not None else sample.read_bytes
        if prev is not None:
            if sample.cpu_s > prev.cpu_s + 0.05:
                self.evidence["cpu"] = t
            if sample.read_bytes > prev.read_bytes:
                self.evidence["disk"] = t
                dt = max(t - self.proc_t, 0.001)
                rate = (sample.read_bytes - prev.read_bytes) / dt
                model = sample.model_bytes or prev.model_bytes
                self.emit_internal("_disk", rate=rate, read=sample.read_bytes, model=model)
                if model and loading and self.read0 is not None:
                    done = min(sample.read_bytes - self.read0, model)
                    left = (model - done) / rate if rate > 0 else None
                    self.emit(
                        "progress",
                        phase="weight_load",
                        done=done,
                        total=model,
                        unit="bytes",
                        rate_mb_s=round(rate / 1e6, 1),
                        eta_s=round(left, 1) if left is not None else None,
                    )
        self.proc_t = t
        compilers = sorted({c for c in sample.children if c in COMPILERS})
        if compilers:
            self.evidence["compile"] = t
            self.emit_internal("_jit", names=compilers)
            for sig in self.c.note_activity(t, "jit_compile", f"compiler process running: {', '.join(compilers)}"):
                self.on_signal(sig)
        if prev is not None and sample.model_bytes is None:
            sample = dataclasses.replace(sample, model_bytes=prev.model_bytes)
        self.last_proc = sample
        self.on_port(pid, sample)

    def on_port(self, pid: int, sample: ProcSample) -> None:
        """Who listens on the probed port: a stale server there would answer for this one."""
        self.foreign = None
        if sample.port == "other" and sample.owner_pid is not None:
            name = sample.owner_name or "?"
            # a server that was listening before this start began (a container started by this
            # start, e.g. `docker run --network host`, is younger than the server's root process)
            if name.startswith(SERVER_NAMES) and sample.owner_older:
                self.foreign = (sample.owner_pid, name)
                self.warn(
                    f"foreign{sample.owner_pid}",
                    f"port {self.port} is held by {name} (pid {sample.owner_pid}), not by the server (pid {pid}): "
                    "its answers do not count as ready, and the server will fail to bind the port",
                )
            else:
                self.warn(
                    f"front{sample.owner_pid}",
                    f"port {self.port} is served by {name} (pid {sample.owner_pid}), outside the server's process tree; probing through it",
                )
        if self.held and self.foreign is None:
            self.held = False
            self.trigger.set()  # a readiness answer held back can count now: probe again at once

    def on_http(self, st: HttpState) -> Verdict | None:
        changed = self.http_state is None or (st.state, st.status) != (self.http_state.state, self.http_state.status)
        self.http_state = st
        if st.model:
            self.model = st.model
        if changed:
            self.emit("http", state=st.state, status=st.status, detail=st.detail, changed=True)
            if st.state in ("status", "ready"):
                self.evidence["http"] = self.t()
        if st.state == "ready" and self.foreign is not None:
            fpid, fname = self.foreign
            self.warn(f"foreign-answer{fpid}", f"{self.s.url} answered a completion, but from {fname} (pid {fpid}), not the server")
            self.held = True
            return None
        if st.state == "ready" and self.port is not None and self.pid is not None and not self.proc_off and self.last_proc is None:
            self.held = True
            return None  # who holds the port is not known yet; the first process sample comes at once
        if st.state == "ready":
            for sig in self.c.note_ready(self.t(), f"HTTP: {st.detail} (model {st.model})"):
                self.on_signal(sig)
            return Verdict("ready", ExitCode.READY, "ready", None, f"/v1/completions answered (model {st.model})")
        return None

    def reconnect(self, why: str, hung: bool = False) -> None:
        """Reconnect with capped exponential backoff for up to --reconnect-for; resume the log."""
        if self.host.alive() and not hung:
            return
        lost_at = self.t()
        self.emit("warning", message=f"SSH connection lost ({why}); reconnecting for up to {self.s.reconnect_for:g}s")
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
                    st = self.c.state
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
        self.emit("warning", message=f"SSH reconnected after a {self.t() - lost_at:.1f}s gap; log resumed {how}")
        self.spawn(f"log-r{self.t():.0f}", lambda: self._log_thread(self.gen))

    # ---- decisions ---------------------------------------------------------------------
    def decide(self) -> Verdict | None:
        t = self.t()
        st = self.c.state
        failed_for = t - self.failed_at if st.outcome == "failed" and self.failed_at is not None else -1.0
        if failed_for >= FAIL_GRACE and (not self.may_restart() or failed_for >= RESTART_WAIT):
            return self.failed_verdict()
        if self.restarts > self.s.max_restarts:
            cause = self.last_cause
            return Verdict(
                "failed",
                ExitCode.FAILED,
                st.last_phase(),
                st.failure.kind if st.failure else "exited",
                f"server restarted {self.restarts} time(s) (--max-restarts {self.s.max_restarts}); last failure: {cause}",
            )
        if self.death is not None and t - self.death[0] >= DEATH_GRACE and not self.may_restart():
            _, kind, reason = self.death
            for sig in self.c.note_death(t, kind, reason):
                self.on_signal(sig)
            return self.failed_verdict()
        if self.s.timeout and t >= self.s.timeout:
            return self.unfinished("timeout", ExitCode.TIMEOUT, f"not ready after {self.s.timeout:g}s")
        phase = st.phase
        self.check_slow(phase, t)
        budget = max(self.s.stall_after, 1.5 * self.baseline.get(phase, 0.0))
        last = max(self.evidence.values(), default=0.0)
        if t - last >= budget:
            ages = ", ".join(f"{k} {t - v:.0f}s ago" for k, v in sorted(self.evidence.items(), key=lambda kv: -kv[1]))
            msg = f"no liveness evidence for {t - last:.0f}s (budget {budget:.0f}s) in {phase}; last: {ages or 'none ever'}"
            self.emit("stall", message=msg, evidence={k: round(t - v, 1) for k, v in self.evidence.items()})
            return Verdict("stalled", ExitCode.STALLED, st.last_phase(), None, msg)
        return None

    def may_restart(self) -> bool:
        """With --max-restarts left and systemd watching, a failure may be followed by a restart."""
        svc = self.svc
        if self.restarts >= self.s.max_restarts or svc is None or not svc.known:
            return False
        return not (svc.dead and svc.sub != "auto-restart" and svc.active != "activating")

    def failed_verdict(self) -> Verdict:
        st = self.c.state
        f = st.failure
        assert f is not None
        return Verdict("failed", ExitCode.FAILED, st.last_phase(), f.kind, f.cause)

    def unfinished(self, outcome: str, code: ExitCode, why: str) -> Verdict:
        st = self.c.state
        phase = st.last_phase()
        http = ""
        if self.http_state is not None:
            h = self.http_state
            http = f"; HTTP {h.state}{' ' + str(h.status) if h.status else ''}: {h.detail}"
        return Verdict(outcome, code, phase, None, f"{why}; last phase {phase or 'none'}, {self.t():.0f}s elapsed{http}")

    def check_slow(self, phase: str, t: float) -> None:
        med = self.baseline.get(phase)
        span = self.c.state.spans.get(phase)
        if med and span is not None and span.start is not None and phase not in self.slow_warned and t - span.start > 1.5 * med:
            self.slow_warned.add(phase)
            self.emit("warning", message=f"{phase} slower than usual: {t - span.start:.0f}s vs median {med:.0f}s")

    def eta(self, phase: str) -> float | None:
        total = self.baseline.get("total")
        if total is None:
            return None
        return round(max(total - self.t(), 0.0), 1)

    def run_checks(self, verdict: Verdict) -> Verdict:
        deadline = time.monotonic() + self.s.timeout - self.t() if self.s.timeout else None  # --check obeys --timeout
        for name in self.s.check:
            ok, what = run_check(name, self.client, self.ladder.base, self.model or "", self.ladder.headers, deadline)
            self.emit("check", name=name, passed=ok, detail=what)
            if not ok and deadline is not None and time.monotonic() >= deadline:
                return self.unfinished("timeout", ExitCode.TIMEOUT, f"--check {name} not answered by the deadline")
            if not ok:
                return Verdict("failed", ExitCode.FAILED, "ready", "other", what)
        return verdict

    def record(self, res: dict[str, Any]) -> None:
        if not self.s.record:
            return
        cmd = self.last_proc.cmdline if self.last_proc else None
        rec = history.make_record(
            self.s.target_name(),
            res,
            host=self.s.host or "localhost",
            unit=self.s.unit,
            model=self.model,
            cmd_hash=history.cmd_hash(cmd),
            source="wait",
        )
        try:
            history.append(rec)
        except Exception as exc:  # noqa: BLE001 - history must never change the verdict
            self.emit("warning", message=f"history not written: {exc}")
