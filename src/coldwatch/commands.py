"""What each command does, below the CLI layer (no Typer here)."""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from coldwatch.errors import ConfigError, UnreachableError
from coldwatch.exitcodes import ExitCode
from coldwatch.hosts.base import Host
from coldwatch.phases import load_rules
from coldwatch.render import Pipeline, Sink, choose_output, ci_sinks
from coldwatch.render.jsonl import JsonSink
from coldwatch.render.plain import PlainSink, print_timeline
from coldwatch.replay import read_chunks, replay, replay_policy, text_chunks
from coldwatch.settings import Settings


def _open_log(path: str) -> tuple[BinaryIO, bool]:
    if path == "-":
        return sys.stdin.buffer, False
    p = Path(path)
    if p.is_dir():
        raise ConfigError(f"{path}: is a directory, not a log file")
    try:
        return open(p, "rb"), True  # noqa: SIM115 - closed by the caller
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read log: {exc.strerror or exc}") from None


def _guarded(stream: BinaryIO, path: str) -> Iterator[bytes]:
    try:
        yield from read_chunks(stream)
    except OSError as exc:
        raise ConfigError(f"{path}: read failed: {exc.strerror or exc}") from None


def run_replay(
    path: str,
    engine: str,
    rule_files: list[Path],
    output: str,
    record: bool,
    target: str | None,
    max_restarts: int = 0,
    stall_after: float = 0.0,
    files: tuple[Path | None, Path | None, str | None] = (None, None, None),
) -> ExitCode:
    if record and target is None and path == "-":
        raise ConfigError("replay --record -: a log on stdin has no name to record it under; give --target NAME")
    rules = load_rules(rule_files)
    mode = choose_output(output, sys.stdout)
    sink: Sink | None = JsonSink() if mode == "json" else None
    from coldwatch.outputs import output_sinks

    extra = output_sinks(target or ("stdin" if path == "-" else Path(path).name), "replay", *files)  # --report, --metrics
    banner = None  # engine, model, TP from the launch lines, for the record
    if record:
        from coldwatch.report.model import Banner  # (the report package loads its HTML renderer)

        banner = Banner()
    extra += [banner] if banner is not None else []
    policy = dataclasses.replace(replay_policy(max_restarts, stall_after), tail=bool(extra))  # the report's log excerpts
    sinks = [s for s in (sink, *extra) if s is not None]
    stream, close = _open_log(path)
    try:
        j, verdict = replay(
            text_chunks(_guarded(stream, path), "stdin" if path == "-" else path),
            rules,
            None if engine == "auto" else engine,
            Pipeline(sinks).emit if sinks else None,  # internal events only to the sinks that take them
            policy=policy,
        )
    finally:
        if close:
            stream.close()
    st = j.c.state
    spans = st.timeline()
    res = j.result(st.last_t if st.last_t is not None else j.now, engine=st.engine, lines=st.lines, restarts=j.restarts)
    if record:  # the verdict never depends on the history being writable
        from coldwatch.history import record_replay

        try:
            record_replay(target or Path(path).name, res, **(banner.fields(res) if banner is not None else {}))
        except ConfigError as exc:
            from coldwatch.sanitise import clean

            sys.stderr.write(clean(f"coldwatch: warning: {exc}; this start is not recorded", 500) + "\n")
    for x in extra:
        x.emit(res)
        x.close()
    if sink is not None:
        sink.emit(res)
        return ExitCode(verdict.exit_code)
    print_timeline(spans, res, sys.stderr)
    return ExitCode(verdict.exit_code)


# ---- wait / status / demo / history ---------------------------------------------------------


def make_sinks(mode: str, title: str, deadline: float, junit: Path | None = None) -> list[Sink]:
    mode = choose_output(mode)
    extra = ci_sinks(junit, os.environ, mode, title)  # before the live panel starts: a bad --junit is exit 2
    if mode == "json":
        return [JsonSink(), *extra]
    if mode == "live":
        from coldwatch.render.live import LiveSink

        return [LiveSink(title, deadline), *extra]
    return [PlainSink(), *extra]


def run_wait(settings: Settings, sinks: list[Sink] | None = None) -> ExitCode:
    """One server: on one host, or spanning the head (HOST) and its --worker nodes."""
    from coldwatch.hosts import open_host
    from coldwatch.monitor import Monitor
    from coldwatch.outputs import settings_sinks

    extra = settings_sinks(settings)  # --report, --metrics, --pushgateway
    sinks = [*(sinks or make_sinks(settings.output, settings.target_name(), settings.timeout, settings.junit)), *extra]
    opened: list[Any] = []
    try:
        host = open_host(settings)
        opened.append(host)
        workers: list[tuple[str, Settings, Host | None, str | None]] = []
        for name in settings.workers:
            ws = settings.for_node(name)
            try:
                wh = open_host(ws)
                opened.append(wh)
                workers.append((name, ws, wh, None))
            except UnreachableError as exc:  # a blind worker is named; the head decides reachability
                workers.append((name, ws, None, str(exc)))
        res = Monitor(settings, host, sinks, workers=workers).run()
    finally:
        for s in sinks:
            s.close()
        for h in opened:
            h.close()
    return ExitCode(res["exit_code"])


