"""python -m benchmarks.fleet [N ...]: one coldwatch process watching N targets (default 100) behind the
loopback sshd, against the same process watching one, in the same run. Each target is its own SSH
connection and watch; the targets of one scenario share one simulated server, so the simulators'
own cost (they run on this same 2-core machine) stays constant while coldwatch's grows with N.

Prints: every verdict right or not, CPU seconds per target-minute, peak RSS per target, SSH
handshakes per target, and readiness detection (server ready -> target_result) median per target
against the single-target figure. Then the multi-node figures: a worker's fatal line to exit 3, and
how far past the stall budget the laggard is named.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import hostfix  # noqa: E402

from coldwatch import shard  # noqa: E402
from coldwatch.sim import free_port  # noqa: E402


def _alias(host: hostfix.GpuHost, name: str, dead: bool = False) -> str:
    text = (host.home / ".ssh" / "config").read_text()
    block = text[text.index("Host gpu1") :].split("\nHost ", 1)[0].replace("Host gpu1", f"Host {name}")
    if dead:
        block = "\n".join(f"  Port {free_port()}" if ln.strip().startswith("Port ") else ln for ln in block.splitlines())
    return block


def _run(host: hostfix.GpuHost, mix: list[str], tag: str, speed: float = 0.2, one_process: bool = False) -> dict[str, Any]:
    """Every simulated start begins at one moment, after coldwatch has connected to all of them
    (a fleet restarted together); readiness latency is measured from each server's own ready time."""
    start_at = time.time() + 0.1 * len(mix) + 8.0
    names, tables, aliases, sims = [], ["interval = 1", 'stall_after = "45s"', 'timeout = "180s"'], [], {}
    shared: dict[str, hostfix.SimServer] = {}
    for i, sc in enumerate(mix):
        name = f"{tag}-{i:03d}-{sc}"
        aliases.append(_alias(host, name, dead=sc == "unreachable"))
        if sc == "unreachable":
            tables.append(f'[targets."{name}"]\nlog_cmd = "true"')
        else:
            if sc not in shared:
                shared[sc] = host.start_sim(sc, speed, False, "--delay", f"{max(start_at - time.time(), 0.0):.2f}")
            sim = shared[sc]
            sims[name] = sim
            pid = int((sim.dir / "sim.pid").read_text())
            tables.append(
                f'[targets."{name}"]\nlog_cmd = "tail -n +1 -F {sim.dir}/server.log"\ngpu_cmd = "cat {sim.dir}/gpu.csv"\n'
                f'pid = {pid}\nurl = "{sim.url}"'
            )
        names.append(name)
    cfg_ssh = host.home / ".ssh" / "config"
    cfg_ssh.write_text(cfg_ssh.read_text() + "\n" + "\n".join(aliases) + "\n")
    cfg = host.fix / f"{tag}.toml"
    cfg.write_text("\n".join(tables) + "\n")
    hs = host.handshakes()
    hosts_cpu0 = HOSTS_ACCT.cpu_s()
    t0 = time.time()
    env = {**os.environ, **host.env}
    if one_process:  # the baseline of a fleet spread over processes: every watch in one process, as before
        env[shard.ENV] = "0"
    if os.environ.get("COLDWATCH_BENCH_SRC"):  # another checkout's src/ (the code before a change), same run
        env["PYTHONPATH"] = os.environ["COLDWATCH_BENCH_SRC"]
    p = subprocess.Popen(
        [sys.executable, "-m", "coldwatch", "wait", *names, "--config", str(cfg), "-o", "json", "--parallel", str(max(128, len(mix)))],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    threads = _ThreadCount(p.pid)
    out = p.stdout.read() if p.stdout is not None else b""
    _, _, usage = os.wait4(p.pid, 0)
    threads.stop.set()
    if os.environ.get("COLDWATCH_BENCH_EVENTS"):  # the raw JSON stream, to study one run's timing
        Path(os.environ["COLDWATCH_BENCH_EVENTS"] + f".{tag}").write_bytes(out)
        for sc, sim in shared.items():
            if (sim.dir / "ready.ts").exists():
                Path(os.environ["COLDWATCH_BENCH_EVENTS"] + f".{tag}.{sc}.ready").write_text((sim.dir / "ready.ts").read_text())
    wall = time.time() - t0
    evs = [json.loads(ln) for ln in out.decode().splitlines() if ln.strip()]
    want = {"ready": "ready", "oom": "failed", "hang_load": "stalled", "unreachable": "unreachable"}
    res = evs[-1]
    results = res.get("targets") or [{**res, "target": names[0]}]
    got = {t["target"]: t["outcome"] for t in results}
    wrong = [(n, want[sc], got.get(n)) for n, sc in zip(names, mix, strict=True) if got.get(n) != want[sc]]
    finals = [e for e in evs if e["event"] == "target_result"] or [{**res, "target": names[0]}]
    seen_at = {e["target"]: e["ts"] for e in finals if e.get("outcome") == "ready"}
    lat = []
    for n, sim in sims.items():
        ready_file = sim.dir / "ready.ts"
        if n in seen_at and ready_file.exists():
            ts = datetime.datetime.fromisoformat(seen_at[n].replace("Z", "+00:00")).timestamp()
            lat.append(ts - float(ready_file.read_text()))
    for sim in shared.values():
        sim.stop()
    cpu = usage.ru_utime + usage.ru_stime
    warnings: dict[str, int] = {}
    for e in evs:
        if e["event"] == "warning":
            key = " ".join(str(e.get("message", "")).split()[:4])
            warnings[key] = warnings.get(key, 0) + 1
            warnings[key + " (first at t)"] = min(warnings.get(key + " (first at t)", 1e9), int(e["t"]))
    return {
        "warnings": warnings,
        "targets": len(mix),
        "right": len(mix) - len(wrong),
        "wrong": wrong,
        "wall_s": wall,
        "cpu_s": cpu,
        "cpu_s_per_target_minute": cpu / len(mix) / (wall / 60),
        # the peak of the sum over coldwatch's processes (ru_maxrss is the largest one's, not their sum)
        "rss_mb": max(usage.ru_maxrss, threads.rss_peak_kb) / 1024,
        "rss_mb_per_target": max(usage.ru_maxrss, threads.rss_peak_kb) / 1024 / len(mix),
        "processes": threads.processes,
        "threads_peak": threads.peak,
        "load_peak": threads.load_peak,
        # the cgroup's count when there is one (the /proc estimate counts a reaped child twice)
        "host_side_cpu_s": (HOSTS_ACCT.cpu_s() - hosts_cpu0) if HOSTS_ACCT.path else sum(threads.host_cpu.values()),
        "host_side_cpu_by_command": threads.by_command(),
        "wakeups_per_target_s": (usage.ru_nvcsw + usage.ru_nivcsw) / len(mix) / wall,
        "handshakes_per_target": (host.handshakes() - hs) / max(1, len([m for m in mix if m != "unreachable"])),
        "ready_latency_median_s": statistics.median(lat) if lat else None,
        "ready_latency_max_s": max(lat) if lat else None,
        "connection_lost_warnings": sum(n for k, n in warnings.items() if k.startswith("SSH connection lost") and "(first" not in k),
    }


def _status(text: str) -> tuple[int, int]:
    """(threads, resident KB) from a /proc/PID/status text."""
    threads = rss = 0
    for ln in text.splitlines():
        if ln.startswith("Threads:"):
            threads = int(ln.split()[1])
        elif ln.startswith("VmRSS:"):
            rss = int(ln.split()[1])
    return threads, rss


def _children(pid: int) -> list[int]:
    out: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                out += [int(c) for c in (task / "children").read_text().split()]
    return out


class _ThreadCount:
    """The watched process's peak thread count, read from /proc every 0.5 s while it runs; and the CPU
    seconds of the simulated hosts' side (every process of the test user: sshd sessions, log followers,
    samplers), the most each process was seen to have used."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = 0
        """The most threads seen at once, over coldwatch's process and its fleet processes."""
        self.rss_peak_kb = 0
        """The highest sum of resident memory over coldwatch's process and its fleet processes."""
        self.processes = 1
        self.load_peak = 0.0
        """The machine's highest 1-minute load average seen during the run (other work on the cores)."""
        self.host_cpu: dict[int, float] = {}
        self.host_comm: dict[int, str] = {}
        self.uid = _uid(hostfix.USER)
        self.tick = os.sysconf("SC_CLK_TCK")
        self.stop = threading.Event()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        n = 0
        while not self.stop.wait(0.5):
            try:
                text = Path(f"/proc/{self.pid}/status").read_text()
            except OSError:
                return
            threads, rss = _status(text)
            kids = _children(self.pid)
            for kid in kids:
                with contextlib.suppress(OSError):
                    t, r = _status(Path(f"/proc/{kid}/status").read_text())
                    threads, rss = threads + t, rss + r
            self.peak = max(self.peak, threads)
            self.rss_peak_kb = max(self.rss_peak_kb, rss)
            self.processes = max(self.processes, 1 + len(kids))
            n += 1
            self.load_peak = max(self.load_peak, os.getloadavg()[0])
            if n % 2 == 0 and self.uid is not None:
                self._host_side()

    def _host_side(self) -> None:
        for d in Path("/proc").iterdir():
            if not d.name.isdigit():
                continue
            try:
                if d.stat().st_uid != self.uid:
                    continue
                stat = (d / "stat").read_text()
                fields = stat.rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            self.host_comm[int(d.name)] = stat[stat.find("(") + 1 : stat.rfind(")")]
            cpu = (int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])) / self.tick  # utime stime cutime cstime
            self.host_cpu[int(d.name)] = max(cpu, self.host_cpu.get(int(d.name), 0.0))

    def by_command(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for pid, cpu in self.host_cpu.items():
            name = self.host_comm.get(pid, "?")
            out[name] = round(out.get(name, 0.0) + cpu, 1)
        return dict(sorted(out.items(), key=lambda kv: -kv[1])[:6])


class _CpuGroup:
    """A cgroup (v1 cpuacct, else v2) holding the test sshd and so every session it starts: the CPU the
    simulated hosts' side of coldwatch (sshd sessions, samplers, log followers) used, counted by the
    kernel. ``path`` is None where no cgroup can be made; the /proc estimate stands in."""

    def __init__(self) -> None:
        self.path: Path | None = None

    def hold(self, pid: int) -> None:
        for root, counter in ((Path("/sys/fs/cgroup/cpuacct"), "cpuacct.usage"), (Path("/sys/fs/cgroup/unified"), "cpu.stat")):
            d = root / f"cwbench-hosts-{os.getpid()}"
            try:
                d.mkdir(exist_ok=True)
                (d / "cgroup.procs").write_text(str(pid))
            except OSError:
                continue
            self.path, self.counter = d, counter
            return

    def cpu_s(self) -> float:
        if self.path is None:
            return 0.0
        text = (self.path / self.counter).read_text()
        if self.counter == "cpuacct.usage":
            return int(text) / 1e9
        return int(text.split("usage_usec", 1)[1].split()[0]) / 1e6

    def close(self) -> None:
        if self.path is not None:
            with contextlib.suppress(OSError):
                for pid in (self.path / "cgroup.procs").read_text().split():
                    (self.path.parent / "cgroup.procs").write_text(pid)
                self.path.rmdir()


HOSTS_ACCT = _CpuGroup()


def _uid(user: str) -> int | None:
    import pwd

    try:
        return pwd.getpwnam(user).pw_uid
    except KeyError:
        return None


def main(n: int = 100, sizes: list[int] | None = None) -> dict[str, Any]:
    """One target, then a fleet of each size (multiples of 10), in one run against one sshd."""
    why = hostfix.why_not()
    if why:
        print(f"fleet: skipped ({why})")
        return {}
    sizes = sizes or [n]
    fix = Path(tempfile.mkdtemp(prefix="cwfleet-", dir="/tmp"))
    # a test user of its own: a test's teardown elsewhere on the machine (pkill -u cwtest) would end this
    # run's SSH sessions mid-start, and every target would reconnect at once
    user, hostfix.USER = hostfix.USER, "cwbench"
    host = hostfix.start(fix)
    HOSTS_ACCT.hold(host.sshd.pid)
    out: dict[str, Any] = {}
    try:
        one = _run(host, ["ready"], "one")
        out["one"] = one
        for size in sizes:
            mix = (["ready"] * 7 + ["oom", "hang_load", "unreachable"]) * max(1, size // 10)
            out[str(size)] = _run(host, mix, f"many{size}")
            if size > shard.per_process() > 0 and os.environ.get("COLDWATCH_BENCH_BASELINE", "1") != "0":
                out[f"{size} in one process"] = _run(host, mix, f"single{size}", one_process=True)
    finally:
        host.close()
        HOSTS_ACCT.close()
        hostfix.USER = user
        subprocess.run(["rm", "-rf", str(fix)])
    base = one["ready_latency_median_s"]
    print(
        f"fleet: 1 target: readiness {base:.2f}s, CPU {one['cpu_s']:.2f}s over {one['wall_s']:.0f}s, peak RSS {one['rss_mb']:.0f} MB"
        if base
        else "fleet: 1 target: readiness not measured"
    )
    shown = [k for size in sizes for k in (str(size), f"{size} in one process") if k in out]
    for key in shown:
        many = out[key]
        lat = many["ready_latency_median_s"]
        ratio = lat / base if lat and base else None
        many["ready_latency_ratio"] = ratio
        print(
            f"fleet of {many['targets']}{' in one process' if 'one process' in key else ''} ({many['processes']} processes): {many['right']}/{many['targets']} verdicts right in {many['wall_s']:.0f}s; "
            f"readiness median {lat or float('nan'):.2f}s per target vs {base or float('nan'):.2f}s for one "
            f"({ratio or float('nan'):.1f}x); CPU {many['cpu_s_per_target_minute']:.3f} s per target-minute; "
            f"peak RSS {many['rss_mb']:.0f} MB ({(many['rss_mb'] - one['rss_mb']) / many['targets']:.2f} MB per target "
            f"above one target's); {many['handshakes_per_target']:.2f} handshakes per reachable target; "
            f"{many['threads_peak']} threads at peak ({one['threads_peak']} for one); "
            f"{many['wakeups_per_target_s']:.1f} context switches per target-second ({one['wakeups_per_target_s']:.1f} for one); "
            f"{many['connection_lost_warnings']} 'connection lost' warnings; the simulated hosts' side used "
            f"{many['host_side_cpu_s']:.0f} CPU s (coldwatch {many['cpu_s']:.0f}); machine load average up to {many['load_peak']:.1f}"
        )
    print(table(one, [{**out[k], "label": k} for k in shown]))
    if len(sizes) == 1:
        out["many"] = out[str(sizes[0])]
        out["ready_latency_ratio"] = out["many"]["ready_latency_ratio"]
    return out


def table(one: dict[str, Any], many: list[dict[str, Any]]) -> str:
    """The figures of every size beside the one-target baseline of the same run, as a Markdown table."""

    def f(x: float | None, fmt: str) -> str:
        return "-" if x is None else format(x, fmt)

    base = one["ready_latency_median_s"]
    rows = [
        "| targets | verdicts right | readiness median (max) | ratio to 1 | CPU s per target-minute | peak RSS (per target above 1) "
        "| threads | context switches per target-s | 'connection lost' |",
        "|---|---|---|---|---|---|---|---|---|",
        f"| 1 | {one['right']}/1 | {f(base, '.2f')} s | 1 | {f(one['cpu_s_per_target_minute'], '.3f')} | {one['rss_mb']:.0f} MB "
        f"| {one['threads_peak']} | {one['wakeups_per_target_s']:.1f} | {one['connection_lost_warnings']} |",
    ]
    for m in many:
        lat = m["ready_latency_median_s"]
        rows.append(
            f"| {m.get('label', m['targets'])} | {m['right']}/{m['targets']} | {f(lat, '.2f')} s ({f(m['ready_latency_max_s'], '.2f')}) "
            f"| {f(lat / base if lat and base else None, '.1f')}x | {m['cpu_s_per_target_minute']:.3f} "
            f"| {m['rss_mb']:.0f} MB ({(m['rss_mb'] - one['rss_mb']) / m['targets']:.2f}) | {m['threads_peak']} "
            f"| {m['wakeups_per_target_s']:.1f} | {m['connection_lost_warnings']} |"
        )
    return "\n".join(rows)


if __name__ == "__main__":
    resource.setrlimit(resource.RLIMIT_NOFILE, (8192, 8192))
    sizes = [int(x) for x in sys.argv[1:]] or [100]
    print(json.dumps(main(sizes=sizes), indent=1, default=str))
