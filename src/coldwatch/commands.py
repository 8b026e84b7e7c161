"""What each command does, below the CLI layer (no Typer here)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from coldwatch.errors import ConfigError, UnreachableError
from coldwatch.exitcodes import ExitCode
from coldwatch.normalise import Normaliser
from coldwatch.phases import load_rules
from coldwatch.render import Sink, choose_output, ci_sinks
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
) -> ExitCode:
    if record and target is None and path == "-":
        raise ConfigError("replay --record -: a log on stdin has no name to record it under; give --target NAME")
    rules = load_rules(rule_files)
    mode = choose_output(output, sys.stdout)
    sink: Sink | None = JsonSink() if mode == "json" else None
    stream, close = _open_log(path)
    try:
        j, verdict = replay(
            text_chunks(_guarded(stream, path), "stdin" if path == "-" else path),
            rules,
            None if engine == "auto" else engine,
            sink.emit if sink is not None else None,
            policy=replay_policy(max_restarts, stall_after),
        )
    finally:
        if close:
            stream.close()
    st = j.c.state
    spans = st.timeline()
    res = j.result(st.last_t if st.last_t is not None else j.now, engine=st.engine, lines=st.lines, restarts=j.restarts)
    if record:
        from coldwatch.history import record_replay

        record_replay(target or Path(path).name, res)
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
    from coldwatch.hosts import Host, open_host
    from coldwatch.monitor import Monitor

    sinks = sinks or make_sinks(settings.output, settings.target_name(), settings.timeout, settings.junit)
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

    mode = choose_output(base.output)
    sinks = make_sinks(base.output, f"fleet of {len(targets)}", base.timeout, base.junit)
    if mode == "live":  # the panel shows the fleet's table, not one server's phases
        from coldwatch.fleet import TableOnly

        sinks = [TableOnly(sinks[0]), *sinks[1:]]
    try:
        res = Fleet(targets, settings_for, base, sinks).run()
    finally:
        for s in sinks:
            s.close()
    if mode != "json":
        from coldwatch.render.plain import print_fleet

        print_fleet(res, sys.stderr)
    return ExitCode(res["exit_code"])


STATUS_HTTP_BUDGET = 15.0
"""Seconds `status` gives the HTTP ladder, however slowly the server answers."""


def run_status(settings: Settings) -> ExitCode:
    """One snapshot: one sample of each stream (supervisor, the log of the current start so far,
    GPUs, the process tree, one HTTP probe) fed to the judge; no waiting."""
    from coldwatch.events import event
    from coldwatch.hosts import open_host
    from coldwatch.http import Ladder, make_client
    from coldwatch.judge import Judge
    from coldwatch.monitor import NVIDIA_SMI, local_port, policy_for
    from coldwatch.probes.log import HOST_CLOCK, LogSource, earlier_run
    from coldwatch.probes.parse import PROC_SCRIPT, gpu_evidence, parse_proc_sample
    from coldwatch.supervisors import server_url, supervisor_for

    sup = supervisor_for(settings.unit, settings.log_cmd, settings.pid, settings.container, settings.runtime)
    policy = policy_for(settings, {})
    policy.stall_after = policy.timeout = 0.0
    policy.tail = False
    j = Judge(policy, load_rules(settings.rules), None if settings.engine == "auto" else settings.engine)
    host = open_host(settings)
    try:
        svc = None
        cmd = sup.state_command()
        if cmd is not None:
            r = host.run(cmd, timeout=10)
            svc = sup.first_state(r.rc, r.stdout.decode("utf-8", "replace"))
            j.supervisor(svc, 0.0, initial=True)
        url, own_socket = server_url(settings.url, settings.url_given, sup, settings.port, settings.engine)
        settings.url = url
        policy.port = local_port(url) if own_socket else None
        if getattr(sup, "note", ""):
            j.warn("url-stopped", sup.note, 0.0)  # type: ignore[attr-defined]
        source = LogSource(settings.log_cmd, settings.unit, svc, sup)
        old = earlier_run(host.run(HOST_CLOCK, timeout=10).stdout.decode("ascii", "replace"), svc, settings.log_cmd)
        out = host.run(source.command(follow=False), timeout=15).stdout
        norm = Normaliser()
        held = []
        for rec in source.records([out]):
            for line in norm.lines(rec):
                if old is not None and old.earlier(line):
                    held.append(line)
                else:
                    if held:
                        j.warn(
                            "earlier",
                            f"{len(held)} log line(s) stamped before {old.why if old else ''} are an earlier run's: not judged",
                            0.0,
                        )
                        held = []
                    j.line(line, 0.0)
        for line in held:  # the log holds nothing newer: they are the last start's
            j.line(line, 0.0)
        g = host.run(settings.gpu_cmd or NVIDIA_SMI, timeout=10)
        samples, problem = gpu_evidence(g.rc, g.stdout.decode("utf-8", "replace"), g.stderr.decode("utf-8", "replace"))
        if problem:
            j.warn("gpu", problem, 0.0)
        if samples:
            j.gpu(samples, 0.0)
        if j.pid is not None:
            p = host.run(f"python3 - {int(j.pid)} 0 {policy.port or 0}", timeout=10, stdin=PROC_SCRIPT.encode())
            sample = parse_proc_sample(p.stdout.decode("utf-8", "replace")) if p.rc == 0 else None
            if sample is not None:
                j.proc(j.pid, sample, 0.0)
            elif p.rc is not None:
                j.proc_unavailable(p.stderr.decode("utf-8", "replace")[:200], 0.0)
        with make_client(host, verify=not settings.insecure) as client:
            ladder = Ladder(client, settings.url, settings.model, settings.api_key)
            j.http(ladder.probe(deadline=time.monotonic() + STATUS_HTTP_BUDGET), 0.0)
        j.tick(0.0)
    finally:
        host.close()
    snap = {**event("status", 0.0, time.time()), **j.snapshot()}
    snap["warnings"] = [ev["message"] for ev in j.drain() if ev["event"] == "warning"]
    code = status_code(snap)
    snap["exit_code"] = int(code)
    if choose_output(settings.output, sys.stdout) == "json":
        JsonSink().emit(snap)
    else:
        from coldwatch.render.plain import print_status

        print_status(snap, sys.stdout)
    return code


def status_code(snap: dict[str, Any]) -> ExitCode:
    """0 ready (a completion was served), 3 failed (the log or the supervisor says so), 124 not yet."""
    if snap["outcome"] == "ready" and (snap.get("http") or {}).get("state") == "ready":
        return ExitCode.READY
    if snap["outcome"] == "failed":
        return ExitCode.FAILED
    return ExitCode.TIMEOUT


def run_history(target: str | None, output: str) -> ExitCode:
    from coldwatch import history

    recs = [r for r in history.load() if target is None or r.get("target") == target]
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
