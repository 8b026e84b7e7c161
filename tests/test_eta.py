"""The per-phase ETA: segments from history, the fallbacks, the floor, the load's own rate, the judge's eta events."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from coldwatch import eta, history
from coldwatch.judge import Judge, Policy
from coldwatch.normalise import Normaliser, split_records
from coldwatch.replay import replay


def rec(target: str, starts: dict[str, float], total: float, **extra: Any) -> dict[str, Any]:
    return {"target": target, "outcome": "ready", "starts": starts, "total": total, "durations": {}, **extra}


A = {"starting": 0.0, "dist_init": 5.0, "weight_load": 10.0, "kv_alloc": 110.0, "graph_capture": 110.0, "warmup": 150.0}


def test_segments_cut_overlapping_spans_into_consecutive_pieces() -> None:
    """Phases entering together get 0 s and the next one the time until the following phase; they add up to the total."""
    segs = eta.segments(rec("t", A, 170.0))
    assert segs == {"starting": 5.0, "dist_init": 5.0, "weight_load": 100.0, "kv_alloc": 0.0, "graph_capture": 40.0, "warmup": 20.0}
    assert sum(segs.values()) == 170.0


def test_old_records_without_starts_still_load_and_give_the_total() -> None:
    """A record from before the per-phase ETA (no starts) counts for the total only."""
    old = {"target": "t", "outcome": "ready", "durations": {"weight_load": 90.0}, "total": 200.0}
    base = eta.select([old, rec("t", A, 170.0)], "t")
    assert base is not None and base.total == 185.0 and base.segments["weight_load"] == 100.0 and base.starts == 2


def test_fallback_to_the_same_model_and_tp_on_other_targets() -> None:
    """No start of this target: same model (path or served id) and TP elsewhere; another TP does not count."""
    recs = [
        rec("other", A, 170.0, model_path="/m/Kimi", tp=8),
        rec("third", {"starting": 0.0, "weight_load": 10.0}, 400.0, model_path="/m/Kimi", tp=4),
        {**rec("new", A, 999.0), "outcome": "failed"},
    ]
    assert eta.select(recs, "new") is None
    base = eta.select(recs, "new", "/m/Kimi", 8)
    assert base is not None and base.source == "model" and base.total == 170.0
    assert eta.select(recs, "new", "/m/Other", 8) is None


def test_estimate_is_the_rest_of_the_phase_plus_the_phases_not_entered() -> None:
    """30 s into a usual 100 s load: 70 s of it, then capture and warm-up; past its median only the floor remains."""
    base = eta.select([rec("t", A, 170.0)], "t")
    assert base is not None
    entered = {"starting": 0.0, "dist_init": 5.0, "weight_load": 10.0}
    assert eta.estimate(base, entered, 40.0).remaining == 70.0 + 40.0 + 20.0
    late = eta.estimate(base, entered, 500.0)
    assert late.remaining == max(eta.FLOOR_S, eta.FLOOR_SHARE * 100.0) + 60.0 and late.basis == "history"


def test_the_loads_own_rate_wins_for_weight_load_but_only_bounds_other_phases() -> None:
    """A load reading at half its usual speed: bytes left at the rate; a capture bar only says 'at least'."""
    base = eta.select([rec("t", A, 170.0)], "t")
    assert base is not None
    entered = {"starting": 0.0, "dist_init": 5.0, "weight_load": 10.0}
    slow = eta.BarRate("weight_load", 10.0, 0, 60.0, 25, 100)  # 25 % in 50 s: 150 s left
    est = eta.estimate(base, entered, 60.0, slow)
    assert est.basis == "progress" and est.remaining == 150.0 + 60.0
    fast_bar = eta.BarRate("graph_capture", 110.0, 0, 115.0, 90, 100)  # nearly done, the phase usually lasts 40 s
    cap = eta.estimate(base, {**entered, "kv_alloc": 110.0, "graph_capture": 110.0}, 115.0, fast_bar)
    assert cap.basis == "history" and cap.remaining == 35.0 + 20.0


def sim_log(d: Path, seed: int) -> bytes:
    subprocess.run(
        [sys.executable, "-m", "coldwatch.sim", "--dir", str(d / str(seed)), "--port", "0", "--virtual", "--speed", "10"]
        + ["--jitter", "0.2", "--seed", str(seed), "--gpus", "2"],
        check=True,
    )
    return (d / str(seed) / "server.log").read_bytes()


def test_judge_emits_eta_events_from_recorded_simulator_starts(tmp_path: Path) -> None:
    """Two recorded simulator starts (jittered): the third gets an eta event at each phase, within 10 % at a quarter."""
    logs = [sim_log(tmp_path, s) for s in (11, 12, 13)]
    recs = []
    for log in logs[:2]:
        j, _ = replay([log])
        recs.append(json.loads(json.dumps(history.make_record("sim", j.result(j.now), tp=8))))
    assert all(r["starts"]["weight_load"] > 0 for r in recs)
    done, _ = replay([logs[2]])
    total = next(s.start for s in done.c.state.timeline() if s.phase == "ready")
    assert total is not None
    j = Judge(Policy(confirm="log", stall_after=0.0, history=recs, target="sim"))
    norm = Normaliser()
    events: list[dict[str, Any]] = []
    for r in split_records([logs[2]]):
        for ln in norm.lines(r):
            j.line(ln)
            events += j.drain()
    etas = [e for e in events if e["event"] == "eta"]
    phases = [e for e in events if e["event"] == "phase" and e["phase"] != "ready"]
    assert {e["phase"] for e in phases} <= {e["phase"] for e in etas}
    assert all(e["history"] == "target" and e["starts"] == 2 for e in etas)
    quarter = [e for e in etas if e["t"] <= total / 4][-1]
    assert abs(quarter["t"] + quarter["remaining_s"] - total) / total <= 0.10, (quarter, total)


def test_without_history_there_is_no_eta_event() -> None:
    """No earlier start: the judge says nothing about an ETA (the panel says '?')."""
    j = Judge(Policy(confirm="log", history=[], target="x", launch=True))
    j.line(Normaliser().lines(b"[2026-01-01 00:00:00] server_args=ServerArgs(model_path='/m/K', tp_size=8)")[0])
    j.tick(60.0)
    assert not [e for e in j.drain() if e["event"] == "eta"]
    assert (j.etas.model, j.etas.tp) == ("/m/K", 8)
