"""coldwatch against the tools it replaces, on the simulator over the real loopback sshd.

For each simulated start, every tool watches the SAME start at the same time:
  coldwatch   coldwatch wait gpu1 (one SSH connection, JSON to a file)
  loop        for ...; do sleep 28; ssh gpu1 'curl -s ... /v1/completions' | grep -q choices && break; done
  wait-for-it ssh gpu1 wait-for-it 127.0.0.1:PORT          (port bound = "ready")
  curl-retry  ssh gpu1 curl -sf --retry N --retry-all-errors /health
Latency = the tool's exit minus the moment the server first answers a completion (ready.ts).
Needs root and openssh-server (the test fixture's recipe); otherwise it says so and skips.
"""

from __future__ import annotations

import json
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import hostfix  # noqa: E402


@dataclass
class Run:
    tool: str
    proc: subprocess.Popen[bytes]
    start: float
    end: float | None = None
    rc: int | None = None
    cpu: float = 0.0
    rss_kb: int = 0


def loop_cmd(port: int, sleep: float, cap: float, offset: float = 0.0) -> str:
    """The operators' loop: poll, sleep 28 s, poll again. With ``offset`` (uniform in [0, 28) in the full run)
    the first poll comes ``offset`` s after the restart, so where the ready moment falls in the 28 s period is
    random, as it is for real starts of varying length; without it the latency would be a constant."""
    n = max(1, int(cap // sleep) + 1)
    body = '{\\"model\\":\\"m\\",\\"prompt\\":\\"Hi\\",\\"max_tokens\\":3}'
    return (
        f"sleep {offset:.2f}; for i in $(seq {n}); do "
        f"ssh -F $HOME/.ssh/config -o BatchMode=yes gpu1 "
        f"\"curl -s -m 5 -H 'Content-Type: application/json' -d '{body}' http://127.0.0.1:{port}/v1/completions\" "
        f"| grep -q choices && exit 0; sleep {sleep}; done; exit 1"
    )


def tools(port: int, cap: float, loop_sleep: float, offset: float = 0.0) -> dict[str, list[str]]:
    ssh = ["sh", "-c", 'exec ssh -F "$HOME/.ssh/config" -o BatchMode=yes gpu1 "$0"']
    return {
        "coldwatch": [
            sys.executable,
            "-m",
            "coldwatch",
            "wait",
            "gpu1",
            "--url",
            f"http://127.0.0.1:{port}",
            "--log-cmd",
            "tail -n +1 -F CURRENT/server.log",
            "--timeout",
            str(int(cap)),
            "--output",
            "json",
            "--interval",
            "2",
        ],
        "loop": ["bash", "-c", loop_cmd(port, loop_sleep, cap, offset)],
        "wait-for-it": [*ssh, f"wait-for-it -q -t {int(cap)} 127.0.0.1:{port}"],
        "curl-retry": [
            *ssh,
            f"curl -sf -o /dev/null --retry {int(cap)} --retry-delay 1 --retry-all-errors --retry-max-time {int(cap)} "
            f"http://127.0.0.1:{port}/health",
        ],
    }


def watch(
    host: hostfix.GpuHost,
    scenario: str,
    speed: float,
    cap: float,
    loop_sleep: float,
    only: tuple[str, ...] | None = None,
    offset: float = 0.0,
) -> dict[str, Any]:
    sim = host.start_sim(scenario, speed)
    env = {**os.environ, **host.env}
    runs: list[Run] = []
    before = host.handshakes()
    sessions_before = _sessions(host)
    for name, cmd in tools(sim.port, cap, loop_sleep, offset).items():
        if only and name not in only:
            continue
        cmd = [c.replace("CURRENT", str(sim.dir)) for c in cmd]
        out = open(sim.dir / f"{name}.out", "wb")  # noqa: SIM115 - closed after the run
        runs.append(Run(name, subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env), time.time()))
    pending = list(runs)
    while pending:
        for r in list(pending):
            try:
                pid, status, usage = os.wait4(r.proc.pid, os.WNOHANG)
            except ChildProcessError:
                pid, status, usage = r.proc.pid, 0, None  # type: ignore[assignment]
            if pid:
                r.end = time.time()
                r.rc = os.waitstatus_to_exitcode(status)
                r.proc.returncode = r.rc
                if usage is not None:
                    r.cpu = usage.ru_utime + usage.ru_stime
                    r.rss_kb = usage.ru_maxrss
                pending.remove(r)
        time.sleep(0.01)
    ready = float((sim.dir / "ready.ts").read_text()) if (sim.dir / "ready.ts").exists() else None
    bound = float((sim.dir / "bound.ts").read_text()) if (sim.dir / "bound.ts").exists() else None
    sim.stop()
    fatal = float((sim.dir / "fatal.ts").read_text()) if (sim.dir / "fatal.ts").exists() else None
    res: dict[str, Any] = {"scenario": scenario, "ready": ready, "bound": bound, "fatal": fatal, "tools": {}}
    for r in runs:
        assert r.end is not None
        said_ready = r.rc == 0
        latency = (r.end - ready) if (said_ready and ready is not None) else None
        fail_latency = (r.end - fatal) if (fatal is not None and r.rc == 3) else None
        res["tools"][r.tool] = {
            "fail_latency": fail_latency,
            "rc": r.rc,
            "said_ready": said_ready,
            "latency": latency,
            "elapsed": r.end - r.start,
            "cpu": r.cpu,
            "rss_kb": r.rss_kb,
        }
    res["handshakes_total"] = host.handshakes() - before
    res["sessions_total"] = _sessions(host) - sessions_before
    return res


def _sessions(host: hostfix.GpuHost) -> int:
    return len(re.findall(r"Starting session: command", (host.fix / "sshd.log").read_text(errors="replace")))


STEADY_FROM = 8.0
"""Seconds into a cost run after which the watcher is taken to be in its steady state (connected, its
followers and sampler running, the simulated start silent)."""


def _cpu_samples(pid: int, out: list[tuple[float, float]]) -> None:
    """The process's own CPU seconds (utime + stime, every thread), read from /proc every 0.5 s until it ends."""
    tick = os.sysconf("SC_CLK_TCK")
    while True:
        try:
            fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()  # noqa: SIM115 - one read
        except (OSError, IndexError):
            return
        if fields[0] == "Z":
            return
        out.append((time.time(), (int(fields[11]) + int(fields[12])) / tick))
        time.sleep(0.5)


def _steady(samples: list[tuple[float, float]], start: float) -> float | None:
    """CPU seconds per minute between the first sample after ``start`` and the last one, if 5 s or more apart."""
    after = [s for s in samples if s[0] >= start]
    if len(after) < 2 or after[-1][0] - after[0][0] < 5.0:
        return None
    return (after[-1][1] - after[0][1]) / ((after[-1][0] - after[0][0]) / 60)


def coldwatch_cost(host: hostfix.GpuHost, long: float, journal: bool = False) -> dict[str, float]:
    """coldwatch alone on a start that never finishes, for 3 s and for ``long`` s: the difference is the
    steady-state cost per minute of waiting (start-up excluded); handshakes and exec channels counted at sshd.
    ``journal``: the unit's log through journald (``--unit``) instead of ``--log-cmd 'tail -F'``."""
    env = {**os.environ, **host.env}
    runs = {}
    for timeout in (3.0, long):
        if journal:
            time.sleep(1.05 - time.time() % 1.0)  # a new second: --since scoping (see benchmarks/journald.py)
        sim = host.start_sim("hang", 0.1, journal)
        time.sleep(2.0)  # the simulated start is now silent in capture
        hs, sess = host.handshakes(), _sessions(host)
        t0 = time.time()
        p = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "coldwatch",
                "wait",
                "gpu1",
                "--url",
                sim.url,
                *(["--unit", host.unit] if journal else ["--log-cmd", f"tail -n +1 -F {sim.dir}/server.log"]),
                "--output",
                "json",
                "--timeout",
                f"{timeout:g}",
                "--stall-after",
                "1h",
            ],
            stdout=subprocess.PIPE,
            env=env,
        )
        samples: list[tuple[float, float]] = []
        watcher = threading.Thread(target=_cpu_samples, args=(p.pid, samples), daemon=True)
        watcher.start()
        out = p.stdout.read() if p.stdout is not None else b""
        _, _, usage = os.wait4(p.pid, 0)
        watcher.join(2.0)
        last = json.loads(out.decode().strip().splitlines()[-1]) if out.strip() else {}
        moved = sum((last.get("ssh_bytes") or {}).values())
        runs[timeout] = (
            time.time() - t0,
            usage.ru_utime + usage.ru_stime,
            usage.ru_maxrss,
            host.handshakes() - hs,
            _sessions(host) - sess,
            moved,
            _steady(samples, t0 + STEADY_FROM),
        )
        sim.stop()
    (w1, c1, _, _, s1, b1, _), (w2, c2, rss, hs2, s2, b2, steady) = runs[3.0], runs[long]
    minutes = (w2 - w1) / 60
    return {
        "ssh_kb_per_min": (b2 - b1) / 1024 / minutes,
        "startup_cpu_s": c1,
        # measured inside the long run (its own /proc CPU from STEADY_FROM s to its end) when it lasted long
        # enough; else the two runs' difference, which a start's noise can push below zero
        "cpu_s_per_min": steady if steady is not None else (c2 - c1) / minutes,
        "cpu_method": "in-run" if steady is not None else "difference",
        "rss_mb": rss / 1024,
        "handshakes": hs2,
        "exec_channels": s2,
        "channels_per_min": (s2 - s1) / minutes,
        "wall_s": w2,
    }


