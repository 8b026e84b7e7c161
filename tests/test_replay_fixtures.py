"""replay agrees with the labels of real start-up logs (shared) and composed ones (our own)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import OWN_LOGS, SHARED_LOGS, coldwatch, json_lines

from coldwatch.replay import read_chunks, replay


def _labels(folder: Path) -> list[dict[str, Any]]:
    f = folder / "labels.json"
    if not f.exists():
        return []
    return list(json.loads(f.read_text()))


SHARED = _labels(SHARED_LOGS)
OWN = _labels(OWN_LOGS)
REAL = _labels(OWN_LOGS / "real")


def _verdict(path: Path) -> tuple[Any, Any]:
    with path.open("rb") as fh:
        return replay(read_chunks(fh))


@pytest.mark.skipif(not SHARED, reason=f"shared fixture logs not found at {SHARED_LOGS} (set COLDWATCH_SHARED_LOGS)")
@pytest.mark.parametrize("label", SHARED, ids=[lab["file"][:3] for lab in SHARED])
def test_shared_fixture_verdict_matches_label(label: dict[str, Any]) -> None:
    """Outcome, failure kind and last phase equal the label of each real log."""
    c, v = _verdict(SHARED_LOGS / label["file"])
    assert (v.outcome, v.failure_kind, v.phase) == (label["outcome"], label["failure_kind"], label["last_phase"] or "starting")


@pytest.mark.skipif(not SHARED, reason=f"shared fixture logs not found at {SHARED_LOGS}")
@pytest.mark.parametrize("label", SHARED, ids=[lab["file"][:3] for lab in SHARED])
def test_shared_fixture_phases_seen_cover_label(label: dict[str, Any]) -> None:
    """Nearly every labelled phase shows up on the timeline (008's dist_init has no line in its log)."""
    c, _ = _verdict(SHARED_LOGS / label["file"])
    seen = {s.phase for s in c.state.timeline()}
    missing = set(label["phases_seen"]) - seen
    assert missing <= {"dist_init"} if label["file"].startswith("008") else not missing


@pytest.mark.parametrize("label", OWN, ids=[lab["file"] for lab in OWN])
def test_composed_fixture_timeline(label: dict[str, Any]) -> None:
    """Composed logs (engine format strings) give the labelled verdict and the phases in order."""
    c, v = _verdict(OWN_LOGS / label["file"])
    assert (v.outcome, v.failure_kind, v.phase) == (label["outcome"], label["failure_kind"], label["last_phase"] or "starting")
    assert [s.phase for s in c.state.timeline() if s.phase != "starting"] == label["phases_seen"]


@pytest.mark.parametrize("label", REAL, ids=[lab["file"] for lab in REAL])
def test_recorded_real_engine_logs(label: dict[str, Any]) -> None:
    """Logs recorded from real engines by the engine tier replay to the verdict the live run gave."""
    c, v = _verdict(OWN_LOGS / "real" / label["file"])
    assert (v.outcome, v.failure_kind, v.phase) == (label["outcome"], label["failure_kind"], label["last_phase"] or "starting")
    assert [s.phase for s in c.state.timeline() if s.phase != "starting"] == label["phases_seen"]
    if "reason_has" in label:  # the engine's own causal line, not a symptom of it
        assert label["reason_has"] in v.reason


def test_json_stream_ends_with_result_line() -> None:
    """--output json: phase and progress events, and the contract's result as the last line."""
    r = coldwatch("replay", str(OWN_LOGS / "sglang-v0514-tp2-w4a16-eagle3-ready.log"), "--output", "json")
    assert r.returncode == 0, r.stderr
    evs = json_lines(r.stdout)
    assert [e["event"] for e in evs].count("result") == 1 and evs[-1]["event"] == "result"
    res = evs[-1]
    assert res["outcome"] == "ready" and res["exit_code"] == 0 and res["schema"] == 1
    assert {"phase", "start", "end"} <= set(res["phases"][0])
    phases = [e["phase"] for e in evs if e["event"] == "phase"]
    assert phases[:3] == ["dist_init", "weight_load", "marlin_repack"] and phases[-1] == "ready"
    assert all({"event", "t", "ts"} <= set(e) for e in evs)
    assert evs[0]["ts"].startswith("2026-05-30T20:20:09")
    progress = [e for e in evs if e["event"] == "progress" and e["phase"] == "weight_load"]
    assert progress[-1]["done"] == progress[-1]["total"] == 12


def test_failed_log_exits_3_with_causal_line() -> None:
    """A fatal error exits 3 and names the root error, not the sigquit that followed it."""
    r = coldwatch("replay", str(OWN_LOGS / "journald-sglang-v056-tp2-capture-oom.log"))
    assert r.returncode == 3
    out = r.stderr.decode()
    assert "FAILED [oom] in graph_capture" in out and "CUDA out of memory" in out
    assert "sigquit" not in out.splitlines()[-1]


def test_log_ending_before_ready_exits_124(tmp_path: Path) -> None:
    """A log that stops mid-load is incomplete: exit 124."""
    log = tmp_path / "cut.log"
    log.write_text("[2026-01-01 10:00:00] Init torch distributed begin.\n[2026-01-01 10:00:02] Load weight begin. avail mem=70.00 GB\n")
    r = coldwatch("replay", str(log), "-o", "json")
    assert r.returncode == 124
    res = json_lines(r.stdout)[-1]
    assert res["outcome"] == "incomplete" and res["phase"] == "weight_load" and res["exit_code"] == 124


def test_stdin_dash_reads_standard_input() -> None:
    """'-' replays what arrives on stdin."""
    data = (OWN_LOGS / "vllm-v011-kv-cache-too-small.log").read_bytes()
    r = coldwatch("replay", "-", "-o", "json", input=data)
    assert r.returncode == 3
    assert json_lines(r.stdout)[-1]["failure_kind"] == "oom"


@pytest.mark.parametrize("bad", ["/nonexistent/x.log", "/"])
def test_unreadable_log_is_one_line_exit_2(bad: str) -> None:
    """A missing file or a directory: one line on stderr naming it, exit 2, no traceback."""
    r = coldwatch("replay", bad)
    assert r.returncode == 2
    err = r.stderr.decode()
    assert bad in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_engine_flag_forces_rules() -> None:
    """--engine picks the rule set: vLLM's rules take uvicorn's startup line as ready, SGLang's wait for 'fired up'."""
    path = str(OWN_LOGS / "sglang-v0514-tp2-w4a16-eagle3-ready.log")
    as_vllm = json_lines(coldwatch("replay", path, "--engine", "vllm", "-o", "json").stdout)[-1]
    as_sglang = json_lines(coldwatch("replay", path, "--engine", "sglang", "-o", "json").stdout)[-1]
    ready = (
        {r["phase"]: r["start"] for r in as_vllm["phases"]}["ready"],
        {r["phase"]: r["start"] for r in as_sglang["phases"]}["ready"],
    )
    assert ready == (193.0, 195.0)
    assert coldwatch("replay", path, "--engine", "tgi").returncode == 2
