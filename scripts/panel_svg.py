"""Regenerate docs/panel.svg: the live panel of a real `coldwatch demo` run, exported by Rich.

python scripts/panel_svg.py
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

from rich.console import Console

from coldwatch.demo import run_demo
from coldwatch.render.live import LiveSink
from coldwatch.settings import resolve

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    os.environ.setdefault("COLDWATCH_HOME", str(ROOT / ".panel-home"))
    console = Console(file=io.StringIO(), width=100, record=True, force_terminal=True, color_system="truecolor")
    sink = LiveSink("gpu-host (demo)", 600.0, console=console)
    settings = resolve({"timeout": "10m", "interval": 0.5, "record": False})
    code = run_demo("ready", 0.5, settings, False, [sink])
    final = Console(file=io.StringIO(), width=100, record=True, force_terminal=True, color_system="truecolor")
    final.print(sink.render())  # the last frame only
    final.save_svg(str(ROOT / "docs" / "panel.svg"), title="coldwatch demo")
    print(f"demo exit {int(code)}; wrote docs/panel.svg", file=sys.stderr)
    return int(code)


if __name__ == "__main__":
    sys.exit(main())
