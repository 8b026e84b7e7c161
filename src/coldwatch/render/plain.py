"""Plain lines on stderr: one per phase change, progress at most every 30 s, the verdict."""

from __future__ import annotations

import sys
from typing import Any, TextIO

from coldwatch.sanitise import clean

HISTORY_PHASES = ("dist_init", "weight_load", "marlin_repack", "draft_init", "kv_alloc", "jit_compile", "graph_capture", "warmup")
HISTORY_SHORT = ("dist", "load", "repack", "draft", "kv", "jit", "capture", "warmup")

PROGRESS_EVERY = 30.0
LINE_LIMIT = 1000
"""Longest line written, in characters."""


def fmt_t(t: float | None) -> str:
    if t is None:
        return "   --  "
    m, s = divmod(int(t), 60)
    return f"{m:3d}:{s:02d}"


class PlainSink:
    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self._last_progress: dict[str, float] = {}
        self._who = ""
        self._eta_phase: dict[str, str | None] = {}

    def _w(self, text: str) -> None:
        # every line carries text of remote origin (evidence, model ids, error bodies, process
        # names, stderr): one pass of the sanitiser over the whole line makes all of it inert
        try:
            self.stream.write(clean(self._who + text, LINE_LIMIT) + "\n")
            self.stream.flush()
        except BrokenPipeError:
            pass

    def emit(self, ev: dict[str, Any]) -> None:
        kind = ev["event"]
        t = ev.get("t")
        # a fleet's or a multi-node server's events say whose they are
        self._who = "".join(f"[{ev[k]}] " for k in ("target", "node") if ev.get(k))
        if kind == "phase":
            rank = f" [{ev['rank']}]" if ev.get("rank") else ""
            self._w(f"{fmt_t(t)}  phase {ev['phase']}{rank}: {ev.get('evidence', '')[:120]}")
        elif kind == "progress":
            key = self._who + ev["phase"]
            last = self._last_progress.get(key)
            final = ev["done"] >= ev["total"]
            if last is None or t is None or t - last >= PROGRESS_EVERY or final:
                if final and last is not None and last < 0:
                    return
                self._last_progress[key] = -1.0 if final else (t or 0.0)
                if ev.get("unit") == "bytes":
                    left = f", ~{ev['eta_s']:.0f}s left" if ev.get("eta_s") is not None else ""
                    self._w(
                        f"{fmt_t(t)}  {ev['phase']}: read {size(ev['done'])} of {size(ev['total'])}, {ev.get('rate_mb_s', 0):.0f} MB/s{left}"
                    )
                else:
                    self._w(f"{fmt_t(t)}  {ev['phase']} {ev['done']}/{ev['total']}")
        elif kind == "eta":
            if ev.get("phase") != self._eta_phase.get(self._who) and isinstance(ev.get("remaining_s"), int | float):
                self._eta_phase[self._who] = ev.get("phase")
                how = "at the load's rate" if ev.get("basis") == "progress" else "per phase, from history"
                self._w(f"{fmt_t(t)}  ETA ~{ev['remaining_s']:.0f}s until ready ({how})")
        elif kind == "load":
            self._w(f"{fmt_t(t)}  load: {ev.get('line', '')}")
        elif kind == "http":
            if ev.get("changed"):
                status = f" {ev['status']}" if ev.get("status") is not None else ""
                self._w(f"{fmt_t(t)}  http {ev['state']}{status}")
        elif kind == "check":
            self._w(f"{fmt_t(t)}  {'passed' if ev['passed'] else 'FAILED'}: {ev['detail']}")
        elif kind in ("warning", "stall"):
            self._w(f"{fmt_t(t)}  {kind}: {ev.get('message', '')}")
        elif kind == "result":
            self._w(f"{fmt_t(t)}  {verdict_line(ev)}")

    def close(self) -> None:
        pass


