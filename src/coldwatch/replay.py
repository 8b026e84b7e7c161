"""The `replay` driver: records from a saved log fed to the judge on the log's own clock."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from typing import Any, BinaryIO

from coldwatch.errors import ConfigError
from coldwatch.judge import Judge, Policy
from coldwatch.normalise import Normaliser, split_coalesced, unwrap
from coldwatch.phases import RuleSet
from coldwatch.verdict import Verdict

CHUNK = 1 << 20
PROBE_RECORDS = 400
"""Records read ahead to tell a newest-first paste (a cloud log viewer's export) from a normal log."""
REVERSE_MAX = 64 << 20
"""A newest-first log is turned round in memory up to this many bytes; a longer one is read as it is."""

__all__ = ["Verdict", "read_chunks", "replay", "replay_policy", "text_chunks"]

# (magic bytes, what the file is, what to do)
_NOT_TEXT = (
    (b"\x1f\x8b", "gzip-compressed", "zcat LOG | coldwatch replay -"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed", "zstdcat LOG | coldwatch replay -"),
    (b"\xfd7zXZ\x00", "xz-compressed", "xzcat LOG | coldwatch replay -"),
    (b"BZh", "bzip2-compressed", "bzcat LOG | coldwatch replay -"),
    (b"PK\x03\x04", "a zip archive", "unzip -p LOG | coldwatch replay -"),
    (b"LPKSHHRH", "a binary systemd journal file", "journalctl --file LOG -o short-iso | coldwatch replay -"),
)
_TEXTISH = bytes(range(32, 256)) + b"\t\n\r\x1b\x08\x0c"
"""Bytes a text log is made of (control characters other than these mean binary data)."""


def read_chunks(stream: BinaryIO, size: int = CHUNK) -> Iterator[bytes]:
    while True:
        chunk = stream.read(size)
        if not chunk:
            return
        yield chunk


def text_chunks(chunks: Iterable[bytes], name: str) -> Iterator[bytes]:
    """The chunks of a text log; empty, compressed or binary input is a usage error ("not a text log")."""
    it = iter(chunks)
    first = b""
    for chunk in it:
        if chunk:
            first = chunk
            break
    if not first:
        raise ConfigError(f"{name}: not a text log (it is empty)")
    for magic, what, how in _NOT_TEXT:
        if first.startswith(magic) and (magic != b"BZh" or first[3:4].isdigit()):
            raise ConfigError(f"{name}: not a text log ({what}); try: {how}")
    head = first[:8192]
    if len(head.translate(None, _TEXTISH)) > len(head) // 20:
        raise ConfigError(f"{name}: not a text log (binary data)")
    yield first
    yield from it


def newest_first(records: list[bytes]) -> bool:
    """The records' timestamps run backwards: newest line first, as cloud log viewers list them (each
    style of stamp against the last of its own style: a worker's logger and the engine's tell the same)."""
    last: dict[str, float] = {}
    down = up = 0
    for rec in records:
        _, _, stamp, _ = unwrap(rec.decode("utf-8", "replace"))
        if stamp is None:
            continue
        now = (stamp.day or 0) * 86400.0 + stamp.sod
        before = last.get(stamp.style)
        if before is not None:
            down += now < before
            up += now > before
        last[stamp.style] = now
    return down >= 3 and down >= 4 * up


def in_log_order(records: Iterator[bytes]) -> Iterator[bytes]:
    """The records oldest first: a newest-first paste is turned round (bounded by REVERSE_MAX)."""
    head = list(itertools.islice(records, PROBE_RECORDS))
    if not newest_first(head):
        yield from head
        yield from records
        return
    size = sum(len(r) for r in head)
    for rec in records:
        head.append(rec)
        size += len(rec)
        if size > REVERSE_MAX:  # too long to hold: read it as it is
            yield from head
            yield from records
            return
    yield from reversed(head)


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
    for rec in in_log_order(split_coalesced(chunks)):
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
