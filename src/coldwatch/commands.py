"""What each command does, below the CLI layer (no Typer here)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from coldwatch.errors import ConfigError
from coldwatch.events import from_signal, result
from coldwatch.exitcodes import ExitCode
from coldwatch.normalise import Normaliser
from coldwatch.phases import Signal, load_rules
from coldwatch.render import Sink, choose_output
from coldwatch.render.jsonl import JsonSink
from coldwatch.render.plain import PlainSink, fmt_t, verdict_line
from coldwatch.replay import read_chunks, replay
from coldwatch.sanitise import clean


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


def run_replay(path: str, engine: str, rule_files: list[Path], output: str, record: bool, target: str | None) -> ExitCode:
    rules = load_rules(rule_files)
    mode = choose_output(output, sys.stdout)
    sink: Sink | None = JsonSink() if mode == "json" else None
    norm = Normaliser()

    def on_signal(s: Signal) -> None:
        ev = from_signal(s, norm.clock.origin_epoch)
        if ev is not None and sink is not None:
            sink.emit(ev)

    stream, close = _open_log(path)
    try:
        c, verdict = replay(_guarded(stream, path), rules, None if engine == "auto" else engine, on_signal, norm)
    finally:
        if close:
            stream.close()
    st = c.state
    spans = st.timeline()
    res = result(verdict, st.last_t, norm.clock.origin_epoch, spans, engine=st.engine, lines=st.lines)
    if record:
        from coldwatch.history import record_replay

        record_replay(target or Path(path).name, res)
    if sink is not None:
        sink.emit(res)
        return ExitCode(verdict.exit_code)
    _print_timeline(spans, res)
    return ExitCode(verdict.exit_code)


def _print_timeline(spans: list[Any], res: dict[str, Any]) -> None:
    out = sys.stdout
    out.write("phase           start  duration  progress   began with\n")
    for s in spans:
        dur = ("" if s.phase == "ready" else "(open)") if s.start is None or s.end is None else f"{s.end - s.start:.0f}s"
        prog = f"{s.done}/{s.total}" if s.total else ""
        out.write(f"{s.phase:<14} {fmt_t(s.start)}  {dur:>8}  {prog:>8}   {clean(s.evidence, 100)}\n")
    out.write(verdict_line(res) + "\n")
    out.flush()


# ---- wait / status / demo / history ---------------------------------------------------------


def make_sinks(mode: str, title: str, deadline: float) -> list[Sink]:
    mode = choose_output(mode)
    if mode == "json":
        return [JsonSink()]
    if mode == "live":
        from coldwatch.render.live import LiveSink

        return [LiveSink(title, deadline)]
    return [PlainSink()]


def run_wait(settings: Any, sinks: list[Sink] | None = None) -> ExitCode:
    from coldwatch.hosts import open_host
    from coldwatch.monitor import Monitor

    sinks = sinks or make_sinks(settings.output, settings.host or "this machine", settings.timeout)
    try:
        host = open_host(settings)
    except BaseException:
        for s in sinks:
            s.close()
        raise
    try:
        res = Monitor(settings, host, sinks).run()
    finally:
        for s in sinks:
            s.close()
        host.close()
    return ExitCode(res["exit_code"])


def run_status(settings: Any) -> ExitCode:
    """One snapshot: read the log so far, one GPU sample, one HTTP probe; no waiting."""
    from coldwatch.hosts import open_host
    from coldwatch.http import Ladder, make_client
    from coldwatch.monitor import NVIDIA_SMI, service_cmd
    from coldwatch.phases import Classifier
    from coldwatch.probes.log import LogSource
    from coldwatch.probes.parse import parse_gpu_csv, parse_systemctl_show

    host = open_host(settings)
    try:
        r = host.run(service_cmd(settings.unit), timeout=10)
        svc = parse_systemctl_show(r.stdout.decode("utf-8", "replace")) if r.rc == 0 else None
        source = LogSource(settings.log_cmd, settings.unit, svc)
        log_cmd = source.command().replace(" -f ", " ").replace(" -n 0", " -n 2000")
        c = Classifier(load_rules(settings.rules), None if settings.engine == "auto" else settings.engine)
        out = host.run(f"timeout 5 {log_cmd}" if settings.log_cmd else log_cmd, timeout=15).stdout
        norm = Normaliser()
        for rec in source.records([out]):
            for line in norm.lines(rec):
                c.feed(line)
        g = host.run(settings.gpu_cmd or NVIDIA_SMI, timeout=10)
        gpus, _ = parse_gpu_csv(g.stdout.decode("utf-8", "replace")) if g.rc == 0 else ([], [])
        with make_client(host, verify=not settings.insecure) as client:
            http = Ladder(client, settings.url, settings.model, settings.api_key).probe()
    finally:
        host.close()
    st = c.state
    snap = {
        "event": "status",
        "phase": st.last_phase() or st.phase,
        "outcome": st.outcome,
        "failure_kind": st.failure.kind if st.failure else None,
        "cause": st.failure.cause if st.failure else None,
        "last_line": st.last_line,
        "gpus": [x.as_dict() for x in gpus],
        "http": {"state": http.state, "status": http.status, "detail": http.detail},
        "service": ({"active": svc.active, "sub": svc.sub, "restarts": svc.restarts} if svc and svc.known else None),
    }
    if choose_output(settings.output, sys.stdout) == "json":
        JsonSink().emit(snap)
    else:
        w = sys.stdout.write
        w(f"phase:   {snap['phase']}" + (f" ({st.outcome})" if st.outcome != "pending" else "") + "\n")
        if snap["cause"]:
            w(f"cause:   [{snap['failure_kind']}] {snap['cause']}\n")
        w(f"http:    {http.state}{' ' + str(http.status) if http.status else ''} {http.detail}\n")
        for x in gpus:
            w(f"GPU{x.index}:    {(x.used_mib or 0) / 1024:.1f}/{(x.total_mib or 0) / 1024:.0f} GB  util {x.util}%\n")
        if snap["service"]:
            w(f"unit:    {svc.active}/{svc.sub}, restarts {svc.restarts}\n")  # type: ignore[union-attr]
        w(f"last:    {st.last_line[:150]}\n")
    if http.state == "ready":
        return ExitCode.READY
    if st.outcome == "failed":
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
    order = [p for p in ("dist_init", "weight_load", "marlin_repack", "draft_init", "kv_alloc", "jit_compile", "graph_capture", "warmup")]
    short = {
        "dist_init": "dist",
        "weight_load": "load",
        "marlin_repack": "repack",
        "draft_init": "draft",
        "kv_alloc": "kv",
        "jit_compile": "jit",
        "graph_capture": "capture",
        "warmup": "warmup",
    }
    w = sys.stdout.write
    w(f"{'when':<20} {'target':<28} {'outcome':<11} " + " ".join(f"{short[p]:>7}" for p in order) + "   total\n")
    for r in recs:
        d = r.get("durations") or {}
        cells = " ".join(f"{d[p]:7.0f}" if p in d else f"{'-':>7}" for p in order)
        total = f"{r['total']:7.0f}s" if isinstance(r.get("total"), (int, float)) else "      -"
        w(f"{str(r.get('ts') or '')[:19]:<20} {str(r['target'])[:28]:<28} {str(r.get('outcome')):<11} {cells} {total}\n")
    for tgt in sorted({str(r["target"]) for r in recs}):
        base = history.baseline(tgt, records=recs)
        if base.get("total"):
            w(f"median ready start of {tgt}: {base['total']:.0f}s\n")
    return ExitCode.READY
