"""The result line every command ends with (verdict.py), as a user's script reads it: the schema
version, the reason's contract length, the outcome an error's exit code maps to, open phases. Each test
pins a behaviour a surviving mutant of verdict.py changed (scripts/mutate.py verdict)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from coldwatch.exitcodes import ExitCode
from coldwatch.verdict import Outcome, Verdict, error_verdict, outcome_of_error, result_line, target_result


@dataclass
class Span:
    phase: str
    start: float
    end: float | None


def test_the_result_line_is_schema_1_with_the_reason_cut_at_500_characters() -> None:
    v = Verdict(Outcome.FAILED, ExitCode.FAILED, "weight_load", "oom", "x" * 499 + "yz")
    line = result_line(v, 12.0, None, [Span("starting", 0.0, 1.23456), Span("weight_load", 1.23456, None)])
    assert line["event"] == "result" and line["schema"] == 1
    assert line["reason"] == "x" * 499 + "y" and len(line["reason"]) == 500
    assert line["outcome"] == "failed" and line["exit_code"] == 3 and line["failure_kind"] == "oom"
    assert line["phases"] == [
        {"phase": "starting", "start": 0.0, "end": 1.235},
        {"phase": "weight_load", "start": 1.235, "end": None},
    ]
    assert target_result("gpu1", v)["reason"] == "x" * 499 + "y"


@pytest.mark.parametrize(
    ("code", "outcome"),
    [(1, "error"), (2, "usage"), (3, "failed"), (4, "unreachable"), (130, "interrupted"), (143, "interrupted"), (99, "usage")],
)
def test_an_error_before_any_verdict_has_the_outcome_of_its_exit_code(code: int, outcome: str) -> None:
    """A coldwatch bug (exit 1) is 'error', a lost host 'unreachable', a signal 'interrupted', anything unknown 'usage'."""
    assert outcome_of_error(code) == outcome
    v = error_verdict(code, "why")
    assert v.fields() == {"outcome": outcome, "exit_code": code, "phase": None, "failure_kind": None, "reason": "why"}
