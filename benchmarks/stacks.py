"""python -m benchmarks.stacks [N] [BUDGET]: where is it stuck, measured on this machine with the
stand-in rank server (tests/rankserver.py: TP1 hung in a read, TP0 spinning in all_reduce).

- detection: seconds from the log going quiet to coldwatch's exit 5, N starts, stall budget BUDGET
  (default 5 starts, 20 s; the default --interval of 2 s), median and range;
- cost: one stack sample of the two ranks (the sampler's whole run on the host, and each py-spy dump,
  which pauses its process for about that long), 20 samples, with and without py-spy.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import rankserver  # noqa: E402

from coldwatch.probes.stacks import parse_sample, stack_command  # noqa: E402
from coldwatch.sim import free_port  # noqa: E402


def _env(pyspy: bool) -> dict[str, str]:
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if not (Path(p) / "py-spy").exists()]
    found = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if pyspy and Path(found).exists():
        path.insert(0, str(Path(found).parent))
    return {**os.environ, "PATH": os.pathsep.join(path)}


def detection(n: int, budget: float) -> dict[str, Any]:
    took = []
    for i in range(n):
        d = Path(tempfile.mkdtemp(prefix="cwbench-ranks-")) / "srv"
        p = rankserver.start(d, "hang")
        quiet = (d / "server.log").stat().st_mtime
        cmd = [sys.executable, "-m", "coldwatch", "wait", "--log-cmd", f"tail -n +1 -F {d}/server.log", "--url"]
        cmd += [f"http://127.0.0.1:{free_port()}", "--pid", str(p.pid), "-o", "json", "--stall-after", f"{budget:g}s", "--timeout", "5m"]
        r = subprocess.run(cmd, capture_output=True, env=_env(True))
        took.append(time.time() - quiet)
        rankserver.stop(p)
        res = json.loads(r.stdout.decode().splitlines()[-1])
        print(f"  start {i + 1}: exit {r.returncode} after {took[-1]:.1f}s: {res['reason'][:110]}", flush=True)
    return {"budget_s": budget, "median_s": round(statistics.median(took), 1), "min_s": round(min(took), 1), "max_s": round(max(took), 1)}


def cost(n: int = 20) -> dict[str, Any]:
    out: dict[str, Any] = {}
    d = Path(tempfile.mkdtemp(prefix="cwbench-ranks-")) / "srv"
    p = rankserver.start(d, "hang")
    try:
        for pyspy in (True, False):
            whole, dumps = [], []
            for _ in range(n):
                cmd, script = stack_command(p.pid, use_pyspy=pyspy)
                a = time.perf_counter()
                r = subprocess.run(cmd, shell=True, input=script, capture_output=True, env=_env(True), check=True)
                whole.append((time.perf_counter() - a) * 1000)
                s = parse_sample(r.stdout.decode())
                dumps.extend(s.pyspy_ms)
            key = "pyspy" if pyspy else "proc_only"
            out[key] = {"sample_ms_median": round(statistics.median(whole), 1), "window_ms": 500}
            if dumps:
                out[key]["dump_ms_per_rank_median"] = round(statistics.median(dumps), 1)
                out[key]["dump_ms_per_rank_max"] = round(max(dumps), 1)
    finally:
        rankserver.stop(p)
    return out


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    budget = float(sys.argv[2]) if len(sys.argv) > 2 else 20.0
    print("cost of one stack sample (two ranks):", json.dumps(cost()), flush=True)
    print(f"detection, {n} starts, stall budget {budget:g}s:", flush=True)
    print(json.dumps(detection(n, budget)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
