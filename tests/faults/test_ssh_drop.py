"""Faults against the real sshd: the SSH session dies mid-wait; sshd stays down too long."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hostfix import GpuHost

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from conftest import json_lines

from coldwatch.normalise import Normaliser, split_records

pytestmark = pytest.mark.ssh

ORDER = ["dist_init", "weight_load", "marlin_repack", "draft_init", "kv_alloc", "jit_compile", "graph_capture", "warmup", "ready"]


_STARTED: list[subprocess.Popen[bytes]] = []


@pytest.fixture(autouse=True)
def _no_watch_left() -> Iterator[None]:
    """A test that fails before it reads its watch's result still ends it and closes its pipes."""
    yield
    while _STARTED:
        p = _STARTED.pop()
        if p.poll() is None:
            p.kill()
        p.wait(10)
        for pipe in (p.stdout, p.stderr):
            if pipe is not None:
                pipe.close()


def _start(gpu_host: GpuHost, *args: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, **gpu_host.env}
    p = subprocess.Popen(
        [sys.executable, "-m", "coldwatch", "wait", "gpu1", *args, "--output", "json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    _STARTED.append(p)
    return p


def _sessions(gpu_host: GpuHost, before: set[int], timeout: float = 30.0) -> list[int]:
    """coldwatch's new sshd sessions, once it has connected (on a busy machine its start takes seconds)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        new = [p for p in gpu_host.session_pids() if p not in before]
        if new:
            return new
        time.sleep(0.1)
    return []


def _kill_sessions(gpu_host: GpuHost, before: set[int]) -> list[int]:
    pids = [p for p in gpu_host.session_pids() if p not in before]
    for p in pids:
        os.kill(p, signal.SIGKILL)
    return pids


def _expected_lines(path) -> int:  # type: ignore[no-untyped-def]
    n = Normaliser()
    return sum(len(n.lines(r)) for r in split_records([path.read_bytes()]))


@pytest.mark.parametrize("journal", [False, True], ids=["log-cmd", "journald"])
def test_session_killed_mid_wait_reconnects_without_loss(gpu_host: GpuHost, journal: bool) -> None:
    """Kill coldwatch's sshd session mid-load: it reconnects, loses and repeats no log line, exits 0."""
    if journal and gpu_host.cgroup is None:
        pytest.skip("no cgroup2 hierarchy for a journald unit")
    sim = gpu_host.start_sim("ready", 0.5, journal)
    before = set(gpu_host.session_pids())
    hs = gpu_host.handshakes()
    args = ["--url", sim.url, "--interval", "0.5"]
    args += ["--unit", gpu_host.unit] if journal else ["--log-cmd", f"tail -n +1 -F {sim.dir}/server.log"]
    p = _start(gpu_host, *args)
    assert _sessions(gpu_host, before), "coldwatch never connected"
    time.sleep(2.0)  # mid-load
    assert _kill_sessions(gpu_host, before), "no sshd session to kill"
    out, err = p.communicate(timeout=90)
    assert p.returncode == 0, err.decode()
    evs = json_lines(out)
    warnings = [e["message"] for e in evs if e["event"] == "warning"]
    assert any("SSH connection lost" in w for w in warnings) and any("reconnected" in w for w in warnings)
    assert [e["phase"] for e in evs if e["event"] == "phase"] == ORDER  # nothing replayed twice, nothing missing
    res = evs[-1]
    assert res["reconnects"] == 1 and gpu_host.handshakes() - hs == 2
    if not journal:
        expected = _expected_lines(sim.dir / "server.log")
        assert expected - 2 <= res["log_lines"] <= expected


def test_sshd_down_longer_than_reconnect_for_exits_4(gpu_host: GpuHost) -> None:
    """sshd stopped (listener and session) for longer than --reconnect-for: exit 4 with the last phase."""
    sim = gpu_host.start_sim("ready", 1.0)
    before = set(gpu_host.session_pids())
    p = _start(gpu_host, "--url", sim.url, "--log-cmd", f"tail -n +1 -F {sim.dir}/server.log", "--interval", "0.5", "--reconnect-for", "5s")
    assert _sessions(gpu_host, before), "coldwatch never connected"
    time.sleep(1.0)
    gpu_host.sshd.send_signal(signal.SIGSTOP)
    try:
        _kill_sessions(gpu_host, before)
        env_timeout = 40
        out, err = p.communicate(timeout=env_timeout)
    finally:
        gpu_host.sshd.send_signal(signal.SIGCONT)
    assert p.returncode == 4, err.decode()
    msg = err.decode() + out.decode()
    assert "SSH connection lost" in msg and "last phase" in msg and "Traceback" not in msg
    reason = json.loads(out.decode().strip().splitlines()[-1])["reason"]
    assert reason.count("last phase") == 1 and reason.count("elapsed") == 1, reason  # said once, not twice


def test_hung_session_is_detected_and_replaced(gpu_host: GpuHost) -> None:
    """The SSH session hangs (its sshd process SIGSTOPped, the TCP connection still up): no keepalive answer
    within the ping timeout -> reconnect on a new connection -> ready, exit 0."""
    sim = gpu_host.start_sim("ready", 1.2)
    before = set(gpu_host.session_pids())
    p = _start(gpu_host, "--url", sim.url, "--log-cmd", f"tail -n +1 -F {sim.dir}/server.log", "--interval", "1")
    assert _sessions(gpu_host, before), "coldwatch never connected"
    time.sleep(1.0)  # its log follower and sampler channels are open too
    stopped = [pid for pid in gpu_host.session_pids() if pid not in before]
    for pid in stopped:
        os.kill(pid, signal.SIGSTOP)
    try:
        out, err = p.communicate(timeout=90)
    finally:
        for pid in stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
                os.kill(pid, signal.SIGKILL)
    assert p.returncode == 0, err.decode()
    evs = json_lines(out)
    warnings = [e["message"] for e in evs if e["event"] == "warning"]
    assert any("no answer from the SSH server" in w for w in warnings) and any("reconnected" in w for w in warnings)
    assert evs[-1]["reconnects"] == 1
