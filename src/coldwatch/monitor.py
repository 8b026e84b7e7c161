"""The `wait` driver: each node's probe gathers typed readings into one queue; the judges decide;
sinks render. The monitor keeps only the queue, the judging loop and the result."""

from __future__ import annotations

import dataclasses
import queue
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from coldwatch import history
from coldwatch.checks import run_check
from coldwatch.errors import Terminated, UnreachableError
from coldwatch.evidence import CheckResult, NodeLost, Reading, ReadingsDropped
from coldwatch.exitcodes import ExitCode
from coldwatch.group import GroupJudge, NodeView
from coldwatch.hosts.base import Host
from coldwatch.http import make_client
from coldwatch.judge import Judge, Policy
from coldwatch.phases import load_rules
from coldwatch.probes.node import NVIDIA_SMI, NodeProbe, local_port
from coldwatch.render import Pipeline, Sink
from coldwatch.settings import Settings
from coldwatch.verdict import Outcome, Verdict, result_line

__all__ = ["NVIDIA_SMI", "Monitor", "local_port", "policy_for", "status_policy"]

QUEUE_MAX = 10000
PUT_WAIT = 1.0
"""A probe thread waits this long for room in a full queue; then the reading is dropped (counted,
and reported as a warning)."""
IDLE = 0.2
"""With no reading for this long, the judging loop ticks anyway (deadlines, graces, the panel)."""
BATCH = 256
"""At most this many queue items are judged in one turn of the loop before its tick and flush."""


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


def status_policy(settings: Settings) -> Policy:
    """The judge's parameters for one snapshot (``status``): wait's, without deadline or stall
    budget (no time passes) and without the panel's log tail."""
    return dataclasses.replace(policy_for(settings, {}), stall_after=0.0, timeout=0.0, tail=False)


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


@dataclass(frozen=True, slots=True)
class _Cancel:
    """Another thread ends the watch (a fleet's --fail-fast)."""

    why: str


class Node:
    """One host of the watched server: its probe (None when it could not be reached) and its judge.
    A single-host watch has one node (the head); a multi-node server adds its workers."""

    def __init__(self, name: str, settings: Settings, probe: NodeProbe | None, judge: Judge, head: bool, blind: str | None = None) -> None:
        self.name = name
        self.s = settings
        self.probe = probe
        self.judge = judge
        self.head = head
        self.blind = blind
        self.dropped = 0
        self.dropped_told = 0

    @property
    def host(self) -> Host | None:
        return self.probe.host if self.probe is not None else None


