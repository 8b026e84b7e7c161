"""coldwatch: watch an LLM server's cold start until it is ready, failed or stuck.

Library use::

    import coldwatch
    verdict, timeline = coldwatch.replay_file("server.log")
    result = coldwatch.wait("gpu-host", unit="sglang", timeout="20m", output="plain")
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at start-up: the console entry point loads this package first
__version__ = "0.1.0"
__all__ = ["__version__", "replay_file", "wait"]

if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from coldwatch.phases import Span
    from coldwatch.verdict import Verdict


def replay_file(path: str | Path, engine: str | None = None) -> tuple[Verdict, list[Span]]:
    """Classify a saved start-up log: the verdict and the phase timeline (log clock)."""
    from coldwatch.replay import read_chunks, replay

    with open(path, "rb") as fh:
        j, verdict = replay(read_chunks(fh), engine=engine)
    return verdict, j.c.state.timeline()


def wait(host: str | None = None, **options: Any) -> dict[str, Any]:
    """Watch a cold start like `coldwatch wait`; returns the result event (exit_code inside)."""
    from coldwatch.hosts import open_host
    from coldwatch.monitor import Monitor
    from coldwatch.render.jsonl import JsonSink
    from coldwatch.render.plain import PlainSink
    from coldwatch.settings import resolve

    settings = resolve({"host": host, **options})
    sinks: list[Any] = [JsonSink()] if settings.output == "json" else [PlainSink()]
    h = open_host(settings)
    try:
        return Monitor(settings, h, sinks).run()
    finally:
        h.close()
