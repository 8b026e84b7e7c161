"""This machine: subprocesses and sockets."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import threading
from collections.abc import Iterator

from coldwatch.hosts.base import RunResult, TcpStream


class LocalFollower:
    def __init__(self, cmd: str) -> None:
        self._p = subprocess.Popen(
            ["/bin/sh", "-c", cmd],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )

    def chunks(self) -> Iterator[bytes]:
        assert self._p.stdout is not None
        fd = self._p.stdout.fileno()
        while True:
            try:
                data = os.read(fd, 65536)
            except OSError:
                return
            if not data:
                return
            yield data

    @property
    def exit_status(self) -> int | None:
        return self._p.poll()

    def close(self) -> None:
        if self._p.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._p.pid, signal.SIGTERM)
            try:
                self._p.wait(2)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self._p.pid, signal.SIGKILL)
                self._p.wait(2)
        if self._p.stdout:
            self._p.stdout.close()


class LocalHost:
    name = "localhost"
    handshakes = 0

    def __init__(self) -> None:
        self._followers: list[LocalFollower] = []
        self._lock = threading.Lock()
        self._closed = False

    def run(self, cmd: str, timeout: float = 10.0, stdin: bytes | None = None) -> RunResult:
        # its own process group, killed whole at the deadline: nothing it started outlives it
        p = subprocess.Popen(
            ["/bin/sh", "-c", cmd],
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            out, err = p.communicate(stdin, timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                os.killpg(p.pid, signal.SIGKILL)
            try:
                out, err = p.communicate(timeout=1.0)
            except subprocess.TimeoutExpired:  # a child that cannot die (D state): its pipes are closed
                out, err = b"", b""
                for pipe in (p.stdin, p.stdout, p.stderr):
                    if pipe is not None:
                        pipe.close()
            return RunResult(None, out or b"", err or b"")
        return RunResult(p.returncode, out, err)

    def follow(self, cmd: str) -> LocalFollower:
        f = LocalFollower(cmd)
        with self._lock:
            closed = self._closed
            if not closed:
                self._followers.append(f)
        if closed:  # a probe thread that outlived close(): its follower ends at once, nothing is left running
            f.close()
        return f

    def connect_tcp(self, host: str, port: int, timeout: float) -> TcpStream:
        s = socket.create_connection((host, port), timeout=timeout)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return s

    def alive(self) -> bool:
        return True

    def ping(self, timeout: float) -> bool:
        return True

    def reconnect(self) -> None:
        return None

    def close(self) -> None:
        with self._lock:
            self._closed = True
            followers, self._followers = self._followers, []
        for f in followers:
            f.close()
