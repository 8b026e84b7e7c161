"""The judge: typed evidence and the time in, events and at most one verdict out.

Pure: no threads, no I/O, no clock. Every method takes ``t``, seconds since the watch began: the
monitor's clock for ``wait``, the log's own clock for ``replay``. Drivers (the threads of ``wait``,
a file for ``replay``, one sample for ``status``) feed it and forward ``drain()``'s events to the
sinks; every rule that decides an outcome lives here, so every command decides the same way.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any

from coldwatch import bandwidth, eta
from coldwatch.events import event, from_signal
from coldwatch.evidence import (
    Action,
    CheckResult,
    ConnectionLost,
    EarlierEnded,
    EarlierLine,
    GpuReading,
    GpuSample,
    HttpState,
    LogEnded,
    LogLine,
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
    ReadingsDropped,
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
from coldwatch.exitcodes import ExitCode
from coldwatch.phases import Classifier, RuleSet, Signal, State
from coldwatch.probes.parse import COMPILERS
from coldwatch.ranks import RankState, RankWatch, informative
from coldwatch.verdict import Outcome, Verdict, result_line

__all__ = ["DEATH_GRACE", "FAIL_GRACE", "FAST_FOR", "RESTART_WAIT", "Judge", "NodeStatus", "Policy", "Verdict"]
"""The judge's public face: feed it through ``observe`` (and ``tick``), read it through ``status()``,
``snapshot()`` and ``result()``; its other attributes are its own."""

FAIL_GRACE = 0.4
"""Seconds to keep reading after a fatal line, so the traceback's root error is the cause."""
DEATH_GRACE = 1.5
"""Seconds to wait for the log after the process died, so the logged cause wins."""
RESTART_WAIT = 15.0
"""With --max-restarts left, seconds to wait after a failure for the supervisor to restart the server."""
FAST_FOR = 30.0
"""Once the log reaches warm-up or ready, a refused port is re-probed quickly for this long."""
SLOW_FACTOR = 1.5
SLOW_FLOOR = 30.0
"""A phase is slower than usual at SLOW_FACTOR x its median AND at least SLOW_FLOOR seconds longer."""
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
"""Process names of inference servers: one of these holding the probed port is another server."""
LISTEN = re.compile(r"(?:Uvicorn running on|API server(?: \d+)? on) https?://(\[[0-9a-fA-F:]+\]|[\w.-]+):(\d{1,5})\b")
"""Where the server says it listens (uvicorn's line, vLLM's API server line)."""


@dataclass(frozen=True, slots=True)
class Policy:
    """The rules' parameters for one watch. Frozen: a driver builds a new one (``dataclasses.replace``)."""

    timeout: float = 0.0
    """Deadline in seconds; 0 = none."""
    stall_after: float = 600.0
    """Stalled after this long with no liveness evidence (grown by history); 0 = never."""
    max_restarts: int = 0
    confirm: str = "http"
    """"http": only a validated completion is ready (wait); "log": the log's ready line is (replay)."""
    fail_grace: float = FAIL_GRACE
    death_grace: float = DEATH_GRACE
    restart_wait: float = RESTART_WAIT
    baseline: dict[str, float] = field(default_factory=dict)
    """Median seconds per phase (and "total") of earlier ready starts of this target."""
    port: int | None = None
    """The probed port when the host can see who listens on it (the port-holder rule applies)."""
    pid: int | None = None
    """The server's main process when given (--pid); else the supervisor's main PID."""
    unit: str = "the server"
    tail: bool = False
    """Emit the log tail (internal ``_log`` events) for the live panel."""
    history: list[dict[str, Any]] = field(default_factory=list)
    """Earlier starts' records for the per-phase ETA (this target's, else the same model's and TP's)."""
    target: str = ""
    launch: bool = False
    """Read the model and TP from the log's launch banner (wait: the ETA's fallback, the history record)."""
    listen_port: int | None = None
    """The port the probed URL expects the server to log that it listens on (None: not comparable)."""


