"""A report as one self-contained HTML page: inline SVG and CSS, no script, nothing fetched.

Hand-written SVG: the charts are bars on a time axis, a few polylines and bands, which take less
code than a plotting library's configuration, add no dependency, render the same offline in any
browser and print, and let every shape carry its data (``data-phase``, ``data-start``,
``data-end``) so a test can check the drawing against the figures. The page's Content Security
Policy forbids scripts and every fetch, so even a bug in escaping could not load anything.

Every piece of remote text (log lines, model names, reasons, frames) passes ``sanitise.clean``
and then HTML escaping before it is written.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable
from typing import Any

from coldwatch import __version__
from coldwatch.phases.rules import PHASES
from coldwatch.report.model import Lane, Report, Series, Span
from coldwatch.sanitise import clean

COLOURS = {
    "starting": "#9aa5b1",
    "dist_init": "#7b8cde",
    "weight_load": "#2f80ed",
    "marlin_repack": "#56ccf2",
    "draft_init": "#9b51e0",
    "kv_alloc": "#27ae60",
    "jit_compile": "#f2994a",
    "graph_capture": "#e2b93b",
    "warmup": "#6fcf97",
    "ready": "#219653",
    "unknown": "#bdbdbd",
}
LINE_COLOURS = ("#2f80ed", "#eb5757", "#27ae60", "#f2994a", "#9b51e0", "#56ccf2", "#e2b93b", "#333333")
OUTCOME_COLOURS = {"ready": "#219653", "failed": "#c0392b", "stalled": "#d35400", "timeout": "#b7950b", "unreachable": "#7f8c8d"}

W = 1000
"""Width of every chart in SVG units (the page scales it to the window)."""
LEFT = 170
"""Room for the row labels left of the time axis."""
RIGHT = 20

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1100px;padding:16px 24px;color:#222;background:#fff}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:22px 0 6px;border-bottom:1px solid #ddd;padding-bottom:3px}
.sub{color:#555;margin:0 0 10px}.outcome{display:inline-block;padding:1px 8px;border-radius:3px;color:#fff;font-weight:600}
table{border-collapse:collapse;margin:4px 0}td,th{padding:2px 10px 2px 0;text-align:left;vertical-align:top}
th{color:#555;font-weight:600}td.n{text-align:right;font-variant-numeric:tabular-nums}
.head td:first-child{color:#555;padding-right:16px}
svg{width:100%;height:auto;display:block}svg text{font:11px system-ui,sans-serif;fill:#333}
.note{color:#666;font-size:12.5px}.slower{color:#c0392b;font-weight:600}
.ex{margin:6px 0 12px}.ex h3{font-size:13px;margin:0 0 2px}
pre{background:#f6f8fa;border:1px solid #e1e4e8;padding:6px 8px;margin:0;overflow-x:auto;font:12px/1.4 ui-monospace,Menlo,Consolas,monospace;white-space:pre-wrap;word-break:break-all}
pre .hit{background:#fff3bf;display:block}.culprit{color:#c0392b;font-weight:600}
@media print{body{max-width:none;padding:0}h2{break-after:avoid}svg,.ex{break-inside:avoid}}
"""


def esc(text: object, limit: int | None = 300) -> str:
    """Remote text for the page: inert (``clean``) and HTML-escaped."""
    return html.escape(clean(text, limit), quote=True)


def secs(s: float | None) -> str:
    if s is None:
        return "–"
    if s < 60:
        return f"{s:.1f} s" if s < 10 else f"{s:.0f} s"
    m, r = divmod(int(round(s)), 60)
    if m < 60:
        return f"{m}m {r:02d}s"
    h, m = divmod(m, 60)
    return f"{h}h {m:02d}m"


def _f(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".") if not math.isnan(x) else "0"


def _ticks(span: float, n: int = 8) -> list[float]:
    """Round tick positions from 0 to ``span``."""
    if span <= 0:
        return [0.0]
    raw = span / n
    if raw > 20:  # minutes and hours on round marks
        step = next((m for m in (30, 60, 120, 300, 600, 900, 1200, 1800, 3600, 7200) if m >= raw), 3600 * math.ceil(raw / 3600))
    else:
        mag = 10 ** math.floor(math.log10(raw))
        step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    out, x = [], 0.0
    while x <= span + 1e-9:
        out.append(round(x, 6))
        x += step
    return out


