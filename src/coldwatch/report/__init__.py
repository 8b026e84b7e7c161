"""A start's report (``--report FILE.html``) and the history's (``history --report``): a pure model
folded from the event stream (``model``), laid out as one offline HTML page (``html``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from coldwatch.report.html import render, render_history
from coldwatch.report.model import Collector, Report

__all__ = ["Collector", "Report", "ReportSink", "render", "render_history", "write_history_report"]


class ReportSink:
    """Collects every event; writes the page when the result (or a status snapshot) arrives."""

    takes_internal = True  # the log tail and load lines (render.Pipeline)

    def __init__(self, path: Path, target: str, command: str = "wait") -> None:
        self.path = path
        self.target = target
        self.collector = Collector(target, command)
        self.written = False
        self.baseline, self.starts = _baseline(target)  # before this start is recorded

    def emit(self, ev: dict[str, Any]) -> None:
        self.collector.emit(ev)
        if ev.get("event") in ("result", "status"):
            self.write()

    def write(self) -> None:
        from coldwatch.files import say, write_atomic

        c = self.collector
        baseline = c.info.get("baseline") if isinstance(c.info.get("baseline"), dict) and c.info.get("baseline") else self.baseline
        try:
            write_atomic(self.path, render(c.report(baseline, self.starts)))
        except OSError as exc:
            say(f"coldwatch: --report {self.path}: not written: {exc.strerror or exc}")
            return
        self.written = True

    def close(self) -> None:
        if not self.written and (self.collector.result is not None or self.collector.snapshot is not None):
            self.write()


def _baseline(target: str) -> tuple[dict[str, float], int]:
    from coldwatch import history
    from coldwatch.errors import ConfigError

    try:
        recs = history.load()
    except ConfigError:
        return {}, 0
    ready = [r for r in recs if r.get("target") == target and r.get("outcome") == "ready"]
    return history.baseline(target, records=recs), len(ready)


def write_history_report(path: Path, records: list[dict[str, Any]], target: str | None) -> None:
    from coldwatch.files import check_path, write_atomic

    check_path(path, "--report")
    try:
        write_atomic(path, render_history(records, target))
    except OSError as exc:
        from coldwatch.errors import ConfigError

        raise ConfigError(f"--report {path}: not written: {exc.strerror or exc}") from None
