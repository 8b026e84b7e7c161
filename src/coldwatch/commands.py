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
from coldwatch.render.plain import fmt_t, verdict_line
from coldwatch.replay import read_chunks, replay


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
        out.write(f"{s.phase:<14} {fmt_t(s.start)}  {dur:>8}  {prog:>8}   {s.evidence[:100]}\n")
    out.write(verdict_line(res) + "\n")
    out.flush()
