"""Supervisors: who starts the server and knows its state (a systemd unit, a Docker or Podman
container; "none" for a bare process or a log command). Each turns its own tool's output into a
``SupervisorState`` for the judge and owns the command that prints the current start's log, so
another supervisor plugs in without touching the judge, the log follower or the driver.

One module of this package per supervisor; each declares ``KIND``, a ``SupervisorKind`` that says
when the watch is its (``choose``) and in which order it is asked. The kinds are discovered from the
package's modules: a new supervisor is one new file (and its tests).
"""

from __future__ import annotations

import importlib
import pkgutil

from coldwatch.supervisors.base import Supervisor, SupervisorKind, SupervisorSpec
from coldwatch.supervisors.container import NOT_LISTENING, Container, rfc3339
from coldwatch.supervisors.none import NoSupervisor
from coldwatch.supervisors.systemd import Systemd


def kinds() -> list[SupervisorKind]:
    """Every supervisor kind in this package, in the order they are asked."""
    found: list[SupervisorKind] = []
    for mod in pkgutil.iter_modules(__path__):
        kind = getattr(importlib.import_module(f"{__name__}.{mod.name}"), "KIND", None)
        if isinstance(kind, SupervisorKind):
            found.append(kind)
    return sorted(found, key=lambda k: k.order)


def supervisor_for(unit: str, log_cmd: str | None, pid: int | None, container: str | None = None, runtime: str = "auto") -> Supervisor:
    """The supervisor of the watch: the first kind that claims it (a container when one is named; none
    when the watch names the process itself and its log, --pid with --log-cmd; else systemd)."""
    spec = SupervisorSpec(unit, log_cmd, pid, container, runtime)
    for kind in kinds():
        sup = kind.choose(spec)
        if sup is not None:
            return sup
    raise LookupError(f"no supervisor claims the watch ({spec})")  # systemd claims every watch


def server_url(url: str, url_given: bool, sup: Supervisor, port: int | None, engine: str) -> tuple[str, bool]:
    """The URL to probe and whether the host sees the server's own socket (the port-holder rule applies).

    Without --url: where the supervisor says the host reaches the server (a container's published
    port), else this host's ``--port``."""
    if url_given:
        return url, True
    own = sup.url(port, engine)
    if own is not None:
        return own
    if port is not None:
        return f"http://127.0.0.1:{port}", True
    return url, True


__all__ = [
    "NOT_LISTENING",
    "Container",
    "NoSupervisor",
    "Supervisor",
    "SupervisorKind",
    "SupervisorSpec",
    "Systemd",
    "kinds",
    "rfc3339",
    "server_url",
    "supervisor_for",
]
