"""One small host interface: run a command, follow a command's output, open a TCP stream.

``open_host(settings)`` is the single factory: no HOST means this machine, otherwise SSH.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from coldwatch.hosts.base import Follower, Host, RunResult, TcpStream

if TYPE_CHECKING:
    from coldwatch.settings import Settings

__all__ = ["Follower", "Host", "RunResult", "TcpStream", "open_host"]


def open_host(settings: Settings) -> Host:
    if not settings.host:
        from coldwatch.hosts.local import LocalHost

        return LocalHost()
    from coldwatch.hosts.ssh import SshHost

    return SshHost.connect(
        settings.host,
        accept_new_host_key=settings.accept_new_host_key,
        connect_timeout=settings.connect_timeout,
        known_hosts=settings.known_hosts,
        ssh_config=settings.ssh_config,
        identity=settings.identity,
    )
