"""Sinks that show events: plain lines, NDJSON, or the Rich live panel. Rendering only renders."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol, TextIO

from coldwatch.errors import ConfigError


class Sink(Protocol):
    def emit(self, ev: dict[str, Any]) -> None: ...
    def close(self) -> None: ...


Processor = Callable[[dict[str, Any]], dict[str, Any] | None]
"""One stage before the renderers: the event as it goes on (changed or not), or None to drop it."""


def internal(ev: Mapping[str, Any]) -> bool:
    """An internal event: the live panel's and the report's feed (the log tail, disk rate, launch
    banner, slow phases, rows ...), never part of the event contract (DESIGN.md, Output). The one
    place that knows how they are told apart."""
    return str(ev.get("event", "")).startswith("_")


class Pipeline:
    """The sinks of a run as one sink: the processors in order, then every renderer. An internal
    event reaches only the renderers that take them (``takes_internal = True``: the live panel, the
    report); the contract's sinks (NDJSON, plain lines, CI, metrics) never see one, so none has to
    skip them."""

    def __init__(self, sinks: Iterable[Sink], processors: Iterable[Processor] = ()) -> None:
        self.sinks = list(sinks)
        self.processors = list(processors)

    def emit(self, ev: dict[str, Any]) -> None:
        for proc in self.processors:
            out = proc(ev)
            if out is None:
                return
            ev = out
        private = internal(ev)
        for sink in self.sinks:
            if not private or getattr(sink, "takes_internal", False):
                sink.emit(ev)

    def close(self) -> None:
        for sink in self.sinks:
            sink.close()


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


def ci_sinks(junit: Path | None, env: Mapping[str, str], mode: str = "plain", title: str = "this machine") -> list[Sink]:
    """The sinks a CI run adds to the chosen view: the verdict line on stderr when stdout is
    NDJSON (``mode`` json), workflow commands and a step summary under GitHub Actions
    (``GITHUB_ACTIONS=true``; the summary goes to ``$GITHUB_STEP_SUMMARY``), and a JUnit XML
    file for ``--junit``. A JUnit path whose folder does not exist is a usage error."""
    from coldwatch.render.ci import GithubSink, JunitSink, VerdictSink

    sinks: list[Sink] = []
    if mode == "json":
        sinks.append(VerdictSink())
    if env.get("GITHUB_ACTIONS") == "true":
        summary = env.get("GITHUB_STEP_SUMMARY")
        sinks.append(GithubSink(title, Path(summary) if summary else None))
    if junit is not None:
        junit = junit_path(junit)
        if not (junit.parent if str(junit.parent) else Path(".")).is_dir():
            raise ConfigError(f"--junit: folder {junit.parent} does not exist")
        sinks.append(JunitSink(junit, title))
    return sinks


def junit_path(junit: Path) -> Path:
    """Where --junit writes: a symbolic link is followed (the file it names is replaced, the link
    stays); anything there that is not a regular file (a FIFO, a device, a directory) is refused."""
    import stat

    real = Path(os.path.realpath(junit))
    try:
        mode = os.stat(real).st_mode
    except OSError:
        return real
    if stat.S_ISDIR(mode):
        raise ConfigError(f"--junit: {junit} is a directory; give a file name")
    if not stat.S_ISREG(mode):
        from coldwatch.files import _kind

        raise ConfigError(f"--junit: {junit} is {_kind(mode)}, not a regular file; give a file name")
    return real
