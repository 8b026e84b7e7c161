"""python -m benchmarks.multinode [N]: a two-node server (head + --worker) over the loopback sshd, N
starts per case: a worker's fatal line to coldwatch's exit 3, and how long after the stall budget
the laggard is named."""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import hostfix  # noqa: E402

BUDGET = 6.0


def _aliases(host: hostfix.GpuHost) -> None:
    cfg = host.home / ".ssh" / "config"
    text = cfg.read_text()
    if "Host gpu2" not in text:
        block = text[text.index("Host gpu1") :].split("\nHost ", 1)[0]
        cfg.write_text(text + "\n" + block.replace("Host gpu1", "Host gpu2") + "\n")


def _node(sim: hostfix.SimServer, url: bool) -> str:
    pid = int((sim.dir / "sim.pid").read_text())
    extra = f'url = "{sim.url}"\n' if url else ""
    return f'log_cmd = "tail -n +1 -F {sim.dir}/server.log"\ngpu_cmd = "cat {sim.dir}/gpu.csv"\npid = {pid}\n{extra}'


def _case(host: hostfix.GpuHost, head_sc: str, worker_sc: str) -> tuple[dict[str, Any], float, hostfix.SimServer]:
    head = host.start_sim(head_sc, 0.15)
    work = host.start_sim(worker_sc, 0.15, False, "--node-rank", "1")
    cfg = host.fix / "nodes.toml"
    cfg.write_text(f'interval = 0.5\nstall_after = "{BUDGET:g}s"\n[targets.gpu1]\n{_node(head, True)}[targets.gpu2]\n{_node(work, False)}')
    r = subprocess.run(
        [sys.executable, "-m", "coldwatch", "wait", "gpu1", "--worker", "gpu2", "--config", str(cfg), "-o", "json"],
        capture_output=True,
        env={**os.environ, **host.env},
        timeout=120,
    )
    ended = time.time()
    head.stop()
    work.stop()
    return json.loads(r.stdout.decode().strip().splitlines()[-1]), ended, work


def main(n: int = 3) -> dict[str, Any]:
    why = hostfix.why_not()
    if why:
        print(f"multinode: skipped ({why})")
        return {}
    fix = Path(tempfile.mkdtemp(prefix="cwnodes-", dir="/tmp"))
    host = hostfix.start(fix)
    _aliases(host)
    fatal, overshoot = [], []
    try:
        for _ in range(n):
            res, ended, work = _case(host, "barrier", "oom")
            ok = res["exit_code"] == 3 and res["reason"].startswith("node gpu2")
            if ok and (work.dir / "fatal.ts").exists():
                fatal.append(ended - float((work.dir / "fatal.ts").read_text()))
            res, _, _ = _case(host, "barrier", "hang_load")
            m = re.search(r"last liveness \w+ (\d+)s ago", res["reason"])
            if res["exit_code"] == 5 and res["reason"].startswith("gpu2") and m:
                overshoot.append(float(m.group(1)) - BUDGET)
    finally:
        host.close()
        subprocess.run(["rm", "-rf", str(fix)])
    out = {
        "worker_fatal_to_exit_s": {"median": statistics.median(fatal), "max": max(fatal), "n": len(fatal)} if fatal else None,
        "laggard_named_after_budget_s": {"median": statistics.median(overshoot), "max": max(overshoot), "n": len(overshoot)}
        if overshoot
        else None,
    }
    f, o = out["worker_fatal_to_exit_s"], out["laggard_named_after_budget_s"]
    if f:
        print(f"multi-node: a worker's fatal line -> exit 3 (node named): median {f['median']:.2f}s, max {f['max']:.2f}s, n={f['n']}")
    if o:
        print(
            f"multi-node: laggard named {o['median']:.0f}s (median; max {o['max']:.0f}s, whole seconds) after the {BUDGET:g}s stall budget, "
            f"sampling interval 0.5s, n={o['n']}"
        )
    return out


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]) if len(sys.argv) > 1 else 3), indent=1))
