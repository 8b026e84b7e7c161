"""Typed evidence: what the edges (probes, HTTP, supervisors) hand to the judge. Pure data."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class HttpState:
    """One rung of the readiness ladder."""

    state: str  # refused | timeout | status | ready | error
    status: int | None = None
    detail: str = ""
    model: str | None = None


@dataclass(frozen=True, slots=True)
class SupervisorState:
    """What the server's supervisor (a systemd unit, later a container runtime) says of it.

    ``start_id`` names the current start (systemd's InvocationID, a container's StartedAt): a new
    one, or a higher ``restarts`` counter, is a restart. ``waiting`` means the supervisor is between
    a failure and the restart it has scheduled.
    """

    known: bool
    running: bool = False
    dead: bool = False
    waiting: bool = False
    restarts: int | None = None
    start_id: str = ""
    since: str = ""
    """When the current start began, as the supervisor prints it (scopes the log)."""
    main_pid: int | None = None
    death_kind: str | None = None  # killed | oom | exited, when dead
    death_reason: str = ""
    not_found: bool = False