def main(smoke: bool) -> dict[str, Any]:
    why = hostfix.why_not()
    if why:
        print(f"compare: skipped ({why})")
        return {}
    fix = Path(tempfile.mkdtemp(prefix="cwbench-", dir="/tmp"))
    host = hostfix.start(fix)
    out: dict[str, Any] = {}
    try:
        starts = 1 if smoke else 10
        speed = 0.25  # ready about 7 s after start
        cap = 40 if smoke else 90
        loop_sleep = 28.0
        lat: dict[str, list[float]] = {}
        rnd = random.Random(1)
        for i in range(starts):
            r = watch(host, "ready", speed, cap, loop_sleep, offset=loop_sleep if smoke else rnd.uniform(0, loop_sleep))
            for tool, v in r["tools"].items():
                if v["latency"] is not None:
                    lat.setdefault(tool, []).append(v["latency"])
            print(
                f"  start {i + 1}/{starts}: "
                + ", ".join(f"{t} {v['latency']:.2f}s" if v["latency"] is not None else f"{t} rc={v['rc']}" for t, v in r["tools"].items())
            )
        out["latency"] = {t: {"median": statistics.median(v), "max": max(v), "n": len(v)} for t, v in lat.items()}
        base = out["latency"].get("coldwatch", {}).get("median")
        print("readiness detection latency (server answers a completion -> tool exits 0):")
        for t, v in out["latency"].items():
            ratio = f"{v['median'] / base:8.1f}x coldwatch" if base and base > 0 else ""
            print(f"  {t:<12} median {v['median']:7.2f}s  max {v['max']:7.2f}s  n={v['n']}  {ratio}")
        fails = []
        for _ in range(1 if smoke else 10):
            r = watch(host, "oom", speed, 30, loop_sleep, only=("coldwatch",))
            if r["tools"]["coldwatch"]["fail_latency"] is not None:
                fails.append(r["tools"]["coldwatch"]["fail_latency"])
        if fails:
            out["failure_latency"] = {"median": statistics.median(fails), "max": max(fails), "n": len(fails)}
            print(
                f"failure latency (fatal log line -> coldwatch exits 3): median {statistics.median(fails):.2f}s, max {max(fails):.2f}s, n={len(fails)}"
            )
        verdicts: dict[str, Any] = {}
        scenarios = ["oom"] if smoke else ["ready", "oom", "silent_death", "error_body", "restart"]
        for sc in scenarios:
            r = watch(host, sc, speed, 20 if smoke else 45, 5.0)
            verdicts[sc] = r
            print(
                f"  {sc:<13}"
                + "  ".join(
                    f"{t}: {'READY' if v['said_ready'] else 'rc=' + str(v['rc'])} @{v['elapsed']:.0f}s" for t, v in r["tools"].items()
                )
            )
        out["verdicts"] = verdicts
        out["cost"] = coldwatch_cost(host, 13.0 if smoke else 63.0)
        c = out["cost"]
        print(
            f"coldwatch cost over {c['wall_s']:.0f}s of waiting: {c['handshakes']} SSH handshake(s), "
            f"{c['channels_per_min']:.0f} exec channels (remote processes) per minute, "
            f"{c['cpu_s_per_min']:.2f} CPU s per minute ({c['cpu_method']}) after a {c['startup_cpu_s']:.2f} CPU s start, peak RSS {c['rss_mb']:.0f} MB, "
            f"{c['ssh_kb_per_min']:.0f} KB over SSH per minute"
        )
    finally:
        host.close()
        subprocess.run(["rm", "-rf", str(fix)])
    return out


