"""NDJSON on stdout: one object per line, flushed, nothing else on stdout."""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO


class JsonSink:
    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stdout

    def emit(self, ev: dict[str, Any]) -> None:
        if ev["event"].startswith("_"):
            return
        ev = {k: v for k, v in ev.items() if k != "changed"}
        try:
            self.stream.write(json.dumps(ev, ensure_ascii=False) + "\n")
            self.stream.flush()
        except BrokenPipeError:
            pass

    def close(self) -> None:
        pass
