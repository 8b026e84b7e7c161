"""python -m benchmarks.journald [N]: where a fatal line's time goes on the journald path, hop by hop.

On the tests' standalone journald (tests/hostfix.py), through the loopback sshd, in one run:

1. journald's own delivery: a paced writer (one line every ~1.1 s, from the unit's cgroup through a
   journal stdout stream, flushed per line) against a local ``journalctl -f -o json``: each line's
   write time, journald's ``__REALTIME_TIMESTAMP`` and the moment journalctl printed it.
2. The same writer block-buffered (Python's stdout to journald without PYTHONUNBUFFERED): how late
   the lines arrive (coldwatch's warning about it: tests/test_journal_follow.py).
3. coldwatch on the journald path (``--unit``), N starts of the simulator's OOM in capture: the
   fatal line written (fatal.ts), its ``__REALTIME_TIMESTAMP``, journalctl's output (a local follower
   of the same journal), coldwatch's read (the first JSON event it emits after the write, a progress
   event of the line just before, which arrives in the same read), its verdict, its exit. The verdict's
   failure kind must be ``oom``: an exit 3 for the wrong reason is not counted.
4. The baselines in the same run: the same start with ``--log-cmd 'tail -n +1 -F server.log'``, and
   through ``--log-cmd 'journalctl --unit=UNIT -f -o cat --since @START'`` (journalctl's own wake-up,
   what the default journald path used before the poller).

The simulator runs at speed 0.6 here: its quiet gap before the fatal line is then longer than
journald's change-announcement delay, as a real start's silent capture is (at speed 0.25 the fatal
line came 0.25 s after the previous lines and caught their pending announcement).

Every start of the systemd path begins in a later wall-clock second than the previous start's last
line: the fixture's journald has no systemd to stamp _SYSTEMD_INVOCATION_ID, so coldwatch scopes by
``--since`` (whole seconds) and a start in the same second as the previous one would read its lines.
"""

from __future__ import annotations

import contextlib
import json
import os
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

SPEED = 0.6  # the quiet gap before the fatal line is then 0.6 s, longer than journald's 0.25-0.5 s coalescing
FATAL = b"Scheduler hit an exception"


class JournalTap:
    """A local ``journalctl -f -o json`` of the unit: when each MESSAGE containing a marker came out."""

    def __init__(self, unit: str) -> None:
        self.proc = subprocess.Popen(
            ["journalctl", f"--unit={unit}", "-f", "-a", "-o", "json", "--no-pager", "-n", "0"], stdout=subprocess.PIPE, bufsize=0
        )
        self.seen: list[tuple[float, float, bytes]] = []  # (read at, journald's realtime, message)
        threading.Thread(target=self._read, daemon=True).start()
        time.sleep(0.5)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        buf = b""
        while data := os.read(self.proc.stdout.fileno(), 65536):
            t = time.time()
            buf += data
            *lines, buf = buf.split(b"\n")
            for ln in lines:
                try:
                    d = json.loads(ln)
                except ValueError:
                    continue
                msg = d.get("MESSAGE")
                raw = bytes(msg) if isinstance(msg, list) else str(msg).encode()
                self.seen.append((t, int(d["__REALTIME_TIMESTAMP"]) / 1e6, raw))

    def first(self, marker: bytes) -> tuple[float, float] | None:
        for t, rt, msg in self.seen:
            if marker in msg:
                return t, rt
        return None

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


WRITER = r"""
import sys, time
for i in range(int(sys.argv[1])):
    time.sleep(1.1 + 0.037 * i)
    sys.stdout.write(f"HOP {i} {time.time():.6f} " + "x" * int(sys.argv[2]) + "\n")
    if sys.argv[3] == "flush":
        sys.stdout.flush()
"""


def delivery(host: hostfix.GpuHost, lines: int, buffered: bool) -> dict[str, Any]:
    """Hop 1 (and 2 with ``buffered``): write -> journald's timestamp -> journalctl's output."""
    assert host.cgroup is not None
    (host.fix / "writer.py").write_text(WRITER)
    tap = JournalTap(host.unit)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    prefix = ["sh", "-c", f'echo $$ > {host.cgroup}/cgroup.procs; exec systemd-cat -t hop "$@"', "sh"]
    # buffered: 700-byte lines so that a few fill Python's 8 KB buffer, as a chatty server's do
    subprocess.run(
        [*prefix, sys.executable, str(host.fix / "writer.py"), str(lines), "700" if buffered else "10", "no" if buffered else "flush"],
        env=env,
    )
    time.sleep(1.5)
    tap.close()
    stamped, read = [], []
    for t, rt, msg in tap.seen:
        parts = msg.split()
        if len(parts) >= 3 and parts[0] == b"HOP":
            written = float(parts[2])
            stamped.append(rt - written)
            read.append(t - written)
    return {"lines": len(read), "journald": _stats(stamped), "journalctl": _stats(read)}


def _events(cmd: list[str], env: dict[str, str]) -> tuple[int, float, list[tuple[float, dict[str, Any]]]]:
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    evs = []
    assert p.stdout is not None
    for ln in p.stdout:
        t = time.time()
        with contextlib.suppress(ValueError):
            evs.append((t, json.loads(ln)))
    p.wait(120)
    return p.returncode, time.time(), evs


