"""The log stream: which command follows it, and how to resume it after a reconnect.

The command is the supervisor's (``supervisors``): by default the unit's journal as JSON
(``supervisors.systemd``), whose every entry carries its ``__CURSOR``, so after an SSH drop the
follower resumes with ``--after-cursor`` and no line is lost or repeated. MESSAGE arrives as a
string, as a list of byte values (any CR or ESC, e.g. tqdm bars) or null. A ``--log-cmd`` stream, or a supervisor's own log command (a container's
``logs -f --since``), is re-run after a reconnect and the records already seen are skipped (right
for commands that replay from the start, such as ``tail -n +1 -F`` or ``docker logs -f``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

from coldwatch.evidence import SupervisorState
from coldwatch.normalise import MAX_RECORD, LogLine, Normaliser, split_records
from coldwatch.supervisors.base import Supervisor
from coldwatch.supervisors.systemd import Systemd, since_arg

if TYPE_CHECKING:
    from coldwatch.normalise import _Stamp


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
        self.supervisor: Supervisor = supervisor if supervisor is not None else Systemd(unit)
        """Whose log it is (without one: the unit's journal); --log-cmd names another."""
        self.cursor: str | None = None
        self.seen = 0
        self._skip = 0
        self.lumps = Lumps()
        self._tail: list[bytes] = []
        self.norm = Normaliser()
        """One normaliser for the start's whole log, across reconnects: its clock and its thinning of a
        bar's redraws go on where they were (a fresh one after a reconnect mid-bar showed one redraw the
        log's own reading thins out)."""

    @property
    def journal(self) -> bool:
        """The log is the journal's JSON, resumed by cursor."""
        return self.log_cmd is None and self.supervisor.journal

    def command(self, follow: bool = True) -> str:
        """The command that follows the log of the current start (``follow=False``: what is there now):
        --log-cmd's, else the supervisor's own (the unit's journal, a container's ``logs``)."""
        if self.log_cmd is not None:
            return self.log_cmd if follow else f"timeout 5 {self.log_cmd}"
        return self.supervisor.log_command(self.svc, follow, self.cursor)

    def resume(self) -> None:
        """The next follower continues where this one stopped."""
        self._skip = 0 if self.journal else self.seen
        if not self.journal:
            self.seen = 0

    def rest(self) -> bytes | None:
        """The held last record of a stream that ended by itself (it was the log's last words)."""
        if not self._tail:
            return None
        self.seen += 1
        return self._tail.pop()

    def rescope(self, svc: SupervisorState) -> None:
        """A new start of the unit: follow its invocation from the beginning."""
        self.svc = svc
        self.cursor = None
        self.seen = self._skip = 0
        self.norm = Normaliser()

    def records(self, chunks: Iterable[bytes], hold_tail: bool = False, live: Callable[[], bool] | None = None) -> Iterator[bytes]:
        """Log records (split on LF and CR) from the follower's raw output. ``hold_tail``: a plain
        stream's last record, unterminated, is held for ``rest`` (neither yielded nor counted as seen):
        a follower cut by a dropped connection may have stopped inside it, and the re-run after the
        reconnect brings it whole. ``live``: whether this follower is still the current one; once a
        reconnect has replaced it, what it still reads is neither counted nor handed on (the new
        follower's skip, or its cursor, was taken from what this one had counted: a record counted after
        that would be read twice)."""
        if not self.journal:
            self._tail.clear()
            for rec in split_records(chunks, tail=self._tail if hold_tail else None):
                if live is not None and not live():
                    return
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
            if live is not None and not live():
                return
            cur = _cursor(entry)
            if cur:
                self.cursor = cur
            self.lumps.entry(_realtime(entry), len(msg))
            yield from split_records([msg, b"\n"])


LUMP_LINES = 10  # entries stamped by journald within LUMP_WINDOW of each other ...
LUMP_BYTES = 2048  # ... carrying at least this much text: one lump
LUMP_WINDOW = 1000  # microseconds
LUMPS_TO_WARN = 3
LUMP_WARNING = (
    "the server's log reaches journald in lumps ({n} so far, up to {lines} lines stamped within 1 ms): its stdout "
    "is block-buffered, so a fatal line can wait in the server's buffer until the next lump; set PYTHONUNBUFFERED=1 "
    "(and StandardOutput=journal) on the unit"
)


class Lumps:
    """Notices a log that reaches journald in lumps: a server whose stdout is a pipe to journald and
    block-buffered (Python without PYTHONUNBUFFERED writes 8 KB at a time) hands journald many lines in
    one write, and journald stamps them all within microseconds. A traceback written in one go looks the
    same once; ``LUMPS_TO_WARN`` of them in one start does not happen with line-buffered output."""

    def __init__(self) -> None:
        self.count = 0
        self.biggest = 0
        self._first = -(10**18)
        self._lines = 0
        self._bytes = 0
        self._counted = False

    def entry(self, usec: int | None, size: int) -> None:
        if usec is None:
            return
        if usec - self._first > LUMP_WINDOW:
            self._first, self._lines, self._bytes, self._counted = usec, 0, 0, False
        self._lines += 1
        self._bytes += size + 1
        if self._lines >= LUMP_LINES and self._bytes >= LUMP_BYTES:
            self.biggest = max(self.biggest, self._lines)
            if not self._counted:
                self._counted = True
                self.count += 1

    def warning(self) -> str | None:
        """The warning to give (once) when the log arrives in lumps, else None."""
        if self.count < LUMPS_TO_WARN:
            return None
        return LUMP_WARNING.format(n=self.count, lines=self.biggest)


def _realtime(entry: bytes) -> int | None:
    i = entry.find(b'"__REALTIME_TIMESTAMP":"')
    if i < 0:
        return None
    i += 24
    j = entry.find(b'"', i)
    digits = entry[i:j]
    return int(digits) if 0 < len(digits) <= 20 and digits.isdigit() else None


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


EARLIER_ALLOWANCE = 60.0
"""With no supervisor to say when this start began, a line stamped up to this many seconds before the
watch began still counts as this start's (the server was started a moment before coldwatch)."""
HOST_CLOCK = "date '+%s %z'"
"""The host's clock and UTC offset: engines stamp their lines in the host's local time."""


def host_clock(text: str) -> tuple[float, float] | None:
    """``date '+%s %z'`` -> (Unix seconds, UTC offset in seconds); None when it is not that."""
    parts = text.split()
    if len(parts) != 2 or not parts[0].isdigit() or len(parts[1]) != 5 or parts[1][0] not in "+-" or not parts[1][1:].isdigit():
        return None
    off = int(parts[1][1:3]) * 3600 + int(parts[1][3:5]) * 60
    return float(parts[0]), float(off if parts[1][0] == "+" else -off)


class EarlierRun:
    """Which lines of a ``--log-cmd`` stream are an earlier run's (a log the server appends to, followed
    with ``tail -F``): those stamped before ``begin`` (Unix seconds: the supervisor's start of this run,
    or the watch's start less EARLIER_ALLOWANCE). They are shown, never judged; the first line stamped
    at or after ``begin`` starts this run, and every line after it counts. Unstamped lines go with the
    last stamped one; a stamp with no date (or no year) cannot be placed and counts."""

    def __init__(self, begin: float, utc_offset: float = 0.0, now: float | None = None, why: str = "") -> None:
        self.begin = begin
        self.utc_offset = utc_offset
        self.now = begin if now is None else now
        self.why = why
        """How ``begin`` was chosen, for the warning (``the unit's start``, ``the watch's start less 60s``)."""
        self.old = False
        self.done = False
        self.skipped = 0

    def earlier(self, line: LogLine) -> bool:
        if self.done:
            return False
        from coldwatch.normalise import unwrap

        at = stamp_epoch(unwrap(line.raw)[2], self.utc_offset, self.now)
        if at is not None:
            self.old = at < self.begin
            if not self.old:
                self.done = True
        if self.old:
            self.skipped += 1
        return self.old


def stamp_epoch(stamp: _Stamp | None, utc_offset: float, now: float) -> float | None:
    """A line's stamp as Unix seconds: ISO 8601 stamps are UTC (normalise converts an offset); the
    engines' own stamps are the host's local time. A stamp without a year (vLLM's ``12-01``) takes the
    year of ``now`` (the host's clock), the year before when that would put it a day or more ahead."""
    import datetime as dt

    from coldwatch.normalise import _EPOCH_DAY, _FAKE_YEAR_DAYS

    if stamp is None or stamp.day is None:
        return None
    day = stamp.day
    if _FAKE_YEAR_DAYS[0] <= day < _FAKE_YEAR_DAYS[1]:
        md = dt.date.fromordinal(day)
        year = dt.datetime.fromtimestamp(now + utc_offset, dt.UTC).year
        try:
            day = dt.date(year, md.month, md.day).toordinal()
            if (day - _EPOCH_DAY) * 86400.0 + stamp.sod - utc_offset > now + 86400:
                day = dt.date(year - 1, md.month, md.day).toordinal()
        except ValueError:
            return None  # 02-29 outside a leap year
    local = (day - _EPOCH_DAY) * 86400.0 + stamp.sod
    return local if stamp.style == "iso" else local - utc_offset


def earlier_run(clock_text: str, svc: SupervisorState | None, log_cmd: str | None) -> EarlierRun | None:
    """The filter for a ``--log-cmd`` stream (a journal or a container's own log is already scoped to
    this start): from the supervisor's start of this run when it says, else the watch's start less
    EARLIER_ALLOWANCE; None without --log-cmd or when the host's clock cannot be read."""
    if log_cmd is None:
        return None
    clock = host_clock(clock_text)
    if clock is None:
        return None
    now, offset = clock
    since = _since_epoch(svc.since, offset) if svc is not None and svc.known and svc.since else None
    if since is not None and since <= now + 5:
        return EarlierRun(since, offset, now, "the supervisor's start of this run")
    return EarlierRun(now - EARLIER_ALLOWANCE, offset, now, f"the watch's start less {EARLIER_ALLOWANCE:g}s")


def _since_epoch(since: str, utc_offset: float) -> float | None:
    """systemd's ``Sun 2026-11-29 18:24:46 UTC`` (the host's local time) or a runtime's RFC 3339 stamp."""
    import datetime as dt

    from coldwatch.supervisors.container import rfc3339

    if "T" in since:
        return rfc3339(since)
    parts = since_arg(since).split()
    if len(parts) < 2:
        return None
    try:
        naive = dt.datetime.fromisoformat(f"{parts[0]} {parts[1]}").replace(tzinfo=dt.UTC).timestamp()
    except ValueError:
        return None
    return naive if parts[2:3] == ["UTC"] else naive - utc_offset
