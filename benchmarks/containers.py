"""A container against the systemd path, in the same run, through the same loopback sshd.

systemd path: the simulator logs to journald from the unit's cgroup, the stand-in systemctl reports
the unit; `coldwatch wait gpu1 --unit UNIT --url URL`.
container:    the simulator is a Docker container's main process (image from `docker import`, see
tests/dockerfix.py); `coldwatch wait gpu1 --container NAME` (URL from the published port).
Ready latency = coldwatch's exit 0 minus the simulator's first served completion (ready.ts); failure
latency = exit 3 minus the fatal line (fatal.ts). Starts alternate between the two paths.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import dockerfix  # noqa: E402
import hostfix  # noqa: E402

SPEED = 0.25


def _watch(host: hostfix.GpuHost, args: list[str], d: Path) -> tuple[int, float | None, float | None]:
    env = {**os.environ, **host.env, "COLDWATCH_RECORD": "false"}
    cmd = [sys.executable, "-m", "coldwatch", "wait", "gpu1", *args, "--output", "json", "--timeout", "60"]
    r = subprocess.run(cmd, capture_output=True, env=env, timeout=120)
    end = time.time()
    ready = float((d / "ready.ts").read_text()) if (d / "ready.ts").exists() else None
    fatal = float((d / "fatal.ts").read_text()) if (d / "fatal.ts").exists() else None
    lines = r.stdout.decode(errors="replace").strip().splitlines()
    try:
        kind = json.loads(lines[-1]).get("failure_kind") if lines else None
    except ValueError:
        kind = None
    if r.returncode == 3 and kind != "oom":
        # an exit 3 for another reason (the previous start's lines judged) is not this benchmark's figure
        print(f"  exit 3 but failure kind {kind!r}, not oom: not counted")
        return -3, None, None
    return r.returncode, (end - ready) if r.returncode == 0 and ready else None, (end - fatal) if r.returncode == 3 and fatal else None


def systemd_start(host: hostfix.GpuHost, scenario: str) -> tuple[int, float | None, float | None]:
    # the fixture's journald has no systemd to stamp _SYSTEMD_INVOCATION_ID: coldwatch scopes the unit's
    # log by --since (whole seconds), so a start in the same second as the previous one reads its lines
    time.sleep(1.05 - time.time() % 1.0)
    sim = host.start_sim(scenario, SPEED, True, "--gpus", "2")
    try:
        return _watch(host, ["--unit", host.unit, "--url", sim.url, "--gpu-cmd", f"cat {sim.dir}/gpu.csv"], sim.dir)
    finally:
        sim.stop()


def container_start(host: hostfix.GpuHost, image: str, scenario: str) -> tuple[int, float | None, float | None]:
    d = host.sim_dir()
    c = dockerfix.run_sim(image, d, scenario, SPEED, "--gpus", "2")
    try:
        return _watch(host, ["--container", c.name, "--gpu-cmd", f"cat {d}/gpu.csv"], d)
    finally:
        dockerfix.remove(c.name)


def _stats(xs: list[float]) -> dict[str, float]:
    return {"median": statistics.median(xs), "max": max(xs), "n": len(xs)} if xs else {}


def main(smoke: bool, starts: int | None = None) -> dict[str, Any]:
    why = hostfix.why_not() or dockerfix.why_not()
    if why:
        print(f"containers: skipped ({why})")
        return {}
    fix = Path(tempfile.mkdtemp(prefix="cwbench-ctr-", dir="/tmp"))
    host = hostfix.start(fix)
    daemon = None
    out: dict[str, Any] = {}
    try:
        if host.cgroup is None:
            print("containers: skipped (no cgroup2 hierarchy for the journald unit of the systemd path)")
            return {}
        try:
            daemon = dockerfix.start_daemon(fix)
            image = dockerfix.build_image()
        except dockerfix.DaemonError as exc:
            print(f"containers: skipped ({exc})")
            return {}
        subprocess.run(["usermod", "-aG", "docker", hostfix.USER], capture_output=True)
        n = starts or (1 if smoke else 5)
        figures: dict[str, dict[str, list[float]]] = {"systemd": {"ready": [], "fail": []}, "container": {"ready": [], "fail": []}}
        for i in range(n):
            for path in ("systemd", "container"):
                for scenario, key, want in (("ready", "ready", 0), ("oom", "fail", 3)):
                    rc, ready, fail = systemd_start(host, scenario) if path == "systemd" else container_start(host, image, scenario)
                    value = ready if key == "ready" else fail
                    if rc != want or value is None:
                        print(f"  {path} {scenario}: exit {rc} (expected {want})")
                        continue
                    figures[path][key].append(value)
            print(
                f"  round {i + 1}/{n}: "
                + ", ".join(
                    f"{p} ready {v['ready'][-1]:.2f}s fail {v['fail'][-1]:.2f}s" for p, v in figures.items() if v["ready"] and v["fail"]
                )
            )
        for path, v in figures.items():
            out[path] = {"ready": _stats(v["ready"]), "fail": _stats(v["fail"])}
        for key, what in (
            ("ready", "ready detection (first served completion -> exit 0)"),
            ("fail", "failure detection (fatal line -> exit 3)"),
        ):
            s, c = out["systemd"][key], out["container"][key]
            if s and c:
                ratio = c["median"] / s["median"] if s["median"] > 0 else float("inf")
                out[f"{key}_ratio"] = ratio
                print(
                    f"{what}: systemd median {s['median']:.2f}s (max {s['max']:.2f}), "
                    f"container median {c['median']:.2f}s (max {c['max']:.2f}): {ratio:.2f}x"
                )
    finally:
        host.close()
        if daemon is not None:
            daemon.close()
        subprocess.run(["rm", "-rf", str(fix)])
    return out
