"""The console entry point. ``coldwatch --version`` is answered before the CLI framework loads
(Typer and Click are most of a cold start's import time); everything else goes to ``cli.entry``."""

from __future__ import annotations

import sys


def entry() -> None:
    from coldwatch import ending
    from coldwatch.errors import Terminated

    ending.install()  # before the slow imports: a signal at any instant ends with a result line
    if sys.argv[1:] == ["--version"]:
        from coldwatch import __version__

        sys.stdout.write(f"coldwatch {__version__}\n")
        sys.stdout.flush()
        sys.exit(0)
    try:
        from coldwatch.cli import entry as cli_entry
    except (KeyboardInterrupt, Terminated):  # the signal came while the CLI was being imported
        from coldwatch.cli import interrupted  # later signals are ignored: this import completes

        interrupted(sys.argv[1:], ending.ending() or 130)
        ending.end(ending.ending() or 130)
    cli_entry()
