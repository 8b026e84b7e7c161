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
from coldwatch.judge import Judge, Verdict
from coldwatch.phases import PHASES
from coldwatch.ranks import RankState, summary

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


def ranks(j: Judge) -> str:
    """The rank tags a node's log showed, compactly: 'TP8-TP15', 'TP0', '' when untagged."""
    tags = [r for r in j.state.rank_phase if r]
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


def phase_of(j: Judge) -> str:
    st = j.state
    return st.last_phase() or st.phase


def _where(n: NodeView) -> str:
    r = ranks(n.judge)
    return f"{n.name} ({r})" if r else n.name


def _failed_at(j: Judge) -> float:
    if j.failed_at is not None:
        return j.failed_at
    if j.death is not None:
        return j.death[0]
    return j.now


def _progress(j: Judge) -> str:
    span = j.state.spans.get(j.state.phase)
    if span is not None and span.total:
        return f" at {100 * (span.done or 0) // span.total} %"
    return ""


def _liveness(j: Judge, t: float) -> str:
    if not j.evidence:
        return "no liveness evidence yet"
    kind, last = max(j.evidence.items(), key=lambda kv: kv[1])
    return f"last liveness {kind} {t - last:.0f}s ago"


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
        if head.judge.verdict is not None and head.judge.verdict.outcome == "unreachable":
            self.verdict = head.judge.verdict
            return self.verdict
        failed = [n for n in self.nodes if n.judge.verdict is not None and n.judge.verdict.outcome == "failed"]
        if failed:
            first = min(_failed_at(n.judge) for n in failed)
            if t - first >= GROUP_GRACE or all(n.judge.verdict is not None for n in self.nodes if n.blind is None):
                self.verdict = self._failed(failed)
                return self.verdict
            return None
        # the start stops moving when no node shows life: a node idle in a barrier while another works
        # is waiting, not stalled
        seen = [n for n in self.nodes if n.blind is None]
        if seen and all(n.judge.verdict is not None and n.judge.verdict.outcome == "stalled" for n in seen):
            self.verdict = self._stalled(t)
            return self.verdict
        hv = head.judge.verdict
        if hv is not None and hv.outcome == "ready":
            dying = [n for n in self.nodes if not n.head and (n.judge.failed_at is not None or n.judge.death is not None)]
            if not dying:
                self.verdict = hv
                return self.verdict
        if self.timeout and t >= self.timeout:
            slow = self._laggard()
            self.verdict = Verdict(
                "timeout",
                ExitCode.TIMEOUT,
                phase_of(slow.judge),
                None,
                f"not ready after {self.timeout:g}s; slowest node {_where(slow)} in {phase_of(slow.judge)}{_progress(slow.judge)}",
            )
        if self.verdict is not None and self.verdict.outcome == "timeout" and self.rank_states():
            self.verdict = dataclasses.replace(
                self.verdict, reason=f"{self.verdict.reason}; {summary(self.rank_states(), with_nodes=True)}"
            )
        return self.verdict

    def _failed(self, failed: list[NodeView]) -> Verdict:
        def key(n: NodeView) -> tuple[int, float]:
            v = n.judge.verdict
            assert v is not None
            return (ROOT_KINDS.get(v.failure_kind or "other", 3), _failed_at(n.judge))

        root = min(failed, key=key)
        v = root.judge.verdict
        assert v is not None
        others = [n.name for n in failed if n is not root]
        also = f" (also failed: {', '.join(others)})" if others else ""
        return Verdict("failed", ExitCode.FAILED, v.phase, v.failure_kind, f"node {_where(root)}: {v.reason}{also}")

    def _laggard(self) -> NodeView:
        """The node holding the others up: one stuck part-way through a progress bar first, then the
        one in the earliest phase, then the one whose last sign of life is oldest."""
        seen = [n for n in self.nodes if n.blind is None] or self.nodes

        def stuck(n: NodeView) -> bool:
            span = n.judge.state.spans.get(n.judge.state.phase)
            return span is not None and bool(span.total) and (span.done or 0) < (span.total or 0)

        def key(n: NodeView) -> tuple[int, int, float]:
            ph = phase_of(n.judge)
            return (0 if stuck(n) else 1, PHASES.index(ph) if ph in PHASES else 0, max(n.judge.evidence.values(), default=0.0))

        return min(seen, key=key)

    def _stalled(self, t: float) -> Verdict:
        lag = self._laggard()
        lj = lag.judge
        rest = "; ".join(
            f"{_where(n)} {'waiting ' if phase_of(n.judge) != 'ready' else ''}in {phase_of(n.judge)}{_progress(n.judge)}"
            for n in self.nodes
            if n is not lag
        )
        reason = f"{_where(lag)} in {phase_of(lj)}{_progress(lj)}, {_liveness(lj, t)}" + (f"; {rest}" if rest else "")
        states = self.rank_states()
        if states:  # the ranks' stacks name the culprit, whatever the phases say
            reason = f"{summary(states, with_nodes=True)}; {reason}"
        return Verdict("stalled", ExitCode.STALLED, lj.state.last_phase(), None, reason)

    def rank_states(self) -> list[RankState]:
        """Every node's ranks as their last stack sample saw them, with what each log says."""
        return [s for n in self.nodes for s in n.judge.ranks.annotated(n.judge.state)]

    def end(self, outcome: str, code: ExitCode, why: str, t: float) -> Verdict:
        if self.verdict is None:
            self.verdict = self.head.judge.unfinished(outcome, code, why, t)
        return self.verdict

    def rows(self, t: float) -> list[dict[str, object]]:
        """One row per node for the panel."""
        out: list[dict[str, object]] = []
        for n in self.nodes:
            j = n.judge
            span = j.state.spans.get(j.state.phase)
            gpus = j.last_gpu
            used = sum(g.used_mib or 0 for g in gpus)
            total = sum(g.total_mib or 0 for g in gpus)
            last = max(j.evidence.values(), default=None)
            out.append(
                {
                    "name": n.name + (" (head)" if n.head else "") + (" BLIND" if n.blind else ""),
                    "kind": "nodes",
                    "phase": phase_of(j),
                    "progress": (span.done or 0, span.total) if span is not None and span.total else None,
                    "gpu_mem": (used, total) if total else None,
                    "age": round(t - last, 1) if last is not None else None,
                    "verdict": j.verdict.outcome if j.verdict is not None else None,
                }
            )
        return out
