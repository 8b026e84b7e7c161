"""The Rich live panel on stderr (the only owner of Rich Live).

Events fold into a PanelState; at each refresh the panel is laid out anew for the terminal's
size of the moment (render/panel.py), so a resize or a short terminal folds blocks instead of
cropping them. The last frame stays on screen after the verdict.
"""

from __future__ import annotations

import sys
import threading
from typing import Any, TextIO

from rich.console import Console, RenderableType
from rich.live import Live

from coldwatch.render.panel import PanelState, render_panel


class LiveSink:
    """Keeps a view of the events and redraws the panel (4 times a second, and at the verdict)."""

    takes_internal = True
    """The panel folds the internal events (render.Pipeline)."""

    def __init__(self, title: str, deadline: float, stream: TextIO | None = None, console: Console | None = None) -> None:
        self.console = console or Console(file=stream or sys.stderr)
        self.state = PanelState(target=title, deadline=deadline)
        self.lock = threading.Lock()
        self.live = Live(
            console=self.console,
            get_renderable=self.frame,
            refresh_per_second=4,
            transient=False,
            redirect_stdout=False,
            redirect_stderr=False,
            vertical_overflow="crop",
        )
        self.live.start()

    def emit(self, ev: dict[str, Any]) -> None:
        with self.lock:
            self.state.apply(ev)
        if ev.get("event") == "result":
            self.live.refresh()

    def frame(self) -> RenderableType:
        """The panel for the terminal's size now; one row short so the final newline scrolls nothing."""
        width, height = self.console.size
        with self.lock:
            return render_panel(self.state, width, height - 1)

    def render(self) -> RenderableType:
        return self.frame()

    def close(self) -> None:
        if self.live.is_started:
            self.live.stop()
