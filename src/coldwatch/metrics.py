"""A start's figures for Prometheus: the text exposition format (``--metrics FILE``, for
node_exporter's textfile collector) and a push to a Pushgateway (``--pushgateway URL``).

Series, one set per target (gauges: each describes the latest start):

- ``coldwatch_start_phase_seconds{target,phase}``: seconds the phase took (first rank in to last out);
- ``coldwatch_start_duration_seconds{target,outcome}``: seconds to ready, or to the verdict;
- ``coldwatch_start_timestamp_seconds{target}``: when the start began (Unix time);
- ``coldwatch_start_ready{target}``: 1 when it became ready, else 0;
- ``coldwatch_start_exit_code{target}``: coldwatch's exit code for it.

The push replaces the group ``job="coldwatch", target=TARGET`` (HTTP PUT), so an earlier start's
phases never linger next to this one's.
"""

from __future__ import annotations

import base64
import datetime as dt
import math
import re
from pathlib import Path
from typing import Any

import httpx

from coldwatch.errors import ConfigError

JOB = "coldwatch"
PUSH_TIMEOUT = 10.0
"""Seconds each step of a push (connect, send, each read of the answer) may take."""

_METRICS = (
    ("coldwatch_start_phase_seconds", "Seconds each phase of the latest cold start took (first rank in to last rank out)."),
    ("coldwatch_start_duration_seconds", "Seconds from the start to ready, or to the verdict when it did not become ready."),
    ("coldwatch_start_timestamp_seconds", "Unix time the latest cold start began."),
    ("coldwatch_start_ready", "1 when the latest cold start became ready, else 0."),
    ("coldwatch_start_exit_code", "coldwatch's exit code for the latest cold start (0 ready, 3 failed, 5 stalled, 124 out of time)."),
)
_URL = re.compile(r"^https?://[^\s/?#]+(?:/[^\s?#]*)?$")


def label(value: object) -> str:
    """A label value in the exposition format: backslash, double quote and newline escaped."""
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _num(v: float) -> str:
    if math.isnan(v) or math.isinf(v):
        return "NaN"
    return repr(round(float(v), 3))


def figures(res: dict[str, Any]) -> dict[str, Any]:
    """A result (or a fleet's per-target result) -> phase seconds, total, start time, outcome."""
    t = res.get("t") if isinstance(res.get("t"), int | float) else None
    phases: dict[str, float] = {}
    ready: float | None = None
    for p in res.get("phases") or []:
        if not isinstance(p, dict) or not isinstance(p.get("start"), int | float):
            continue
        if p.get("phase") == "ready":
            ready = float(p["start"])
            continue
        end = p.get("end") if isinstance(p.get("end"), int | float) else t
        if end is not None:
            phases[str(p.get("phase"))] = max(float(end) - float(p["start"]), 0.0)
    begun: float | None = None
    if isinstance(res.get("ts"), str) and t is not None:
        try:
            begun = dt.datetime.fromisoformat(res["ts"].replace("Z", "+00:00")).timestamp() - float(t)
        except ValueError:
            begun = None
    outcome = str(res.get("outcome") or "unknown")
    total = ready if ready is not None and outcome == "ready" else (float(t) if t is not None else None)
    return {"phases": phases, "total": total, "begun": begun, "outcome": outcome, "exit_code": res.get("exit_code")}


