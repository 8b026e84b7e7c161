"""Bounded reads of the files coldwatch is given (config, rules, targets, known_hosts, SSH
config, identity, history): a regular file of at most a known size, or a one-line error.

``/dev/zero`` as a config would otherwise be read until memory runs out, and a FIFO would
block the run forever before it starts; both are refused here without being opened.
"""

from __future__ import annotations

import os
import stat
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
