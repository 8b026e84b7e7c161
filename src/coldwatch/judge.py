"""The judge: typed evidence and the time in, events and at most one verdict out.

Pure: no threads, no I/O, no clock. Every method takes ``t``, seconds since the watch began: the
monitor's clock for ``wait``, the log's own clock for ``replay``. Drivers (the threads of ``wait``,
a file for ``replay``, one sample for ``status``) feed it and forward ``drain()``'s events to the
sinks; every rule that decides an outcome lives here or in the parts it composes
(``coldwatch.judging``), so every command decides the same way.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from coldwatch import bandwidth, eta
from coldwatch.evidence import (
    Action,
    CheckResult,
    EarlierLine,
    GpuReading,
    GpuSample,
    HttpState,
    LogEnded,
    LogLine,
    ProcReading,
    ProcSample,
    ProcUnavailable,
    Reading,
    ReadingsDropped,
    Rescope,
    ServedAt,
    StackSample,
    SupervisorReading,
    SupervisorState,
    WatchPid,
)
from coldwatch.exitcodes import ExitCode
from coldwatch.judging import outcomes, views
from coldwatch.judging.first_hour import LaunchBanner
from coldwatch.judging.http_rule import HttpRule
from coldwatch.judging.lifecycle import Lifecycle
from coldwatch.judging.liveness import Liveness
from coldwatch.judging.notes import warning_for
from coldwatch.judging.outbox import Outbox
from coldwatch.judging.pace import Pace
from coldwatch.judging.policy import DEATH_GRACE, FAIL_GRACE, FAST_FOR, RESTART_WAIT, Policy
from coldwatch.judging.ports import PortRule
from coldwatch.judging.process import ProcessRule
from coldwatch.judging.views import NodeStatus
from coldwatch.phases import Classifier, RuleSet, Signal, State
from coldwatch.ranks import RankWatch
from coldwatch.verdict import Outcome, Verdict

__all__ = ["DEATH_GRACE", "FAIL_GRACE", "FAST_FOR", "RESTART_WAIT", "Judge", "NodeStatus", "Policy", "Verdict"]
"""The judge's public face: feed it through ``observe`` (and ``tick``), read it through ``status()``,
``snapshot()`` and ``result()``; its other attributes are its own."""


class Judge:
    """Evidence in, events and one verdict out. Not thread-safe: one driver feeds it."""

    def __init__(self, policy: Policy, rules: RuleSet | None = None, engine: str | None = None, epoch0: float | None = None) -> None:
        self.p = policy
        self.rules = rules
        self.engine = engine
        self.c = Classifier(rules, engine)
        self.verdict: Verdict | None = None
        self.now = 0.0
        self.out = Outbox(epoch0)
        self.life = Lifecycle(self.out, policy)
        self.ranks = RankWatch(engine=engine)
        """The ranks' stacks (ranks.py): who works, who waits, who holds the others up."""
        self.live = Liveness(self.out, policy, self.ranks)
        self.etas = eta.Tracker(policy.history, policy.target, policy.launch, total=policy.baseline.get("total"))
        self.pace = Pace(self.out, self.live, self.life, self.etas, policy.confirm)
        self.procs = ProcessRule(self.out, self.live, self.etas)
        self.ports = PortRule(self.out, policy.port, policy.listen_port)
        self.web = HttpRule(self.out, self.live, self.ports)
        self.banner = LaunchBanner(self.out)
        self.pid: int | None = policy.pid
        self.last_gpu: list[GpuSample] = []

    @property
    def state(self) -> State:
        """The classifier's state of the current start."""
        return self.c.state

    @property
    def epoch0(self) -> float | None:
        return self.out.epoch0

    @epoch0.setter
    def epoch0(self, value: float | None) -> None:
        self.out.epoch0 = value

    @property
    def model(self) -> str | None:
        """The model the server said it serves."""
        return self.web.model

    @property
    def restarts(self) -> int:
        return self.life.restarts

    @property
    def last_proc(self) -> ProcSample | None:
        return self.procs.last

    @property
    def bw(self) -> bandwidth.Tracker:
        return self.procs.bw

    def drain(self) -> list[dict[str, Any]]:
        """The events since the last drain, in order."""
        return self.out.drain()

    def emit(self, event_name: str, t: float, **data: Any) -> None:
        self.out.emit(event_name, t, **data)

    def warn(self, key: str, message: str, t: float) -> None:
        """A warning, once per key."""
        self.out.warn(key, message, t)

    def actions(self) -> list[Action]:
        """The actions asked since the last call (``observe`` returns them; a ticking driver takes them here)."""
        return self.out.actions()

    def _decide(self, v: Verdict) -> Verdict:
        if self.verdict is None:
            self.verdict = v
        return self.verdict

    def observe(self, r: Reading, t: float) -> list[Action]:
        """One reading at ``t``; what the node's probe should do now (probe, rescope, ...)."""
        if not isinstance(r, ReadingsDropped):
            self.live.observed(t)
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
        """The readings that warn or change the judge's view of the probe."""
        said = warning_for(r)
        if said is not None:
            self.out.say(*said, t)
            if isinstance(r, EarlierLine) and self.p.tail:  # shown, never judged
                self.out.internal("_log", t, text=("earlier run: " + r.line.text)[:300], rank=r.line.rank)
        elif isinstance(r, ProcUnavailable):
            self.procs.unavailable(r.detail, t)
        elif isinstance(r, LogEnded):
            self.log_ended(t)
            if r.ran_s < 2.0 and r.status not in (None, 0):
                self.warn("log_end", f"log command exited with status {r.status}; watching without the log", t)
            elif self.c.state.outcome != "failed":
                self.warn("log_end", "the log stream ended", t)
        elif isinstance(r, ServedAt):
            self.ports.port = r.port
        elif isinstance(r, CheckResult):
            self.check(r.name, r.ok, r.detail, t, r.late)
        elif isinstance(r, StackSample):
            self.now = t
            self.live.stacks(r, t, self.pid, self.state)

    def line(self, line: LogLine, t: float | None = None) -> None:
        """One normalised log line, at ``t`` (None: on the log's own clock)."""
        if self.verdict is not None:
            return
        if t is None:
            t = line.t if line.t is not None else self.now
        elif line.t != t:
            line = dataclasses.replace(line, t=t)
        if self.p.stall_after and self.live.evidence and self.tick(t) is not None:
            return  # the silence before this line was a stall (replay: a gap in a saved log)
        self.now = t
        self.live.seen("log", t)
        self.ranks.note_line(line.text)
        if self.etas.want_launch:
            self.etas.line(line.text)
        self.ports.line(line.text, t)
        if self.p.tail:
            self.out.internal("_log", t, text=line.text[:300], rank=line.rank)
        signals = self.c.feed(line)
        if self.p.launch:
            self.banner.line(line.text, t, self.c.state.engine, self.etas)
        for sig in signals:
            # (a marker stamped before lines already read is this start's text out of order, no restart)
            if sig.kind == "start" and not line.stamped_back and self._log_restart(t):
                self.line(line, t)  # the marker is the new start's first line
                return
            self._signal(sig, t)
        if self.life.failed_at is not None or self.p.stall_after or self.p.timeout:
            self.tick(t)

    def _log_restart(self, t: float) -> bool:
        """A start marker after the start got somewhere, with no supervisor to say so: a restart."""
        st = self.c.state
        if not self.life.is_log_restart(st.phase, st.failure is not None, st.spans):
            return False
        if self._restart(t, None):
            return True
        self.tick(t)  # past --max-restarts: the verdict
        return False

    def _signal(self, sig: Signal, t: float) -> None:
        if self.pace.signal(sig, t, self.c.state, self.now, self.verdict is not None):
            self._decide(Verdict(Outcome.READY, ExitCode.READY, "ready", None, sig.data.get("evidence", "")))

    def gpu(self, samples: list[GpuSample], t: float) -> None:
        """One GPU sample (one row per GPU)."""
        self.now = t
        self.live.gpus(self.last_gpu, samples, t)
        self.last_gpu = samples
        self.emit("gpu", t, gpus=[g.as_dict() for g in samples])

    def supervisor(self, st: SupervisorState, t: float, initial: bool = False) -> None:
        """The supervisor's view of the server: running, dead, restarted."""
        self.now = t
        if st.known and st.main_pid and self.p.pid is None and st.main_pid != self.pid:
            self.pid = st.main_pid
            self.out.act(WatchPid(st.main_pid))
        if self.life.supervisor(st, t, initial):
            self._restart(t, st)

    def _restart(self, t: float, st: SupervisorState | None) -> bool:
        """A restart; whether a new start is judged now (a new timeline; the driver follows its log)."""
        f = self.c.state.failure
        if not self.life.restart(t, st, f.cause if f is not None else "no cause in the log"):
            return False
        self.c = Classifier(self.rules, self.engine)
        self.procs.read0 = None
        self.etas.bars.clear()
        if st is not None:
            self.out.act(Rescope(st))
        return True

    def proc(self, pid: int, sample: ProcSample, t: float) -> None:
        """One sample of the server's process tree: liveness, load progress, compilers, the port's holder."""
        self.now = t
        if not sample.alive:
            self.life.gone(t, f"server process {pid} is gone")
            return
        compilers = self.procs.sample(sample, t, self.c.state.phase == "weight_load")
        if compilers:
            for sig in self.c.note_activity(t, "jit_compile", f"compiler process running: {', '.join(compilers)}"):
                self._signal(sig, t)
        self.ports.holder(pid, sample, t)

    def http(self, st: HttpState, t: float) -> None:
        """One rung of the HTTP ladder; a validated completion is ready unless another process answered."""
        self.now = t
        if self.web.answer(st, t, self.pid, self.procs.off or self.procs.last is not None) and self.verdict is None:
            for sig in self.c.note_ready(t, f"HTTP: {st.detail} (model {st.model})"):
                self._signal(sig, t)
            self._decide(Verdict(Outcome.READY, ExitCode.READY, "ready", None, f"/v1/completions answered (model {st.model})"))

    def check(self, name: str, ok: bool, detail: str, t: float, late: bool = False) -> None:
        """A post-ready functional check: a failed one turns a ready start into a failed one; one not
        answered by the deadline (``late``) into a timeout."""
        self.emit("check", t, name=name, passed=ok, detail=detail)
        if not ok and self.verdict is not None and self.verdict.outcome == "ready":
            late_v = self.unfinished(Outcome.TIMEOUT, ExitCode.TIMEOUT, f"--check {name} not answered by the deadline", t)
            self.verdict = late_v if late else Verdict(Outcome.FAILED, ExitCode.FAILED, "ready", "other", detail)

    def tick(self, t: float) -> Verdict | None:
        """Apply the time-bound rules at ``t``; the verdict once there is one."""
        self.now = max(self.now, t)
        if self.verdict is not None:
            return self.verdict
        st = self.c.state
        due = self.life.due(t, st.outcome == "failed")
        if due == "failed":
            return self._decide(outcomes.failed(st))
        if due == "restarts":
            return self._decide(outcomes.too_many_restarts(st, self.life.restarts, self.p.max_restarts, self.life.last_cause))
        if due == "died":
            return self._decide(self._died(t))
        if self.p.timeout and t >= self.p.timeout:
            return self._decide(self.unfinished(Outcome.TIMEOUT, ExitCode.TIMEOUT, f"not ready after {self.p.timeout:g}s", t))
        self.live.slow(st, t)
        self.pace.due(st, t, False)
        stall = self.live.stall(t, st, self.pid)
        if stall is None:
            return None
        self.emit("stall", t, **stall)
        return self._decide(Verdict(Outcome.STALLED, ExitCode.STALLED, st.last_phase(), None, stall["message"]))

    def _died(self, t: float) -> Verdict:
        assert self.life.death is not None
        _, kind, reason = self.life.death
        if self.c.state.outcome == "ready":
            return outcomes.died_after_ready(kind, reason)
        for sig in self.c.note_death(t, kind, reason):
            self._signal(sig, t)
        return outcomes.failed(self.c.state)

    def unfinished(self, outcome: str, code: ExitCode, why: str, t: float) -> Verdict:
        """A verdict for a watch that ended before the start did (deadline, interrupt, unreachable)."""
        return outcomes.unfinished(outcome, code, why, t, self.c.state, self.web.state, self.ports.note)

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
        self.log_ended(t)
        return self.verdict or self.tick(t) or self._decide(outcomes.log_ended(self.c.state, self.p.confirm))

    def eta(self) -> float | None:
        """Seconds until ready by the per-phase estimate (eta.py); None without history."""
        return self.pace.eta(self.c.state, self.now)

    def result(self, t: float, **extra: Any) -> dict[str, Any]:
        """The result line for the verdict (``finish`` first when there is none)."""
        return views.result(self, self.verdict or self.finish(t), t, **extra)

    def status(self) -> NodeStatus:
        """A frozen view of where the start stands."""
        return views.node_status(self)

    def attached(self, t: float, ready: bool) -> str:
        """Why this watch was an attach, not a cold start (``first_hour.Attach``; "" for a cold start),
        said as a warning once (``ready``: the watch's verdict is ready); an attach is never recorded."""
        why = self.web.attach.why(ready, self.life.svc)
        if why:
            self.warn("attached", why, t)
        return why

    def settle(self, t: float) -> Verdict | None:
        """One look (``status``): the verdict of the time-bound rules if the evidence stays as it is
        through the fail and death graces; None while the start may still go on (a restart pending)."""
        return self.tick(t + max(self.p.fail_grace, self.p.death_grace))

    def snapshot(self) -> dict[str, Any]:
        """Where the start stands now, for ``status``: the verdict's outcome once there is one."""
        return views.snapshot(self.c.state, self.verdict, self.life, self.last_gpu, self.web.state, self.model)
