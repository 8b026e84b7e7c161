"""Per-target records of past cold starts (JSONL, mode 0600) and the ETA they give."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import math
import os
import stat
import statistics
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import platformdirs

from coldwatch.errors import ConfigError
from coldwatch.files import HISTORY_LIMIT, check_regular, exists, read_bytes
from coldwatch.sanitise import redact_obj

FILE = "history.jsonl"


def home() -> Path:
    """COLDWATCH_HOME, else the platform state directory."""
    env = os.environ.get("COLDWATCH_HOME")
    return Path(env) if env else Path(platformdirs.user_state_dir("coldwatch"))


def path() -> Path:
    return home() / FILE


def cmd_hash(cmdline: str | None) -> str | None:
    return hashlib.sha256(cmdline.encode()).hexdigest()[:16] if cmdline else None


def durations(phases: Iterable[dict[str, Any]]) -> dict[str, float]:
    """Phase -> seconds, for phases with both ends known."""
    out: dict[str, float] = {}
    for p in phases:
        if p.get("start") is not None and p.get("end") is not None and p["phase"] not in ("ready",):
            out[p["phase"]] = round(float(p["end"]) - float(p["start"]), 3)
    return out


def append(record: dict[str, Any]) -> None:
    """Append one record, whole or not at all: one ``write`` of the whole line under an
    exclusive lock, fsync'd; a write cut short (a full disk) is truncated away again. A torn
    last line left by an earlier crash is set aside first (to ``history.jsonl.torn``), so the
    new record never glues onto it. The file is created 0600 (it names hosts and models)."""
    p = path()
    line = (json.dumps(redact_obj(record), sort_keys=True) + "\n").encode("utf-8", "surrogatepass")
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(p, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK, 0o600)
    except OSError as exc:
        raise ConfigError(f"{p}: cannot write history: {exc.strerror or exc}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ConfigError(f"{p}: cannot write history: not a regular file")
        fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            size = _set_aside(fd, size, p)
        try:
            n = os.write(fd, line)
            if n != len(line):
                raise OSError(errno.ENOSPC, f"No space left on device (a short write: {n} of {len(line)} bytes)")
            os.fsync(fd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)  # nothing of a record that did not fit stays behind
            raise ConfigError(f"{p}: cannot write history: {exc.strerror or exc}") from None
    except OSError as exc:
        raise ConfigError(f"{p}: cannot write history: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def _set_aside(fd: int, size: int, p: Path) -> int:
    """Move a torn last line (no newline) out of the history; return the new size."""
    start = max(size - (1 << 20), 0)
    tail = os.pread(fd, size - start, start)
    cut = start + tail.rfind(b"\n") + 1 if b"\n" in tail else start
    torn = os.pread(fd, size - cut, cut)
    with contextlib.suppress(OSError):
        side = os.open(p.with_name(p.name + ".torn"), os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        try:
            os.write(side, torn + b"\n")
        finally:
            os.close(side)
    os.ftruncate(fd, cut)
    return cut


_WARNED: set[tuple[str, int]] = set()


def _stderr(msg: str) -> None:
    from coldwatch.sanitise import clean

    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(clean(f"coldwatch: warning: {msg}", 500) + "\n")
        sys.stderr.flush()


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0


def problem(rec: Any) -> str | None:
    """Why a parsed line is not a usable record (None: it is)."""
    if not isinstance(rec, dict):
        return "not a JSON object"
    if not isinstance(rec.get("target"), str) or not rec["target"]:
        return "no target name"
    for key in ("outcome", "model", "ts"):
        if rec.get(key) is not None and not isinstance(rec[key], str):
            return f"{key} is not a string"
    for key in ("durations", "starts"):
        table = rec.get(key)
        if table is None:
            continue
        if not isinstance(table, dict):
            return f"{key} is not a table"
        for ph, secs in table.items():
            if not _number(secs):
                return f"{key}.{ph} is not a number of seconds ({str(secs)[:20]!r})"
    if rec.get("total") is not None and not _number(rec["total"]):
        return "total is not a number of seconds"
    return None


def load(warn: Callable[[str], None] | None = None, strict: bool = False) -> list[dict[str, Any]]:
    """Every usable record. A bad record is skipped with one warning naming the file and its line
    (once per process), a torn last line (an interrupted write) likewise; a history that cannot
    be read is a warning and no records, or with ``strict`` (the history command) exit 2."""
    p = path()
    say = warn or _stderr
    if not exists(p):
        return []
    try:
        fd = None
        check_regular(p, 1 << 62, "history")
        with contextlib.suppress(OSError):
            fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            fcntl.flock(fd, fcntl.LOCK_SH)  # no append is half-way while this reads
        try:
            raw = read_bytes(p, HISTORY_LIMIT, "history", tail=True)
        finally:
            if fd is not None:
                os.close(fd)
    except ConfigError as exc:
        if strict:
            raise
        say(f"{exc}; no ETA baseline this run")
        return []
    offset = 0
    if len(raw) == HISTORY_LIMIT and os.path.getsize(p) > HISTORY_LIMIT:
        offset = raw.find(b"\n") + 1  # the first line is cut: start at the next whole one
        say(f"{p}: history is larger than {HISTORY_LIMIT >> 20} MiB; only its most recent records are read")
    lines = raw[offset:].split(b"\n")
    torn = lines.pop()  # after the last newline: empty, or a line whose write did not finish
    out: list[dict[str, Any]] = []
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line.decode("utf-8", "replace"))
        except ValueError:
            why: str | None = "not valid JSON"
        else:
            why = problem(rec)
        if why is None:
            out.append(rec)
        elif (str(p), i) not in _WARNED:
            _WARNED.add((str(p), i))
            say(f"{p}: line {i}: bad history record skipped ({why})")
    if torn.strip() and (str(p), -1) not in _WARNED:
        _WARNED.add((str(p), -1))
        say(f"{p}: line {len(lines) + 1}: torn last line (an interrupted write) set aside")
    return out


def starts(phases: Iterable[dict[str, Any]]) -> dict[str, float]:
    """Phase -> seconds from the start to its first entry (the per-phase ETA's segments)."""
    return {str(p["phase"]): round(float(p["start"]), 3) for p in phases if p.get("start") is not None and p.get("phase") != "ready"}


def make_record(target: str, result: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """One history record; ``extra`` adds what the driver knows (host, unit, model, model_path, tp)."""
    d = durations(result.get("phases", []))
    ready = next((p["start"] for p in result.get("phases", []) if p["phase"] == "ready"), None)
    return {
        "target": target,
        "outcome": result["outcome"],
        "phase": result.get("phase"),
        "failure_kind": result.get("failure_kind"),
        "durations": d,
        "starts": starts(result.get("phases", [])),
        "total": ready if ready is not None else result.get("t"),
        "ts": result.get("ts"),
        **({"engine_timings": result["engine_timings"]} if result.get("engine_timings") else {}),
        **{k: v for k, v in extra.items() if v is not None},
    }


def record_replay(target: str, result: dict[str, Any], **extra: Any) -> None:
    append(make_record(target, result, source="replay", **extra))


def baseline(target: str, model: str | None = None, records: list[dict[str, Any]] | None = None) -> dict[str, float]:
    """Median seconds per phase (and 'total') over earlier ready starts of the target.

    Falls back to ready starts of the same model on other targets.
    """
    recs = records if records is not None else load()
    mine = [r for r in recs if r.get("target") == target and r.get("outcome") == "ready"]
    if not mine and model:
        mine = [r for r in recs if r.get("model") == model and r.get("outcome") == "ready"]
    if not mine:
        return {}
    per: dict[str, list[float]] = {}
    for r in mine:
        durs = r.get("durations")
        for ph, secs in durs.items() if isinstance(durs, dict) else ():
            if _number(secs):
                per.setdefault(ph, []).append(float(secs))
        if _number(r.get("total")):
            per.setdefault("total", []).append(float(r["total"]))
    return {ph: statistics.median(v) for ph, v in per.items()}