def one_start(host: hostfix.GpuHost, path: str) -> dict[str, Any] | None:
    """One OOM start watched by coldwatch; hop times relative to the fatal line's write."""
    # a later whole second than the previous start's lines (see the module's docstring)
    time.sleep(1.05 - time.time() % 1.0)
    journal = path != "tail"
    tap = JournalTap(host.unit) if journal else None
    began = int(time.time())
    sim = host.start_sim("oom", SPEED, journal, "--gpus", "2")
    try:
        env = {**os.environ, **host.env, "COLDWATCH_RECORD": "false"}
        how = {
            "journald": ["--unit", host.unit],
            "journalctl": ["--unit", host.unit, "--log-cmd", f"journalctl --unit={host.unit} -f -a -o cat --no-pager --since @{began}"],
            "tail": ["--log-cmd", f"tail -n +1 -F {sim.dir}/server.log"],
        }[path]
        cmd = [sys.executable, "-m", "coldwatch", "wait", "gpu1", *how, "--url", sim.url, "--gpu-cmd", f"cat {sim.dir}/gpu.csv"]
        rc, end, evs = _events([*cmd, "--output", "json", "--timeout", "60"], env)
        time.sleep(0.3)
    finally:
        sim.stop()
        if tap is not None:
            tap.close()
    fatal_ts = sim.dir / "fatal.ts"
    result = next((e for _, e in evs if e.get("event") == "result"), {})
    if rc != 3 or not fatal_ts.exists() or result.get("failure_kind") != "oom":
        print(
            f"  {'journald' if journal else 'tail -F'} start: exit {rc}, kind {result.get('failure_kind')} (expected 3, oom): not counted"
        )
        return None
    w = float(fatal_ts.read_text())
    hops: dict[str, Any] = {"exit": end - w}
    read = next((t for t, e in evs if t >= w and e.get("event") != "result"), None)
    verdict = next((t for t, e in evs if e.get("event") == "result"), None)
    hops["read"] = read - w if read is not None else None
    hops["verdict"] = verdict - w if verdict is not None else None
    if tap is not None:
        got = tap.first(FATAL)
        if got is not None:
            hops["journald"], hops["journalctl"] = got[1] - w, got[0] - w
    return hops


def _stats(xs: list[float]) -> dict[str, float]:
    return {"median": statistics.median(xs), "max": max(xs), "min": min(xs), "n": len(xs)} if xs else {}


def run(starts: int = 5, lines: int = 6) -> dict[str, Any]:
    why = hostfix.why_not()
    if why:
        print(f"journald: skipped ({why})")
        return {}
    fix = Path(tempfile.mkdtemp(prefix="cwbench-jd-", dir="/tmp"))
    host = hostfix.start(fix)
    out: dict[str, Any] = {}
    try:
        if host.cgroup is None:
            print("journald: skipped (no cgroup2 hierarchy or no journald for the unit)")
            return {}
        out["delivery"] = d = delivery(host, lines, False)
        print(
            f"journald delivery, {d['lines']} paced lines flushed per line: written -> __REALTIME_TIMESTAMP median "
            f"{d['journald'].get('median', 0):.3f}s; -> journalctl -f output median {d['journalctl'].get('median', 0):.3f}s "
            f"(min {d['journalctl'].get('min', 0):.3f}, max {d['journalctl'].get('max', 0):.3f})"
        )
        out["buffered"] = b = delivery(host, lines, True)
        print(
            f"  the same writer block-buffered (no PYTHONUNBUFFERED): {b['lines']} lines, written -> journalctl median "
            f"{b['journalctl'].get('median', 0):.2f}s (max {b['journalctl'].get('max', 0):.2f})"
        )
        rows: dict[str, list[dict[str, Any]]] = {"journald": [], "journalctl": [], "tail": []}
        for _ in range(starts):
            for path in rows:
                h = one_start(host, path)
                if h is not None:
                    rows[path].append(h)
        for path, hs in rows.items():
            out[path] = {
                k: _stats([h[k] for h in hs if h.get(k) is not None]) for k in ("journald", "journalctl", "read", "verdict", "exit")
            }
        for path, what in (("journald", "journald path (--unit)"), ("journalctl", "journalctl -f as --log-cmd")):
            j = out[path]
            if j["exit"]:
                hop = "  ".join(f"{k} +{j[k]['median']:.3f}s" for k in ("journald", "journalctl", "read", "verdict", "exit") if j[k])
                print(f"{what}, fatal line written -> (median of {j['exit']['n']}): {hop}")
        t = out["tail"]["exit"]
        if t:
            for path, what in (("journald", "journald path"), ("journalctl", "journalctl -f")):
                j = out[path]["exit"]
                if j:
                    out[f"{path}_ratio"] = j["median"] / t["median"]
                    print(
                        f"fatal line -> exit 3: {what} median {j['median']:.2f}s (max {j['max']:.2f}) against "
                        f"tail -F median {t['median']:.2f}s (max {t['max']:.2f}), same run: {out[f'{path}_ratio']:.2f}x"
                    )
    finally:
        host.close()
        subprocess.run(["rm", "-rf", str(fix)])
    return out


if __name__ == "__main__":
    run(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