if __name__ == "__main__":
    resource.setrlimit(resource.RLIMIT_NOFILE, (4096, 4096))
    json.dump(main("--smoke" in sys.argv), sys.stdout, indent=1, default=str)


def cost(long: float = 63.0) -> dict[str, Any]:
    """The cost of waiting alone, on the tail -F path and on the journald path, one fixture."""
    why = hostfix.why_not()
    if why:
        print(f"cost: skipped ({why})")
        return {}
    fix = Path(tempfile.mkdtemp(prefix="cwbench-cost-", dir="/tmp"))
    host = hostfix.start(fix)
    out: dict[str, Any] = {}
    try:
        for path in ("tail", "journald"):
            if path == "journald" and host.cgroup is None:
                continue
            c = out[path] = coldwatch_cost(host, long, path == "journald")
            print(
                f"cost of waiting ({path} path, {c['wall_s']:.0f}s): {c['handshakes']} SSH handshake(s), "
                f"{c['channels_per_min']:.1f} exec channels per minute, {c['ssh_kb_per_min']:.0f} KB over SSH per minute, "
                f"{c['cpu_s_per_min']:.2f} CPU s per minute ({c['cpu_method']}) after a {c['startup_cpu_s']:.2f} CPU s start, peak RSS {c['rss_mb']:.0f} MB "
                "(budget: <= 2 channels, <= 40 KB, <= 0.2 CPU s per minute)"
            )
    finally:
        host.close()
        subprocess.run(["rm", "-rf", str(fix)])
    return out
