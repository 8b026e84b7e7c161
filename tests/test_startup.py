"""Start-up cost: `coldwatch --version` answers before the CLI framework loads."""

from __future__ import annotations

import subprocess
import sys

from conftest import coldwatch
from typer.testing import CliRunner

from coldwatch.cli import app


def test_version_fast_path_matches_the_cli() -> None:
    """The fast path prints exactly what the Typer option prints, and exits 0."""
    fast = coldwatch("--version")
    slow = CliRunner().invoke(app, ["--version"])
    assert fast.returncode == 0 == slow.exit_code
    assert fast.stdout.decode() == slow.output


def test_version_does_not_load_the_cli_framework() -> None:
    """`--version` imports neither Typer nor Click (they are most of the start-up time)."""
    code = "import sys; sys.argv = ['coldwatch', '--version']\ntry:\n from coldwatch.launch import entry; entry()\nexcept SystemExit: pass\nprint(sorted(m for m in sys.modules if m.split('.')[0] in ('typer', 'click', 'rich', 'httpx', 'paramiko')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[-1] == "[]"


def test_other_arguments_reach_the_cli() -> None:
    """Anything but a lone --version goes to the full CLI (here: its usage error, exit 2)."""
    r = coldwatch("--no-such-flag")
    assert r.returncode == 2
    assert b"No such option" in r.stderr
