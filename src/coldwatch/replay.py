"""The `replay` driver: records from a saved log fed to the judge on the log's own clock."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, BinaryIO

from coldwatch.judge import Judge, Policy, Verdict
from coldwatch.normalise import Normaliser, split_records
from coldwatch.phases import RuleSet

CHUNK = 1 << 20

__all__ = ["Verdict", "read_chunks", "replay", "replay_policy"]


def read_chunks(stream: BinaryIO, size: int = CHUNK) -> Iterator[bytes]:
    while True:
        chunk = stream.read(size)
        if not chunk:
            return
        yield chunk


def replay_policy(max_restarts: int = 0, stall_after: float = 0.0) -> Policy:
    """A saved log: its ready line is ready; a stall is a gap in the log longer than ``stall_after``
    (0 = off: a saved log lacks the GPU and process evidence that shows life in a silent minute)."""
    return Policy(confirm="log", max_restarts=max_restarts, stall_after=stall_after, timeout=0.0)


def replay(
    chunks: Iterable[bytes],
    rules: RuleSet | None = None,
    engine: str | None = None,
    on_event: Callable[[dict[str, Any]], None] | None = None,
    normaliser: Normaliser | None = None,
    policy: Policy | None = None,
) -> tuple[Judge, Verdict]:
    """Feed every line to one judge until its verdict; return the judge and the verdict."""
    j = Judge(policy or replay_policy(), rules, engine)
    n = normaliser or Normaliser()
    line = j.line
    for rec in split_records(chunks):
        for ln in n.lines(rec):
            line(ln)
            if on_event is not None:
                if j.epoch0 is None:
                    j.epoch0 = n.clock.origin_epoch
                for ev in j.drain():
                    on_event(ev)
            else:
                j.drain()
            if j.verdict is not None:
                break
        if j.verdict is not None:
            break
    v = j.finish()
    if j.epoch0 is None:
        j.epoch0 = n.clock.origin_epoch
    if on_event is not None:
        for ev in j.drain():
            on_event(ev)
    else:
        j.drain()
    return j, v
