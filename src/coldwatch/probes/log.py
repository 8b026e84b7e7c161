"""The log stream: which command follows it, and how to resume it after a reconnect.

The default is the unit's journal as JSON (``journalctl -o json -a``): every entry carries its
``__CURSOR``, so after an SSH drop the follower resumes with ``--after-cursor`` and no line is
lost or repeated. MESSAGE arrives as a string, as a list of byte values (any CR or ESC, e.g.
tqdm bars) or null. A ``--log-cmd`` stream, or a supervisor's own log command (a container's
``logs -f --since``), is re-run after a reconnect and the records already seen are skipped (right
for commands that replay from the start, such as ``tail -n +1 -F`` or ``docker logs -f``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from coldwatch.evidence import SupervisorState
from coldwatch.hosts.base import q
from coldwatch.normalise import MAX_RECORD, split_records

if TYPE_CHECKING:
    from coldwatch.supervisors import Supervisor


def _since(stamp: str) -> str:
    """'Sun 2026-11-29 18:24:46 UTC' -> '2026-11-29 18:24:46 UTC' (journalctl's --since form)."""
    parts = stamp.split()
    if parts and parts[0].isalpha() and len(parts[0]) == 3:
        parts = parts[1:]
    return " ".join(parts)


def journal_message(entry: bytes) -> bytes | None:
    """One line of ``journalctl -o json`` -> its MESSAGE as bytes; None when it is not an entry."""
    try:
        data = json.loads(entry)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    msg = data.get("MESSAGE")
    if isinstance(msg, str):
        return msg.encode("utf-8", "replace")
    if isinstance(msg, list):
        try:
            return bytes(b for b in msg[:MAX_RECORD] if isinstance(b, int) and 0 <= b < 256)
        except ValueError:
            return b""
    return b""


class LogSource:
    """A resumable log follower description. Not thread-safe: one follower at a time."""

    def __init__(self, log_cmd: str | None, unit: str, svc: SupervisorState | None, supervisor: Supervisor | None = None) -> None:
        self.log_cmd = log_cmd
        self.unit = unit
        self.svc = svc
        self.supervisor = supervisor
        self.cursor: str | None = None
        self.seen = 0
        self._skip = 0

    def _own(self, follow: bool) -> str | None:
        """The supervisor's own log command (a container's), unless --log-cmd names one."""
        if self.log_cmd is not None or self.supervisor is None:
            return None
        return self.supervisor.log_command(self.svc, follow)

    @property
    def journal(self) -> bool:
        return self.log_cmd is None and self._own(True) is None

    def command(self, follow: bool = True) -> str:
        """The command that follows the log of the current start (``follow=False``: what is there now)."""
        if self.log_cmd is not None:
            return self.log_cmd if follow else f"timeout 5 {self.log_cmd}"
        own = self._own(follow)
        if own is not None:
            return own
        svc = self.svc
        fmt = "-f -a -o json --no-pager" if follow else "-a -o json --no-pager"
        if svc is not None and svc.start_id:
            base = f"journalctl _SYSTEMD_INVOCATION_ID={q(svc.start_id)} {fmt}"
        else:
            base = f"journalctl --unit={q(self.unit)} {fmt}"  # one argv word: never read as an option
        if self.cursor:
            return f"{base} --after-cursor={q(self.cursor)}"
        if svc is not None and svc.start_id:
            return f"{base} --no-tail"
        if svc is not None and svc.since and svc.since != "n/a":
            return f"{base} --no-tail --since {q(_since(svc.since))}"
        return f"{base} -n 0" if follow else f"{base} -n 5000"

    def resume(self) -> None:
        """The next follower continues where this one stopped."""
        self._skip = 0 if self.journal else self.seen
        if not self.journal:
            self.seen = 0

    def rescope(self, svc: SupervisorState) -> None:
        """A new start of the unit: follow its invocation from the beginning."""
        self.svc = svc
        self.cursor = None
        self.seen = self._skip = 0

    def records(self, chunks: Iterable[bytes]) -> Iterator[bytes]:
        """Log records (split on LF and CR) from the follower's raw output."""
        if not self.journal:
            for rec in split_records(chunks):
                self.seen += 1
                if self._skip:
                    self._skip -= 1
                    continue
                yield rec
            return
        for entry in split_records(_lf_only(chunks), max_record=4 * MAX_RECORD):
            msg = journal_message(entry)
            if msg is None:
                continue
            cur = _cursor(entry)
            if cur:
                self.cursor = cur
            yield from split_records([msg, b"\n"])


def _cursor(entry: bytes) -> str | None:
    i = entry.find(b'"__CURSOR":"')
    if i < 0:
        i = entry.find(b'"__CURSOR" : "')
        if i < 0:
            return None
        i += 14
    else:
        i += 12
    j = entry.find(b'"', i)
    return entry[i:j].decode("ascii", "replace") if j > i else None


def _lf_only(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """JSON output has no raw CR (it is escaped); protect against stray ones anyway."""
    for c in chunks:
        yield c.replace(b"\r", b"")
