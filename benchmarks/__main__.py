"""python -m benchmarks [--smoke]: every benchmark, ratios against baselines run alongside.
python -m benchmarks --engines [N]: detection against real SGLang and vLLM servers (N starts each).
python -m benchmarks --containers [N]: a Docker container against the systemd path (N starts each)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
from pathlib import Path

from benchmarks import compare, containers, engines, eta, replay


def main() -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks")
    ap.add_argument("--smoke", action="store_true", help="each benchmark once, quickly (CI)")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument("--engines", type=int, nargs="?", const=3, metavar="N", help="only the real-engine benchmark, N starts each (3)")
    ap.add_argument("--only", choices=["sglang", "vllm"], help="with --engines: one engine")
    ap.add_argument("--containers", type=int, nargs="?", const=5, metavar="N", help="only the container benchmark, N starts each (5)")
    a = ap.parse_args()
    os.environ.setdefault("COLDWATCH_HOME", tempfile.mkdtemp(prefix="cwbench-home-"))
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.platform()}")
    if a.engines:
        figures = {"engines": engines.main(a.engines, a.only)}
        if a.json:
            a.json.write_text(json.dumps(figures, indent=1, default=str))
        return 0
    if a.containers:
        figures = {"containers": containers.main(False, a.containers)}
        if a.json:
            a.json.write_text(json.dumps(figures, indent=1, default=str))
        return 0
    figures = {
        "containers": containers.main(a.smoke),
        "replay": replay.run(20_000 if a.smoke else 1_000_000, 1 if a.smoke else 3),
        "startup": replay.startup(3 if a.smoke else 10),
        "eta": eta.run(3 if a.smoke else 30),
        "compare": compare.main(a.smoke),
    }
    if a.json:
        a.json.write_text(json.dumps(figures, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
