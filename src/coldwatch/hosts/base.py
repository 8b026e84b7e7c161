"""The host interface every probe talks to."""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class RunResult:
    rc: int | None
    """Exit status; None when the command timed out or the connection dropped."""
    stdout: bytes
    stderr: bytes


class TcpStream(Protocol):
    """A connected byte stream (a socket, or an SSH direct-tcpip channel)."""

    def sendall(self, data: bytes) -> None: ...
    def recv(self, n: int) -> bytes: ...
    def settimeout(self, t: float | None) -> None: ...
    def close(self) -> None: ...


class Follower(Protocol):
    """A long-running command whose output arrives in chunks."""

    def chunks(self) -> Iterator[bytes]: ...
    def close(self) -> None: ...
    @property
    def exit_status(self) -> int | None: ...


class Host(Protocol):
    name: str
    handshakes: int

    def run(self, cmd: str, timeout: float = 10.0, stdin: bytes | None = None) -> RunResult: ...
    def follow(self, cmd: str) -> Follower: ...
    def connect_tcp(self, host: str, port: int, timeout: float) -> TcpStream: ...
    def alive(self) -> bool: ...
    def ping(self, timeout: float) -> bool: ...
    def reconnect(self) -> None: ...
    def close(self) -> None: ...


def q(value: str) -> str:
    """Quote one value for a POSIX shell on the host."""
    return shlex.quote(value)
