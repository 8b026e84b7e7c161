"""Who listens on the probed port, as the host-side sampler reads it: the socket-diagnostics netlink
(same network namespace) and the /proc/PID/net table (another one, such as a container's) agree."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from typing import Any

import pytest

from coldwatch.probes.parse import PROC_FUNCS


def _funcs() -> dict[str, Any]:
    g: dict[str, Any] = {"__name__": "sampler"}
    exec(PROC_FUNCS, g)  # noqa: S102 - the sampler's own code, as the host runs it
    return g


def _inode(s: socket.socket) -> str:
    return str(os.stat(f"/proc/self/fd/{s.fileno()}").st_ino)


def test_netlink_and_the_proc_table_name_the_same_listening_sockets() -> None:
    g = _funcs()
    with socket.socket() as v4, socket.socket(socket.AF_INET6) as v6, socket.socket() as bound:
        v4.bind(("127.0.0.1", 0))
        v4.listen()
        v6.bind(("::1", 0))
        v6.listen()
        bound.bind(("127.0.0.1", 0))  # bound, never listening: nobody serves it
        for s, want in ((v4, {_inode(v4)}), (v6, {_inode(v6)}), (bound, set())):
            port = s.getsockname()[1]
            assert g["listening_nl"](port) == want
            g_proc = _funcs()
            g_proc["same_netns"] = lambda root: False  # as for a server in another network namespace
            assert g_proc["listening"](os.getpid(), port) == want
        me = os.getpid()
        assert g["holder"](me, [me], v4.getsockname()[1]) == {"state": "own"}
        assert g["holder"](me, [me], bound.getsockname()[1]) == {"state": "free"}


def test_another_process_holding_the_port_is_named() -> None:
    if sys.platform != "linux":
        pytest.skip("Linux only")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = f"import socket,time; s=socket.socket(); s.bind(('127.0.0.1',{port})); s.listen(); print('up', flush=True); time.sleep(30)"
    other = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    try:
        assert other.stdout is not None and other.stdout.readline() == b"up\n"
        me = os.getpid()
        got = _funcs()["holder"](me, [me], port)
        assert got["state"] == "other" and got["pid"] == other.pid and got["name"].startswith("python"), got
    finally:
        other.kill()
        other.wait()
        if other.stdout is not None:
            other.stdout.close()
