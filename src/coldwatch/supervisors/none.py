"""No supervisor: a bare process (--pid) and its log (--log-cmd); the process tree says whether it lives."""

from __future__ import annotations

from coldwatch.errors import ConfigError
from coldwatch.evidence import SupervisorState
from coldwatch.supervisors.base import SupervisorKind, SupervisorSpec


class NoSupervisor:
    """A bare process (--pid) or a log command: the process tree says whether it lives."""

    kind = "none"
    pid_pattern = ""
    journal = False

    def __init__(self, name: str = "the server") -> None:
        self.name = name

    def state_command(self) -> None:
        return None

    def parse(self, rc: int | None, text: str) -> SupervisorState:
        return SupervisorState(False)

    def first_state(self, rc: int | None, text: str) -> SupervisorState:
        return SupervisorState(False)

    def log_command(self, svc: SupervisorState | None, follow: bool, cursor: str | None = None) -> str:
        raise ConfigError(f"{self.name}: no supervisor keeps its log; name it with --log-cmd")

    def url(self, port: int | None, engine: str) -> None:
        return None


def choose(spec: SupervisorSpec) -> NoSupervisor | None:
    """A watch that names the process itself and its log (--pid with --log-cmd)."""
    return NoSupervisor(f"pid {spec.pid}") if spec.log_cmd is not None and spec.pid is not None else None


KIND = SupervisorKind("none", 20, choose)
