"""The files and pushes a run leaves behind besides its exit code: ``--report FILE.html``,
``--metrics FILE`` and ``--pushgateway URL``. Each is a sink: it collects the event stream and
writes at the verdict, atomically; a write that fails is one line on stderr, never a changed
verdict. A path that cannot be written to (no such folder, a directory) is a usage error before
the watch begins."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from coldwatch.errors import ConfigError


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
    from coldwatch.sanitise import clean

    with contextlib.suppress(BrokenPipeError, ValueError):
        sys.stderr.write(clean(msg, 1000) + "\n")
        sys.stderr.flush()


def output_sinks(
    target: str,
    command: str,
    report: Path | None = None,
    metrics: Path | None = None,
    pushgateway: str | None = None,
) -> list[Any]:
    """The sinks for the options given (none when none is)."""
    sinks: list[Any] = []
    if report is not None:
        from coldwatch.report import ReportSink

        sinks.append(ReportSink(check_path(report, "--report"), target, command))
    if metrics is not None or pushgateway is not None:
        from coldwatch.metrics import MetricsSink, check_pushgateway

        if metrics is not None:
            check_path(metrics, "--metrics")
        if pushgateway is not None:
            check_pushgateway(pushgateway, "--pushgateway")
        sinks.append(MetricsSink(target, metrics, pushgateway))
    return sinks


def settings_sinks(settings: Any, command: str = "wait") -> list[Any]:
    """``output_sinks`` for a run's resolved settings (``command`` wait, status or fleet)."""
    if command == "fleet" and getattr(settings, "report", None) is not None:
        raise ConfigError("--report: a report shows one server's start; give it per target (coldwatch wait HOST --report FILE)")
    return output_sinks(
        settings.target_name(),
        command,
        getattr(settings, "report", None),
        getattr(settings, "metrics", None) if command != "status" else None,
        getattr(settings, "pushgateway", None) if command != "status" else None,
    )
