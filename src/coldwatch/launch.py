"""The console entry point. ``coldwatch --version`` is answered before the CLI framework loads
(Typer and Click are most of a cold start's import time); everything else goes to ``cli.entry``."""

from __future__ import annotations

import sys


def entry() -> None:
    if sys.argv[1:] == ["--version"]:
        from coldwatch import __version__

        sys.stdout.write(f"coldwatch {__version__}\n")
        sys.stdout.flush()
        sys.exit(0)
    from coldwatch.cli import entry as cli_entry

    cli_entry()
