"""`coldwatch demo`: the real wait pipeline against the embedded simulator on this machine."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from coldwatch.exitcodes import ExitCode
from coldwatch.render import Sink
from coldwatch.settings import Settings
from coldwatch.sim import spawn


def shims(bindir: Path, simdir: Path) -> None:
    """Stand-ins for nvidia-smi and systemctl that read the simulator's feeds."""
    bindir.mkdir(parents=True, exist_ok=True)
    (bindir / "nvidia-smi").write_text(f"#!/bin/sh\ncat {simdir}/gpu.csv\n")
    (bindir / "systemctl").write_text(f'#!/bin/sh\n[ "$1" = show ] || exit 1\ncat {simdir}/unit.state\n')
    for f in ("nvidia-smi", "systemctl"):
        (bindir / f).chmod(0o755)


def run_demo(scenario: str, speed: float, settings: Settings, fail_checks: bool, sinks: list[Sink] | None = None) -> ExitCode:
    from coldwatch.commands import run_wait

    with tempfile.TemporaryDirectory(prefix="coldwatch-demo-") as tmp:
        simdir = Path(tmp) / "sim"
        simdir.mkdir()
        shims(Path(tmp) / "bin", simdir)
        # the simulator outlives the demo's deadline: a scenario that never gets ready (error_body) ends
        # at the deadline (124), not when its simulator quits
        linger = max(120.0, settings.timeout + 30.0)
        proc, port = spawn(simdir, scenario, speed, *(["--fail-checks"] if fail_checks else []), linger=linger)
        old_path = os.environ.get("PATH", "")
        # the simulated host is this machine: a py-spy installed beside coldwatch (its environment's
        # bin, which need not be on PATH) shows the ranks' frames in the rank scenarios
        os.environ["PATH"] = f"{Path(tmp) / 'bin'}:{Path(sys.executable).parent}:{old_path}"
        try:
            settings.host = None
            settings.log_cmd = f"tail -n +1 -F {simdir / 'server.log'} 2>/dev/null"
            settings.url = f"http://127.0.0.1:{port}"
            settings.target = settings.target or "demo"  # one simulated server: scenarios share its history
            settings.unit = "sglang-demo"
            return run_wait(settings, sinks)
        finally:
            os.environ["PATH"] = old_path
            proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(3)
            if proc.poll() is None:
                proc.kill()
