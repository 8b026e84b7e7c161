"""The stall and slower-than-usual rules: when each kind of liveness evidence was last seen, and
whether the current phase has run past its history."""

from __future__ import annotations

from typing import Any

from coldwatch.evidence import GpuSample, SampleStacks, StackSample
from coldwatch.judging.outbox import Outbox
from coldwatch.judging.policy import SLOW_FACTOR, SLOW_FLOOR, Policy
from coldwatch.phases import State
from coldwatch.ranks import RankWatch, informative


class Liveness:
    """Liveness evidence (kind -> last seen) and the rules that read it."""

    def __init__(self, out: Outbox, policy: Policy, ranks: RankWatch) -> None:
        self.out = out
        self.p = policy
        self.ranks = ranks
        """The ranks' stacks: activity stops counting once no rank works."""
        self.evidence: dict[str, float] = {}
        self.slow_warned: set[str] = set()
        self.origin: float | None = None
        """When the first reading of the host arrived: the silence is counted from there. Before it
        coldwatch sees nothing (a slow SSH exec under load, a transport that hangs: the ping and the
        deadline decide that), and nothing seen is not a server seen stalled."""

    def observed(self, t: float) -> None:
        if self.origin is None:
            self.origin = t

    def seen(self, kind: str, t: float) -> None:
        self.evidence[kind] = t
        if self.origin is None:
            self.origin = t

    def gpus(self, old: list[GpuSample], new: list[GpuSample], t: float) -> None:
        """A GPU sample: memory that moved since the last one and any utilisation are alive."""
        before = {g.index: g for g in old}
        for g in new:
            prev = before.get(g.index)
            if prev is not None and g.used_mib is not None and prev.used_mib != g.used_mib:
                self.seen("gpu_mem", t)
            if g.util:
                self.seen("gpu_util", t)

    def newest_first(self) -> tuple[tuple[str, float], ...]:
        return tuple(sorted(self.evidence.items(), key=lambda kv: -kv[1]))

    def slow(self, st: State, t: float) -> None:
        """Warn, once per phase, when the current phase runs slower than usual at ``t``:
        ``SLOW_FACTOR`` x its median and at least ``SLOW_FLOOR`` seconds longer."""
        phase = st.phase
        med = self.p.baseline.get(phase)
        span = st.spans.get(phase)
        if not med or span is None or span.start is None or phase in self.slow_warned:
            return
        took = t - span.start
        if took >= SLOW_FACTOR * med and took - med >= SLOW_FLOOR:
            self.slow_warned.add(phase)
            self.out.emit("warning", t, message=f"{phase} slower than usual: {took:.0f}s vs median {med:.0f}s")
            self.out.internal("_slow", t, phase=phase)

    def budget(self, phase: str) -> float:
        """Seconds without liveness evidence that make a stall in ``phase`` (history grows it)."""
        return max(self.p.stall_after, SLOW_FACTOR * self.p.baseline.get(phase, 0.0))

    def stacks(self, sample: StackSample, t: float, pid: int | None, st: State) -> None:
        """One stack sample of the server's processes (probes/stacks.py): the ranks' warnings, and
        the panel's rank lines when they say something."""
        for key, message in self.ranks.observe(sample, t, pid, self.evidence):
            self.out.warn(key, message, t)
        states = self.ranks.annotated(st)
        if informative(states):
            self.out.internal("_ranks", t, ranks=[r.as_dict() for r in states])

    def stall(self, t: float, st: State, pid: int | None) -> dict[str, Any] | None:
        """The stall event's fields (``message`` first) when the silence reached the budget at ``t``;
        a stack sample asked for first when there was no progress for a while (``pid`` known)."""
        ranks = self.ranks
        if pid is not None and ranks.due(t, self.evidence, self.p.stall_after):
            ranks.pending = True  # no progress for a while: where are the ranks?
            self.out.act(SampleStacks("no progress"))
        if not self.p.stall_after or self.origin is None:
            return None
        budget = self.budget(st.phase)
        last = ranks.last_life(self.evidence, self.origin)
        if t - last < budget:
            return None
        ages = ", ".join(f"{k} {t - v:.0f}s ago" for k, v in self.newest_first())
        msg = f"no liveness evidence for {t - last:.0f}s (budget {budget:.0f}s) in {st.phase}; last: {ages or 'none ever'}"
        msg, extra = ranks.stall_words(msg, st, t, self.evidence, budget)
        return {"message": msg, "evidence": {k: round(t - v, 1) for k, v in self.evidence.items()}, **extra}
