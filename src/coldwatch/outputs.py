"""The files and pushes a run leaves behind besides its exit code: ``--report FILE.html``,
``--metrics FILE`` and ``--pushgateway URL``. Each is a sink: it collects the event stream and
writes at the verdict, atomically; a write that fails is one line on stderr, never a changed
verdict. A path that cannot be written to (no such folder, a directory) is a usage error before
the watch begins."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from coldwatch.errors import ConfigError
from coldwatch.files import check_path, say, write_atomic

__all__ = ["check_path", "output_sinks", "say", "settings_sinks", "write_atomic"]


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
