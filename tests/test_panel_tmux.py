"""The live panel in real terminals (tmux) of three sizes, watching the demo: mid-run it shows the
current phase, its progress, elapsed and ETA; at the end the verdict (and the cause); no row is cut
at the right edge."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

SIZES = ((80, 24), (100, 30), (200, 50))
pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux not installed")]


def capture(sock: str, name: str) -> str:
    return subprocess.run(["tmux", "-S", sock, "capture-pane", "-p", "-t", name], capture_output=True, text=True).stdout


def whole(screen: str) -> bool:
    """A frame that tmux has fully drawn: Rich redraws top-down over erased rows, so a capture taken
    mid-redraw ends in a partial row instead of the bottom border."""
    rows = screen.rstrip("\n").splitlines()
    return bool(rows) and rows[-1].startswith("╰")


def mid_run(screen: str) -> bool:
    """The current phase with a progress count and an ETA, and the elapsed time, are on screen."""
    return bool(re.search(r"▶ \w+ \S+ \d+/\d+ .*ETA \d", screen)) and "elapsed " in screen


def cut_rows(screen: str, width: int) -> list[str]:
    """Panel rows that are not whole: a box cut by the terminal, or text that runs to the right edge.
    The panel lays its rows out one cell short of the border's padding and ends text that is too long
    with an ellipsis, so a row that fills that last cell was cropped or wrapped, not laid out."""
    bad = []
    for row in screen.splitlines():
        if not row.startswith(("│", "╭", "╰")):
            continue
        boxed = len(row) == width and row.endswith(("│", "╮", "╯"))
        if not boxed or (row.startswith("│") and row[-3] != " "):
            bad.append(row)
    return bad


@pytest.mark.parametrize(("scenario", "code"), [("ready", 0), ("oom", 3)])
def test_demo_panel_at_three_terminal_sizes(tmp_path: Path, scenario: str, code: int) -> None:
    """80x24, 100x30 and 200x50 side by side: the panel fits each and says what matters."""
    sock = str(tmp_path / "tmux.sock")
    env = {**os.environ, "TERM": "xterm-256color"}
    env.pop("CI", None)
    for w, h in SIZES:
        out = tmp_path / f"exit-{w}"
        cmd = f"{sys.executable} -m coldwatch demo --scenario {scenario} --speed 0.3; echo $? > {out}; sleep 60"
        subprocess.run(["tmux", "-S", sock, "new-session", "-d", "-s", f"s{w}", "-x", str(w), "-y", str(h), cmd], check=True, env=env)
    mids: dict[int, str] = {}
    finals: dict[int, str] = {}
    try:
        deadline = time.monotonic() + 60
        while len(finals) < len(SIZES) and time.monotonic() < deadline:
            for w, _ in SIZES:
                if w in finals:
                    continue
                done = (tmp_path / f"exit-{w}").exists()
                screen = capture(sock, f"s{w}")
                if not whole(screen):
                    continue
                if done:
                    finals[w] = screen
                elif w not in mids and mid_run(screen):
                    mids[w] = screen
                assert not cut_rows(screen, w), screen
            time.sleep(0.05)
    finally:
        subprocess.run(["tmux", "-S", sock, "kill-server"], capture_output=True)
    for w, h in SIZES:
        assert (tmp_path / f"exit-{w}").read_text().strip() == str(code)
        assert w in mids, f"{w}x{h}: no mid-run frame with the phase, its progress, elapsed and ETA"
        final = finals[w]
        assert "╭─ coldwatch · demo" in final and "╰" in final, final  # the whole panel, top to bottom
        assert "▶" not in final, final
        if scenario == "ready":
            assert "✓ READY (exit 0)" in final, final
        else:
            assert "✗ FAILED [oom] in graph_capture (exit 3)" in final and "CUDA out of memory" in final, final
            assert "✗ graph_capture" in final, final
