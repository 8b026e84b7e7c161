"""The Rich live panel on stderr (the only owner of Rich Live)."""

from __future__ import annotations

import sys
import time
from collections import deque
from typing import Any, TextIO

from rich.console import Console, Group
from rich.live import Live
from rich.panel import Panel
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from coldwatch.phases.rules import PHASES
from coldwatch.render.plain import size, verdict_line
from coldwatch.sanitise import clean

HTTP_LABEL = {
    "refused": "port not bound yet (connection refused)",
    "timeout": "no answer (timeout)",
    "status": "HTTP answering",
    "ready": "completion returned",
    "error": "error",
}


def _dur(s: float | None) -> str:
    if s is None:
        return ""
    m, sec = divmod(int(s), 60)
    return f"{m}m{sec:02d}s" if m else f"{sec}s"


class LiveSink:
    """Keeps a view of the events and redraws the panel."""

    def __init__(self, title: str, deadline: float, stream: TextIO | None = None, console: Console | None = None) -> None:
        self.title = title
        self.deadline = deadline
        self.console = console or Console(file=stream or sys.stderr)
        self.started: dict[str, float] = {}
        self.ended: dict[str, float] = {}
        self.current = "starting"
        self.progress: dict[str, tuple[int, int]] = {}
        self.evidence = ""
        self.gpus: list[dict[str, Any]] = []
        self.http: dict[str, Any] | None = None
        self.lines: deque[str] = deque(maxlen=5)
        self.warnings: deque[str] = deque(maxlen=3)
        self.disk: dict[str, Any] | None = None
        self.bytes_progress: dict[str, Any] | None = None
        self.jit: list[str] = []
        self.eta: float | None = None
        self.t = 0.0
        self.last_log_t = 0.0
        self.result: dict[str, Any] | None = None
        self.live = Live(self.render(), console=self.console, refresh_per_second=4, transient=False, redirect_stdout=False)
        self.live.start()

    def emit(self, ev: dict[str, Any]) -> None:
        kind = ev["event"]
        t = ev.get("t") or 0.0
        self.t = max(self.t, t)
        if kind == "phase":
            ph = ev["phase"]
            if self.current in self.started and self.current != ph:
                self.ended.setdefault(self.current, t)
            self.started.setdefault(ph, t)
            self.ended.pop(ph, None)
            self.current = ph
            self.evidence = clean(ev.get("evidence", ""), 110)
        elif kind == "progress":
            if ev.get("unit") == "bytes":
                self.bytes_progress = ev
            else:
                self.progress[ev["phase"]] = (ev["done"], ev["total"])
                self.eta = ev.get("eta_s", self.eta)
        elif kind == "gpu":
            self.gpus = ev["gpus"]
        elif kind == "http":
            self.http = {**ev, "detail": clean(ev.get("detail", ""), 60)}
        elif kind == "_log":
            text = clean(ev["text"], 110)
            is_bar = "% Completed" in text or "%|" in text
            if is_bar and self.lines and ("% Completed" in self.lines[-1] or "%|" in self.lines[-1]):
                self.lines[-1] = text
            else:
                self.lines.append(text)
            self.last_log_t = t
        elif kind == "_disk":
            self.disk = ev
        elif kind == "_jit":
            self.jit = [clean(n, 32) for n in ev["names"]]
        elif kind in ("warning", "stall"):
            self.warnings.append(clean(ev.get("message", ""), 120))
        elif kind == "result":
            self.result = ev
            if ev["outcome"] == "ready":
                self.ended.setdefault(self.current, t)
                self.started.setdefault("ready", t)
                self.current = "ready"
        self.live.update(self.render())

    def render(self) -> Panel:
        phases = Table.grid(padding=(0, 1))
        for ph in PHASES[1:]:
            if ph in self.started:
                start = self.started[ph]
                end = self.ended.get(ph)
                if ph == self.current and (self.result is None or self.result["outcome"] != "ready"):
                    mark, style = "▶", "bold cyan"
                    dur = _dur(self.t - start)
                else:
                    mark, style = "✓", "green"
                    dur = _dur((end if end is not None else self.t) - start) if ph != "ready" else ""
                prog = self.progress.get(ph)
                extra = f"{prog[0]}/{prog[1]}" if prog else ""
                phases.add_row(Text(mark, style=style), Text(ph, style=style), Text(dur), Text(extra, style="dim"))
            else:
                phases.add_row(Text("·", style="dim"), Text(ph, style="dim"), Text(""), Text(""))
        parts: list[Any] = [phases]
        prog = self.progress.get(self.current)
        if prog and prog[1]:
            parts.append(Group(Text(f"{self.current}: {prog[0]}/{prog[1]}"), ProgressBar(total=prog[1], completed=prog[0], width=50)))
        bp = self.bytes_progress
        if bp and self.current in ("weight_load", "dist_init", "starting") and bp.get("total"):
            left = f", ~{_dur(bp['eta_s'])} left" if bp.get("eta_s") is not None else ""
            parts.append(Text(f"weights read: {size(bp['done'])} of {size(bp['total'])}, {bp.get('rate_mb_s', 0):.0f} MB/s{left}"))
        if self.evidence:
            parts.append(Text(f"evidence: {self.evidence}", style="dim"))
        quiet = self.t - self.last_log_t
        if quiet > 10 and self.result is None:
            why = []
            if self.disk and self.disk.get("rate"):
                why.append(f"still reading {self.disk['rate'] / 1e6:.0f} MB/s from disk")
            if self.jit:
                why.append(f"JIT: {', '.join(self.jit)} running")
            if any((g.get("util") or 0) > 0 for g in self.gpus):
                why.append("GPUs busy")
            parts.append(Text(f"log quiet for {quiet:.0f}s" + (" — " + "; ".join(why) if why else ""), style="yellow"))
        if self.gpus:
            grid = Table.grid(padding=(0, 1))
            for g in self.gpus[:16]:
                used, total = g.get("used_mib") or 0, g.get("total_mib") or 0
                grid.add_row(
                    Text(f"GPU{g['index']}"),
                    ProgressBar(total=max(total, 1), completed=used, width=30),
                    Text(f"{used / 1024:5.1f}/{total / 1024:.0f} GB  {g.get('util') or 0:3d}%"),
                )
            parts.append(grid)
        if self.http:
            status = f" {self.http['status']}" if self.http.get("status") else ""
            parts.append(Text(f"HTTP: {HTTP_LABEL.get(self.http['state'], self.http['state'])}{status}  {self.http['detail']}"))
        for line in self.lines:
            parts.append(Text(f"│ {line}", style="dim"))
        for w in self.warnings:
            parts.append(Text(f"⚠ {w}", style="yellow"))
        deadline = f" / {_dur(self.deadline)}" if self.deadline else ""
        eta = f"   ETA {_dur(max(self.eta, 0))}" if self.eta is not None and self.result is None else ""
        parts.append(Text(f"elapsed {_dur(self.t)}{deadline}{eta}", style="bold"))
        if self.result is not None:
            ok = self.result["outcome"] == "ready"
            parts.append(Text(verdict_line(self.result), style="bold green" if ok else "bold red"))
        # a str title would be read as Rich markup; Text never is
        return Panel(Group(*parts), title=Text(f"coldwatch · {clean(self.title, 80)}"), title_align="left")

    def close(self) -> None:
        self.live.update(self.render())
        self.live.stop()
        time.sleep(0)
