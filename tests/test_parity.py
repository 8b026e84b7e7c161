"""Parity: every shared fixture and every recorded real-engine log gets the same verdict from
`replay` as from a live `wait` fed the same log through --log-cmd (at a compressed pace; the HTTP
server comes up after the log when the labelled start really became ready)."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest
from conftest import OWN_LOGS, SHARED_LOGS, coldwatch, json_lines

from coldwatch.sim import free_port

PLAYER = Path(__file__).with_name("logplayer.py")


def _cases() -> list[tuple[Path, str]]:
    out = []
    for d in (SHARED_LOGS, OWN_LOGS / "real"):
        labels = d / "labels.json"
        if labels.exists():
            for lab in json.loads(labels.read_text()):
                out.append((d / lab["file"], lab["outcome"]))
    return out


CASES = _cases()


@pytest.mark.slow
@pytest.mark.parametrize(("log", "outcome"), CASES, ids=[c[0].name[:40] for c in CASES])
def test_replay_and_live_wait_agree(log: Path, outcome: str) -> None:
    """Same exit code, phase and failure kind from the saved log and from the live watch of it."""
    rep = json_lines(coldwatch("replay", "-o", "json", str(log)).stdout)[-1]
    port = free_port()
    cmd = f"{shlex.quote(sys.executable)} {shlex.quote(str(PLAYER))} {shlex.quote(str(log))} {port} {'serve' if outcome == 'ready' else 'log'}"
    r = coldwatch(
        "wait",
        "--log-cmd",
        cmd,
        "--url",
        f"http://127.0.0.1:{port}",
        "--unit",
        "parity-none",
        "--interval",
        "0.2",
        "--timeout",
        "4",
        "-o",
        "json",
        timeout=60,
    )
    live = json_lines(r.stdout)[-1]
    assert r.returncode == rep["exit_code"], (rep["reason"], live["reason"])
    assert (live["phase"], live["failure_kind"]) == (rep["phase"], rep["failure_kind"]), (rep["reason"], live["reason"])