@dataclass(frozen=True, slots=True)
class NodeStatus:
    """Where one node's start stands, as the group, the fleet, the panel and ``status`` read it."""

    now: float
    phase: str
    """The classifier's current phase ("starting" before any)."""
    last_phase: str | None
    """The phase to report: where a failure happened, else the latest reached (None before any)."""
    failed_at: float | None
    """When the log's failure began (its fail grace runs from here)."""
    died_at: float | None
    """When the process or the unit was seen dead."""
    evidence: tuple[tuple[str, float], ...]
    """Liveness evidence: (kind, last seen), newest first."""
    progress: tuple[int, int] | None
    """(done, total) of the current phase's bar, when it has one."""
    gpu_mem: tuple[int, int] | None
    """(used, total) MiB over the node's GPUs, when sampled."""
    rank_tags: tuple[str, ...]
    """The rank tags the log showed (TP0, TP8 ...)."""
    verdict: Verdict | None
    ranks: tuple[RankState, ...] = ()
    """Each rank's state as the last stack sample saw it, with what the log says (ranks.py)."""

    @property
    def shown_phase(self) -> str:
        """The phase a table shows: the reported phase, else the current one."""
        return self.last_phase or self.phase

    @property
    def dying(self) -> bool:
        """A failure or a death is pending its grace."""
        return self.failed_at is not None or self.died_at is not None

    @property
    def failing_since(self) -> float:
        """When the node began to fail (the failure, else the death, else now)."""
        if self.failed_at is not None:
            return self.failed_at
        return self.died_at if self.died_at is not None else self.now

    @property
    def last_alive(self) -> tuple[str, float] | None:
        """The newest liveness evidence as (kind, t)."""
        return self.evidence[0] if self.evidence else None

    @property
    def stuck(self) -> bool:
        """Part-way through the current phase's progress bar."""
        return self.progress is not None and self.progress[0] < self.progress[1]


