"""Plain lines on stderr: one per phase change, progress at most every 30 s, the verdict."""

from __future__ import annotations

import sys
from typing import Any, TextIO

from coldwatch.sanitise import clean

PROGRESS_EVERY = 30.0
LINE_LIMIT = 1000
"""Longest line written, in characters."""


def fmt_t(t: float | None) -> str:
    if t is None:
        return "   --  "
    m, s = divmod(int(t), 60)
    return f"{m:3d}:{s:02d}"


class PlainSink:
    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self._last_progress: dict[str, float] = {}

    def _w(self, text: str) -> None:
        # every line carries text of remote origin (evidence, model ids, error bodies, process
        # names, stderr): one pass of the sanitiser over the whole line makes all of it inert
        try:
            self.stream.write(clean(text, LINE_LIMIT) + "\n")
            self.stream.flush()
        except BrokenPipeError:
            pass

    def emit(self, ev: dict[str, Any]) -> None:
        kind = ev["event"]
        t = ev.get("t")
        if kind == "phase":
            rank = f" [{ev['rank']}]" if ev.get("rank") else ""
            self._w(f"{fmt_t(t)}  phase {ev['phase']}{rank}: {ev.get('evidence', '')[:120]}")
        elif kind == "progress":
            key = ev["phase"]
            last = self._last_progress.get(key)
            final = ev["done"] >= ev["total"]
            if last is None or t is None or t - last >= PROGRESS_EVERY or final:
                if final and last is not None and last < 0:
                    return
                self._last_progress[key] = -1.0 if final else (t or 0.0)
                if ev.get("unit") == "bytes":
                    left = f", ~{ev['eta_s']:.0f}s left" if ev.get("eta_s") is not None else ""
                    self._w(f"{fmt_t(t)}  {key}: read {size(ev['done'])} of {size(ev['total'])}, {ev.get('rate_mb_s', 0):.0f} MB/s{left}")
                else:
                    self._w(f"{fmt_t(t)}  {key} {ev['done']}/{ev['total']}")
        elif kind == "http":
            if ev.get("changed"):
                status = f" {ev['status']}" if ev.get("status") is not None else ""
                self._w(f"{fmt_t(t)}  http {ev['state']}{status}")
        elif kind == "check":
            self._w(f"{fmt_t(t)}  {'passed' if ev['passed'] else 'FAILED'}: {ev['detail']}")
        elif kind in ("warning", "stall"):
            self._w(f"{fmt_t(t)}  {kind}: {ev.get('message', '')}")
        elif kind == "result":
            self._w(f"{fmt_t(t)}  {verdict_line(ev)}")

    def close(self) -> None:
        pass


def size(n: float) -> str:
    """Bytes for people: 412 GB, 38 MB, 900 kB."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.0f} {unit}" if n >= 100 * scale else f"{n / scale:.1f} {unit}"
    return f"{int(n)} B"


def verdict_line(ev: dict[str, Any]) -> str:
    outcome = ev["outcome"]
    code = ev["exit_code"]
    phase = ev.get("phase") or "start-up (before any phase)"
    if outcome == "ready":
        return f"READY (exit {code})"
    kind = f" [{ev['failure_kind']}]" if ev.get("failure_kind") else ""
    return f"{outcome.upper()}{kind} in {phase} (exit {code}): {clean(ev.get('reason', ''), 500)}"
