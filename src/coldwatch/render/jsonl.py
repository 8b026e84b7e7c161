"""NDJSON on stdout: one object per line, flushed, nothing else on stdout.

Text of remote origin is kept as it came, JSON-escaped: every control, bidi or invisible
character is a ``\\uXXXX`` escape (see sanitise.json_line), never a raw byte on the stream.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

from coldwatch import ending
from coldwatch.sanitise import json_line


class JsonSink:
    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stdout
        self.done = False

    def emit(self, ev: dict[str, Any]) -> None:
        if self.done or (ending.ending() is not None and ending.written("result")):
            return  # the result line is the last line
        if ev["event"] == "result":
            self.done = True
            if not ending.claim("result") and ending.ending() is not None:
                return  # a signal's watchdog wrote the run's result line already
        ev = {k: v for k, v in ev.items() if k != "changed"}
        try:
            self.stream.write(json_line(ev) + "\n")
            self.stream.flush()
        except BrokenPipeError:
            pass

    def close(self) -> None:
        pass
