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


HEARTBEAT_S = 2.0
"""coldwatch sends one byte down every follower's channel this often (``hosts/ssh.py``)."""
HEARTBEAT_DEAD_S = 20.0
"""A follower that hears nothing for this long ends on the host, with everything it started: the link
is gone (a black hole never closes the channel, and sshd without ClientAlive never notices), and
coldwatch, which has reconnected or ended by then, no longer reads it."""

WATCHER = f"import os, select\nwhile select.select([0], [], [], {HEARTBEAT_DEAD_S:g})[0] and os.read(0, 512):\n    pass\n"
"""Reads the channel until its end or until the heartbeats stop."""

FOLLOW_SCRIPT = (
    'command -v setsid >/dev/null 2>&1 || exec sh -c "$1"; exec 3<&0; '
    'setsid sh -c "$1" </dev/null & p=$!; '
    '{ python3 -S -c "$2" || { [ $? -eq 127 ] && cat; }; kill -TERM -"$p"; } <&3 >/dev/null 2>&1 & w=$!; '
    'wait "$p"; rc=$?; kill "$w" 2>/dev/null; exit "$rc"'
)


def with_deadline(cmd: str, seconds: float) -> str:
    """``cmd`` killed on the host, with everything it started, ``seconds`` after it starts (GNU or
    busybox ``timeout`` signals its whole process group); as it is where there is no ``timeout``.
    The caller stops waiting at its own deadline; this ends the command there too."""
    secs = f"{max(seconds, 1.0):.0f}"
    return f"command -v timeout >/dev/null 2>&1 && exec timeout -s KILL {secs} sh -c {q(cmd)}; exec sh -c {q(cmd)}"


def until_closed(cmd: str) -> str:
    """``cmd`` wrapped so that it ends when the channel that runs it closes, even if it never writes
    again (``tail -F`` of a log that went quiet would otherwise outlive the watch on the host), and
    when coldwatch's heartbeats stop (a link that went dark keeps the channel open on the host): it
    runs in its own process group, with stdin from /dev/null, killed when the channel reaches its end
    or is silent for ``HEARTBEAT_DEAD_S`` (without python3 on the host: at its end only); its exit
    status is kept. Without ``setsid`` on the host the command runs as it is, the channel its stdin."""
    return f"sh -c {q(FOLLOW_SCRIPT)} coldwatch-follow {q(cmd)} {q(WATCHER)}"
