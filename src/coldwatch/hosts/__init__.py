"""One small host interface: run a command, follow a command's output, open a TCP stream.

``open_host(options)`` is the single factory. The kind of host is chosen by the destination's
scheme: no destination is this machine (``local``), a bare ``[user@]host[:port]`` or
``~/.ssh/config`` alias is ``ssh``, and ``SCHEME://REST`` is the host kind registered under SCHEME,
or else the module ``coldwatch.hosts.SCHEME`` whose ``open_host(spec)`` builds it: a new kind of
host (``k8s://NAMESPACE/POD``) is one new file. A kind is built from a ``HostSpec`` (the
destination and how to reach it), never from the whole configuration.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, cast

from coldwatch.errors import ConfigError
from coldwatch.hosts.base import Follower, Host, RunResult, TcpStream

__all__ = ["HOSTS", "Follower", "Host", "HostOptions", "HostSpec", "RunResult", "TcpStream", "open_host", "register", "scheme_of"]

_SCHEME = re.compile(r"^([a-z][a-z0-9]*)://")


class HostOptions(Protocol):
    """What a host is built from, as the resolved settings carry it."""

    @property
    def host(self) -> str | None: ...
    @property
    def accept_new_host_key(self) -> bool: ...
    @property
    def connect_timeout(self) -> float: ...
    @property
    def known_hosts(self) -> Path | None: ...
    @property
    def ssh_config(self) -> Path | None: ...
    @property
    def identity(self) -> Path | None: ...


@dataclass(frozen=True, slots=True)
class HostSpec:
    """A destination and how to reach it."""

    destination: str | None = None
    """None or "": this machine."""
    accept_new_host_key: bool = False
    connect_timeout: float = 10.0
    known_hosts: Path | None = None
    ssh_config: Path | None = None
    identity: Path | None = None

    @classmethod
    def of(cls, o: HostOptions) -> HostSpec:
        return cls(o.host, o.accept_new_host_key, o.connect_timeout, o.known_hosts, o.ssh_config, o.identity)

    @property
    def scheme(self) -> str:
        return scheme_of(self.destination)


def scheme_of(destination: str | None) -> str:
    """``local`` for no destination, the ``SCHEME`` of ``SCHEME://…``, else ``ssh``."""
    if not destination:
        return "local"
    m = _SCHEME.match(destination)
    return m.group(1) if m else "ssh"


HostFactory = Callable[[HostSpec], Host]
HOSTS: dict[str, HostFactory] = {}
"""Host kinds by destination scheme."""


def register(scheme: str, factory: HostFactory) -> None:
    HOSTS[scheme] = factory


def _local(spec: HostSpec) -> Host:
    from coldwatch.hosts.local import LocalHost

    return LocalHost()


def _ssh(spec: HostSpec) -> Host:
    from coldwatch.hosts.ssh import SshHost

    assert spec.destination
    return SshHost.connect(
        spec.destination,
        accept_new_host_key=spec.accept_new_host_key,
        connect_timeout=spec.connect_timeout,
        known_hosts=spec.known_hosts,
        ssh_config=spec.ssh_config,
        identity=spec.identity,
    )


register("local", _local)
register("ssh", _ssh)


def _factory(scheme: str) -> HostFactory:
    if scheme in HOSTS:
        return HOSTS[scheme]
    try:
        module = importlib.import_module(f"coldwatch.hosts.{scheme}")
    except ImportError:
        module = None
    factory = getattr(module, "open_host", None)
    if not callable(factory):
        known = ", ".join(f"{s}://" for s in sorted(HOSTS) if s not in ("local", "ssh"))
        raise ConfigError(f"HOST: no host kind for {scheme}:// (an SSH destination, or {known or 'no other scheme'})")
    register(scheme, cast(HostFactory, factory))
    return HOSTS[scheme]


def open_host(options: HostSpec | HostOptions) -> Host:
    """The host that ``options`` name (a ``HostSpec``, or the settings it is taken from)."""
    spec = options if isinstance(options, HostSpec) else HostSpec.of(options)
    return _factory(spec.scheme)(spec)
