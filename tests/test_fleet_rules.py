"""The fleet's decisive rules in absolute numbers: how many ready targets --min-ready needs, and
which exit code a fleet that is not ready ends with (fast, no servers)."""

from __future__ import annotations

from typing import Any

import pytest

from coldwatch.fleet import aggregate, needed


@pytest.mark.parametrize(
    ("min_ready", "total", "need"),
    [
        (None, 5, 5),
        ("", 5, 5),
        ("50%", 5, 3),
        ("40%", 5, 2),
        ("100%", 5, 5),
        ("1%", 5, 1),
        ("0%", 5, 0),
        ("3%", 167, 6),  # 5.01 rounds up to 6
        ("3", 5, 3),
        ("9", 5, 5),
        ("0", 5, 0),
    ],
)
def test_min_ready(min_ready: str | None, total: int, need: int) -> None:
    assert needed(min_ready, total) == need


def _r(outcome: str, code: int) -> dict[str, Any]:
    return {"target": f"t-{outcome}-{code}", "outcome": outcome, "exit_code": code, "phase": None, "failure_kind": None, "reason": ""}


READY = _r("ready", 0)


def test_all_needed_by_default_one_failure_fails() -> None:
    assert aggregate([READY, READY, _r("failed", 3)], None)[:2] == ("failed", 3)
    assert aggregate([READY, READY, READY], None)[:2] == ("ready", 0)


def test_min_ready_n_needs_n() -> None:
    results = [READY, READY, _r("failed", 3), _r("failed", 3)]
    assert aggregate(results, "3")[:2] == ("failed", 3)
    assert aggregate(results, "2")[:2] == ("ready", 0)
    assert aggregate(results, "50%")[:2] == ("ready", 0)
    assert aggregate(results, "51%")[:2] == ("failed", 3)


@pytest.mark.parametrize(
    ("codes", "want"),
    [
        ([("failed", 3), ("stalled", 5), ("unreachable", 4), ("incomplete", 124)], ("failed", 3)),
        ([("stalled", 5), ("unreachable", 4)], ("stalled", 5)),
        ([("unreachable", 4), ("incomplete", 124)], ("unreachable", 4)),
        ([("incomplete", 124)], ("incomplete", 124)),
        ([("interrupted", 130), ("failed", 3)], ("interrupted", 130)),
        ([("interrupted", 143), ("failed", 3)], ("interrupted", 143)),
        ([("error", 1), ("incomplete", 124)], ("incomplete", 124)),
        ([("error", 1)], ("error", 1)),
        ([("usage", 2), ("error", 1)], ("usage", 2)),
    ],
)
def test_the_most_severe_code_wins(codes: list[tuple[str, int]], want: tuple[str, int]) -> None:
    assert aggregate([READY, *(_r(o, c) for o, c in codes)], None)[:2] == want


def test_reason_counts_ready_and_needed() -> None:
    _, _, reason = aggregate([READY, _r("failed", 3), _r("failed", 3)], "1")
    assert reason.startswith("1/3 ready (needed 1): 2 failed, 1 ready")


def test_a_crashed_or_skipped_target_is_not_ready() -> None:
    assert aggregate([READY, _r("error", 1)], None)[:2] == ("error", 1)
    assert aggregate([READY, _r("incomplete", 124)], None)[:2] == ("incomplete", 124)