class Axis:
    """Seconds -> x in SVG units, over [0, end]."""

    def __init__(self, end: float) -> None:
        self.end = max(end, 1.0)
        self.scale = (W - LEFT - RIGHT) / self.end

    def x(self, t: float) -> float:
        return LEFT + max(0.0, min(t, self.end)) * self.scale

    def grid(self, top: float, bottom: float) -> list[str]:
        out = []
        for t in _ticks(self.end):
            x = self.x(t)
            out.append(f'<line x1="{_f(x)}" y1="{_f(top)}" x2="{_f(x)}" y2="{_f(bottom)}" stroke="#eee"/>')
            out.append(f'<text x="{_f(x)}" y="{_f(bottom + 13)}" text-anchor="middle">{secs(t)}</text>')
        return out


def _svg(height: float, body: Iterable[str], label: str, **data: Any) -> str:
    attrs = "".join(f' data-{k.replace("_", "-")}="{html.escape(str(v), quote=True)}"' for k, v in data.items())
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {_f(height)}" role="img" '
        f'aria-label="{html.escape(label, quote=True)}"{attrs}>' + "".join(body) + "</svg>"
    )


def _bands(axis: Axis, bands: list[Span], top: float, bottom: float, labels: bool = True) -> list[str]:
    out = []
    for b in bands:
        x0, x1 = axis.x(b.start), axis.x(b.end)
        colour = COLOURS.get(b.phase, COLOURS["unknown"])
        out.append(
            f'<rect class="band" data-phase="{esc(b.phase, 40)}" x="{_f(x0)}" y="{_f(top)}" width="{_f(max(x1 - x0, 0))}" '
            f'height="{_f(bottom - top)}" fill="{colour}" fill-opacity="0.12"/>'
        )
        if labels and x1 - x0 > len(b.phase) * 6.5 + 8:
            out.append(f'<text x="{_f(x0 + 3)}" y="{_f(top + 11)}" fill="#555">{esc(b.phase, 40)}</text>')
    return out


def timeline_svg(r: Report) -> str:
    """One row per phase of the server (bars on a shared time axis), then one lane per node and
    rank the log or the stacks named, the failure or stall marked across all of them."""
    end = max([s.end for s in r.spans] + [r.total, r.mark[0] if r.mark else 0.0, 1.0])
    axis = Axis(end)
    row, lane_h, top = 22, 16, 8
    rows = [s for s in r.spans]
    lanes = r.lanes
    height = top + len(rows) * row + (12 + len(lanes) * lane_h if lanes else 0) + 24
    body: list[str] = []
    bottom = height - 22
    body += axis.grid(top, bottom)
    y = top
    for s in rows:
        colour = COLOURS.get(s.phase, COLOURS["unknown"])
        x0, x1 = axis.x(s.start), axis.x(s.end)
        body.append(f'<text x="{LEFT - 8}" y="{_f(y + 15)}" text-anchor="end">{esc(s.phase, 40)}</text>')
        if s.phase == "ready":
            body.append(
                f'<path class="ready" data-phase="ready" data-start="{_f(s.start)}" d="M{_f(x0)} {_f(y + 3)} l7 8 l-7 8 l-7 -8 z" fill="{colour}"/>'
            )
            right = x0 + 110 > W
            body.append(
                f'<text x="{_f(x0 - 10 if right else x0 + 10)}" y="{_f(y + 15)}" text-anchor="{"end" if right else "start"}">ready at {secs(s.start)}</text>'
            )
        else:
            edge = ' stroke="#c0392b" stroke-width="2"' if s.open and r.outcome != "ready" else ""
            title = f"{s.phase}: {secs(s.start)} → {secs(s.end)} ({secs(s.end - s.start)})"
            body.append(
                f'<rect class="span" data-phase="{esc(s.phase, 40)}" data-start="{_f(s.start)}" data-end="{_f(s.end)}" '
                f'x="{_f(x0)}" y="{_f(y + 3)}" width="{_f(max(x1 - x0, 1.0))}" height="{row - 6}" rx="2" fill="{colour}"'
                f"{edge}><title>{esc(title)}</title></rect>"
            )
            text = secs(s.end - s.start)
            tx = x1 + 4 if x1 + 60 < W else x0 - 4
            anchor = "start" if x1 + 60 < W else "end"
            body.append(f'<text x="{_f(tx)}" y="{_f(y + 15)}" text-anchor="{anchor}">{text}</text>')
        y += row
    if lanes:
        y += 6
        body.append(f'<line x1="{LEFT}" y1="{_f(y)}" x2="{W - RIGHT}" y2="{_f(y)}" stroke="#ccc"/>')
        y += 6
        for ln in lanes:
            body += _lane(axis, ln, y, lane_h)
            y += lane_h
    if r.mark is not None:
        t, label = r.mark
        x = axis.x(t)
        body.append(
            f'<line class="mark" data-t="{_f(t)}" x1="{_f(x)}" y1="{top}" x2="{_f(x)}" y2="{_f(bottom)}" stroke="#c0392b" '
            f'stroke-width="2" stroke-dasharray="5 3"/>'
        )
        anchor = "end" if x > W / 2 else "start"
        dx = -4 if anchor == "end" else 4
        body.append(f'<text x="{_f(x + dx)}" y="{top + 9}" text-anchor="{anchor}" fill="#c0392b" font-weight="600">{esc(label, 60)}</text>')
    return _svg(height, body, "phase timeline", px_per_s=f"{axis.scale:.6g}", x0=LEFT, end=_f(axis.end))


