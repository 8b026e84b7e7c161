"""What every supervisor is (``Supervisor``), what the watch names of it (``SupervisorSpec``) and how
its module registers it (``SupervisorKind``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from coldwatch.evidence import SupervisorState


@dataclass(frozen=True, slots=True)
class SupervisorSpec:
    """What the watch names of the server's supervisor (--unit, --log-cmd, --pid, --container, --runtime)."""

    unit: str
    log_cmd: str | None = None
    pid: int | None = None
    container: str | None = None
    runtime: str = "auto"


class Supervisor(Protocol):
    kind: str
    name: str
    pid_pattern: str
    """A regular expression (multi-line) whose first group is the main PID in ``state_command``'s
    output: the host-side sampler finds the process tree's root with it, every interval."""
    journal: bool
    """The log is journald's JSON (each entry carries its cursor: a reconnect resumes after it);
    else a plain stream, re-run after a reconnect, the records already seen skipped."""

    def state_command(self) -> str | None:
        """The command whose output ``parse`` reads; None when there is nothing to ask."""

    def parse(self, rc: int | None, text: str) -> SupervisorState:
        """One run of ``state_command`` -> the state (``known=False`` when it says nothing)."""

    def first_state(self, rc: int | None, text: str) -> SupervisorState:
        """The state when a watch begins; raises ConfigError when the watch cannot (no such container)."""

    def log_command(self, svc: SupervisorState | None, follow: bool, cursor: str | None = None) -> str:
        """The command that prints the current start's log (``follow``: and goes on; ``cursor``: after
        this journal entry). Raises ConfigError when the supervisor has no log of its own (--log-cmd)."""

    def url(self, port: int | None, engine: str) -> tuple[str, bool] | None:
        """Where the host reaches the server when no --url names it, and whether the host sees the
        server's own socket; None: the supervisor does not say (``--port`` on this host, else --url's default)."""


@dataclass(frozen=True, slots=True)
class SupervisorKind:
    """One kind of supervisor, as its module registers it."""

    name: str
    order: int
    """Asked in this order (lowest first); the first whose ``choose`` answers supervises the watch."""
    choose: Callable[[SupervisorSpec], Supervisor | None]
    """The supervisor for the watch, or None when the watch is not its."""
