"""Drive the classifier from a saved log, on the log's own clock."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

from coldwatch.exitcodes import ExitCode
from coldwatch.normalise import Normaliser, split_records
from coldwatch.phases import Classifier, RuleSet, Signal

CHUNK = 1 << 20


def read_chunks(stream: BinaryIO, size: int = CHUNK) -> Iterator[bytes]:
    while True:
        chunk = stream.read(size)
        if not chunk:
            return
        yield chunk


@dataclass(frozen=True, slots=True)
class Verdict:
    """How a cold start ended, as the contract's result line names it."""

    outcome: str  # ready | failed | stalled | unreachable | timeout | incomplete | interrupted
    exit_code: int
    phase: str | None
    failure_kind: str | None
    reason: str


def verdict_of(c: Classifier, ended: str = "incomplete") -> Verdict:
    """The verdict the classifier's state supports; ``ended`` names a start that never finished."""
    st = c.state
    if st.outcome == "ready":
        return Verdict("ready", ExitCode.READY, "ready", None, st.ready_evidence)
    if st.outcome == "failed" and st.failure is not None:
        return Verdict("failed", ExitCode.FAILED, st.last_phase(), st.failure.kind, st.failure.cause)
    phase = st.last_phase()
    where = f"in {phase}" if phase else "before any start-up phase"
    if ended == "incomplete":
        reason = f"log ended {where} without ready or a failure"
        return Verdict("incomplete", ExitCode.TIMEOUT, phase, None, reason)
    return Verdict(ended, ExitCode.TIMEOUT, phase, None, f"not ready: still {where}")


def replay(
    chunks: Iterable[bytes],
    rules: RuleSet | None = None,
    engine: str | None = None,
    on_signal: Callable[[Signal], None] | None = None,
    normaliser: Normaliser | None = None,
) -> tuple[Classifier, Verdict]:
    """Feed every line to one classifier; return it and the verdict at the end of the log."""
    c = Classifier(rules, engine)
    n = normaliser or Normaliser()
    feed = c.feed
    for rec in split_records(chunks):
        for line in n.lines(rec):
            signals = feed(line)
            if signals and on_signal is not None:
                for s in signals:
                    on_signal(s)
    for s in c.finish():
        if on_signal is not None:
            on_signal(s)
    return c, verdict_of(c)
