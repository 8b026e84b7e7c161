"""How a run ends on SIGINT or SIGTERM: at any instant, within a second, with 130 or 143, the
result line last on stdout and the JUnit file written.

The first signal raises ``KeyboardInterrupt`` (SIGINT) or ``Terminated`` (SIGTERM) in the main
thread, so the run closes what it opened and reports as usual; it also starts a watchdog that,
``GRACE`` seconds later, writes what is still missing (the result line, the JUnit file) through
the CLI's finisher and ends the process, whatever the main thread is blocked on (a fleet's
targets, an SSH handshake, a stuck library call). Later signals are ignored: the end is under way.

Light on purpose: installed by the console entry point before the CLI framework is imported.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

from coldwatch.errors import Terminated

GRACE = 0.75
"""Seconds the run has to end by itself after the signal before the watchdog ends it."""

CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}

_lock = threading.Lock()
_state: dict[str, Any] = {"code": None, "out": set()}
finisher: Callable[[int], None] | None = None
"""Writes the result line and the JUnit file that are still missing (set by the CLI)."""


def reset() -> None:
    global finisher
    with _lock:
        _state["code"] = None
        _state["out"] = set()
    finisher = None


def install() -> dict[int, Any]:
    """SIGINT and SIGTERM end the run as described above (main thread only); returns the handlers
    they replace, for ``restore``."""
    old: dict[int, Any] = {}
    with contextlib.suppress(ValueError):  # not the main thread: the caller keeps its own handlers
        for sig in (signal.SIGINT, signal.SIGTERM):
            old[sig] = signal.signal(sig, _handler)
    return old


def restore(old: dict[int, Any]) -> None:
    """Put back the handlers ``install`` replaced (a caller that runs the CLI in its own process)."""
    with contextlib.suppress(ValueError, TypeError):
        for sig, handler in old.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


def ending() -> int | None:
    """The exit code of a signal that is ending the run, or None."""
    return _state["code"]  # type: ignore[no-any-return]


def claim(what: str) -> bool:
    """True the first time ``what`` ("result", "junit") is written in this run, False after: the
    watchdog and the main thread never both write it."""
    with _lock:
        if what in _state["out"]:
            return False
        _state["out"].add(what)
        return True


def written(what: str) -> bool:
    return what in _state["out"]


def _handler(signum: int, frame: Any) -> None:
    with _lock:
        if _state["code"] is not None:
            return  # already ending
        code = CODES.get(signal.Signals(signum), 128 + signum)
        _state["code"] = code
    threading.Thread(target=_watchdog, args=(code,), name="coldwatch-ending", daemon=True).start()
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Terminated()


def _watchdog(code: int) -> None:
    threading.Event().wait(GRACE)
    end(code)


def end(code: int) -> None:
    """Write what is missing and end the process now (no waiting for other threads)."""
    fin = finisher
    if fin is not None:
        with contextlib.suppress(BaseException):
            fin(code)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BaseException):
            stream.flush()
    os._exit(code)
