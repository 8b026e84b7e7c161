"""The verdict vocabulary: outcomes, their exit codes, the ``Verdict`` and the one result line.

Every command ends with the same last line (DESIGN.md, Output). The judge, the group of node judges,
the fleet, the CLI's error path and every sink build or read it through this module only. Pure data.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from coldwatch.events import event
from coldwatch.exitcodes import ExitCode

SCHEMA = 1
"""The result line's schema version."""
REASON_MAX = 500


class Outcome(StrEnum):
    """How a watch ended. A ``str``: it compares and serialises as its value."""

    READY = "ready"
    FAILED = "failed"
    STALLED = "stalled"
    UNREACHABLE = "unreachable"
    TIMEOUT = "timeout"
    INCOMPLETE = "incomplete"
    INTERRUPTED = "interrupted"
    USAGE = "usage"
    """The run ended in a usage or configuration error before a verdict (exit 2)."""
    ERROR = "error"
    """An internal error (a coldwatch bug, exit 1) ended one target's watch."""


OUTCOME_OF_CODE: dict[int, Outcome] = {
    int(ExitCode.READY): Outcome.READY,
    int(ExitCode.USAGE): Outcome.USAGE,
    int(ExitCode.FAILED): Outcome.FAILED,
    int(ExitCode.UNREACHABLE): Outcome.UNREACHABLE,
    int(ExitCode.STALLED): Outcome.STALLED,
    int(ExitCode.TIMEOUT): Outcome.TIMEOUT,
    int(ExitCode.INTERRUPTED): Outcome.INTERRUPTED,
    int(ExitCode.TERMINATED): Outcome.INTERRUPTED,
    1: Outcome.ERROR,
}


def outcome_of_error(code: int) -> Outcome:
    """The outcome of a run that ended in an error with exit ``code`` before any verdict: a lost
    host is unreachable, a signal is interrupted, a failure the judge did not see (a checker's)
    is failed, a bug is error; anything else is a usage error."""
    return OUTCOME_OF_CODE.get(int(code), Outcome.USAGE)


@dataclass(frozen=True, slots=True)
class Verdict:
    """How a cold start ended, as the contract's result line names it."""

    outcome: str
    """An ``Outcome`` (a ``str``)."""
    exit_code: int
    phase: str | None
    failure_kind: str | None
    reason: str

    def fields(self) -> dict[str, Any]:
        """The verdict's fields of a result line (``reason`` cut to its contract length)."""
        return {
            "outcome": str(self.outcome),
            "exit_code": int(self.exit_code),
            "phase": self.phase,
            "failure_kind": self.failure_kind,
            "reason": self.reason[:REASON_MAX],
        }


def error_verdict(code: int, reason: str) -> Verdict:
    """A run (or one fleet target) that ended in an error before the judge had a verdict."""
    return Verdict(outcome_of_error(code), int(code), None, None, reason)


def _r(x: float | None) -> float | None:
    return round(x, 3) if x is not None else None


def phases_of(spans: Iterable[Any]) -> list[dict[str, Any]]:
    """A timeline's spans (``phases.Span``) as the result line's ``phases``."""
    return [{"phase": s.phase, "start": _r(s.start), "end": _r(s.end)} for s in spans]


def result_line(v: Verdict, t: float | None, epoch0: float | None, spans: Iterable[Any] = (), **extra: Any) -> dict[str, Any]:
    """The result line: the last line of every run (wait, replay, status errors, fleet, exit 2/4)."""
    return event("result", t, epoch0, **v.fields(), phases=phases_of(spans), schema=SCHEMA, **extra)


def target_result(target: str, v: Verdict) -> dict[str, Any]:
    """One target's entry of a fleet result's ``targets`` (and of its ``target_result`` event)."""
    return {"target": target, **v.fields()}
