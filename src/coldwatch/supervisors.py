"""Supervisors: who starts the server and knows its state (systemd today; "none" for a bare
process or a log command). Each turns its own tool's output into a ``SupervisorState`` for the
judge and scopes the log to the current start, so another supervisor plugs in without touching
the judge."""

from __future__ import annotations

from typing import Protocol

from coldwatch.evidence import SupervisorState
from coldwatch.hosts.base import q
from coldwatch.probes.parse import ServiceState, parse_systemctl_show

SERVICE_PROPS = "ActiveState,SubState,Result,NRestarts,MainPID,ExecMainStatus,InvocationID,LoadState,ActiveEnterTimestamp"


class Supervisor(Protocol):
    kind: str
    name: str

    def state_command(self) -> str | None:
        """The command whose output ``parse`` reads; None when there is nothing to ask."""

    def parse(self, rc: int | None, text: str) -> SupervisorState:
        """One run of ``state_command`` -> the state (``known=False`` when it says nothing)."""


class Systemd:
    """A systemd unit: ``systemctl show`` for the state, the unit's invocation for the log."""

    kind = "systemd"

    def __init__(self, unit: str) -> None:
        self.name = unit

    def state_command(self) -> str:
        return f"systemctl show -p {SERVICE_PROPS} --no-pager -- {q(self.name)}"

    def parse(self, rc: int | None, text: str) -> SupervisorState:
        if rc != 0:
            return SupervisorState(False)
        return systemd_state(parse_systemctl_show(text), self.name)


class NoSupervisor:
    """A bare process (--pid) or a log command: the process tree says whether it lives."""

    kind = "none"

    def __init__(self, name: str = "the server") -> None:
        self.name = name

    def state_command(self) -> None:
        return None

    def parse(self, rc: int | None, text: str) -> SupervisorState:
        return SupervisorState(False)


def systemd_state(svc: ServiceState, unit: str) -> SupervisorState:
    """systemctl show's properties -> the judge's supervisor state."""
    if not svc.known:
        return SupervisorState(False)
    if svc.result in ("signal", "core-dump", "watchdog"):
        kind = "killed"
    elif svc.result == "oom-kill":
        kind = "oom"
    else:
        kind = "exited"
    status = f", status={svc.exec_status}" if svc.exec_status is not None else ""
    return SupervisorState(
        known=True,
        running=svc.active in ("active", "activating", "reloading"),
        dead=svc.dead,
        waiting=svc.sub == "auto-restart" or svc.active == "activating",
        restarts=svc.restarts,
        start_id=svc.invocation,
        since=svc.active_since,
        main_pid=svc.main_pid,
        death_kind=kind if svc.dead else None,
        death_reason=f"unit {unit} is {svc.active}/{svc.sub} (Result={svc.result}{status})",
        not_found=svc.load == "not-found",
    )


def supervisor_for(unit: str, log_cmd: str | None, pid: int | None) -> Supervisor:
    """systemd unless the watch names the process itself and its log (--pid with --log-cmd)."""
    if log_cmd is not None and pid is not None:
        return NoSupervisor(f"pid {pid}")
    return Systemd(unit)
