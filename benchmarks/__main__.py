"""python -m benchmarks [--smoke]: every benchmark, ratios against baselines run alongside.
python -m benchmarks --part journald|containers|fleet|probe|replay|startup|cost|eta|compare: one of them.
python -m benchmarks --fleet-sizes 20,100: the fleet at these sizes only (default 20, 100, 200 and 500
targets beside one; 500 loopback SSH connections are heavy on a small machine).
python -m benchmarks --engines [N]: detection against real SGLang and vLLM servers (N starts each).
python -m benchmarks --containers [N]: a Docker container against the systemd path (N starts each)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks import compare, containers, engines, eta, fleet, journald, probe, replay

PARTS = ("journald", "containers", "fleet", "probe", "replay", "startup", "cost", "eta", "compare")


def main() -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks")
    ap.add_argument("--smoke", action="store_true", help="each benchmark once, quickly (CI)")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument("--part", choices=PARTS, action="append", help="only these benchmarks (repeatable)")
    ap.add_argument("--fleet-sizes", default="20,100,200,500", help="fleet sizes beside the one-target baseline (20,100,200,500)")
    ap.add_argument("--fleet-large", action="store_true", help=argparse.SUPPRESS)  # the default now: 200 and 500 too
    ap.add_argument("--replay-lines", type=int, help="records in the generated replay log (1,000,000)")
    ap.add_argument("--engines", type=int, nargs="?", const=3, metavar="N", help="only the real-engine benchmark, N starts each (3)")
    ap.add_argument("--only", choices=["sglang", "vllm"], help="with --engines: one engine")
    ap.add_argument("--containers", type=int, nargs="?", const=5, metavar="N", help="only the container benchmark, N starts each (5)")
    a = ap.parse_args()
    os.environ.setdefault("COLDWATCH_HOME", tempfile.mkdtemp(prefix="cwbench-home-"))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(max(soft, 8192), hard), hard))
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.platform()}")
    if a.engines:
        figures: dict[str, Any] = {"engines": engines.main(a.engines, a.only)}
    elif a.containers:
        figures = {"containers": containers.main(False, a.containers)}
    else:
        sizes = [10] if a.smoke else [int(x) for x in a.fleet_sizes.split(",") if x.strip()]
        lines = a.replay_lines or (20_000 if a.smoke else 1_000_000)
        runs: dict[str, Callable[[], Any]] = {
            "journald": lambda: journald.run(1 if a.smoke else 5),
            "containers": lambda: containers.main(a.smoke),
            "fleet": lambda: fleet.main(sizes=sizes),
            "probe": lambda: probe.run(50 if a.smoke else 200),
            "replay": lambda: replay.run(lines, 1 if a.smoke else 3),
            "startup": lambda: replay.startup(3 if a.smoke else 10),
            "cost": lambda: compare.cost(13.0 if a.smoke else 63.0),
            "eta": lambda: eta.run(3 if a.smoke else 30),
            "compare": lambda: compare.main(a.smoke),
        }
        figures = {}
        for name in a.part or PARTS:
            print(f"== {name}")
            figures[name] = runs[name]()
    if a.json:
        a.json.write_text(json.dumps(figures, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
