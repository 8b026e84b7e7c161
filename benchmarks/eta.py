"""ETA accuracy: after two recorded starts, how far off is the ETA at 25, 50 and 75 % of a third?

python -m benchmarks.eta [--trials N] [--jitter 0.2]

Each trial runs the embedded simulator three times on a virtual clock (``--virtual``: the log is
written at once, every progress update stamped when it happens, as a live watch receives it) with
every phase's duration scaled by its own random factor in [1 - J, 1 + J]. The first two starts are
replayed and recorded as history; the third is fed line by line to the judge with that history,
and at each checkpoint the per-phase estimate (eta.py) and today's total-based one (usual total
minus elapsed) are compared with the time that really remained.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from coldwatch import eta, history
from coldwatch.judge import Judge, Policy
from coldwatch.normalise import Normaliser, split_records
from coldwatch.replay import replay

CHECKPOINTS = (0.25, 0.5, 0.75)
SPEED = 10.0
"""A ~260 s start: the log's one-second timestamps are then fine enough."""


def sim_log(d: Path, seed: int, jitter: float) -> bytes:
    out = d / f"s{seed}"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "coldwatch.sim",
            "--dir",
            str(out),
            "--port",
            "0",
            "--virtual",
            "--speed",
            f"{SPEED:g}",
            "--jitter",
            f"{jitter:g}",
            "--seed",
            str(seed),
            "--gpus",
            "8",
        ],
        check=True,
        capture_output=True,
    )
    return (out / "server.log").read_bytes()


def record(log: bytes, target: str) -> dict[str, Any]:
    j, v = replay([log])
    return history.make_record(target, j.result(j.now))


def errors(log: bytes, records: list[dict[str, Any]], target: str) -> dict[float, tuple[float, float]]:
    """Checkpoint -> (per-phase error, total-based error), each |estimate - truth| / truth remaining."""
    policy = Policy(confirm="log", stall_after=0.0, history=records, target=target, baseline=history.baseline(target, records=records))
    j = Judge(policy)
    done, v = replay([log])
    total = next((s.start for s in done.c.state.timeline() if s.phase == "ready"), None)
    assert total is not None and v.outcome == "ready"
    base = j.etas.base
    out: dict[float, tuple[float, float]] = {}
    norm = Normaliser()
    fed = [ln for rec in split_records([log]) for ln in norm.lines(rec)]
    i = 0
    for c in CHECKPOINTS:
        at = c * total
        while i < len(fed) and (fed[i].t or 0.0) <= at:
            j.line(fed[i])
            i += 1
        j.tick(at)
        truth = total - at
        per_phase = j.eta()
        total_based = eta.total_based(base, at)
        assert per_phase is not None and total_based is not None
        out[c] = (abs(per_phase - truth) / truth, abs(total_based - truth) / truth)
    return out


def run(trials: int, jitter: float = 0.2) -> dict[str, Any]:
    per: dict[float, list[float]] = {c: [] for c in CHECKPOINTS}
    tot: dict[float, list[float]] = {c: [] for c in CHECKPOINTS}
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        for trial in range(trials):
            logs = [sim_log(d, 3 * trial + k, jitter) for k in range(3)]
            recs = [record(logs[0], "sim"), record(logs[1], "sim")]
            for c, (a, b) in errors(logs[2], recs, "sim").items():
                per[c].append(a)
                tot[c].append(b)
    print(f"ETA error after two recorded starts, {trials} trials, phase durations jittered ±{jitter:.0%} (|estimate - truth| / truth left)")
    print("  at     per-phase median (p90)    total-based median (p90)")
    figures: dict[str, Any] = {"trials": trials, "jitter": jitter}
    for c in CHECKPOINTS:
        pm, pp = statistics.median(per[c]), _p90(per[c])
        tm, tp = statistics.median(tot[c]), _p90(tot[c])
        print(f"  {c:.0%}    {pm:6.1%} ({pp:6.1%})            {tm:6.1%} ({tp:6.1%})")
        figures[f"{int(c * 100)}"] = {"per_phase": pm, "per_phase_p90": pp, "total_based": tm, "total_based_p90": tp}
    return figures


def _p90(xs: list[float]) -> float:
    s = sorted(xs)
    return s[min(int(0.9 * len(s)), len(s) - 1)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.eta")
    ap.add_argument("--trials", type=int, default=30)
    ap.add_argument("--jitter", type=float, default=0.2)
    a = ap.parse_args(argv)
    run(a.trials, a.jitter)
    return 0


if __name__ == "__main__":
    sys.exit(main())