class Judge:
    """Evidence in, events and one verdict out. Not thread-safe: one driver feeds it."""

    def __init__(self, policy: Policy, rules: RuleSet | None = None, engine: str | None = None, epoch0: float | None = None) -> None:
        self.p = policy
        self.rules = rules
        self.engine = engine
        self.epoch0 = epoch0
        self.c = Classifier(rules, engine)
        self.verdict: Verdict | None = None
        self.now = 0.0
        self._events: list[dict[str, Any]] = []
        self.evidence: dict[str, float] = {}
        self.failed_at: float | None = None
        self.death: tuple[float, str, str] | None = None
        self.svc: SupervisorState | None = None
        self.base_restarts: int | None = None
        self.restarts = 0
        self.last_cause = "no cause in the log"
        self.http_state: HttpState | None = None
        self.model: str | None = None
        self.pid: int | None = policy.pid
        self.port: int | None = policy.port
        """The probed port when the host can see who holds it (``ServedAt`` moves it)."""
        self.last_gpu: list[GpuSample] = []
        self.last_proc: ProcSample | None = None
        self.proc_t = 0.0
        self.read0: int | None = None
        self.proc_off = False
        self.foreign: tuple[int, str] | None = None
        self.held = False
        self._actions: list[Action] = []
        self.version: str | None = None
        self._launched: tuple[str | None, str | None, int | None, str | None] = (None, None, None, None)
        self.warned: set[str] = set()
        self.slow_warned: set[str] = set()
        self._first_http: str | None = None
        """The first HTTP answer: "ready" means the server was up before the watch (an attach)."""
        self._not_ready_seen = False
        """An answer other than a completion came: a start happened during the watch (an old server's
        answers at first, then this start's), so it is not an attach."""
        self.port_note = ""
        """The log says the server listens on another port than the probed one (said at once, and in the verdict)."""
        self.bw = bandwidth.Tracker()
        self.etas = eta.Tracker(policy.history, policy.target, policy.launch, total=policy.baseline.get("total"))
        self.ranks = RankWatch(engine=engine)
        """The ranks' stacks (ranks.py): who works, who waits, who holds the others up."""

    @property
    def state(self) -> State:
        """The classifier's state of the current start."""
        return self.c.state

    # ---- output ------------------------------------------------------------------------
    def drain(self) -> list[dict[str, Any]]:
        """The events since the last drain, in order."""
        out, self._events = self._events, []
        return out

    def emit(self, event_name: str, t: float, **data: Any) -> None:
        self._events.append(event(event_name, t, self.epoch0, **data))

    def warn(self, key: str, message: str, t: float) -> None:
        """A warning, once per key."""
        if key not in self.warned:
            self.warned.add(key)
            self.emit("warning", t, message=message)

    def _decide(self, v: Verdict) -> Verdict:
        if self.verdict is None:
            self.verdict = v
        return self.verdict

    # ---- readings in, actions out --------------------------------------------------------
    def observe(self, r: Reading, t: float) -> list[Action]:
        """One reading at ``t``; what the node's probe should do now (probe, rescope, ...)."""
        if isinstance(r, LogLine):
            self.line(r, t)
        elif isinstance(r, HttpState):
            self.http(r, t)
        elif isinstance(r, GpuReading):
            if r.problem:
                self.warn("gpu" if r.samples is None else "gpu_parse", r.problem, t)
            if r.samples:
                self.gpu(list(r.samples), t)
        elif isinstance(r, SupervisorReading):
            self.supervisor(r.state, t, r.initial)
        elif isinstance(r, ProcReading):
            self.proc(r.pid, r.sample, t)
        else:
            self._note(r, t)
        return self.actions()

    def _note(self, r: Reading, t: float) -> None:
        """The readings that only warn or change the judge's view of the probe."""
        if isinstance(r, ProcFailed):
            self.warn("proc", f"process sampling failed on the host: {r.detail[:160]}", t)
        elif isinstance(r, ProcUnavailable):
            self.proc_unavailable(r.detail, t)
        elif isinstance(r, SamplerOff):
            self.warn(
                "sampler", f"the streaming sampler did not start on the host (python3?, status {r.status}); one command per sample", t
            )
        elif isinstance(r, LogEnded):
            self._log_end(r, t)
        elif isinstance(r, ConnectionLost):
            self.emit("warning", t, message=f"{r.where}SSH connection lost ({r.why}); reconnecting for up to {r.retry_for:g}s")
        elif isinstance(r, Reconnected):
            self.emit("warning", t, message=f"{r.where}SSH reconnected after a {r.gap:.1f}s gap; log resumed {r.how}")
        elif isinstance(r, NodeLost):
            self.warn("blind", r.message + "; the start is judged on the other nodes", t)
        elif isinstance(r, ProbeFailed):
            self.warn(r.probe, f"probe error: {r.probe}: {r.detail}", t)
        elif isinstance(r, ProbeWarning):
            self.warn(r.key, r.message, t)
        elif isinstance(r, EarlierLine):
            self._earlier(r.line, t, f"log lines stamped before {r.why} are an earlier run's: shown as such, never judged")
        elif isinstance(r, EarlierEnded):
            self.warn("earlier_end", f"the log ended on {r.count} line(s) stamped before this start: judged as this start's last lines", t)
        elif isinstance(r, ReadingsDropped):
            self.emit("warning", t, message=f"{r.count} reading(s) dropped so far: the judging queue was full")
        elif isinstance(r, ServedAt):
            self.port = r.port
        elif isinstance(r, CheckResult):
            self.check(r.name, r.ok, r.detail, t, r.late)
        elif isinstance(r, StackSample):
            self._stacks(r, t)

    def actions(self) -> list[Action]:
        """The actions asked for since the last call (``observe`` returns them; a driver that
        only ticks takes them here)."""
        out, self._actions = self._actions, []
        return out

    def _act(self, a: Action) -> None:
        self._actions.append(a)

    def _log_end(self, r: LogEnded, t: float) -> None:
        self.log_ended(t)
        if r.ran_s < 2.0 and r.status not in (None, 0):
            self.warn("log_end", f"log command exited with status {r.status}; watching without the log", t)
        elif self.c.state.outcome != "failed":
            self.warn("log_end", "the log stream ended", t)

    # ---- evidence ----------------------------------------------------------------------
    def line(self, line: LogLine, t: float | None = None) -> None:
        """One normalised log line, at ``t`` (None: on the log's own clock)."""
        if self.verdict is not None:
            return
        if t is None:
            t = line.t if line.t is not None else self.now
        elif line.t != t:
            line = dataclasses.replace(line, t=t)
        if self.p.stall_after and self.evidence and self.tick(t) is not None:
            return  # the silence before this line was a stall (replay: a gap in a saved log)
        self.now = t
        self.evidence["log"] = t
        self.ranks.note_line(line.text)
        if self.etas.want_launch:
            self.etas.line(line.text)
        if self.p.listen_port and ("running on" in line.text or "server" in line.text):
            self._listen(line.text, t)
        if self.p.tail:
            self._events.append({"event": "_log", "t": round(t, 3), "text": line.text[:300], "rank": line.rank})
        signals = self.c.feed(line)
        if self.p.launch:
            self._launch(line.text, t)
        if signals:
            for sig in signals:
                if sig.kind == "start" and self._log_restart(t):
                    self.line(line, t)  # the marker is the new start's first line
                    return
                self._signal(sig, t)
        if self.failed_at is not None or self.p.stall_after or self.p.timeout:
            self.tick(t)

    def _launch(self, text: str, t: float) -> None:
        """What the start's banner says of the server (engine, model, TP size, version), for the
        panel's header: an internal ``_launch`` event whenever it learns more."""
        if self.version is None and ("vLLM" in text or "LLM engine (v" in text):
            self.version = eta.launch_version(text)
        now = (self.c.state.engine, self.etas.model, self.etas.tp, self.version)
        if now != self._launched:
            self._launched = now
            engine, model, tp, version = now
            self._events.append({"event": "_launch", "t": round(t, 3), "engine": engine, "model": model, "tp": tp, "version": version})

    def _earlier(self, line: LogLine, t: float, why: str) -> None:
        """A line of an earlier run of the server (an appended log's old lines): shown, never judged."""
        self.warn("earlier", why, t)
        if self.p.tail:
            self._events.append({"event": "_log", "t": round(t, 3), "text": ("earlier run: " + line.text)[:300], "rank": line.rank})

    def _listen(self, text: str, t: float) -> None:
        m = LISTEN.search(text)
        if m is None or int(m.group(2)) == self.p.listen_port:
            return
        self.port_note = (
            f"the log says the server listens on port {m.group(2)} ({m.group(0)[-60:]}), but port {self.p.listen_port} is probed"
        )
        self.warn(f"listen{m.group(2)}", self.port_note + ": check --url or --port", t)

    def _log_restart(self, t: float) -> bool:
        """A start marker after the start got somewhere, with no supervisor to say so: a restart."""
        if self.svc is not None and self.svc.known:
            return False
        st = self.c.state
        if st.phase == "starting" and st.failure is None:
            return False
        self._restart(t, None)
        if self.restarts > self.p.max_restarts:
            self.tick(t)
            return False
        return True

    def _signal(self, sig: Signal, t: float) -> None:
        kind = sig.kind
        if kind == "progress":
            self.evidence["progress"] = t
            self.etas.progress(sig.data["phase"], sig.data["done"], sig.data["total"], t)
        elif kind == "failed" and self.failed_at is None:
            self.failed_at = t
        elif kind == "start":
            return
        if kind == "ready" or (kind == "phase" and sig.data.get("phase") == "warmup"):
            self._act(ProbeFast(t + FAST_FOR))
        if kind == "ready" and sig.data.get("source") == "log":
            if self.p.confirm == "log":
                self._decide(Verdict(Outcome.READY, ExitCode.READY, "ready", None, sig.data.get("evidence", "")))
            else:
                self._act(ProbeNow())
        ev = from_signal(sig, self.epoch0)
        if ev is not None:
            if ev["event"] == "progress":
                eta = self.eta()
                if eta is not None:
                    ev["eta_s"] = eta
            self._events.append(ev)
            if ev["event"] == "phase":
                self._eta_event(t)

    def gpu(self, samples: list[GpuSample], t: float) -> None:
        """One GPU sample (one row per GPU)."""
        self.now = t
        old = {g.index: g for g in self.last_gpu}
        for g in samples:
            prev = old.get(g.index)
            if prev is not None and g.used_mib is not None and prev.used_mib != g.used_mib:
                self.evidence["gpu_mem"] = t
            if g.util:
                self.evidence["gpu_util"] = t
        self.last_gpu = samples
        self.emit("gpu", t, gpus=[g.as_dict() for g in samples])

    def supervisor(self, st: SupervisorState, t: float, initial: bool = False) -> None:
        """The supervisor's view of the server: running, dead, restarted."""
        self.now = t
        if not st.known:
            if initial:
                self.warn("service", f"no supervisor state for {self.p.unit} (container?); service stream off", t)
            return
        prev = self.svc
        self.svc = st
        if st.main_pid and self.p.pid is None and st.main_pid != self.pid:
            self.pid = st.main_pid
            self._act(WatchPid(st.main_pid))
        if st.not_found and initial:
            self.warn("unit", f"unit {self.p.unit} is not loaded on the host", t)
        if self.base_restarts is None:
            self.base_restarts = st.restarts or 0
        restarted = (
            prev is not None
            and prev.known
            and ((st.restarts or 0) > (prev.restarts or 0) or bool(st.start_id and prev.start_id and st.start_id != prev.start_id))
        )
        if restarted:
            self._restart(t, st)
            return
        if st.dead and not initial and self.death is None:
            self.death = (t, st.death_kind or "exited", st.death_reason or f"{self.p.unit} stopped")

    def _restart(self, t: float, st: SupervisorState | None) -> None:
        if st is not None and st.restarts is not None:
            self.restarts = st.restarts - (self.base_restarts or 0) or self.restarts + 1
        else:
            self.restarts += 1
        f = self.c.state.failure
        cause = f.cause if f is not None else "no cause in the log"
        self.emit("warning", t, message=f"server restarted (restart {self.restarts}); last failure: {cause[:200]}")
        self.last_cause = cause
        if self.restarts > self.p.max_restarts:
            return
        # a new start: a new timeline; the driver follows the new start's log
        self.c = Classifier(self.rules, self.engine)
        self.failed_at = None
        self.death = None
        self.read0 = None
        self.etas.bars.clear()
        if st is not None:
            self._act(Rescope(st))

    def proc(self, pid: int, sample: ProcSample, t: float) -> None:
        """One sample of the server's process tree: liveness, load progress, compilers, the port's holder."""
        self.now = t
        prev = self.last_proc
        if not sample.alive:
            if self.death is None and (self.svc is None or not self.svc.known):
                self.death = (t, "killed", f"server process {pid} is gone")
            return
        loading = self.c.state.phase == "weight_load"
        if loading and self.read0 is None:
            self.read0 = prev.read_bytes if prev is not None else sample.read_bytes
        rate = 0.0
        if prev is not None:
            if sample.cpu_s > prev.cpu_s + 0.05:
                self.evidence["cpu"] = t
            if sample.read_bytes > prev.read_bytes:
                self.evidence["disk"] = t
                rate = (sample.read_bytes - prev.read_bytes) / max(t - self.proc_t, 0.001)
                model = sample.model_bytes or prev.model_bytes
                self._events.append({"event": "_disk", "t": round(t, 3), "rate": rate, "read": sample.read_bytes, "model": model})
                if model and loading and self.read0 is not None:
                    done = min(sample.read_bytes - self.read0, model)
                    left = (model - done) / rate if rate > 0 else None
                    self.etas.progress("weight_load", done, model, t)
                    self.emit(
                        "progress",
                        t,
                        phase="weight_load",
                        done=done,
                        total=model,
                        unit="bytes",
                        rate_mb_s=round(rate / 1e6, 1),
                        eta_s=round(left, 1) if left is not None else None,
                    )
        self.proc_t = t
        if sample.load is not None or sample.io is not None:
            v = self.bw.feed(sample.load, sample.io, rate, loading)
            if v is not None:
                self.emit("load", t, verdict=v.kind, line=v.line, **self.bw.fields())
            if loading and self.bw.last is not None:
                self._events.append(
                    {"event": "_load", "t": round(t, 3), "line": self.bw.last.line, "verdict": self.bw.last.kind, **self.bw.fields()}
                )
        compilers = sorted({c for c in sample.children if c in COMPILERS})
        if compilers:
            self.evidence["compile"] = t
            self._events.append({"event": "_jit", "t": round(t, 3), "names": compilers})
            for sig in self.c.note_activity(t, "jit_compile", f"compiler process running: {', '.join(compilers)}"):
                self._signal(sig, t)
        if prev is not None and (sample.model_bytes is None or not sample.cmdline):
            sample = dataclasses.replace(sample, model_bytes=sample.model_bytes or prev.model_bytes, cmdline=sample.cmdline or prev.cmdline)
        self.last_proc = sample
        self._port(pid, sample, t)

    def proc_unavailable(self, detail: str, t: float) -> None:
        """The host cannot sample processes (no python3): liveness and the port rule go without it."""
        self.proc_off = True
        self.warn("proc", f"process sampling unavailable on the host (python3?): {detail}", t)

    def _port(self, pid: int, sample: ProcSample, t: float) -> None:
        """Who listens on the probed port: a stale server there would answer for this one."""
        self.foreign = None
        if sample.port == "other" and sample.owner_pid is not None:
            name = sample.owner_name or "?"
            # a server listening since before this start began (a container this start launched,
            # e.g. `docker run --network host`, is younger than the server's root process)
            if name.startswith(SERVER_NAMES) and sample.owner_older:
                self.foreign = (sample.owner_pid, name)
                self.warn(
                    f"foreign{sample.owner_pid}",
                    f"port {self.port} is held by {name} (pid {sample.owner_pid}), not by the server (pid {pid}): "
                    "its answers do not count as ready, and the server will fail to bind the port",
                    t,
                )
            else:
                self.warn(
                    f"front{sample.owner_pid}",
                    f"port {self.port} is served by {name} (pid {sample.owner_pid}), outside the server's process tree; probing through it",
                    t,
                )
        if self.held and self.foreign is None:
            self.held = False
            self._act(ProbeNow())  # an answer held back can count now: probe again at once

    def http(self, st: HttpState, t: float) -> None:
        """One rung of the HTTP ladder; a validated completion is ready unless another process answered."""
        self.now = t
        prev = self.http_state
        self.http_state = st
        self._first_http = self._first_http or st.state
        self._not_ready_seen = self._not_ready_seen or st.state != "ready"
        if st.model:
            self.model = st.model
        if prev is None or (st.state, st.status) != (prev.state, prev.status):
            self.emit("http", t, state=st.state, status=st.status, detail=st.detail, changed=True)
            if st.state in ("status", "ready"):
                self.evidence["http"] = t
        if st.state != "ready":
            return
        if self.foreign is not None:
            fpid, fname = self.foreign
            self.warn(f"foreign-answer{fpid}", f"the URL answered a completion, but from {fname} (pid {fpid}), not the server", t)
            self.held = True
            return
        if self.port is not None and self.pid is not None and not self.proc_off and self.last_proc is None:
            self.held = True  # who holds the port is not known yet; the first process sample comes at once
            return
        if self.verdict is None:
            for sig in self.c.note_ready(t, f"HTTP: {st.detail} (model {st.model})"):
                self._signal(sig, t)
            self._decide(Verdict(Outcome.READY, ExitCode.READY, "ready", None, f"/v1/completions answered (model {st.model})"))

    def check(self, name: str, ok: bool, detail: str, t: float, late: bool = False) -> None:
        """A post-ready functional check: a failed one turns a ready start into a failed one; one not
        answered by the deadline (``late``) into a timeout."""
        self.emit("check", t, name=name, passed=ok, detail=detail)
        if ok or self.verdict is None or self.verdict.outcome != "ready":
            return
        if late:
            self.verdict = self.unfinished(Outcome.TIMEOUT, ExitCode.TIMEOUT, f"--check {name} not answered by the deadline", t)
        else:
            self.verdict = Verdict(Outcome.FAILED, ExitCode.FAILED, "ready", "other", detail)

    # ---- the passage of time -------------------------------------------------------------
    def tick(self, t: float) -> Verdict | None:
        """Apply the time-bound rules at ``t``; the verdict once there is one."""
        self.now = max(self.now, t)
        if self.verdict is not None:
            return self.verdict
        st = self.c.state
        if self.failed_at is not None and st.outcome == "failed":
            since = t - self.failed_at
            if since >= self.p.fail_grace and not self._restart_pending(since):
                return self._decide(self._failed())
        if self.restarts > self.p.max_restarts:
            return self._decide(
                Verdict(
                    Outcome.FAILED,
                    ExitCode.FAILED,
                    st.last_phase(),
                    st.failure.kind if st.failure else "exited",
                    f"server restarted {self.restarts} time(s) (--max-restarts {self.p.max_restarts}); last failure: {self.last_cause}",
                )
            )
        if self.death is not None:
            since = t - self.death[0]
            if since >= self.p.death_grace and not self._restart_pending(since):
                return self._decide(self._died(t))
        if self.p.timeout and t >= self.p.timeout:
            return self._decide(self.unfinished(Outcome.TIMEOUT, ExitCode.TIMEOUT, f"not ready after {self.p.timeout:g}s", t))
        self._check_slow(st.phase, t)
        self._eta_event(t)
        if self.pid is not None and self.ranks.due(t, self.evidence, self.p.stall_after):
            self.ranks.pending = True  # no progress for a while: where are the ranks?
            self._act(SampleStacks("no progress"))
        if self.p.stall_after:
            budget = max(self.p.stall_after, SLOW_FACTOR * self.p.baseline.get(st.phase, 0.0))
            last = self.ranks.last_life(self.evidence)
            if t - last >= budget:
                ages = ", ".join(f"{k} {t - v:.0f}s ago" for k, v in sorted(self.evidence.items(), key=lambda kv: -kv[1]))
                msg = f"no liveness evidence for {t - last:.0f}s (budget {budget:.0f}s) in {st.phase}; last: {ages or 'none ever'}"
                msg, extra = self.ranks.stall_words(msg, st, t, self.evidence, budget)
                self.emit("stall", t, message=msg, evidence={k: round(t - v, 1) for k, v in self.evidence.items()}, **extra)
                return self._decide(Verdict(Outcome.STALLED, ExitCode.STALLED, st.last_phase(), None, msg))
        return None

    def _restart_pending(self, since: float) -> bool:
        """A failure or death ``since`` seconds ago may still be followed by a restart."""
        if self.restarts >= self.p.max_restarts or since >= self.p.restart_wait:
            return False
        svc = self.svc
        if svc is None or not svc.known:
            return True  # no supervisor to ask: a restart shows in the log, if it comes
        return not (svc.dead and not svc.waiting)

    def _died(self, t: float) -> Verdict:
        assert self.death is not None
        _, kind, reason = self.death
        st = self.c.state
        if st.outcome == "ready":
            # the log said ready, but the server died before a completion proved it
            return Verdict(
                Outcome.FAILED, ExitCode.FAILED, "warmup", kind, f"{reason}, after its log said ready and before a completion was served"
            )
        for sig in self.c.note_death(t, kind, reason):
            self._signal(sig, t)
        return self._failed()

    def _failed(self) -> Verdict:
        st = self.c.state
        f = st.failure
        if f is None:
            return Verdict(Outcome.FAILED, ExitCode.FAILED, st.last_phase(), "exited", "the server stopped with no cause in the log")
        return Verdict(Outcome.FAILED, ExitCode.FAILED, st.last_phase(), f.kind, f.cause)

    def unfinished(self, outcome: str, code: ExitCode, why: str, t: float) -> Verdict:
        """A verdict for a watch that ended before the start did (deadline, interrupt, unreachable)."""
        phase = self.c.state.last_phase()
        http = ""
        if self.http_state is not None:
            h = self.http_state
            http = f"; HTTP {h.state}{' ' + str(h.status) if h.status else ''}: {h.detail}"
        port = f"; {self.port_note}" if self.port_note else ""
        return Verdict(outcome, code, phase, None, f"{why}{port}; last phase {phase or 'none'}, {t:.0f}s elapsed{http}")

    def end(self, outcome: str, code: ExitCode, why: str, t: float) -> Verdict:
        """The driver ends the watch (unreachable, interrupted): that is the verdict unless one was reached."""
        return self._decide(self.unfinished(outcome, code, why, t))

    def log_ended(self, t: float) -> None:
        """The log stream ended (its command exited: `docker logs -f` of a stopped container): a
        traceback still pending at its end was the last thing the server said, so it is the failure."""
        for sig in self.c.finish():
            self._signal(sig, t)

    def finish(self, t: float | None = None) -> Verdict:
        """The end of the evidence (a saved log's last line): what it supports."""
        t = self.now if t is None else t
        for sig in self.c.finish():
            self._signal(sig, t)
        if self.verdict is not None:
            return self.verdict
        v = self.tick(t)
        if v is not None:
            return v
        st = self.c.state
        if st.outcome == "ready" and self.p.confirm == "log":
            return self._decide(Verdict(Outcome.READY, ExitCode.READY, "ready", None, st.ready_evidence))
        if st.outcome == "failed":
            return self._decide(self._failed())
        phase = st.last_phase()
        where = f"in {phase}" if phase and phase != "starting" else "before any start-up phase"
        return self._decide(Verdict(Outcome.INCOMPLETE, ExitCode.TIMEOUT, phase, None, f"log ended {where} without ready or a failure"))

    def _check_slow(self, phase: str, t: float) -> None:
        med = self.p.baseline.get(phase)
        span = self.c.state.spans.get(phase)
        if not med or span is None or span.start is None or phase in self.slow_warned:
            return
        took = t - span.start
        if took >= SLOW_FACTOR * med and took - med >= SLOW_FLOOR:
            self.slow_warned.add(phase)
            self.emit("warning", t, message=f"{phase} slower than usual: {took:.0f}s vs median {med:.0f}s")
            self._events.append({"event": "_slow", "t": round(t, 3), "phase": phase})

    def eta(self) -> float | None:
        """Seconds until ready by the per-phase estimate (eta.py); None without history."""
        est = self.etas.estimate(self._entered(), self.now)
        return round(est.remaining, 1) if est is not None else None

    def _entered(self) -> dict[str, float]:
        return {ph: s.start for ph, s in self.c.state.spans.items() if s.start is not None}

    def _eta_event(self, t: float) -> None:
        if self.etas.base is None or self.verdict is not None or self.c.state.ready:
            return  # nothing left to estimate once the log says ready
        est = self.etas.due(self._entered(), t)
        if est is not None:
            self.emit("eta", t, **est.as_event())

    # ---- views -------------------------------------------------------------------------
    def result(self, t: float, **extra: Any) -> dict[str, Any]:
        """The result line for the verdict (``finish`` first when there is none)."""
        v = self.verdict or self.finish(t)
        st = self.c.state
        v, more = self.ranks.verdict_words(v, st)
        if st.engine_timings:  # the engine's own per-phase figures, beside coldwatch's
            extra.setdefault("engine_timings", st.engine_timings)
        return result_line(v, t, self.epoch0, st.timeline(), **more, **extra)

    def _stacks(self, sample: StackSample, t: float) -> None:
        """One stack sample of the server's processes (probes/stacks.py)."""
        self.now = t
        for key, message in self.ranks.observe(sample, t, self.pid, self.evidence):
            self.warn(key, message, t)
        states = self.ranks.annotated(self.state)
        if informative(states):  # the panel's rank lines
            self._events.append({"event": "_ranks", "t": round(t, 3), "ranks": [r.as_dict() for r in states]})

    def status(self) -> NodeStatus:
        """A frozen view of where the start stands."""
        st = self.c.state
        span = st.spans.get(st.phase)
        used = sum(g.used_mib or 0 for g in self.last_gpu)
        total = sum(g.total_mib or 0 for g in self.last_gpu)
        return NodeStatus(
            now=self.now,
            phase=st.phase,
            last_phase=st.last_phase(),
            failed_at=self.failed_at,
            died_at=self.death[0] if self.death is not None else None,
            evidence=tuple(sorted(self.evidence.items(), key=lambda kv: -kv[1])),
            progress=(span.done or 0, span.total) if span is not None and span.total else None,
            gpu_mem=(used, total) if total else None,
            rank_tags=tuple(r for r in st.rank_phase if r),
            verdict=self.verdict,
            ranks=tuple(self.ranks.annotated(st)),
        )

    def attached(self, t: float, ready: bool) -> str:
        """Why this watch was an attach, not a cold start (its first probe was already served a
        completion and nothing else ever came; ``ready``: the watch's verdict is ready), with the
        supervisor's start of the run when it says; "" for a cold start. Said as a warning once; an
        attach is never recorded into the ETA baseline."""
        if not ready or self._first_http != "ready" or self._not_ready_seen:
            return ""
        svc = self.svc
        since = f"since {svc.since}" if svc is not None and svc.known and svc.since and svc.since != "n/a" else "when the watch began"
        why = f"already up {since}: an attach, not a cold start (not recorded in the ETA baseline)"
        self.warn("attached", why, t)
        return why

    def settle(self, t: float) -> Verdict | None:
        """One look (``status``): the verdict the time-bound rules give if the evidence stays as it
        is through the fail and death graces; None while the start may still go on (a restart is
        pending, or nothing has decided it)."""
        return self.tick(t + max(self.p.fail_grace, self.p.death_grace))

    def snapshot(self) -> dict[str, Any]:
        """Where the start stands now, for ``status``: the verdict's outcome once there is one."""
        st = self.c.state
        f = st.failure
        svc = self.svc
        h = self.http_state
        pending = "ready" if st.outcome == "ready" else "pending"
        outcome = str(self.verdict.outcome) if self.verdict is not None else pending
        return {
            "phase": st.last_phase() or st.phase,
            "outcome": outcome,
            "failure_kind": f.kind if f else (self.death[1] if self.death else None),
            "cause": f.cause if f else (self.death[2] if self.death else None),
            "last_line": st.last_line,
            "gpus": [g.as_dict() for g in self.last_gpu],
            "http": {"state": h.state, "status": h.status, "detail": h.detail} if h else None,
            "supervisor": (
                {"running": svc.running, "dead": svc.dead, "restarts": svc.restarts, "main_pid": svc.main_pid}
                if svc is not None and svc.known
                else None
            ),
            "model": self.model,
            "errors_after_ready": {"count": st.late_errors, "last": st.late_error} if st.late_errors else None,
        }
