"""coldwatch demo shows each verdict with its exit code; coldwatch status takes one snapshot."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from conftest import coldwatch, json_lines

from coldwatch.sim import spawn


@pytest.mark.parametrize(
    ("scenario", "extra", "code", "outcome"),
    [
        ("ready", [], 0, "ready"),
        ("oom", [], 3, "failed"),
        ("hang", ["--stall-after", "3s"], 5, "stalled"),
        ("restart", [], 3, "failed"),
        ("restart", ["--max-restarts", "1"], 0, "ready"),
        ("silent_death", [], 3, "failed"),
    ],
)
def test_demo_scenarios_exit_codes(scenario: str, extra: list[str], code: int, outcome: str) -> None:
    """Each scenario of the simulator gives its verdict and documented exit code through the real pipeline."""
    r = coldwatch("demo", "--scenario", scenario, "--speed", "0.2", "-o", "json", *extra)
    res = json_lines(r.stdout)[-1]
    assert (r.returncode, res["outcome"]) == (code, outcome), res
    if scenario == "restart" and code == 0:
        assert res["restarts"] == 1


def test_demo_rejects_unknown_scenario() -> None:
    """A typo in --scenario is a usage error naming the choices."""
    r = coldwatch("demo", "--scenario", "fast")
    assert r.returncode == 2 and "ready" in r.stderr.decode()


def _sim(d: Path, scenario: str) -> tuple[subprocess.Popen[bytes], int]:
    return spawn(d, scenario, 0.2, linger=30)


def test_status_snapshot_ready_and_failed(tmp_path: Path) -> None:
    """status: ready server -> exit 0 with HTTP ready; failed start -> exit 3 with the causal line."""
    d = tmp_path / "ok"
    d.mkdir()
    p, port = _sim(d, "ready")
    try:
        time.sleep(7)
        r = coldwatch(
            "status", "--log-cmd", f"cat {d}/server.log", "--gpu-cmd", f"cat {d}/gpu.csv", "--url", f"http://127.0.0.1:{port}", "-o", "json"
        )
    finally:
        p.kill()
        p.wait()
    snap = json_lines(r.stdout)[-1]
    assert r.returncode == 0 and snap["http"]["state"] == "ready" and snap["phase"] == "ready" and len(snap["gpus"]) == 8
    d2 = tmp_path / "oom"
    d2.mkdir()
    p, port = _sim(d2, "oom")
    try:
        time.sleep(6)
        r = coldwatch("status", "--log-cmd", f"cat {d2}/server.log", "--gpu-cmd", f"cat {d2}/gpu.csv", "--url", f"http://127.0.0.1:{port}")
    finally:
        p.kill()
        p.wait()
    out = r.stdout.decode()
    assert r.returncode == 3 and "CUDA out of memory" in out and "refused" in out


def test_status_pid_of_a_dead_server_is_failed_as_in_wait(tmp_path: Path) -> None:
    """status --pid of a server process that is gone: failed [killed], exit 3 (wait's death rule),
    not "not ready yet"; the same log with the process alive is not decided (exit 124)."""
    log = tmp_path / "server.log"
    log.write_text("[2026-11-29 18:24:50 TP0] Load weight begin. avail mem=75.00 GB\n")
    proc = subprocess.Popen(["sleep", "30"])
    args = ["status", "--pid", str(proc.pid), "--log-cmd", f"cat {log}", "--gpu-cmd", "true", "--url", "http://127.0.0.1:9", "-o", "json"]
    try:
        alive = coldwatch(*args)
    finally:
        proc.kill()
        proc.wait()
    dead = coldwatch(*args)
    snap = json_lines(dead.stdout)[-1]
    assert (dead.returncode, snap["outcome"], snap["failure_kind"]) == (3, "failed", "killed"), snap
    assert (alive.returncode, json_lines(alive.stdout)[-1]["outcome"]) == (124, "pending")
