"""What the judge shows of itself: the frozen status view (group, fleet, panel, ``status``) and the
``status`` snapshot's fields."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from coldwatch.evidence import GpuSample, HttpState
from coldwatch.judging.lifecycle import Lifecycle
from coldwatch.judging.liveness import Liveness
from coldwatch.phases import State
from coldwatch.ranks import RankState, RankWatch
from coldwatch.verdict import Verdict, result_line


class Judged(Protocol):
    """What the views read of a judge (``coldwatch.judge.Judge``), without importing it."""

    now: float
    verdict: Verdict | None
    life: Lifecycle
    live: Liveness
    ranks: RankWatch
    last_gpu: list[GpuSample]

    @property
    def state(self) -> State: ...

    @property
    def epoch0(self) -> float | None: ...


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


def gpu_mem(gpus: list[GpuSample]) -> tuple[int, int] | None:
    """(used, total) MiB over the GPUs, when any reports its total."""
    used = sum(g.used_mib or 0 for g in gpus)
    total = sum(g.total_mib or 0 for g in gpus)
    return (used, total) if total else None


def progress(st: State) -> tuple[int, int] | None:
    """(done, total) of the current phase's bar, when it has one."""
    span = st.spans.get(st.phase)
    return (span.done or 0, span.total) if span is not None and span.total else None


def node_status(j: Judged) -> NodeStatus:
    """A frozen view of where the judge's start stands."""
    st = j.state
    death = j.life.death
    return NodeStatus(
        now=j.now,
        phase=st.phase,
        last_phase=st.last_phase(),
        failed_at=j.life.failed_at,
        died_at=death[0] if death is not None else None,
        evidence=j.live.newest_first(),
        progress=progress(st),
        gpu_mem=gpu_mem(j.last_gpu),
        rank_tags=tuple(r for r in st.rank_phase if r),
        verdict=j.verdict,
        ranks=tuple(j.ranks.annotated(st)),
    )


def result(j: Judged, v: Verdict, t: float, **extra: Any) -> dict[str, Any]:
    """The result line for the verdict ``v`` of the judge ``j`` at ``t``."""
    st = j.state
    v, more = j.ranks.verdict_words(v, st)
    if st.engine_timings:  # the engine's own per-phase figures, beside coldwatch's
        extra.setdefault("engine_timings", st.engine_timings)
    return result_line(v, t, j.epoch0, st.timeline(), **more, **extra)


def snapshot(
    st: State, verdict: Verdict | None, life: Lifecycle, gpus: list[GpuSample], http: HttpState | None, model: str | None
) -> dict[str, Any]:
    """Where the start stands now, for ``status``: the verdict's outcome once there is one."""
    f = st.failure
    svc = life.svc
    death = life.death
    pending = "ready" if st.outcome == "ready" else "pending"
    return {
        "phase": st.last_phase() or st.phase,
        "outcome": str(verdict.outcome) if verdict is not None else pending,
        "failure_kind": f.kind if f else (death[1] if death else None),
        "cause": f.cause if f else (death[2] if death else None),
        "last_line": st.last_line,
        "gpus": [g.as_dict() for g in gpus],
        "http": {"state": http.state, "status": http.status, "detail": http.detail} if http else None,
        "supervisor": (
            {"running": svc.running, "dead": svc.dead, "restarts": svc.restarts, "main_pid": svc.main_pid}
            if svc is not None and svc.known
            else None
        ),
        "model": model,
        "errors_after_ready": {"count": st.late_errors, "last": st.late_error} if st.late_errors else None,
    }