def run_fleet(targets: list[str], settings_for: Callable[[str], Settings], base: Settings) -> ExitCode:
    """Many independent servers at once: one table, one result with every target's verdict."""
    from coldwatch.fleet import Fleet
    from coldwatch.outputs import settings_sinks

    mode = choose_output(base.output)
    extra = settings_sinks(base, "fleet")  # --metrics, --pushgateway: one set of series per target
    sinks = make_sinks(base.output, f"fleet of {len(targets)}", base.timeout, base.junit)
    if mode == "live":  # the panel shows the fleet's table, not one server's phases
        from coldwatch.fleet import TableOnly

        sinks = [TableOnly(sinks[0]), *sinks[1:]]
    sinks += extra
    try:
        res = Fleet(targets, settings_for, base, [Pipeline(sinks)]).run()
    finally:
        for s in sinks:
            s.close()
    if mode != "json":
        from coldwatch.render.plain import print_fleet

        print_fleet(res, sys.stderr)
    return ExitCode(res["exit_code"])


STATUS_HTTP_BUDGET = 15.0
"""Seconds `status` gives the HTTP ladder, however slowly the server answers."""


def status_snapshot(settings: Settings, host: Host, stacks: bool = False) -> dict[str, Any]:
    """One snapshot: one sample of each stream (supervisor, the log of the current start so far,
    GPUs, the process tree, one HTTP probe) fed to the judge ``wait`` uses; its outcome and exit
    code are that judge's, with the same grace, restart and death rules; no waiting."""
    from coldwatch.events import event
    from coldwatch.judge import Judge
    from coldwatch.monitor import status_policy
    from coldwatch.outputs import settings_sinks
    from coldwatch.probes.node import NodeProbe

    extra = settings_sinks(settings, "status")  # --report
    policy = dataclasses.replace(status_policy(settings), tail=bool(extra))
    j = Judge(policy, load_rules(settings.rules), None if settings.engine == "auto" else settings.engine)
    probe = NodeProbe(settings.host or "localhost", settings, host, lambda r, gen: None, lambda: 0.0, http=True)
    for reading in probe.once(STATUS_HTTP_BUDGET):
        probe.apply(j.observe(reading, 0.0))
    v = j.settle(0.0)
    if stacks:  # status --stacks: every rank's stack now
        if probe.control.pid is None:
            j.warn("stacks", "--stacks: the server's main PID is not known (give --pid, or --unit for its supervisor)", 0.0)
        else:
            j.observe(probe.stacks_now(), 0.0)
    snap = {**event("status", 0.0, time.time()), **j.snapshot()}
    drained = j.drain()
    if stacks:
        snap["ranks"] = [r.as_dict() for r in j.status().ranks]
    snap["warnings"] = [ev["message"] for ev in drained if ev["event"] == "warning"]
    snap["exit_code"] = int(v.exit_code) if v is not None else int(ExitCode.TIMEOUT)
    for x in extra:
        for ev in [*drained, snap]:
            x.emit(ev)
        x.close()
    return snap


def run_status(settings: Settings, stacks: bool = False) -> ExitCode:
    """``status``: the snapshot, as JSON or for people; its exit code."""
    from coldwatch.hosts import open_host

    host = open_host(settings)
    try:
        snap = status_snapshot(settings, host, stacks)
    finally:
        host.close()
    if choose_output(settings.output, sys.stdout) == "json":
        JsonSink().emit(snap)
    else:
        from coldwatch.render.plain import print_status

        print_status(snap, sys.stdout)
        for r in snap.get("ranks") or []:  # status --stacks: every rank's stack, innermost first
            name = r["rank"] or f"pid {r['pid']}"
            sys.stdout.write(f"{name} (pid {r['pid']}) {r['state']}{' in ' + r['where'] if r['where'] else ''}")
            sys.stdout.write(f" ({r['detail']})\n" if r["detail"] else "\n")
            for f in r["frames"]:
                sys.stdout.write(f"    {f}\n")
    return ExitCode(snap["exit_code"])


def run_history(target: str | None, output: str, report: Path | None = None) -> ExitCode:
    from coldwatch import history

    recs = [r for r in history.load(strict=True) if target is None or r.get("target") == target]
    if report is not None:
        from coldwatch.report import write_history_report

        write_history_report(report, recs, target)
    if choose_output(output, sys.stdout) == "json":
        sink = JsonSink()
        for r in recs:
            sink.emit({"event": "history", **r})
        return ExitCode.READY
    if not recs:
        sys.stdout.write(f"no recorded starts{' for ' + target if target else ''} (history: {history.path()})\n")
        return ExitCode.READY
    from coldwatch.render.plain import print_history

    medians = {t: history.baseline(t, records=recs).get("total") for t in sorted({str(r["target"]) for r in recs})}
    print_history(recs, medians, sys.stdout)
    return ExitCode.READY