def _lane(axis: Axis, ln: Lane, y: float, h: float) -> list[str]:
    cls = ' class="culprit"' if ln.culprit else ""
    label = ln.label + (f" · {ln.state}" if ln.state else "")
    out = [f'<text x="{LEFT - 8}" y="{_f(y + 12)}" text-anchor="end"{cls}>{esc(label, 40)}</text>']
    fill = "#c0392b" if ln.culprit else "#8895a7"
    out.append(f'<rect x="{LEFT}" y="{_f(y + 3)}" width="{W - LEFT - RIGHT}" height="{_f(h - 6)}" fill="#f4f5f7"/>')
    for t in sorted(ln.ticks):
        out.append(f'<rect x="{_f(axis.x(t))}" y="{_f(y + 3)}" width="1.2" height="{_f(h - 6)}" fill="{fill}"/>')
    for t, ph in ln.entries:
        x = axis.x(t)
        colour = COLOURS.get(ph, COLOURS["unknown"])
        out.append(
            f'<path class="entry" data-phase="{esc(ph, 40)}" data-t="{_f(t)}" d="M{_f(x)} {_f(y + 2)} l5 6 l-5 6 l-5 -6 z" fill="{colour}" '
            f'stroke="#fff" stroke-width="0.8"><title>{esc(ln.label)} enters {esc(ph, 40)} at {secs(t)}</title></path>'
        )
    if ln.frame:
        out.append(f'<text x="{W - RIGHT - 2}" y="{_f(y + 12)}" text-anchor="end"{cls}>{esc(ln.frame, 90)}</text>')
    return out