def exposition(starts: dict[str, dict[str, Any]]) -> str:
    """Target -> result, as one exposition text (each metric's HELP and TYPE once, then its samples)."""
    rows: dict[str, list[str]] = {name: [] for name, _ in _METRICS}
    for target, res in starts.items():
        f = figures(res)
        tl = f'target="{label(target)}"'
        for ph, secs in f["phases"].items():
            rows["coldwatch_start_phase_seconds"].append(f'coldwatch_start_phase_seconds{{{tl},phase="{label(ph)}"}} {_num(secs)}')
        if f["total"] is not None:
            rows["coldwatch_start_duration_seconds"].append(
                f'coldwatch_start_duration_seconds{{{tl},outcome="{label(f["outcome"])}"}} {_num(f["total"])}'
            )
        if f["begun"] is not None:
            rows["coldwatch_start_timestamp_seconds"].append(f"coldwatch_start_timestamp_seconds{{{tl}}} {_num(f['begun'])}")
        rows["coldwatch_start_ready"].append(f"coldwatch_start_ready{{{tl}}} {1 if f['outcome'] == 'ready' else 0}")
        if isinstance(f["exit_code"], int):
            rows["coldwatch_start_exit_code"].append(f"coldwatch_start_exit_code{{{tl}}} {f['exit_code']}")
    out: list[str] = []
    for name, help_text in _METRICS:
        if rows[name]:
            out += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge", *rows[name]]
    return "\n".join(out) + "\n"


def check_pushgateway(url: str, flag: str = "--pushgateway") -> str:
    """http(s)://HOST[:PORT][/PATH], nothing else (no query, no fragment, no spaces)."""
    if not _URL.match(url):
        raise ConfigError(f"{flag}: expected http(s)://HOST[:PORT][/PATH], got {shown(url)!r}")
    return url.rstrip("/")


def shown(url: str) -> str:
    """The URL without any user:password in it."""
    return re.sub(r"^(https?://)[^/@]*@", r"\1", url)


def push_url(base: str, target: str) -> str:
    """The group of this target: ``/metrics/job/coldwatch/target@base64/…`` (base64url, so a
    target with a slash, ``host/sglang``, is one path segment)."""
    enc = base64.urlsafe_b64encode(target.encode("utf-8")).decode("ascii").rstrip("=") or "="
    return f"{base.rstrip('/')}/metrics/job/{JOB}/target@base64/{enc}"


def push(base: str, target: str, text: str, timeout: float = PUSH_TIMEOUT) -> None:
    """PUT the target's exposition to the Pushgateway; a refusal or an error is a ``ConfigError``
    carrying one line."""
    url = push_url(base, target)
    try:
        with httpx.Client(timeout=httpx.Timeout(timeout), follow_redirects=False) as client:
            r = client.put(url, content=text.encode("utf-8"), headers={"Content-Type": "text/plain; version=0.0.4"})
    except httpx.HTTPError as exc:
        raise ConfigError(f"--pushgateway {shown(base)}: {type(exc).__name__}: {shown(str(exc))[:200]}") from None
    if r.status_code // 100 != 2:
        raise ConfigError(f"--pushgateway {shown(base)}: HTTP {r.status_code}: {r.text[:200].strip()}")


class MetricsSink:
    """At the verdict: the exposition file (atomically replaced) and the push, one group per target.
    A fleet's ``target_result`` events give one set of series per target."""

    def __init__(self, target: str, path: Path | None, pushgateway: str | None) -> None:
        self.target = target
        self.path = path
        self.pushgateway = pushgateway
        self.targets: dict[str, dict[str, Any]] = {}
        self.done = False

    def emit(self, ev: dict[str, Any]) -> None:
        kind = ev.get("event")
        if kind == "target_result" and ev.get("target"):
            self.targets[str(ev["target"])] = ev
        elif kind == "result" and not self.done:
            self.done = True
            starts = self.targets if ev.get("targets") and self.targets else {self.target: ev}
            self.write(starts)

    def write(self, starts: dict[str, dict[str, Any]]) -> None:
        from coldwatch.files import say, write_atomic

        if self.path is not None:
            try:
                write_atomic(self.path, exposition(starts))
            except OSError as exc:
                say(f"coldwatch: --metrics {self.path}: not written: {exc.strerror or exc}")
        if self.pushgateway is not None:
            for target, res in starts.items():
                try:
                    push(self.pushgateway, target, exposition({target: res}))
                except ConfigError as exc:
                    say(f"coldwatch: {exc}; the figures were not pushed")

    def close(self) -> None:
        pass