def size(n: float) -> str:
    """Bytes for people: 412 GB, 38 MB, 900 kB."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.0f} {unit}" if n >= 100 * scale else f"{n / scale:.1f} {unit}"
    return f"{int(n)} B"


def verdict_line(ev: dict[str, Any]) -> str:
    outcome = ev["outcome"]
    code = ev["exit_code"]
    phase = ev.get("phase") or "start-up (before any phase)"
    if outcome == "ready":
        return f"READY (exit {code})"
    kind = f" [{ev['failure_kind']}]" if ev.get("failure_kind") else ""
    return f"{outcome.upper()}{kind} in {phase} (exit {code}): {clean(ev.get('reason', ''), 500)}"


def fmt_dur(seconds: float) -> str:
    """A duration for people: '53s' under a minute, '3:46' (m:ss) over it, 'h:mm:ss' past an hour."""
    n = int(round(seconds))
    if n < 60:
        return f"{n}s"
    h, rest = divmod(n, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def print_timeline(spans: list[Any], res: dict[str, Any], out: TextIO) -> None:
    """`replay`'s story: one row per phase, then the verdict. A start or duration the log does not
    give (an excerpt without timestamps) shows as '?'; a phase still running at the end as '(open)'."""
    out.write("phase           start  duration  progress   began with\n")
    for s in spans:
        closed = getattr(s, "closed", s.end is not None)
        if s.phase == "ready":
            dur = ""
        elif not closed:
            dur = "(open)"
        elif s.start is None or s.end is None:
            dur = "?"
        else:
            dur = fmt_dur(s.end - s.start)
        start = fmt_t(s.start) if s.start is not None else "     ?"
        prog = f"{s.done}/{s.total}" if s.total else ""
        out.write(f"{s.phase:<14} {start:>6}  {dur:>8}  {prog:>8}   {clean(s.evidence, 100)}\n")
    if res.get("engine_timings"):
        out.write("engine's own timings (s): " + ", ".join(f"{k}={v:g}" for k, v in res["engine_timings"].items()) + "\n")
    out.write(verdict_line(res) + "\n")
    out.flush()


def print_status(snap: dict[str, Any], out: TextIO) -> None:
    """`status`'s snapshot for people."""
    w = out.write
    w(f"phase:   {snap['phase']}" + (f" ({snap['outcome']})" if snap["outcome"] != "pending" else "") + "\n")
    if snap.get("cause"):
        w(f"cause:   [{snap['failure_kind']}] {clean(snap['cause'], 500)}\n")
    h = snap.get("http")
    if h:
        w(f"http:    {h['state']}{' ' + str(h['status']) if h.get('status') else ''} {clean(h['detail'], 200)}\n")
    for g in snap.get("gpus") or []:
        w(f"GPU{g['index']}:    {(g['used_mib'] or 0) / 1024:.1f}/{(g['total_mib'] or 0) / 1024:.0f} GB  util {g['util']}%\n")
    sup = snap.get("supervisor")
    if sup:
        state = "running" if sup["running"] else "dead" if sup["dead"] else "stopped"
        w(f"unit:    {state}, restarts {sup['restarts']}\n")
    late = snap.get("errors_after_ready")
    if late:
        w(f"errors:  {late['count']} fatal-looking line(s) after ready, last: {clean(late['last'], 200)}\n")
    for msg in snap.get("warnings") or []:
        w(f"warning: {clean(msg, 300)}\n")
    w(f"last:    {clean(snap['last_line'], 150)}\n")
    out.flush()


def print_history(recs: list[dict[str, Any]], medians: dict[str, float | None], out: TextIO) -> None:
    """`history`'s table: one row per recorded start, phase durations in seconds."""
    w = out.write
    w(f"{'when':<20} {'target':<28} {'outcome':<11} " + " ".join(f"{s:>7}" for s in HISTORY_SHORT) + "   total\n")
    for r in recs:
        d = r.get("durations") or {}
        cells = " ".join(f"{d[p]:7.0f}" if p in d else f"{'-':>7}" for p in HISTORY_PHASES)
        total = f"{r['total']:7.0f}s" if isinstance(r.get("total"), (int, float)) else "      -"
        w(f"{str(r.get('ts') or '')[:19]:<20} {clean(str(r['target']), 28):<28} {str(r.get('outcome')):<11} {cells} {total}\n")
    for tgt, med in medians.items():
        if med:
            w(f"median ready start of {tgt}: {med:.0f}s\n")


def print_fleet(res: dict[str, Any], out: TextIO) -> None:
    """A fleet's closing table: one row per target, then the run's verdict."""
    rows = res.get("targets") or []
    width = min(max((len(clean(str(r["target"]), 40)) for r in rows), default=6), 40)
    out.write(f"{'target':<{width}}  {'outcome':<11} {'phase':<14} reason\n")
    for r in rows:
        kind = f"[{r['failure_kind']}] " if r.get("failure_kind") else ""
        out.write(
            f"{clean(str(r['target']), 40):<{width}}  {r['outcome']:<11} {str(r.get('phase') or '-'):<14} {kind}{clean(r.get('reason') or '', 120)}\n"
        )
    out.write(verdict_line(res) + "\n")
    out.flush()
