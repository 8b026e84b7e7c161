"""Sinks that show events: plain lines, NDJSON, or the Rich live panel. Rendering only renders."""

from __future__ import annotations

import os
import sys
from typing import Any, Protocol, TextIO


class Sink(Protocol):
    def emit(self, ev: dict[str, Any]) -> None: ...
    def close(self) -> None: ...


def choose_output(requested: str, stream: TextIO | None = None) -> str:
    """auto -> live on a TTY outside CI, plain otherwise."""
    if requested != "auto":
        return requested
    stream = stream or sys.stderr
    if os.environ.get("CI") or os.environ.get("TERM") == "dumb":
        return "plain"
    try:
        return "live" if stream.isatty() else "plain"
    except (AttributeError, ValueError):
        return "plain"
