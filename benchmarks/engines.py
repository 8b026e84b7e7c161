"""coldwatch against the tools it replaces, on REAL engines (SGLang 0.5.23, vLLM 0.32.0 on CPU, the
tiny local Llama; environments from scripts/engines.py). For each start, all tools watch the same
server at the same time, on this machine (no SSH: the transport is measured by the simulator
benchmark):
  coldwatch   coldwatch wait --log-cmd 'tail -F LOG' --url ... --interval 1
  loop        until curl -s /v1/completions | grep -q choices; do sleep 28; done (first poll offset in [0, 28))
  curl-retry  curl -sf --retry N --retry-delay 1 --retry-all-errors /health
  wait-for-it wait-for-it 127.0.0.1:PORT (port bound = "ready"), where installed
Ground truth: a poller sending a 1-token completion every 0.1 s; latency = tool exit - its first 200.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import engines  # noqa: E402

from coldwatch.sim import free_port  # noqa: E402


def tools(engine: str, port: int, log: Path, pid: int, offset: float) -> dict[str, list[str]]:
    url = f"http://127.0.0.1:{port}"
    body = '{"model":"tiny","prompt":"hi","max_tokens":3}'
    loop = (
        f"sleep {offset:.2f}; until curl -s -m 10 -H 'Content-Type: application/json' -d '{body}' {url}/v1/completions"
        " | grep -q choices; do sleep 28; done"
    )
    out = {
        "coldwatch": [sys.executable, "-m", "coldwatch", "wait", "--log-cmd", f"tail -n +1 -F {log}", "--url", url, "--pid", str(pid)]
        + ["--engine", engine, "--interval", "1", "--timeout", "6m", "--stall-after", "5m", "-o", "json"],
        "loop": ["bash", "-c", loop],
        "curl-retry": ["curl", "-sf", "-o", "/dev/null", "--retry", "600", "--retry-delay", "1", "--retry-all-errors", f"{url}/health"],
    }
    if shutil.which("wait-for-it"):
        out["wait-for-it"] = ["wait-for-it", "-q", "-t", "600", f"127.0.0.1:{port}"]
    return out


def one_start(engine: str, offset: float) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix=f"cwbench-{engine}-"))
    log = tmp / "server.log"
    log.touch()
    port = free_port()
    spawned = time.time()
    srv = engines.start(engine, port, log)
    stop, first = threading.Event(), []
    poller = threading.Thread(target=engines.first_completion, args=(port, stop, first), daemon=True)
    poller.start()
    procs = {
        name: subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        for name, cmd in tools(engine, port, log, srv.pid, offset).items()
    }
    ended: dict[str, tuple[float, int]] = {}
    deadline = time.time() + 420
    while len(ended) < len(procs) and time.time() < deadline:
        for name, p in procs.items():
            if name not in ended and p.poll() is not None:
                ended[name] = (time.time(), p.returncode)
        time.sleep(0.01)
    for p in procs.values():
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    stop.set()
    os.killpg(srv.pid, signal.SIGTERM)
    try:
        srv.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(srv.pid, signal.SIGKILL)
        srv.wait()
    shutil.rmtree(tmp, ignore_errors=True)
    ready = first[0] if first else None
    return {
        "cold_start": (ready - spawned) if ready else None,
        "tools": {n: {"rc": rc, "latency": (t - ready) if (ready and rc == 0) else None} for n, (t, rc) in ended.items()},
    }


def main(starts: int = 3, only: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    rnd = random.Random(1)
    for engine in [only] if only else engines.ENGINES:
        if not engines.built(engine):
            print(f"engines: {engine} skipped (python scripts/engines.py build {engine})")
            continue
        runs = []
        for i in range(starts):
            r = one_start(engine, rnd.uniform(0, 28))
            runs.append(r)
            cold = f"{r['cold_start']:.1f}s" if r["cold_start"] else "never"
            print(
                f"  {engine} start {i + 1}/{starts}: first completion after {cold}; "
                + ", ".join(f"{t} {v['latency']:+.2f}s" if v["latency"] is not None else f"{t} rc={v['rc']}" for t, v in r["tools"].items())
            )
        lat: dict[str, list[float]] = {}
        for r in runs:
            for t, v in r["tools"].items():
                if v["latency"] is not None:
                    lat.setdefault(t, []).append(v["latency"])
        colds = [r["cold_start"] for r in runs if r["cold_start"]]
        summary = {t: {"median": statistics.median(v), "max": max(v), "n": len(v)} for t, v in lat.items()}
        out[engine] = {"cold_start_median": statistics.median(colds) if colds else None, "latency": summary, "runs": runs}
        base = summary.get("coldwatch", {}).get("median")
        print(
            f"{engine} {engines.ENGINES[engine]['version']}: cold start median {out[engine]['cold_start_median'] or 0:.1f}s; detection latency:"
        )
        for t, v in summary.items():
            ratio = f"{v['median'] / base:6.1f}x coldwatch" if base and base > 0 and v["median"] > 0 else ""
            print(f"  {t:<12} median {v['median']:+7.2f}s  max {v['max']:+7.2f}s  n={v['n']}  {ratio}")
    return out
