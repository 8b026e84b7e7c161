"""The journal follower on the host (python3 over libsystemd, ``journalctl -f`` without them) against
the fixture's real journald: what ``journalctl -f`` would print, in order, nothing lost or repeated
across a resume from the cursor; and the warning for a server whose stdout reaches journald in lumps."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hostfix import GpuHost

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from coldwatch.evidence import SupervisorState
from coldwatch.hosts.local import LocalHost
from coldwatch.probes.log import LogSource

WRITER = r"""
import sys, time
flush = sys.argv[1] == "flush"
size = int(sys.argv[2])
for line in sys.argv[3:]:
    if line.startswith("sleep="):
        time.sleep(float(line[6:]))
        continue
    sys.stdout.write(line + (" " + "x" * size if size else "") + "\n")
    if flush:
        sys.stdout.flush()
sys.stdout.flush()
time.sleep(30)  # stays alive: journald names the unit of a live process
"""


def _writer(host, tmp: Path, flush: bool, size: int, *lines: str) -> subprocess.Popen[bytes]:  # type: ignore[no-untyped-def]
    (tmp / "writer.py").write_text(WRITER)
    prefix = ["sh", "-c", f'echo $$ > {host.cgroup}/cgroup.procs; exec systemd-cat -t cwfollow "$@"', "sh"]
    env = {"PATH": "/usr/bin:/bin"}  # no PYTHONUNBUFFERED: a pipe to journald is block-buffered
    return subprocess.Popen([*prefix, sys.executable, str(tmp / "writer.py"), "flush" if flush else "no", str(size), *lines], env=env)


def _collect(src: LogSource, until: str, timeout: float = 20.0) -> list[str]:
    """Follow with ``src``'s command on this machine until a record starts with ``until``."""
    follower = LocalHost().follow(src.command())
    got: list[str] = []
    timer = threading.Timer(timeout, follower.close)
    timer.start()
    try:
        chunks: Iterator[bytes] = follower.chunks()
        for rec in src.records(chunks):
            got.append(rec.decode().split()[0] if rec.strip() else "")
            if got[-1] == until:
                break
    finally:
        timer.cancel()
        follower.close()
    return got


@pytest.fixture()
def journal_host(gpu_host):  # type: ignore[no-untyped-def]
    if gpu_host.cgroup is None:
        pytest.skip("no cgroup2 hierarchy for a journald unit")
    return gpu_host


def test_follower_prints_the_start_then_follows_and_resumes_from_the_cursor(journal_host: GpuHost, tmp_path: Path) -> None:
    """Scoped by --since: the lines before the follower started come first, then the live ones; a
    second follower after a drop continues from the cursor with nothing lost or repeated."""
    time.sleep(1.05 - time.time() % 1.0)  # this start's first second holds no earlier test's lines
    since = time.strftime("%a %Y-%m-%d %H:%M:%S UTC", time.gmtime())
    live = [f"live-{i}" for i in range(8)]
    steps = ["early-1", "early-2", "sleep=1.5"] + [x for name in live for x in (name, "sleep=0.3")]
    w = _writer(journal_host, tmp_path, True, 0, *steps)
    try:
        src = LogSource(None, journal_host.unit, SupervisorState(True, True, since=since))
        assert "python3" in src.command()
        first = _collect(src, "live-2")
        assert first == ["early-1", "early-2", "live-0", "live-1", "live-2"]
        assert src.cursor
        src.resume()
        second = _collect(src, "live-7")
        assert second == live[3:]
    finally:
        w.kill()
        w.wait()


