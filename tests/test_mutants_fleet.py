"""A fleet's live table as its user watches it (fleet.py): refreshed every second, each target's GPU
memory summed only over what its GPUs report. Each test pins a behaviour a surviving mutant of fleet.py
changed (scripts/mutate.py fleet); the targets are real HTTP servers on loopback, the GPU command a real
shell command printing nvidia-smi's CSV."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest
from fleetfix import Collect

from coldwatch.fleet import Fleet
from coldwatch.settings import Settings
from coldwatch.testing import ModelServer


@pytest.fixture
def url() -> Iterator[str]:
    """A real model server that stays loading (503) for the whole test."""
    srv = ModelServer()
    yield f"http://127.0.0.1:{srv.port}"
    srv.close()


# three GPUs; the second's driver reports no memory total, the third's no memory used
GPU_CSV = "printf '0, 1000, 81559, 5\\n1, 2000, [N/A], 7\\n2, [N/A], 1000, 0\\n'"


def test_the_table_refreshes_every_second_with_the_gpus_that_report_a_total(url: str) -> None:
    """A 3.5 s watch of a server that never gets ready: table refreshes a second apart, and the
    target's GPU memory is 3000 of 82559 MiB: a GPU without a total adds its use but no made-up total, one
    without its use adds its total but no made-up use."""
    sink = Collect()

    def settings_for(t: str) -> Settings:
        return Settings(url=url, log_cmd="sleep 30", gpu_cmd=GPU_CSV, interval=0.2, timeout=3.5, target=t, record=False)

    res = Fleet(["a"], settings_for, Settings(timeout=3.5), [sink]).run()
    assert res["exit_code"] == 124
    rows = [e for e in sink.events if e["event"] == "_rows"]
    ts = [e["t"] for e in rows]
    gaps = sorted(b - a for a, b in zip(ts, ts[1:], strict=False))
    assert gaps and gaps[len(gaps) // 2] < 1.5, ts  # the median refresh is a second apart (a busy machine delays some)
    mem = [e["rows"][0].get("gpu_mem") for e in rows]
    assert (3000, 82559) in mem and all(m in (None, (3000, 82559)) for m in mem), mem


class InterruptOnTable(Collect):
    """A sink that presses Ctrl-C (a real SIGINT to this process) when the fleet's first table refresh arrives."""

    def emit(self, ev: dict[str, Any]) -> None:
        super().emit(ev)
        if ev["event"] == "_rows" and not getattr(self, "sent", False):
            self.sent = True
            os.kill(os.getpid(), signal.SIGINT)


def test_an_interrupted_fleet_ends_with_its_result_and_starts_no_queued_target(url: str) -> None:
    """Ctrl-C while a fleet watches the first of three targets one at a time: the result line is the last
    event, even a second later; the two queued targets are never watched (nothing of theirs follows)."""
    sink = InterruptOnTable()

    def settings_for(t: str) -> Settings:
        return Settings(url=url, log_cmd="sleep 30", gpu_cmd="true", interval=0.2, timeout=20.0, target=t, record=False)

    # Ctrl-C raises KeyboardInterrupt even where the runner was started with SIGINT ignored (a background job)
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        res = Fleet(["a", "b", "c"], settings_for, Settings(timeout=20.0, parallel=1), [sink]).run()
    finally:
        signal.signal(signal.SIGINT, old)
    time.sleep(1.0)
    assert res["exit_code"] == 130 and sink.events[-1] is res, sink.events[-3:]
    assert 0.5 <= res["t"] < 15.0  # seconds since the fleet began
    assert {t["target"]: t["outcome"] for t in res["targets"]} == {"a": "interrupted", "b": "interrupted", "c": "interrupted"}


def test_a_target_that_crashes_coldwatch_is_an_internal_error_exit_1() -> None:
    """A bug in one target's watch (here its settings raise) is that target's 'error' with exit code 1."""

    def settings_for(t: str) -> Settings:
        raise RuntimeError("boom")

    res = Fleet(["x"], settings_for, Settings(timeout=5.0), [Collect()]).run()
    (only,) = res["targets"]
    assert (only["outcome"], only["exit_code"]) == ("error", 1) and "internal error (RuntimeError: boom)" in only["reason"]


def test_a_target_that_cannot_be_reached_reports_its_result_before_the_runs(url: str) -> None:
    """Nothing listens on the target's SSH port: its target_result (unreachable, 4) comes, then the run's result."""
    from coldwatch.sim import free_port

    sink = Collect()

    def settings_for(t: str) -> Settings:
        return Settings(host=f"127.0.0.1:{free_port()}", url=url, log_cmd="sleep 30", gpu_cmd="true", timeout=5.0, target=t, record=False)

    res = Fleet(["down"], settings_for, Settings(timeout=5.0), [sink]).run()
    ends = [(e["event"], e.get("target"), e.get("exit_code")) for e in sink.events if e["event"] in ("target_result", "result")]
    assert ends == [("target_result", "down", 4), ("result", None, 4)] and sink.events[-1] is res