def chart_svg(series: list[Series], bands: list[Span], end: float, unit: str, label: str, ymax: float | None = None) -> str:
    """Lines over time on the phases as background bands, a y axis in ``unit``."""
    axis = Axis(end)
    top, h = 16, 180
    bottom = top + h
    peak = max([v for s in series for _, v in s.points] + [ymax or 0.0, 1e-9])
    yt = _ticks(peak, 5)
    ytop = max(yt[-1], peak)

    def y(v: float) -> float:
        return bottom - (v / ytop) * h

    body = _bands(axis, bands, top, bottom)
    body += axis.grid(top, bottom)
    for v in yt:
        body.append(f'<line x1="{LEFT}" y1="{_f(y(v))}" x2="{W - RIGHT}" y2="{_f(y(v))}" stroke="#eee"/>')
        body.append(f'<text x="{LEFT - 6}" y="{_f(y(v) + 4)}" text-anchor="end">{v:.3g} {esc(unit, 20)}</text>')
    legend_y = bottom + 30
    for i, s in enumerate(series):
        colour = LINE_COLOURS[i % len(LINE_COLOURS)]
        pts = " ".join(f"{_f(axis.x(t))},{_f(y(v))}" for t, v in s.points)
        if len(s.points) == 1:
            t, v = s.points[0]
            body.append(f'<circle cx="{_f(axis.x(t))}" cy="{_f(y(v))}" r="3" fill="{colour}"/>')
        elif pts:
            body.append(
                f'<polyline class="series" data-name="{esc(s.name, 60)}" points="{pts}" fill="none" stroke="{colour}" stroke-width="1.6"/>'
            )
        lx = LEFT + (i % 6) * 135
        ly = legend_y + (i // 6) * 14
        body.append(f'<rect x="{lx}" y="{_f(ly - 8)}" width="10" height="3" fill="{colour}"/>')
        body.append(f'<text x="{lx + 14}" y="{_f(ly - 4)}">{esc(s.name, 22)}</text>')
    height = legend_y + ((len(series) - 1) // 6 + 1) * 14
    return _svg(height, body, label, px_per_s=f"{axis.scale:.6g}", x0=LEFT)


def compare_svg(r: Report) -> str:
    """Each phase: this start's bar over the history median's (thin), slower ones in red."""
    rows = [c for c in r.compare if c.median is not None or c.seconds > 0]
    peak = max([c.seconds for c in rows] + [c.median or 0.0 for c in rows] + [1.0])
    axis = Axis(peak * 1.4)  # room right of the longest bar for its figures
    row, top = 22, 8
    height = top + len(rows) * row + 24
    body = axis.grid(top, height - 22)
    y = top
    for c in rows:
        colour = "#c0392b" if c.slower else COLOURS.get(c.phase, COLOURS["unknown"])
        body.append(f'<text x="{LEFT - 8}" y="{_f(y + 15)}" text-anchor="end">{esc(c.phase, 40)}</text>')
        body.append(
            f'<rect class="this" data-phase="{esc(c.phase, 40)}" data-seconds="{_f(c.seconds)}" x="{LEFT}" y="{_f(y + 3)}" '
            f'width="{_f(max(axis.x(c.seconds) - LEFT, 1.0))}" height="10" fill="{colour}"/>'
        )
        if c.median is not None:
            body.append(
                f'<rect class="median" data-phase="{esc(c.phase, 40)}" data-seconds="{_f(c.median)}" x="{LEFT}" y="{_f(y + 14)}" '
                f'width="{_f(max(axis.x(c.median) - LEFT, 1.0))}" height="4" fill="#555"/>'
            )
        text = secs(c.seconds) + (f" (median {secs(c.median)})" if c.median is not None else "") + (" slower" if c.slower else "")
        cls = ' class="slower"' if c.slower else ""
        body.append(f'<text x="{_f(axis.x(max(c.seconds, c.median or 0)) + 4)}" y="{_f(y + 13)}"{cls}>{text}</text>')
        y += row
    return _svg(height, body, "this start against the history median", px_per_s=f"{axis.scale:.6g}", x0=LEFT)


def _page(title: str, body: list[str]) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{title}</title><style>{CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n"
    )


def _outcome(outcome: str) -> str:
    colour = OUTCOME_COLOURS.get(outcome, "#7f8c8d")
    return f'<span class="outcome" style="background:{colour}">{esc(outcome.upper(), 20)}</span>'


def render(r: Report) -> str:
    """The start's page: its head (what, outcome, cause), then phases, GPU memory, weight load and
    the history, each section saying what it lacks when the start gave nothing for it."""
    body = _head(r)
    if r.snapshot is not None:
        body += _snapshot(r.snapshot)
    body += _phases(r)
    if r.ranks:
        body += _ranks(r)
    if r.nodes:
        body += _nodes(r)
    end = max([s.end for s in r.spans] + [r.total, 1.0])
    body += _gpu_memory(r, end)
    body += _weight_load(r, end)
    body += _history(r)
    body += _excerpts(r)
    if r.warnings:
        body.append("<h2>Warnings</h2><ul>" + "".join(f"<li>{esc(w)}</li>" for w in r.warnings) + "</ul>")
    return _page(f"coldwatch: {esc(r.target, 120)} {esc(r.outcome, 20)}", body)


def _head(r: Report) -> list[str]:
    what = " ".join(x for x in (r.engine, r.version) if x) or "engine unknown"
    par = " ".join(f"{k}{v}" for k, v in (("TP", r.tp), ("DP", r.dp), ("PP", r.pp)) if v)
    cause = f"[{r.failure_kind}] " if r.failure_kind else ""
    return [
        f"<h1>{esc(r.target, 120)} {_outcome(r.outcome)}</h1>",
        f'<p class="sub">coldwatch {esc(r.command, 20)} report · {esc(r.started_at or "start time unknown", 40)} · coldwatch {__version__}</p>',
        '<table class="head">',
        f"<tr><td>target</td><td>{esc(r.target, 200)}</td></tr>",
        f"<tr><td>engine</td><td>{esc(what, 80)}</td></tr>",
        f"<tr><td>model</td><td>{esc(r.model or 'unknown', 200)}</td></tr>",
        f"<tr><td>parallelism</td><td>{esc(par or 'not logged', 60)}</td></tr>",
        f"<tr><td>outcome</td><td>{esc(r.outcome, 20)}" + (f" (exit {r.exit_code})" if r.exit_code is not None else "") + "</td></tr>",
        f"<tr><td>cause</td><td>{esc(cause + r.reason, 500)}</td></tr>",
        f"<tr><td>total</td><td>{secs(r.total)}"
        + (f" (usually {secs(r.usual_total)}, the median of earlier ready starts)" if r.usual_total is not None else "")
        + "</td></tr>",
        "</table>",
    ]


def _phases(r: Report) -> list[str]:
    body = ["<h2>Phases</h2>"]
    if r.spans and all(s.end <= s.start for s in r.spans):  # a snapshot: the phases, not their times
        body.append(f"<p>Seen in the log so far, in order: {esc(' → '.join(s.phase for s in r.spans), 400)}.</p>")
    elif r.spans:
        body.append(timeline_svg(r))
        if r.lanes:
            body.append(
                '<p class="note">Lanes: each node and rank the log or the stacks named; a tick is a log line, a diamond the phase the rank was seen entering.</p>'
            )
    else:
        body.append('<p class="note">No phase was recognised.</p>')
    return body


def _gpu_memory(r: Report, end: float) -> list[str]:
    body = ["<h2>GPU memory</h2>"]
    if r.gpu:
        body.append(chart_svg(r.gpu, r.bands, end, r.gpu_unit.split()[0], f"GPU memory ({r.gpu_unit})", r.gpu_capacity))
        body.append(f'<p class="note">{esc(r.gpu_unit, 20)} per GPU, from {esc(r.gpu_source, 80)}; the bands are the phases.</p>')
    else:
        body.append('<p class="note">No GPU memory figures: no GPU samples, and no avail mem= lines in the log.</p>')
    return body


def _weight_load(r: Report, end: float) -> list[str]:
    body = ["<h2>Weight load</h2>"]
    if r.load_rate.points or r.disk_rate.points:
        series = [s for s in (r.load_rate, r.disk_rate) if s.points]
        body.append(chart_svg(series, r.bands, end, "MB/s", "load bandwidth"))
    verdict = r.load_verdict or ("no bound measured" if r.load_line else None)
    if verdict:
        body.append(f"<p><b>{esc(verdict, 40)}</b>: {esc(r.load_line or '', 300)}</p>")
    elif not r.load_rate.points:
        why = "a saved log has no disk counters" if r.command == "replay" else "no bytes read by the server's processes were sampled"
        body.append(f'<p class="note">No load measurement ({why}; wait samples them on the host with --unit, --container or --pid).</p>')
    return body


def _history(r: Report) -> list[str]:
    body = ["<h2>Against history</h2>"]
    if any(c.median is not None for c in r.compare):
        body.append(compare_svg(r))
        slow = [c.phase for c in r.compare if c.slower]
        body.append(
            f'<p class="note">Thick bar: this start; thin bar: the median of earlier ready starts. '
            f"{('Slower than usual: <span class=slower>' + esc(', '.join(slow)) + '</span>.') if slow else 'No phase was slower than usual.'}</p>"
        )
    else:
        body.append('<p class="note">No earlier ready start of this target in the history to compare with.</p>')
    return body


def _snapshot(snap: dict[str, Any]) -> list[str]:
    out = ["<h2>Now</h2>", '<table class="head">']
    out.append(f"<tr><td>phase</td><td>{esc(snap.get('phase') or 'unknown', 40)}</td></tr>")
    http = snap.get("http") or {}
    if http:
        out.append(
            f"<tr><td>HTTP</td><td>{esc(http.get('state'), 20)} {esc(http.get('status') or '', 10)} {esc(http.get('detail') or '', 200)}</td></tr>"
        )
    for g in snap.get("gpus") or []:
        if isinstance(g, dict):
            out.append(
                f"<tr><td>GPU{esc(g.get('index'), 6)}</td><td>{esc(g.get('used_mib'), 12)} / {esc(g.get('total_mib'), 12)} MiB, {esc(g.get('util'), 6)} % busy</td></tr>"
            )
    if snap.get("last_line"):
        out.append(f"<tr><td>last line</td><td>{esc(snap['last_line'], 300)}</td></tr>")
    late = snap.get("errors_after_ready")
    if isinstance(late, dict):
        out.append(f"<tr><td>errors after ready</td><td>{esc(late.get('count'), 10)}: {esc(late.get('last') or '', 300)}</td></tr>")
    out.append("</table>")
    return out


def _ranks(r: Report) -> list[str]:
    out = [
        "<h2>Where it is stuck</h2>",
        "<table><tr><th>rank</th><th>node</th><th>pid</th><th>state</th><th>frames (innermost first)</th></tr>",
    ]
    for x in r.ranks:
        got = x.get("frames")
        frames: list[Any] = got if isinstance(got, list) else []
        culprit = any(ln.culprit and ln.state == x.get("state") and str(x.get("rank")) in (ln.rank or "") for ln in r.lanes)
        cls = ' class="culprit"' if culprit else ""
        out.append(
            f"<tr{cls}><td>{esc(x.get('rank'), 12)}</td><td>{esc(x.get('node') or '', 60)}</td><td>{esc(x.get('pid') or '', 12)}</td>"
            f"<td>{esc(x.get('state') or '', 12)}</td><td>{'<br>'.join(esc(f, 200) for f in frames[:4])}</td></tr>"
        )
    out.append("</table>")
    return out


def _nodes(r: Report) -> list[str]:
    out = ["<h2>Nodes</h2>", "<table><tr><th>node</th><th>ranks</th><th>phase</th><th>outcome</th><th>reason</th></tr>"]
    for n in r.nodes:
        ranks = n.get("ranks")
        shown = ", ".join(str(x) for x in ranks[:16]) if isinstance(ranks, list) else (ranks or "")
        out.append(
            f"<tr><td>{esc(n.get('node'), 60)}{' (head)' if n.get('head') else ''}</td><td>{esc(shown, 80)}</td><td>{esc(n.get('phase') or '', 30)}</td>"
            f"<td>{esc(n.get('outcome') or '', 20)}</td><td>{esc(n.get('reason') or '', 300)}</td></tr>"
        )
    out.append("</table>")
    return out


def _excerpts(r: Report) -> list[str]:
    if not r.excerpts:
        return []
    out = ["<h2>Log excerpts</h2>"]
    for ex in r.excerpts:
        lines = []
        for t, text, hit in ex.lines:
            row = f"{secs(t):>8}  {esc(text, 400)}"
            lines.append(f'<span class="hit">{row}</span>' if hit else row + "\n")
        out.append(f'<div class="ex"><h3>{esc(ex.title, 80)} · {secs(ex.t)}</h3><pre>{"".join(lines)}</pre></div>')
    return out


# ---- history ---------------------------------------------------------------------------------
def _segments(rec: dict[str, Any]) -> list[tuple[str, float]]:
    """A recorded start's phases as consecutive segments summing to its total: from each phase's
    first entry to the next phase's (``starts``), else its durations as recorded."""
    raw = rec.get("starts")
    starts: dict[str, Any] = raw if isinstance(raw, dict) else {}
    total = rec.get("total")
    seq = sorted(
        ((float(v), str(k)) for k, v in starts.items() if isinstance(v, int | float)),
        key=lambda x: (x[0], PHASES.index(x[1]) if x[1] in PHASES else 99),
    )
    if seq and isinstance(total, int | float):
        out = []
        for i, (t, ph) in enumerate(seq):
            stop = seq[i + 1][0] if i + 1 < len(seq) else float(total)
            if stop > t:
                out.append((ph, stop - t))
        if seq[0][0] > 0:
            out.insert(0, ("starting", seq[0][0]))
        return out
    got = rec.get("durations")
    durs: dict[str, Any] = got if isinstance(got, dict) else {}
    return [
        (str(k), float(v))
        for k, v in sorted(durs.items(), key=lambda kv: PHASES.index(kv[0]) if kv[0] in PHASES else 99)
        if isinstance(v, int | float)
    ]


def median_segments(records: list[dict[str, Any]]) -> list[tuple[str, float]]:
    """Each phase's median seconds over the records, in phase order."""
    import statistics

    per: dict[str, list[float]] = {}
    for r in records:
        for ph, d in _segments(r):
            per.setdefault(ph, []).append(d)
    order = sorted(per, key=lambda ph: PHASES.index(ph) if ph in PHASES else 99)
    return [(ph, statistics.median(per[ph] + [0.0] * (len(records) - len(per[ph])))) for ph in order]


def group_key(rec: dict[str, Any]) -> str:
    """What changes a start: engine and version, model, TP, the load path."""
    parts = [" ".join(str(rec[k]) for k in ("engine", "version") if rec.get(k)) or "engine ?"]
    parts.append(str(rec.get("model_path") or rec.get("model") or "model ?"))
    parts.append(f"TP{rec['tp']}" if rec.get("tp") else "TP ?")
    parts.append(f"load: {rec['load']}" if rec.get("load") else "load path ?")
    return " · ".join(parts)


def render_history(records: list[dict[str, Any]], target: str | None) -> str:
    """Recorded starts side by side, stacked bars of their phases, grouped by what changes a start."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for rec in records:
        groups.setdefault((str(rec.get("target")), group_key(rec)), []).append(rec)
    peak = max([sum(d for _, d in _segments(r)) for r in records] + [1.0])
    axis = Axis(peak * 1.15)  # room for each bar's total
    title = f"coldwatch history: {esc(target, 120)}" if target else "coldwatch history"
    body = [f"<h1>{title}</h1>", f'<p class="sub">{len(records)} recorded starts · coldwatch {__version__}</p>']
    seen = {ph for r in records for ph, _ in _segments(r)}
    legend = []
    for i, ph in enumerate(p for p in (*PHASES, "unknown") if p in seen):
        lx = LEFT + (i % 7) * 115
        legend.append(f'<rect x="{lx}" y="{4 + (i // 7) * 14}" width="10" height="10" fill="{COLOURS.get(ph, COLOURS["unknown"])}"/>')
        legend.append(f'<text x="{lx + 14}" y="{13 + (i // 7) * 14}">{esc(ph, 30)}</text>')
    body.append(_svg(8 + (len(seen) - 1) // 7 * 14 + 14, legend, "phase colours"))
    for (tgt, key), recs in groups.items():
        recs.sort(key=lambda r: str(r.get("ts") or ""))
        body.append(f"<h2>{esc(tgt, 120)} · {esc(key, 300)}</h2>")
        ready = [r for r in recs if r.get("outcome") == "ready"]
        rows: list[dict[str, Any]] = recs
        if len(ready) >= 2:  # the group's usual start first: each phase's median over its ready starts
            rows = [{"median": len(ready), "outcome": "ready", "segments": median_segments(ready)}, *recs]
        row, top = 20, 6
        height = top + len(rows) * row + 24
        svg = axis.grid(top, height - 22)
        y = top
        for rec in rows:
            when = f"median of {rec['median']}" if "median" in rec else str(rec.get("ts") or "")[:16].replace("T", " ")
            out = str(rec.get("outcome") or "?")
            svg.append(
                f'<text x="{LEFT - 8}" y="{_f(y + 14)}" text-anchor="end">{esc(when or "?", 20)}{"" if out == "ready" else " ✗"}</text>'
            )
            x = 0.0
            for ph, d in rec["segments"] if "segments" in rec else _segments(rec):
                x0, x1 = axis.x(x), axis.x(x + d)
                svg.append(
                    f'<rect class="seg" data-phase="{esc(ph, 40)}" data-seconds="{_f(d)}" x="{_f(x0)}" y="{_f(y + 3)}" '
                    f'width="{_f(max(x1 - x0, 0.5))}" height="{row - 6}" fill="{COLOURS.get(ph, COLOURS["unknown"])}">'
                    f"<title>{esc(ph, 40)}: {secs(d)}</title></rect>"
                )
                x += d
            label = secs(float(rec["total"])) if isinstance(rec.get("total"), int | float) else secs(x)
            if "median" in rec:
                svg.append(f'<rect x="{LEFT}" y="{_f(y + row - 3)}" width="{_f(axis.x(x) - LEFT)}" height="1.5" fill="#333"/>')
            label += "" if out == "ready" else f" {esc(out, 20)}" + (f" in {esc(rec.get('phase'), 30)}" if rec.get("phase") else "")
            svg.append(f'<text x="{_f(axis.x(x) + 4)}" y="{_f(y + 14)}">{label}</text>')
            y += row
        body.append(_svg(height, svg, f"starts of {tgt}", px_per_s=f"{axis.scale:.6g}", x0=LEFT))
    if not records:
        body.append('<p class="note">No recorded starts.</p>')
    return _page(title, body)
