"""The console entry point. ``coldwatch --version`` is answered before the CLI framework loads
(Typer and Click are most of a cold start's import time); everything else goes to ``cli.main``.

Once the CLI has returned its exit code (the result written, every sink closed, the SSH connections
closed), the process ends without the interpreter's teardown: unloading the modules and the daemon
threads of the SSH transports took 50-110 ms between a verdict and the exit that a CI job waits for
(``python -m benchmarks.journald``)."""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # the C module, no stubs (``signal`` loads enum first)

_early: list[int] = []
"""A signal that came before ``ending`` was installed: handled as soon as it is."""


def _early_signal(signum: int, frame: object) -> None:
    if not _early:
        _early.append(signum)


_signal.signal(_signal.SIGINT, _early_signal)
_signal.signal(_signal.SIGTERM, _early_signal)

import os  # noqa: E402
import sys  # noqa: E402


def _exit_now(code: int) -> None:
    for stream in (sys.stdout, sys.stderr):
        try:  # noqa: SIM105 - contextlib is not loaded on the --version path
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def entry() -> None:
    from coldwatch import ending
    from coldwatch.errors import Terminated

    ending.install()  # before the slow imports: a signal at any instant ends with a result line
    if sys.argv[1:] == ["--version"]:
        from coldwatch import __version__

        sys.stdout.write(f"coldwatch {__version__}\n")
        sys.stdout.flush()
        sys.exit(0)  # nothing heavy is loaded yet: the teardown costs nothing here
    try:
        if _early:  # it came while ending was loading: end as if it came now
            os.kill(os.getpid(), _early[0])
        from coldwatch.cli import main
    except (KeyboardInterrupt, Terminated):  # the signal came while the CLI was being imported
        from coldwatch.cli import interrupted  # later signals are ignored: this import completes

        interrupted(sys.argv[1:], ending.ending() or 130)
        ending.end(ending.ending() or 130)
    code = main()
    if code in (130, 143):
        ending.end(code)  # a fleet's targets still winding down are not waited for
    _exit_now(code)
