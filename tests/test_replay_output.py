"""`replay` as a new user meets it: a readable timeline on stderr, JSON on stdout, one clear line
for input that is not a text log, durations in m:ss, phases of an excerpt in order."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from conftest import SHARED_LOGS, coldwatch, json_lines

from coldwatch.render.plain import fmt_dur
from coldwatch.replay import read_chunks, replay

FIXTURE_001 = SHARED_LOGS / "001-sglang-laguna-int4-dflash-dgx-spark-ready.log"


def test_timeline_goes_to_stderr_json_to_stdout(tmp_path: Path) -> None:
    """The human timeline is on stderr (stdout stays empty); with -o json the NDJSON is on stdout."""
    log = tmp_path / "s.log"
    log.write_text(
        "[2026-01-01 10:00:00] Load weight begin. avail mem=70 GB\n[2026-01-01 10:00:09] The server is fired up and ready to roll!\n"
    )
    human = coldwatch("replay", str(log))
    assert human.returncode == 0 and human.stdout == b""
    assert "READY (exit 0)" in human.stderr.decode() and "weight_load" in human.stderr.decode()
    machine = coldwatch("replay", str(log), "-o", "json")
    assert json_lines(machine.stdout)[-1]["outcome"] == "ready"


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"", "empty"),
        (gzip.compress(b"[2026-01-01 10:00:00] Load weight begin.\n", mtime=0), "gzip"),
        (bytes(range(256)) * 8, "binary"),
    ],
    ids=["empty", "gzip", "binary"],  # the same names in every xdist worker
)
def test_input_that_is_not_a_text_log_is_exit_2(tmp_path: Path, data: bytes, why: str) -> None:
    """Empty, gzip or binary input: one line saying it is not a text log, exit 2 (not 'incomplete')."""
    f = tmp_path / "in.log"
    f.write_bytes(data)
    for args, given in (((str(f),), None), (("-",), data)):
        r = coldwatch("replay", *args, input=given)
        err = r.stderr.decode()
        assert r.returncode == 2, err
        assert "not a text log" in err and why in err and len(err.strip().splitlines()) == 1


def test_record_from_stdin_asks_for_a_target() -> None:
    """`replay --record -` has no file name to record under: it asks for --target instead of recording '-'."""
    r = coldwatch("replay", "--record", "-", input=b"[2026-01-01 10:00:00] Load weight begin.\n")
    assert r.returncode == 2 and "--target" in r.stderr.decode()
    assert not coldwatch("history").stdout.strip().startswith(b"-")


def test_durations_over_a_minute_read_as_minutes() -> None:
    """53 s stays '53s'; 220 s is '3:40'; past an hour h:mm:ss."""
    assert (fmt_dur(53), fmt_dur(220), fmt_dur(3725)) == ("53s", "3:40", "1:02:05")


def test_excerpt_phases_with_unknown_start_are_in_order_and_marked(tmp_path: Path) -> None:
    """An excerpt without timestamps: phases in their order, start and duration '?', the running one open."""
    log = tmp_path / "e.log"
    log.write_text("[gpu_id=0] Load weight begin.\n[gpu_id=0] Load weight end.\n[gpu_id=0] Capture cuda graph begin. This\n")
    rows = coldwatch("replay", str(log)).stderr.decode().splitlines()[1:-1]
    assert [r.split()[:3] for r in rows] == [["weight_load", "?", "?"], ["graph_capture", "?", "(open)"]]


@pytest.mark.skipif(not FIXTURE_001.exists(), reason="shared fixtures not present")
def test_kv_cache_span_ends_with_its_last_line() -> None:
    """Fixture 001: the KV-cache span ends at 'Memory pool end', before the capture begins, not at the
    scheduler's summary line after the capture (it used to show kv_alloc 226 s over a 220 s capture)."""
    with FIXTURE_001.open("rb") as fh:
        j, _ = replay(read_chunks(fh))
    spans = {s.phase: s for s in j.state.timeline()}
    kv, cap = spans["kv_alloc"], spans["graph_capture"]
    assert kv.end is not None and cap.start is not None and kv.end <= cap.start
    assert max(spans.values(), key=lambda s: (s.end or 0) - (s.start or 0) if s.phase != "ready" else 0).phase == "graph_capture"
