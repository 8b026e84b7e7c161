"""A fleet larger than one process's share (coldwatch.shard): its watches run in child processes, the
table, the sinks and the run's result stay in the parent. Each target is a real HTTP server on
loopback, watched by the real monitor in a real child process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fleetfix import Collect, model_servers

from coldwatch.errors import ConfigError
from coldwatch.fleet import Fleet
from coldwatch.settings import Settings
from coldwatch.shard import ENV, split


@pytest.fixture
def servers() -> Iterator[dict[str, str]]:
    """Target name -> URL: r* are ready at once, n* never are."""
    with model_servers(("r1", "r2", "r3", "r4", "n1", "n2")) as urls:
        yield urls


def _fleet(urls: dict[str, str], targets: list[str], timeout: float = 4.0, **base: Any) -> tuple[Fleet, Collect]:
    def settings_for(t: str) -> Settings:
        if t == "bad":
            raise ConfigError("bad: unknown key 'x'")
        return Settings(url=urls[t], log_cmd="sleep 30", gpu_cmd="true", interval=0.2, timeout=timeout, target=t, record=False)

    sink = Collect()
    return Fleet(targets, settings_for, Settings(timeout=timeout, **base), [sink]), sink


def _children(me: int | None = None) -> set[int]:
    me = me or os.getpid()
    out = set()
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if int((d / "stat").read_text().rsplit(")", 1)[1].split()[1]) == me:
                    out.add(int(d.name))
            except (OSError, IndexError, ValueError):
                pass
    return out


def test_split_keeps_every_target_once_and_parts_even() -> None:
    parts = split(list(range(250)), 100)
    assert len(parts) == 3 and sorted(x for p in parts for x in p) == list(range(250))
    assert {len(p) for p in parts} <= {83, 84}
    assert split([1, 2], 100) == [[1, 2]] and split([1, 2, 3], 0) == [[1, 2, 3]] and split([], 5) == []


def test_a_fleet_over_processes_gives_every_verdict_and_event(servers: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "2")
    before = _children()
    seen: set[int] = set()
    done = threading.Event()

    def watch() -> None:
        while not done.wait(0.05):
            seen.update(_children() - before)

    threading.Thread(target=watch, daemon=True).start()
    fleet, sink = _fleet(servers, ["r1", "r2", "r3", "n1", "bad"], timeout=3.0, min_ready="3")
    res = fleet.run()
    done.set()
    by = {t["target"]: t for t in res["targets"]}
    assert {t: r["outcome"] for t, r in by.items()} == {"r1": "ready", "r2": "ready", "r3": "ready", "n1": "timeout", "bad": "usage"}
    assert (res["outcome"], res["exit_code"]) == ("ready", 0)
    assert len(seen) == 2, seen  # four targets with settings, two per process
    results = [e for e in sink.events if e["event"] == "target_result"]
    assert sorted(e["target"] for e in results) == ["bad", "n1", "r1", "r2", "r3"]
    assert sink.events[-1] is res
    for t in ("r1", "n1"):  # each target's own events came back through its process, in order, tagged
        own = [e["event"] for e in sink.events if e.get("target") == t]
        assert "http" in own and own[-1] == "target_result", own
    assert fleet.rows["r2"]["verdict"] == "ready" and fleet.rows["n1"]["verdict"] == "timeout"
    assert not (_children() - before)  # every child process is gone when the run ends


def test_fail_fast_crosses_processes(servers: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """n1 times out in one process; n2, watched in the other with a longer deadline, is ended at once."""
    monkeypatch.setenv(ENV, "1")
    urls = servers

    def settings_for(t: str) -> Settings:
        return Settings(
            url=urls[t], log_cmd="sleep 30", gpu_cmd="true", interval=0.2, timeout=1.5 if t == "n1" else 30, target=t, record=False
        )

    t0 = time.monotonic()
    res = Fleet(["n1", "n2"], settings_for, Settings(timeout=30, fail_fast=True), [Collect()]).run()
    took = time.monotonic() - t0
    by = {t["target"]: t for t in res["targets"]}
    assert by["n1"]["exit_code"] == 124 and "--fail-fast: n1" in by["n2"]["reason"], by
    assert took < 12, took


def test_a_child_process_that_dies_leaves_an_internal_error_for_its_targets(
    servers: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV, "1")
    fleet, _ = _fleet(servers, ["r1", "n1"], timeout=20.0)
    out: dict[str, Any] = {}
    th = threading.Thread(target=lambda: out.update(fleet.run()), daemon=True)
    th.start()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not [s for s in fleet.shards if "n1" in s.targets]:
        time.sleep(0.05)
    time.sleep(1.0)
    victim = next(s for s in fleet.shards if "n1" in s.targets)
    os.kill(victim.proc.pid, signal.SIGKILL)
    th.join(15)
    by = {t["target"]: t for t in out["targets"]}
    assert by["r1"]["outcome"] == "ready"
    assert by["n1"]["exit_code"] == 1 and "exited with code -9 before its verdict" in by["n1"]["reason"], by["n1"]
    assert out["exit_code"] == 1


def test_ctrl_c_on_a_fleet_over_processes(servers: dict[str, str], tmp_path: Path) -> None:
    """The CLI's fleet: SIGINT to coldwatch alone (its children are in their own session) ends every
    child's watch and the run's result line says interrupted, exit 130; no child is left behind."""
    cfg = tmp_path / "c.toml"
    cfg.write_text(
        "\n".join(f'[targets."local://{t}"]\nurl = "{servers[t]}"\nlog_cmd = "sleep 60"\ngpu_cmd = "true"' for t in ("n1", "n2", "r1"))
        + "\n"
    )
    env = {**os.environ, ENV: "1", "COLDWATCH_HOME": str(tmp_path)}
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "coldwatch",
            "wait",
            "local://n1",
            "local://n2",
            "local://r1",
            "--config",
            str(cfg),
            "-o",
            "json",
            "--timeout",
            "60s",
            "--interval",
            "0.2",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    time.sleep(4.0)
    kids = _children(p.pid)
    assert len(kids) == 2, kids  # r1's process has ended with its verdict; n1's and n2's watch on
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=20)
    lines = [json.loads(ln) for ln in out.decode().splitlines()]
    assert p.returncode == 130, err.decode()[-500:]
    res = lines[-1]
    assert res["event"] == "result" and res["outcome"] == "interrupted"
    by = {t["target"].removeprefix("local://"): t["outcome"] for t in res["targets"]}
    assert by["r1"] == "ready" and by["n1"] == "interrupted", by
    time.sleep(0.5)
    assert not [k for k in kids if Path(f"/proc/{k}").exists()], kids