def test_without_python3_on_the_host_journalctl_follows(journal_host: GpuHost, tmp_path: Path) -> None:
    """A host without python3: the same command runs journalctl -f and the lines still arrive."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("sh", "journalctl"):
        path = subprocess.run(["sh", "-c", f"command -v {tool}"], capture_output=True, text=True).stdout.strip()
        (bin_dir / tool).symlink_to(path)
    time.sleep(1.05 - time.time() % 1.0)
    since = time.strftime("%a %Y-%m-%d %H:%M:%S UTC", time.gmtime())
    w = _writer(journal_host, tmp_path, True, 0, "one", "sleep=1.0", "two")
    try:
        src = LogSource(None, journal_host.unit, SupervisorState(True, True, since=since))
        cmd = f"PATH={bin_dir}; {src.command()}"
        follower = LocalHost().follow(cmd)
        timer = threading.Timer(15, follower.close)
        timer.start()
        got = []
        for rec in src.records(follower.chunks()):
            got.append(rec.decode())
            if rec == b"two":
                break
        timer.cancel()
        follower.close()
        assert got == ["one", "two"]
    finally:
        w.kill()
        w.wait()


def test_block_buffered_server_is_warned_about(journal_host: GpuHost, tmp_path: Path) -> None:
    """A server whose stdout to journald is block-buffered (no PYTHONUNBUFFERED) hands journald its log
    8 KB at a time: coldwatch says so once, naming the setting; a line-buffered one is not warned about."""
    lines = [x for i in range(200) for x in (f"line-{i}", "sleep=0.02")]
    for flush, warned in ((False, True), (True, False)):
        time.sleep(1.05 - time.time() % 1.0)
        since = time.strftime("%a %Y-%m-%d %H:%M:%S UTC", time.gmtime())
        w = _writer(journal_host, tmp_path, flush, 150, *lines)
        try:
            src = LogSource(None, journal_host.unit, SupervisorState(True, True, since=since))
            got = _collect(src, "line-199")
            assert got[-1] == "line-199"
            msg = src.lumps.warning()
            assert (msg is not None) == warned, msg
            if warned:
                assert msg is not None and "PYTHONUNBUFFERED=1" in msg
        finally:
            w.kill()
            w.wait()


def _entry(usec: int, msg: str, i: int) -> bytes:
    return json.dumps({"__CURSOR": f"c{i}", "__REALTIME_TIMESTAMP": str(usec), "MESSAGE": msg}, separators=(",", ":")).encode() + b"\n"


def test_one_big_traceback_is_not_a_lump_warning() -> None:
    """One traceback written in one go (many lines, one journald stamp) is normal; three lumps are not."""
    tb = [_entry(1_000_000, f"  File x.py, line {i}, in f " + "y" * 80, i) for i in range(40)]
    src = LogSource(None, "u.service", None)
    assert len(list(src.records([b"".join(tb)]))) == 40
    assert src.lumps.warning() is None
    lumps = [_entry(t * 2_000_000 + i, f"INFO line {i} " + "z" * 200, i) for t in range(1, 4) for i in range(30)]
    list(src.records([b"".join(lumps)]))
    assert src.lumps.warning() is not None


def test_wait_warns_about_a_lumpy_unit_log(journal_host: GpuHost, tmp_path: Path) -> None:
    """`coldwatch wait --unit` on a server whose stdout is block-buffered: one warning naming the fix."""
    from conftest import coldwatch, json_lines

    from coldwatch.sim import free_port

    time.sleep(1.05 - time.time() % 1.0)
    d = journal_host.sim_dir()
    stamp = time.strftime("%a %Y-%m-%d %H:%M:%S UTC", time.gmtime())
    (d / "unit.state").write_text(
        "ActiveState=active\nSubState=running\nResult=success\nNRestarts=0\nMainPID=0\nExecMainStatus=0\n"
        f"InvocationID=\nLoadState=loaded\nActiveEnterTimestamp={stamp}\n"
    )
    (d / "unit.state").chmod(0o644)
    lines = [x for i in range(200) for x in (f"INFO loading step {i}", "sleep=0.02")]
    w = _writer(journal_host, tmp_path, False, 150, *lines)
    try:
        args = ["--unit", journal_host.unit, "--url", f"http://127.0.0.1:{free_port()}", "--gpu-cmd", "true", "--timeout", "10s"]
        r = coldwatch("wait", "gpu1", *args, "--output", "json", env=journal_host.env, timeout=60)
    finally:
        w.kill()
        w.wait()
    warnings = [e["message"] for e in json_lines(r.stdout) if e["event"] == "warning" and "lumps" in e.get("message", "")]
    assert len(warnings) == 1 and "PYTHONUNBUFFERED=1" in warnings[0], r.stdout.decode()[-2000:]
