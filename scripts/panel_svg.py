"""Regenerate docs/panel.svg: the live panel of a real `coldwatch demo` run, exported by Rich.

python scripts/panel_svg.py

The demo runs twice in a private history directory, so the picture shows the second run with the
first as its history (the "usual" column); the frame is the last one, at 100x30.
"""

from __future__ import annotations

import io
import os
import shutil
import sys
import tempfile
from pathlib import Path

from rich.console import Console

from coldwatch.demo import run_demo
from coldwatch.render.live import LiveSink
from coldwatch.render.panel import render_panel
from coldwatch.settings import resolve

ROOT = Path(__file__).resolve().parents[1]
WIDTH, HEIGHT = 100, 30


def main() -> int:
    home = tempfile.mkdtemp(prefix="coldwatch-panel-")
    os.environ["COLDWATCH_HOME"] = home
    try:
        code = 0
        sink = None
        for _ in range(2):
            console = Console(file=io.StringIO(), width=WIDTH, height=HEIGHT, force_terminal=True, color_system="truecolor")
            sink = LiveSink("demo", 180.0, console=console)
            settings = resolve({"timeout": "3m", "interval": 0.5})
            code = int(run_demo("ready", 0.5, settings, False, [sink]))
        assert sink is not None
        final = Console(file=io.StringIO(), width=WIDTH, record=True, force_terminal=True, color_system="truecolor")
        final.print(render_panel(sink.state, WIDTH, HEIGHT - 1))  # the last frame only
        final.save_svg(str(ROOT / "docs" / "panel.svg"), title="coldwatch demo")
    finally:
        shutil.rmtree(home, ignore_errors=True)
    print(f"demo exit {code}; wrote docs/panel.svg", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
