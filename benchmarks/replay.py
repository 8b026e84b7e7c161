"""Replay throughput on a large generated log, next to one pass of Python's regular-expression engine
over the same file (the floor: reading the file and finding the phase markers in it) and `grep -E -c`.

python -m benchmarks.replay [--lines N]
"""

from __future__ import annotations

import argparse
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from coldwatch.replay import read_chunks, replay

MARKERS = (
    "Init torch distributed begin|Load weight begin|Load weight end|KV Cache is allocated|Memory pool end|"
    "Capture .*graph (begin|end)|Capturing batches|Loading safetensors checkpoint shards|Multi-thread loading shards|"
    "fired up and ready|Scheduler hit an exception|CUDA out of memory|Received sigquit"
)


def generate(path: Path, lines: int, seed: int = 7) -> int:
    """A start-up log of about ``lines`` lines: 8 ranks interleaved, bars joined by CR, noise."""
    rnd = random.Random(seed)
    n = 0
    with path.open("w") as f:

        def w(text: str) -> None:
            nonlocal n
            f.write(text)
            n += text.count("\n") + text.count("\r")

        def ranks(msg: str, sec: int) -> None:
            for r in rnd.sample(range(8), 8):
                w(f"[2026-05-30 20:{sec // 60 % 60:02d}:{sec % 60:02d} TP{r}] {msg}\n")

        sec = 0
        ranks("Init torch distributed begin.", sec)
        ranks("Load weight begin. avail mem=94.71 GB", sec)
        while n < lines * 0.45:
            sec += 1
            kind = rnd.random()
            if kind < 0.6:
                w(
                    f"[2026-05-30 20:{sec // 60 % 60:02d}:{sec % 60:02d} TP{rnd.randrange(8)}] Parameter model.layers.{rnd.randrange(61)}.mlp.experts.w13_weight_scale not found in params_dict\n"
                )
            elif kind < 0.9:
                w(
                    "".join(
                        f"\rMulti-thread loading shards: {p * 100 // 64:3d}% Completed | {p}/64 [00:{p:02d}<00:00,  1.00it/s]"
                        for p in range(65)
                    )
                    + "\n"
                )
            else:
                w(
                    f'INFO 05-30 20:{sec // 60 % 60:02d}:{sec % 60:02d} [x.py:1] HTTP Request: GET https://hf.co/api/models/x "HTTP/1.1 200 OK"\n'
                )
        ranks("Load weight end. elapsed=600.0 s, type=KimiK25, quant=compressed-tensors, avail mem=17.20 GB, mem usage=77.51 GB.", sec)
        ranks("KV Cache is allocated. dtype: torch.bfloat16, #tokens: 1, KV size: 6.10 GB", sec)
        ranks("Memory pool end. avail mem=9.80 GB", sec)
        ranks("Capture cuda graph begin. This can take up to several minutes. avail mem=9.6 GB", sec)
        while n < lines:
            sec += 1
            if rnd.random() < 0.5:
                w(
                    "".join(
                        f"\rCapturing batches (bs={b} avail_mem=9.10 GB): {i * 100 // 36:3d}%|####| {i}/36 [00:{i:02d}<00:00,  1.00it/s]"
                        for i, b in enumerate(range(36, 0, -1))
                    )
                    + "\n"
                )
            else:
                w(
                    f"[2026-05-30 20:{sec // 60 % 60:02d}:{sec % 60:02d} DP{rnd.randrange(2)} TP{rnd.randrange(8)}] Prefill batch, #new-seq: 1, #new-token: 7, #cached-token: 0, #running-req: 0\n"
                )
        ranks("Capture cuda graph end. Time elapsed: 7.23 s.", sec)
        w(f"[2026-05-30 20:{sec // 60 % 60:02d}:{sec % 60:02d}] The server is fired up and ready to roll!\n")
    return n


def time_replay(path: Path) -> tuple[float, str]:
    t0 = time.perf_counter()
    with path.open("rb") as fh:
        _, v = replay(read_chunks(fh))
    return time.perf_counter() - t0, v.outcome


def time_regex(path: Path) -> float:
    """One pass of Python's regex engine over the file: read it, find every marker."""
    t0 = time.perf_counter()
    pattern = re.compile(MARKERS.encode())
    sum(1 for _ in pattern.finditer(path.read_bytes()))
    return time.perf_counter() - t0


def time_grep(path: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(["grep", "-E", "-c", MARKERS, str(path)], capture_output=True, check=False)
    return time.perf_counter() - t0


def run(lines: int, repeats: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "big.log"
        n = generate(path, lines)
        size = path.stat().st_size
        ours = []
        outcome = ""
        for _ in range(repeats):
            t, outcome = time_replay(path)
            ours.append(t)
        grep = [time_grep(path) for _ in range(repeats)]
        floor = [time_regex(path) for _ in range(repeats)]
    o, g, f = statistics.median(ours), statistics.median(grep), statistics.median(floor)
    print(f"replay: {n:,} records ({size / 1e6:.0f} MB), verdict {outcome}")
    print(f"  coldwatch replay {o:6.2f} s  {n / o:12,.0f} lines/s")
    print(f"  one regex pass   {f:6.2f} s  {n / f:12,.0f} lines/s  (Python's re over the same file)")
    print(f"  grep -E -c       {g:6.2f} s  {n / g:12,.0f} lines/s")
    print(f"  ratio coldwatch/regex pass: {o / f:.2f}x (aim <= 2x); coldwatch/grep: {o / g:.1f}x")
    return {"lines": n, "coldwatch_s": o, "regex_s": f, "grep_s": g, "ratio_regex": o / f, "ratio": o / g, "lines_per_s": n / o}


def startup(repeats: int) -> dict[str, float]:
    def t(cmd: list[str]) -> float:
        t0 = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=True)
        return time.perf_counter() - t0

    ours = statistics.median(t([sys.executable, "-m", "coldwatch", "--version"]) for _ in range(repeats))
    base = statistics.median(t([sys.executable, "-c", "pass"]) for _ in range(repeats))
    print(f"start-up: coldwatch --version {ours * 1000:.0f} ms, python -c pass {base * 1000:.0f} ms, ratio {ours / base:.1f}x")
    return {"version_s": ours, "python_s": base, "ratio": ours / base}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args(argv)
    os.environ.setdefault("COLDWATCH_HOME", tempfile.mkdtemp())
    run(a.lines, a.repeats)
    startup(max(a.repeats, 5))
    return 0


if __name__ == "__main__":
    sys.exit(main())
