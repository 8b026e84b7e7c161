"""Shared test helpers. Fixtures that start real servers live in their own modules."""

from __future__ import annotations

import gc
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import coldwatch.sim as _sim

ROOT = Path(__file__).resolve().parents[1]
_TEAM_LOGS = ROOT.parent / "shared" / "fixtures" / "logs"
SHARED_LOGS = Path(
    os.environ.get("COLDWATCH_SHARED_LOGS", _TEAM_LOGS if _TEAM_LOGS.is_dir() else ROOT / "tests" / "fixtures" / "logs" / "shared")
)
"""The team's labelled public logs; a clone without the team's folder runs on its copy in tests/fixtures."""
OWN_LOGS = ROOT / "tests" / "fixtures" / "logs"


def _worker_ports() -> Iterator[int]:
    """Ports below the kernel's ephemeral range, a window of its own per pytest-xdist worker: two workers'
    servers never draw the same port (bind(0) in two processes can hand out one port twice, and a probe then
    reaches another test's server)."""
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0) % 5
    start = 12000 + 4000 * worker
    while True:
        yield from range(start, start + 4000)


_PORTS = _worker_ports()


def _free_port() -> int:
    for port in _PORTS:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise AssertionError("unreachable")


_sim.free_port = _free_port  # before the test modules import it

for _size in ("COLUMNS", "LINES"):  # pytest-xdist's workers set 80x24: a real terminal (tmux) sizes the panel
    os.environ.pop(_size, None)


def coldwatch(
    *args: str, input: bytes | None = None, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[bytes]:
    """Run the real CLI in a subprocess, as a user would."""
    full_env = {**os.environ, **(env or {})}
    full_env.pop("CI", None) if env is None or "CI" not in env else None
    return subprocess.run([sys.executable, "-m", "coldwatch", *args], input=input, capture_output=True, env=full_env, timeout=timeout)


def json_lines(out: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.decode().splitlines() if line.strip()]


@pytest.fixture(autouse=True)
def _collect_garbage() -> Iterator[None]:
    """A child process or pipe left in a reference cycle is collected at this test's end, so the
    ResourceWarning (an error here) names the test that leaked it, not whichever test runs next."""
    yield
    gc.collect()


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test gets its own history directory."""
    monkeypatch.setenv("COLDWATCH_HOME", str(tmp_path / "cw-home"))


@pytest.fixture(scope="session")
def gpu_host(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """A real loopback sshd, test user, journald and stand-ins (see hostfix.py)."""
    import hostfix

    reason = hostfix.why_not()
    if reason:
        pytest.skip(reason)
    fix = Path("/tmp") / f"cwfix-{os.getpid()}"
    fix.mkdir(mode=0o711)
    host = hostfix.start(fix)
    try:
        yield host
    finally:
        host.close()
        import shutil

        shutil.rmtree(fix, ignore_errors=True)