class Monitor:
    def __init__(
        self,
        settings: Settings,
        host: Host,
        sinks: list[Sink],
        now: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        workers: list[tuple[str, Settings, Host | None, str | None]] | None = None,
        idle: float = IDLE,
        queue_max: int = QUEUE_MAX,
    ) -> None:
        """``workers``: the other nodes of a multi-node server as (name, settings, host or None,
        why it could not be reached). ``now``/``wall``: the watch's clocks (a fake one in tests)."""
        self.s = settings
        self.sinks = Pipeline(sinks)  # internal events reach only the sinks that take them
        self.now = now
        self.idle = idle
        self.t0 = now()
        self.epoch0 = wall()
        self.multi = bool(workers)
        recs = history.load()
        baseline = history.baseline(settings.target_name(), records=recs)
        self.q: queue.Queue[tuple[int, Reading | tuple[Reading, ...] | _Cancel, int]] = queue.Queue(maxsize=queue_max)
        self.nodes: list[Node] = []
        self._add(settings.host or "localhost", settings, host, None, self._judge(settings, baseline, http=True, records=recs), head=True)
        for name, ws, wh, why in workers or []:
            self._add(name, ws, wh, why, self._judge(ws, {}, http=False), head=False)
        self.group = GroupJudge([NodeView(n.name, n.judge, n.head, n.blind) for n in self.nodes], settings.timeout) if self.multi else None
        self.client = make_client(host, verify=not settings.insecure, timeout=max(5.0, settings.interval * 2))
        self._rows_at = -1.0

    def _add(self, name: str, s: Settings, host: Host | None, blind: str | None, judge: Judge, head: bool) -> None:
        i = len(self.nodes)
        probe = None
        if host is not None and blind is None:
            probe = NodeProbe(
                name,
                s,
                host,
                lambda r, gen: self.put(i, r, gen),
                self.t,
                http=head,
                tag=f"-{name}" if self.multi else "",
                where=f"node {name}: " if self.multi else "",
            )
        judge.ranks.node = name  # the node its ranks are on, in verdicts and the result's ranks
        self.nodes.append(Node(name, s, probe, judge, head, blind))

    def _judge(self, s: Settings, baseline: dict[str, float], http: bool, records: list[dict[str, Any]] | None = None) -> Judge:
        policy = policy_for(s, baseline, records)
        if self.multi:
            policy = dataclasses.replace(policy, timeout=0.0)  # the server's deadline is the group's
        if not http:
            policy = dataclasses.replace(policy, port=None, tail=False, listen_port=None)
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

    @property
    def probes(self) -> list[NodeProbe]:
        return [n.probe for n in self.nodes if n.probe is not None]

    # ---- plumbing ----------------------------------------------------------------------
    def t(self) -> float:
        return self.now() - self.t0

    def put(self, i: int, r: Reading | tuple[Reading, ...] | _Cancel, gen: int) -> None:
        """A probe thread's reading (or a batch of them); counted as dropped when the queue stays full."""
        try:
            self.q.put((i, r, gen), timeout=PUT_WAIT)
        except queue.Full:
            self.nodes[i].dropped += len(r) if isinstance(r, tuple) else 1

    def emit(self, ev: dict[str, Any]) -> None:
        self.sinks.emit(ev)

    def flush(self) -> None:
        """Send the judges' events to the sinks (tagged with the node when there are several)."""
        for n in self.nodes:
            if n.dropped > n.dropped_told:
                n.dropped_told = n.dropped
                self.apply(n, n.judge.observe(ReadingsDropped(n.dropped), self.t()))
            for ev in n.judge.drain():
                if self.multi:
                    ev["node"] = n.name
                self.emit(ev)
        if self.group is not None and self.t() - self._rows_at >= 1.0:
            self._rows_at = self.t()
            self.emit({"event": "_rows", "t": round(self.t(), 3), "rows": self.group.rows(self.t())})

    def apply(self, n: Node, actions: list[Any]) -> None:
        if n.probe is not None and actions:
            n.probe.apply(actions)

    # ---- the run -----------------------------------------------------------------------
    def start(self) -> None:
        for n in self.nodes:
            if n.probe is None:
                n.judge.warn("blind", f"node {n.name} cannot be reached ({n.blind}); the start is judged on the other nodes", self.t())
            else:
                n.probe.start(self.client if n.head else None)
        head = self.head.probe
        self.emit(
            {
                "event": "_info",
                "t": 0.0,
                "target": self.s.target_name(),
                "unit": self.s.unit if head is not None and head.svc_known and not self.s.container else None,
                "container": self.s.container,
                "engine": self.judge.engine,
                "model": self.s.model,
                "deadline": self.s.timeout,
                "baseline": self.judge.p.baseline,
                "nodes": [n.name for n in self.nodes] if self.multi else None,
            }
        )
        self.flush()

    def tick(self) -> None:
        t = self.t()
        if self.group is not None:
            self.group.tick(t)
        else:
            self.judge.tick(t)
        for n in self.nodes:
            self.apply(n, n.judge.actions())

    def run(self) -> dict[str, Any]:
        """Watch until a verdict; always returns the result event (also emitted to the sinks)."""
        try:
            self.start()
            while self.verdict is None:
                self.step()
        except KeyboardInterrupt:
            self.end(Outcome.INTERRUPTED, ExitCode.INTERRUPTED, "interrupted (Ctrl-C)")
        except Terminated:
            self.end(Outcome.INTERRUPTED, ExitCode.TERMINATED, "terminated (SIGTERM)")
        except UnreachableError as exc:
            self.end(Outcome.UNREACHABLE, ExitCode.UNREACHABLE, str(exc))
        finally:
            self.close()
        if self.verdict is not None and self.verdict.outcome not in (
            Outcome.READY,
            Outcome.FAILED,  # the log's traceback says where; a sample would hold the exit back 0.5-4 s
            Outcome.STALLED,
            Outcome.UNREACHABLE,
            Outcome.INTERRUPTED,
        ):
            self.final_stacks()
        if self.verdict is not None and self.verdict.outcome == "ready" and self.s.check:
            self.run_checks()
        attached = self.judge.attached(self.t(), self.verdict is not None and self.verdict.outcome == "ready")
        self.flush()
        res = self.result()
        if attached:
            res["attached"] = True
            res["reason"] = f"{attached}; {res['reason']}"[:500]
        record(self, res)  # before the result: a history warning never follows the result line
        self.emit(res)
        return res

    def final_stacks(self) -> None:
        """A timeout or an incomplete start says where the ranks are: one stack sample per node now (a
        stall's was taken as the start stopped moving; a failure's place is its logged error)."""
        for n in self.nodes:
            if n.probe is not None and n.blind is None and n.probe.control.pid is not None:
                try:
                    sample = n.probe.stacks_now(budget=4.0)
                except Exception as exc:  # noqa: BLE001 - the verdict stands without its stacks
                    n.judge.warn("stacks", f"stack sample failed: {type(exc).__name__}: {exc}", self.t())
                    continue
                n.judge.observe(sample, self.t())

    def step(self) -> None:
        """The readings queued so far (or, after ``idle`` seconds without one, the time) to the judges,
        in their order, then one tick and one flush: a burst of readings is one turn of the loop, not
        one each (each reading is still observed at its own moment)."""
        try:
            item = self.q.get(timeout=self.idle)
        except queue.Empty:
            self.emit({"event": "_tick", "t": round(self.t(), 3)})
        else:
            for _ in range(BATCH):
                self.take(*item)
                if self.verdict is not None:
                    break
                try:
                    item = self.q.get_nowait()
                except queue.Empty:
                    break
        self.tick()
        self.flush()

    def take(self, i: int, r: Reading | tuple[Reading, ...] | _Cancel, gen: int) -> None:
        """One queue item: a reading or a probe's batch of them, unless it is of a log replaced since."""
        n = self.nodes[i]
        if n.probe is not None and gen != n.probe.gen:
            return
        for one in r if isinstance(r, tuple) else (r,):
            self.feed(n, one)
            if self.verdict is not None:
                return  # nothing is judged after the verdict (a batch's later lines included)

    def feed(self, n: Node, r: Reading | _Cancel) -> None:
        t = self.t()
        if isinstance(r, _Cancel):
            self.end(Outcome.INCOMPLETE, ExitCode.TIMEOUT, r.why)
        elif isinstance(r, NodeLost):
            self.node_lost(n, r, t)
        else:
            self.apply(n, n.judge.observe(r, t))

    def node_lost(self, n: Node, r: NodeLost, t: float) -> None:
        """The head lost for good ends the watch (unreachable); a worker is judged blind from now on."""
        st = n.judge.status()
        if n.head:
            raise UnreachableError(r.message)  # the verdict adds the last phase and the time
        msg = f"{r.message}; last phase {st.last_phase or 'none'}, {t:.0f}s elapsed"
        n.blind = msg
        if self.group is not None:
            self.group.blind(n.name, msg)
        n.judge.observe(NodeLost(msg), t)

    def result(self) -> dict[str, Any]:
        j = self.judge
        hosts = [n.host for n in self.nodes if n.host is not None]
        sent = sum(getattr(h, "bytes", (0, 0))[0] for h in hosts)
        received = sum(getattr(h, "bytes", (0, 0))[1] for h in hosts)
        extra: dict[str, Any] = {
            "model": j.model or self.s.model,
            "host": self.s.host,
            "restarts": j.restarts,
            "reconnects": sum(p.reconnects for p in self.probes),
            "ssh_bytes": {"sent": sent, "received": received} if self.s.host else None,
            "log_lines": j.c.state.lines,
        }
        if self.group is None:
            return j.result(self.t(), **extra)
        v = self.group.verdict or self.group.end(Outcome.INCOMPLETE, ExitCode.TIMEOUT, "the watch ended", self.t())
        states = self.group.rank_states() if v.outcome != Outcome.READY else []
        if states:
            extra["ranks"] = [r.as_dict() for r in states]
        return result_line(v, self.t(), self.epoch0, j.state.timeline(), nodes=self.group.node_results(), **extra)

    def cancel(self, why: str) -> None:
        """End the watch from another thread (a fleet's --fail-fast): incomplete, exit 124."""
        self.put(0, _Cancel(why), self.head.probe.gen if self.head.probe is not None else 0)

    def end(self, outcome: str, code: ExitCode, why: str) -> None:
        if self.group is not None:
            self.group.end(outcome, code, why, self.t())
        else:
            self.judge.end(outcome, code, why, self.t())

    def close(self) -> None:
        for p in self.probes:
            p.close()

    @property
    def ladder(self) -> Any:
        return self.head.probe.ladder if self.head.probe is not None else None

    def run_checks(self) -> None:
        deadline = time.monotonic() + self.s.timeout - self.t() if self.s.timeout else None  # --check obeys --timeout
        for name in self.s.check:
            ok, what = run_check(name, self.client, self.ladder.base, self.judge.model or "", self.ladder.headers, deadline)
            late = not ok and deadline is not None and time.monotonic() >= deadline
            self.judge.observe(CheckResult(name, ok, what, late), self.t())
        if self.group is not None and self.group.verdict is not None and self.judge.verdict is not None:
            self.group.verdict = self.judge.verdict


def record(self: Monitor, res: dict[str, Any]) -> None:
    """The watch in the history (not for an attached watch, nor without --record); never changes the verdict."""
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
        engine=self.judge.c.state.engine,
        load=self.judge.bw.kind,  # the load path's verdict: history --report groups by it
        source="wait",
    )
    try:
        history.append(rec)
    except Exception as exc:  # noqa: BLE001 - history must never change the verdict
        self.judge.emit("warning", self.t(), message=f"history not written: {exc}")
        self.flush()
