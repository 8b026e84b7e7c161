"""Failures, deaths and restarts: when a failing start is final, and when a restart may still come.

A start fails for good once its grace ran out and no restart is pending (``--max-restarts`` left, the
supervisor not done with it, ``RESTART_WAIT`` not over); a restart is the supervisor's (its restart
count or start id moved) or, with no supervisor to ask, a start marker in the log after the start got
somewhere.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from coldwatch.evidence import SupervisorState
from coldwatch.judging.outbox import Outbox
from coldwatch.judging.policy import Policy

Due = Literal["failed", "restarts", "died"]
"""Which rule ends the start: the logged failure, too many restarts, the process's death."""


class Lifecycle:
    """The start's fate so far: the failure and the death pending their grace, the restarts seen."""

    def __init__(self, out: Outbox, policy: Policy) -> None:
        self.out = out
        self.p = policy
        self.svc: SupervisorState | None = None
        """The supervisor's latest known state (None: no supervisor has answered)."""
        self.base_restarts: int | None = None
        self._counted_from: str | None = None
        """The run whose restart the counter counted before the new run's id was seen."""
        self._same = False
        """The restart being reported is the new run of one already counted."""
        self.restarts = 0
        self.marked = False
        """A start marker was seen in the log."""
        self.last_cause = "no cause in the log"
        self.failed_at: float | None = None
        """When the log's failure began (its fail grace runs from here)."""
        self.death: tuple[float, str, str] | None = None
        """(when, kind, reason) the process or the unit was seen dead."""

    @property
    def supervised(self) -> bool:
        """A supervisor answers for the server."""
        return self.svc is not None and self.svc.known

    def supervisor(self, st: SupervisorState, t: float, initial: bool) -> bool:
        """A supervisor state (``initial``: the first one); whether it says the server was restarted."""
        if not st.known:
            if initial:
                self.out.warn("service", f"no supervisor state for {self.p.unit} (container?); service stream off", t)
            return False
        if st.not_found and initial:
            self.out.warn("unit", f"unit {self.p.unit} is not loaded on the host", t)
        prev = self.svc
        self.svc = st
        if self.base_restarts is None:
            self.base_restarts = st.restarts or 0
        if prev is not None and prev.known:
            more = (st.restarts or 0) > (prev.restarts or 0)
            new_run = bool(st.start_id and prev.start_id and st.start_id != prev.start_id)
            if more and not new_run:
                self._counted_from = prev.start_id  # counted now; its new run's id comes later (a container restarting)
                return True
            if new_run and not more and self._counted_from is not None and self._counted_from == prev.start_id:
                self._counted_from = None
                self._same = True  # the new run of the restart the counter already counted: followed, not counted
                return True
            if more or new_run:
                self._counted_from = None
                return True
        if st.dead and not initial and self.death is None:
            self.death = (t, st.death_kind or "exited", st.death_reason or f"{self.p.unit} stopped")
        return False

    def gone(self, t: float, reason: str) -> None:
        """The server's process is gone: a death, unless a supervisor answers for the server."""
        if self.death is None and not self.supervised:
            self.death = (t, "killed", reason)

    def failed(self, t: float) -> None:
        """The log's failure began at ``t`` (the first one counts)."""
        if self.failed_at is None:
            self.failed_at = t

    def is_log_restart(self, phase: str, failing: bool, phases: Iterable[str] = ()) -> bool:
        """A start marker in the log is a restart: no supervisor to say so, and the start got somewhere.
        Before the log's first marker, a library's JIT build (AMD aiter builds its modules as the server's
        first import, before the arguments are read) is this start's own first step, not a start before it."""
        first, self.marked = not self.marked, True
        if first and not failing and set(phases) <= {"starting", "jit_compile"}:
            return False
        return not self.supervised and not (phase == "starting" and not failing)

    def restart(self, t: float, st: SupervisorState | None, cause: str) -> bool:
        """Count a restart (warned with the last failure's cause); whether a new start is judged now
        (False: past ``--max-restarts``, the next tick fails the watch)."""
        if self._same:  # the new run of a restart counted already: judged afresh, not counted again
            self._same = False
        else:
            if st is not None and st.restarts is not None:
                # the counter may have moved by more than one since the last look; a new start with the
                # counter unmoved (a manual restart) is one more all the same
                self.restarts = max(st.restarts - (self.base_restarts or 0), self.restarts + 1)
            else:
                self.restarts += 1
            self.out.emit("warning", t, message=f"server restarted (restart {self.restarts}); last failure: {cause[:200]}")
            self.last_cause = cause
        if self.too_many:
            return False
        self.failed_at = None
        self.death = None
        return True

    @property
    def too_many(self) -> bool:
        return self.restarts > self.p.max_restarts

    def pending(self, since: float) -> bool:
        """A failure or death ``since`` seconds ago may still be followed by a restart."""
        if self.restarts >= self.p.max_restarts or since >= self.p.restart_wait:
            return False
        svc = self.svc
        if svc is None or not svc.known:
            return True  # no supervisor to ask: a restart shows in the log, if it comes
        return not (svc.dead and not svc.waiting)

    def due(self, t: float, log_failed: bool) -> Due | None:
        """The rule that ends the start at ``t`` (``log_failed``: the classifier's outcome is failed)."""
        if self.failed_at is not None and log_failed:
            since = t - self.failed_at
            if since >= self.p.fail_grace and not self.pending(since):
                return "failed"
        if self.too_many:
            return "restarts"
        if self.death is not None:
            since = t - self.death[0]
            if since >= self.p.death_grace and not self.pending(since):
                return "died"
        return None
