"""A fleet run in-process, on this machine: each target is a real HTTP server on loopback (ready, or
never ready), watched by the real monitor. --fail-fast, --min-ready and the run's result in numbers."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from fleetfix import Collect, model_servers

from coldwatch.fleet import Fleet
from coldwatch.settings import Settings


@pytest.fixture
def servers() -> Iterator[dict[str, str]]:
    """Target name -> URL: r* are ready at once, n* never are."""
    with model_servers(("r1", "r2", "r3", "n1", "n2")) as urls:
        yield urls


def _run(urls: dict[str, str], targets: list[str], **base: Any) -> dict[str, Any]:
    def settings_for(t: str) -> Settings:
        return Settings(
            url=urls[t], log_cmd="sleep 30", gpu_cmd="true", interval=0.2, timeout=base.get("timeout", 4.0), target=t, record=False
        )

    b = Settings(parallel=base.get("parallel", 8), min_ready=base.get("min_ready"), fail_fast=base.get("fail_fast", False), timeout=4.0)
    return Fleet(targets, settings_for, b, [Collect()]).run()


def test_fleet_all_ready(servers: dict[str, str]) -> None:
    res = _run(servers, ["r1", "r2", "r3"])
    assert (res["outcome"], res["exit_code"]) == ("ready", 0)
    assert sorted(t["outcome"] for t in res["targets"]) == ["ready"] * 3


def test_fleet_one_never_ready_fails_the_default_all(servers: dict[str, str]) -> None:
    res = _run(servers, ["r1", "r2", "n1"], timeout=4.0)
    assert res["exit_code"] == 124 and res["outcome"] != "ready"
    assert {t["target"]: t["exit_code"] for t in res["targets"]} == {"r1": 0, "r2": 0, "n1": 124}
    res = _run(servers, ["r1", "r2", "n1"], timeout=4.0, min_ready="2")
    assert res["exit_code"] == 0


def test_fail_fast_ends_the_others_and_counts_them_not_ready(servers: dict[str, str]) -> None:
    t0 = time.monotonic()
    # n1 times out after 1.5 s; n2 (4 s) is ended by --fail-fast; r* queued behind them are never watched
    res = _run(servers, ["n1", "n2", "r1", "r2"], timeout=1.5, parallel=2, fail_fast=True)
    took = time.monotonic() - t0
    by = {t["target"]: t for t in res["targets"]}
    assert res["exit_code"] == 124 and res["outcome"] != "ready"
    assert by["n1"]["exit_code"] == 124
    assert all(by[t]["outcome"] != "ready" for t in ("r1", "r2")), by
    assert "--fail-fast" in by["r1"]["reason"]
    assert took < 10, took


def test_the_result_and_the_table(servers: dict[str, str]) -> None:
    sink = Collect()

    def settings_for(t: str) -> Settings:
        return Settings(url=servers[t], log_cmd="sleep 30", gpu_cmd="true", interval=0.2, timeout=2.5, target=t, record=False)

    res = Fleet(["n1"], settings_for, Settings(timeout=2.5), [sink]).run()
    assert res["schema"] == 1 and res["event"] == "result" and sink.events[-1] is res
    rows = [e for e in sink.events if e["event"] == "_rows"]
    assert rows and rows[0]["rows"][0]["name"] == "n1"  # the table is refreshed while the fleet runs


def test_table_rows_follow_the_targets_events() -> None:
    f = Fleet(["a"], lambda t: Settings(), Settings(), [])
    assert f.rows["a"]["phase"] == "queued"
    f._note("a", {"event": "phase", "phase": "weight_load"})
    assert f.rows["a"]["phase"] == "weight_load" and f.rows["a"]["progress"] is None
    f._note("a", {"event": "progress", "unit": "shards", "done": 3, "total": 8})
    assert f.rows["a"]["progress"] == (3, 8)
    f._note("a", {"event": "progress", "unit": "bytes", "done": 1, "total": 2})  # bytes are not the bar
    assert f.rows["a"]["progress"] == (3, 8)
    f._note("a", {"event": "gpu", "gpus": [{"used_mib": 10, "total_mib": 100}, {"used_mib": 5, "total_mib": 100}]})
    assert f.rows["a"]["gpu_mem"] == (15, 200)
    f._note("a", {"event": "gpu", "gpus": []})
    assert f.rows["a"]["gpu_mem"] is None
    f._note("a", {"event": "target_result", "outcome": "failed", "phase": "kv_alloc"})
    assert (f.rows["a"]["verdict"], f.rows["a"]["phase"]) == ("failed", "kv_alloc")


def test_table_only_keeps_the_table_and_the_verdict() -> None:
    from coldwatch.fleet import TableOnly

    inner = Collect()
    t = TableOnly(inner)
    for kind in ("_rows", "phase", "_tick", "warning", "target_result", "result"):
        t.emit({"event": kind})
    assert [e["event"] for e in inner.events] == ["_rows", "_tick", "result"]


def test_the_worst_target_is_named_not_the_first_that_is_not_ready(servers: dict[str, str]) -> None:
    from coldwatch.sim import free_port

    urls = {**servers, "down": servers["r1"]}

    def settings_for(t: str) -> Settings:
        host = f"127.0.0.1:{free_port()}" if t == "down" else None  # nothing listens: unreachable (4) at once
        return Settings(host=host, url=urls[t], log_cmd="sleep 30", gpu_cmd="true", interval=0.2, timeout=1.5, target=t, record=False)

    res = Fleet(["n1", "down"], settings_for, Settings(timeout=1.5), [Collect()]).run()
    assert res["exit_code"] == 4 and res["outcome"] == "unreachable"  # 4 is more severe than 124
    assert "first of the worst: down:" in res["reason"], res["reason"]


def test_a_target_with_bad_settings_is_a_usage_error(servers: dict[str, str]) -> None:
    from coldwatch.errors import ConfigError

    def settings_for(t: str) -> Settings:
        if t == "bad":
            raise ConfigError("bad: unknown key 'x'")
        return Settings(url=servers[t], log_cmd="sleep 30", gpu_cmd="true", interval=0.2, timeout=3, target=t, record=False)

    res = Fleet(["r1", "bad"], settings_for, Settings(timeout=3), [Collect()]).run()
    by = {t["target"]: t for t in res["targets"]}
    assert (by["bad"]["outcome"], by["bad"]["exit_code"]) == ("usage", 2) and by["r1"]["outcome"] == "ready"


class SlowSink(Collect):
    """A sink that takes its time with every event (a slow terminal, a pipe its reader leaves full)."""

    def emit(self, ev: dict[str, Any]) -> None:
        if not ev["event"].startswith("_"):
            time.sleep(0.25)
        super().emit(ev)


def test_a_slow_sink_does_not_hold_up_the_watches(servers: dict[str, str]) -> None:
    """The targets are judged at their own pace however slowly the output is written, and every event
    still reaches the sink, each target's in its order, before the run's result."""
    sink = SlowSink()

    def settings_for(t: str) -> Settings:
        return Settings(url=servers[t], log_cmd="sleep 30", gpu_cmd="true", interval=0.2, timeout=8.0, target=t, record=False)

    t0 = time.monotonic()
    res = Fleet(["r1", "r2", "r3"], settings_for, Settings(parallel=8, timeout=8.0), [sink]).run()
    took = time.monotonic() - t0
    assert res["exit_code"] == 0 and sink.events[-1] is res
    written = [e for e in sink.events if not e["event"].startswith("_")]
    assert len(written) * 0.25 > 2.0, len(written)  # the sink's backlog is seconds long
    verdicts = [e["t"] for e in written if e["event"] == "target_result"]
    assert len(verdicts) == 3 and max(verdicts) < 1.5, (verdicts, took)  # each reached in its first second or so
    for target in ("r1", "r2", "r3"):
        own = [e["event"] for e in written if e.get("target") == target]
        assert own[-1] == "target_result", own
