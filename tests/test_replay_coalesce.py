"""Replay coalesces a progress bar's redraws per chunk (issue: replay at the regex engine's speed):
the records it keeps are a subsequence of every record, and no labelled log's verdict or timeline
changes for it."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import OWN_LOGS, SHARED_LOGS
from hypothesis import given, settings
from hypothesis import strategies as st

import coldwatch.replay as replay_mod
from coldwatch.normalise import split_coalesced, split_records

BAR = b"Loading safetensors checkpoint shards:  50% Completed | 5/10 [00:01<00:01,  1.0it/s]"
DONE = b"Loading safetensors checkpoint shards: 100% Completed | 10/10 [00:02<00:00,  1.0it/s]"


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from([b"abc", b"\n", b"\r", b"\r\n", b"x" * 50, b"[2026-01-01 00:00:00] y", BAR, DONE]), max_size=40),
    st.lists(st.integers(min_value=0, max_value=2000), max_size=3),
)
def test_kept_records_are_a_subsequence(parts: list[bytes], cuts: list[int]) -> None:
    """Whatever the bytes and chunk boundaries: coalesced records appear, in order, among all
    records; with no bar in the input they are all the records."""
    data = b"".join(parts)
    marks = sorted({min(c, len(data)) for c in cuts})
    chunks = [data[a:b] for a, b in zip([0, *marks], [*marks, len(data)], strict=True)]
    every = list(split_records(chunks, max_record=40))
    kept = list(split_coalesced(chunks, max_record=40))
    it = iter(every)
    assert all(any(x == y for y in it) for x in kept)
    if b"it/s]" not in data:
        assert kept == every


def test_bar_run_keeps_first_completion_and_last() -> None:
    """One CR-joined bar: its first update (a bar not seen before), its first 100 % and its last; a
    second run of the same bar only its last."""
    run = b"\r".join([BAR.replace(b" 50%", b"  0%"), BAR, DONE, DONE.replace(b"2.0", b"2.1")]) + b"\n"
    assert list(split_coalesced([run + run])) == [
        BAR.replace(b" 50%", b"  0%"),
        DONE,
        DONE.replace(b"2.0", b"2.1"),
        DONE,
        DONE.replace(b"2.0", b"2.1"),
    ]


@pytest.mark.parametrize(
    "glued",
    [
        b"[2026-01-01 00:00:00 TP0] Load weight end. elapsed=1.0 s, mem usage=7.5 GB. [ok]",
        b"Loading safetensors checkpoint shards:  60% Completed | 6/10 [00:01<00:01,  1.0it/s] [rank1]",
        b"INFO [x.py:1] 60% of [the] shards",
    ],
)
def test_a_line_glued_between_a_bar_s_redraws_is_kept(glued: bytes) -> None:
    """A record that is not one of the bar's redraws, between two of them, even one that ends like a redraw or
    holds a '%' and brackets, stops the run from being coalesced: every record is kept."""
    run = b"\r".join([BAR.replace(b" 50%", b"  0%"), BAR, glued, DONE]) + b"\n"
    assert glued in list(split_coalesced([run]))


def _logs() -> list[Path]:
    out = sorted(SHARED_LOGS.glob("*.log")) + sorted(OWN_LOGS.glob("*.log")) + sorted((OWN_LOGS / "real").glob("*.log"))
    return out + sorted((OWN_LOGS / "public").glob("*.log"))


def _story(path: Path) -> tuple[object, ...]:
    with path.open("rb") as fh:
        j, v = replay_mod.replay(replay_mod.read_chunks(fh))
    spans = [(s.phase, s.start, s.end, s.done, s.total, s.evidence) for s in j.state.timeline()]
    return (v.outcome, v.phase, v.failure_kind, v.reason, spans, j.state.last_t)


@pytest.mark.parametrize("path", _logs(), ids=lambda p: p.name[:60])
def test_coalescing_changes_no_verdict_and_no_timeline(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each labelled log replays to the same verdict and the same timeline with every record."""
    fast = _story(path)
    monkeypatch.setattr(replay_mod, "split_coalesced", lambda chunks: split_records(chunks))
    assert _story(path) == fast
