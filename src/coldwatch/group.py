"""One verdict for a server that spans several nodes. Pure: node judges and the time in.

Each node (the head, which serves HTTP, and its workers) has its own judge fed by its own evidence;
this module turns their states into the server's verdict:

- failed when any node fails, naming the node, its ranks and the cause; when several fail close
  together the root cause wins (an NCCL error or OOM on a worker over the head's consequence);
- ready when the head served a validated completion and no node has failed or is dying;
- stalled when no node shows life for its stall budget, naming the laggard (the node stuck part-way
  through a bar, else in the earliest phase) and what the others are doing; a node idle in a
  barrier while another works is waiting, not stalled;
- unreachable only when the head cannot be reached; a blind worker is named and the start is judged
  on the evidence left;
- the deadline is the server's.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from coldwatch.exitcodes import ExitCode
from coldwatch.judge import Judge, NodeStatus
from coldwatch.phases import PHASES
from coldwatch.ranks import RankState, culprit, informative, summary
from coldwatch.verdict import Outcome, Verdict

GROUP_GRACE = 0.6
"""Seconds after the first node's fatal line to wait for another node's root cause (the nodes' logs
arrive apart); a node's own verdict already waits its fail grace (0.4 s) of it."""
ROOT_KINDS = {"nccl": 0, "oom": 0, "killed": 1, "exception": 2, "other": 3, "exited": 3}


@dataclass(slots=True)
class NodeView:
    """A node as the group sees it."""

    name: str
    judge: Judge
    head: bool = False
    blind: str | None = None
    """Why the node cannot be seen (unreachable), or None."""


def ranks(j: Judge | NodeStatus) -> str:
    """The rank tags a node's log showed, compactly: 'TP8-TP15', 'TP0', '' when untagged."""
    tags = list((j if isinstance(j, NodeStatus) else j.status()).rank_tags)
    if not tags:
        return ""
    nums = []
    for tag in tags:
        digits = "".join(c for c in tag.split()[-1] if c.isdigit())
        if digits:
            nums.append(int(digits))
    prefix = "".join(c for c in tags[0].split()[-1] if not c.isdigit())
    if not nums:
        return ", ".join(sorted(tags)[:4])
    lo, hi = min(nums), max(nums)
    return f"{prefix}{lo}" if lo == hi else f"{prefix}{lo}-{prefix}{hi}"


def phase_of(j: Judge | NodeStatus) -> str:
    return (j if isinstance(j, NodeStatus) else j.status()).shown_phase


def _where(n: NodeView) -> str:
    r = ranks(n.judge)
    return f"{n.name} ({r})" if r else n.name


def _progress(s: NodeStatus) -> str:
    if s.progress is not None:
        done, total = s.progress
        return f" at {100 * done // total} %"
    return ""


def _liveness(s: NodeStatus, t: float) -> str:
    last = s.last_alive
    if last is None:
        return "no liveness evidence yet"
    kind, at = last
    return f"last liveness {kind} {t - at:.0f}s ago"


