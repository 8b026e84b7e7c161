"""Bounded reads of the files coldwatch is given (config, rules, targets, known_hosts, SSH
config, identity, history): a regular file of at most a known size, or a one-line error; and the
writes of the files a run leaves behind (``--report``, ``--metrics``): checked before the watch,
replaced whole at its end, a failure one line on stderr.

``/dev/zero`` as a config would otherwise be read until memory runs out, and a FIFO would
block the run forever before it starts; both are refused here without being opened.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from pathlib import Path

from coldwatch.errors import ConfigError

MIB = 1 << 20

CONFIG_LIMIT = 1 * MIB
RULES_LIMIT = 4 * MIB
TARGETS_LIMIT = 4 * MIB
KNOWN_HOSTS_LIMIT = 16 * MIB
SSH_CONFIG_LIMIT = 1 * MIB
IDENTITY_LIMIT = 1 * MIB
HISTORY_LIMIT = 64 * MIB
"""History larger than this is read from its end (the most recent starts)."""


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _size(n: int) -> str:
    return f"{n // MIB} MiB" if n >= MIB and n % MIB == 0 else f"{n} bytes"


def check_regular(path: str | os.PathLike[str], limit: int, what: str) -> os.stat_result:
    """Stat ``path`` (following links): a regular file no larger than ``limit``, else ConfigError."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(f"{path}: {what} must be a regular file, this is {_kind(st.st_mode)}")
    if st.st_size > limit:
        raise ConfigError(f"{path}: {what} is larger than {_size(limit)} ({st.st_size} bytes)")
    return st


def read_bytes(path: str | os.PathLike[str], limit: int, what: str, tail: bool = False) -> bytes:
    """The content of a regular file of at most ``limit`` bytes. With ``tail`` a larger file is
    not an error: its last ``limit`` bytes are returned."""
    check_regular(path, limit if not tail else 1 << 62, what)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)  # the file opened is the file checked (no swap in between)
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError(f"{path}: {what} must be a regular file, this is {_kind(st.st_mode)}")
        if st.st_size > limit:
            if not tail:
                raise ConfigError(f"{path}: {what} is larger than {_size(limit)} ({st.st_size} bytes)")
            os.lseek(fd, st.st_size - limit, os.SEEK_SET)
        chunks: list[bytes] = []
        got = 0
        while got <= limit:
            data = os.read(fd, min(1 << 20, limit + 1 - got))
            if not data:
                break
            chunks.append(data)
            got += len(data)
        if got > limit and not tail:
            raise ConfigError(f"{path}: {what} is larger than {_size(limit)}")
        return b"".join(chunks)[:limit] if tail else b"".join(chunks)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def read_text(path: str | os.PathLike[str], limit: int, what: str) -> str:
    """``read_bytes`` decoded as UTF-8; text that is not UTF-8 is a one-line error too."""
    try:
        return read_bytes(path, limit, what).decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: {what} is not UTF-8 text") from None


def exists(path: Path) -> bool:
    """Does anything exist at ``path`` (a dangling link does not)?"""
    try:
        os.stat(path)
    except OSError:
        return False
    return True


def check_path(path: Path, flag: str) -> Path:
    """A file to write at the end of the run: its folder must exist and it must not be a folder."""
    if path.is_dir():
        raise ConfigError(f"{flag}: {path} is a directory; give a file name")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise ConfigError(f"{flag}: folder {parent} does not exist")
    return path


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` whole: readers (node_exporter's textfile collector, a browser) see the old
    file or the new one, never half of one. The temporary file is hidden and has no ``.prom``
    suffix, so the collector never reads it."""
    import tempfile  # only at the end of a run that writes a file

    directory = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def say(msg: str) -> None:
    """One line on stderr, cleaned (a file a run could not write)."""
    from coldwatch.sanitise import clean

    with contextlib.suppress(BrokenPipeError, ValueError):
        sys.stderr.write(clean(msg, 1000) + "\n")
        sys.stderr.flush()