class GroupJudge:
    """The server's verdict from its nodes' judges."""

    def __init__(self, nodes: list[NodeView], timeout: float = 0.0) -> None:
        self.nodes = nodes
        self.timeout = timeout
        self.verdict: Verdict | None = None

    @property
    def head(self) -> NodeView:
        return next(n for n in self.nodes if n.head)

    def tick(self, t: float) -> Verdict | None:
        if self.verdict is not None:
            return self.verdict
        for n in self.nodes:
            n.judge.tick(t)
        head = self.head
        now = {id(n): n.judge.status() for n in self.nodes}
        hv = now[id(head)].verdict
        if hv is not None and hv.outcome == Outcome.UNREACHABLE:
            self.verdict = hv
            return self.verdict
        failed = [n for n in self.nodes if _outcome(now[id(n)]) == Outcome.FAILED]
        if failed:
            first = min(now[id(n)].failing_since for n in failed)
            if t - first >= GROUP_GRACE or all(now[id(n)].verdict is not None for n in self.nodes if n.blind is None):
                self.verdict = self._failed(failed)
                return self.verdict
            return None
        # the start stops moving when no node shows life: a node idle in a barrier while another works
        # is waiting, not stalled
        seen = [n for n in self.nodes if n.blind is None]
        if seen and all(_outcome(now[id(n)]) == Outcome.STALLED for n in seen):
            self.verdict = self._stalled(t)
            return self.verdict
        if hv is not None and hv.outcome == Outcome.READY:
            dying = [n for n in self.nodes if not n.head and now[id(n)].dying]
            if not dying:
                self.verdict = hv
                return self.verdict
        if self.timeout and t >= self.timeout:
            slow = self._laggard()
            ss = slow.judge.status()
            self.verdict = Verdict(
                Outcome.TIMEOUT,
                ExitCode.TIMEOUT,
                ss.shown_phase,
                None,
                f"not ready after {self.timeout:g}s; slowest node {_where(slow)} in {ss.shown_phase}{_progress(ss)}",
            )
        if self.verdict is not None and self.verdict.outcome == "timeout" and self.rank_states():
            self.verdict = dataclasses.replace(
                self.verdict, reason=f"{self.verdict.reason}; {summary(self.rank_states(), with_nodes=True)}"
            )
        return self.verdict

    def _failed(self, failed: list[NodeView]) -> Verdict:
        def key(n: NodeView) -> tuple[int, float]:
            s = n.judge.status()
            assert s.verdict is not None
            return (ROOT_KINDS.get(s.verdict.failure_kind or "other", 3), s.failing_since)

        root = min(failed, key=key)
        v = root.judge.status().verdict
        assert v is not None
        others = [n.name for n in failed if n is not root]
        also = f" (also failed: {', '.join(others)})" if others else ""
        return Verdict(Outcome.FAILED, ExitCode.FAILED, v.phase, v.failure_kind, f"node {_where(root)}: {v.reason}{also}")

    def _laggard(self) -> NodeView:
        """The node holding the others up: the one whose rank the ranks' stacks name (blocked, gone, or
        working while the others wait), else one stuck part-way through a progress bar, then the one
        in the earliest phase, then the one whose last sign of life is oldest."""
        seen = [n for n in self.nodes if n.blind is None] or self.nodes
        lag = culprit(self.rank_states())
        if lag is not None and lag.state != "waiting":
            named = [n for n in seen if n.name == lag.node]
            if named:
                return named[0]

        def key(n: NodeView) -> tuple[int, int, float]:
            s = n.judge.status()
            ph = s.shown_phase
            last = s.last_alive
            return (0 if s.stuck else 1, PHASES.index(ph) if ph in PHASES else 0, last[1] if last is not None else 0.0)

        return min(seen, key=key)

    def _stalled(self, t: float) -> Verdict:
        lag = self._laggard()
        ls = lag.judge.status()
        rest = "; ".join(
            f"{_where(n)} {'waiting ' if s.shown_phase != 'ready' else ''}in {s.shown_phase}{_progress(s)}"
            for n, s in ((n, n.judge.status()) for n in self.nodes)
            if n is not lag
        )
        reason = f"{_where(lag)} in {ls.shown_phase}{_progress(ls)}, {_liveness(ls, t)}" + (f"; {rest}" if rest else "")
        states = self.rank_states()
        if states:  # the ranks' stacks name the culprit, whatever the phases say
            reason = f"{summary(states, with_nodes=True)}; {reason}"
        return Verdict(Outcome.STALLED, ExitCode.STALLED, ls.last_phase, None, reason)

    def rank_states(self) -> list[RankState]:
        """Every node's ranks as their last stack sample saw them, with what each log says."""
        states = [s for n in self.nodes for s in n.judge.status().ranks]
        return states if informative(states) else []

    def end(self, outcome: str, code: ExitCode, why: str, t: float) -> Verdict:
        if self.verdict is None:
            self.verdict = self.head.judge.unfinished(outcome, code, why, t)
        return self.verdict

    def blind(self, name: str, why: str) -> None:
        """A node lost for good: judged on the others from now on."""
        for n in self.nodes:
            if n.name == name:
                n.blind = why

    def rows(self, t: float) -> list[dict[str, object]]:
        """One row per node for the panel."""
        out: list[dict[str, object]] = []
        for n in self.nodes:
            s = n.judge.status()
            last = s.last_alive
            out.append(
                {
                    "name": n.name + (" (head)" if n.head else "") + (" BLIND" if n.blind else ""),
                    "kind": "nodes",
                    "phase": s.shown_phase,
                    "progress": s.progress,
                    "gpu_mem": s.gpu_mem,
                    "age": round(t - last[1], 1) if last is not None else None,
                    "verdict": s.verdict.outcome if s.verdict is not None else None,
                }
            )
        return out

    def node_results(self) -> list[dict[str, object]]:
        """The result line's ``nodes``: each node's own verdict (pending, or unreachable when blind)."""
        out: list[dict[str, object]] = []
        for n in self.nodes:
            s = n.judge.status()
            nv = s.verdict
            out.append(
                {
                    "node": n.name,
                    "head": n.head,
                    "ranks": ranks(s),
                    "phase": s.shown_phase,
                    "outcome": nv.outcome if nv is not None else ("unreachable" if n.blind else "pending"),
                    "failure_kind": nv.failure_kind if nv is not None else None,
                    "reason": (nv.reason if nv is not None else n.blind or "")[:300],
                }
            )
        return out


def _outcome(s: NodeStatus) -> str | None:
    return s.verdict.outcome if s.verdict is not None else None
