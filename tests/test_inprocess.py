"""The wait driver and status in-process, over coldwatch.testing's fake host and fake clock: what a
user sees when the connection drops while the server fails, when a unit restarts, and that status
says what wait would."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import OWN_LOGS, SHARED_LOGS

from coldwatch.commands import status_snapshot
from coldwatch.judge import FAIL_GRACE, RESTART_WAIT
from coldwatch.replay import read_chunks, replay
from coldwatch.testing import FakeHost, FollowStream, ModelServer, Watch, sampler_line, settings

OOM = (
    "[2026-11-29 18:24:50 TP0] Load weight begin. avail mem=75.00 GB\n"
    "[2026-11-29 18:24:52 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
    '  File "/sgl/python/sglang/srt/model_executor/model_runner.py", line 1951, in load_model\n'
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
)
LOADING = "[2026-11-29 18:24:50 TP0] Load weight begin. avail mem=75.00 GB\n"
READY_LOG = (
    "[2026-11-29 18:24:50 TP0] Load weight begin. avail mem=75.00 GB\n"
    "[2026-11-29 18:25:10] INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)\n"
    "[2026-11-29 18:25:12] The server is fired up and ready to roll!\n"
)


def systemd_show(
    invocation: str, active: str = "active", sub: str = "running", restarts: int = 0, pid: int = 0, result: str = "success"
) -> str:
    return (
        f"ActiveState={active}\nSubState={sub}\nResult={result}\nNRestarts={restarts}\nMainPID={pid}\n"
        f"ExecMainStatus=0\nInvocationID={invocation}\nLoadState=loaded\nActiveEnterTimestamp=Sun 2026-11-29 18:24:46 UTC\n"
    )


def journal(text: str, cursor: str) -> str:
    return "".join(json.dumps({"MESSAGE": line, "__CURSOR": f"{cursor}{i}"}) + "\n" for i, line in enumerate(text.splitlines()))


@pytest.fixture
def server() -> Iterator[ModelServer]:
    srv = ModelServer()
    yield srv
    srv.close()


def log_host(log_cmd: str = "cat server.log") -> tuple[FakeHost, FollowStream]:
    host = FakeHost()
    return host, host.on_follow(log_cmd)


# ---- the driver runs in-process ------------------------------------------------------------------


def test_wait_in_process_is_ready_on_a_served_completion(server: ModelServer) -> None:
    """The log says ready and the URL serves a completion: ready, exit 0, with the phases on its timeline."""
    host, log = log_host()
    host.listen(30000, ("127.0.0.1", server.port))
    server.state = "ready"
    w = Watch(settings(log_cmd="cat server.log"), host).start()
    log.write(READY_LOG)
    res = w.result(step=0.05)
    assert (res["outcome"], res["exit_code"], res["phase"]) == ("ready", 0, "ready")
    assert "weight_load" in [p["phase"] for p in res["phases"]]
    assert w.sink.events[-1] is not None and w.sink.events[-1]["event"] == "result"


def test_internal_events_reach_the_panel_never_the_ndjson(server: ModelServer) -> None:
    """A live run with --output json beside a panel-like sink: stdout's NDJSON holds only the contract's
    events (result last), while the sink that takes internal events gets the log tail and the header."""
    import io

    from coldwatch.render.jsonl import JsonSink

    host, log = log_host()
    host.listen(30000, ("127.0.0.1", server.port))
    server.state = "ready"
    out = io.StringIO()
    w = Watch(settings(log_cmd="cat server.log"), host, sinks=[JsonSink(out)]).start()
    log.write(READY_LOG)
    w.result(step=0.05)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    kinds = [e["event"] for e in lines]
    assert kinds[-1] == "result" and "phase" in kinds
    assert not [k for k in kinds if k.startswith("_")], kinds
    panel = {e["event"] for e in w.sink.events}
    assert {"_info", "_log", "_launch"} <= panel, panel


def test_a_pipeline_runs_its_processors_before_every_renderer() -> None:
    """A processor may change or drop an event; internal ones go on only to the sinks that take them."""
    from coldwatch.render import Pipeline
    from coldwatch.testing import ListSink

    class Contract(ListSink):
        takes_internal = False

    panel, public = ListSink(), Contract()
    pipe = Pipeline([panel, public], [lambda ev: None if ev.get("drop") else {**ev, "node": "a"}])
    for ev in ({"event": "phase", "t": 1.0}, {"event": "_log", "t": 1.0, "text": "x"}, {"event": "warning", "drop": True}):
        pipe.emit(ev)
    assert [(e["event"], e["node"]) for e in panel.events] == [("phase", "a"), ("_log", "a")]
    assert [e["event"] for e in public.events] == ["phase"]


def test_failure_is_judged_while_the_connection_is_down() -> None:
    """The server fails, then the connection drops and stays down: the failure is the verdict within its
    grace (the judging thread does not wait out the reconnect), and the drop is reported."""
    host, log = log_host()
    host.refuse_reconnects = True
    w = Watch(settings(host="gpu1", log_cmd="cat server.log", reconnect_for=120.0), host).start()
    log.write(OOM)
    w.until(lambda: bool(w.sink.of("phase")))
    host.drop()
    w.until(lambda: any("connection lost" in m for m in w.sink.messages()))
    w.advance(FAIL_GRACE + 0.1)
    res = w.result(timeout=3.0, step=0.01)
    assert (res["outcome"], res["exit_code"], res["failure_kind"]) == ("failed", 3, "oom")
    assert w.monitor.t() < 10.0, "decided within the grace, not after the reconnect window"


def test_head_lost_past_reconnect_for_is_unreachable() -> None:
    """The connection stays down past --reconnect-for: unreachable, exit 4, naming the gap."""
    host, log = log_host()
    host.refuse_reconnects = True
    w = Watch(settings(host="gpu1", log_cmd="cat server.log", reconnect_for=5.0), host).start()
    log.write(LOADING)
    w.until(lambda: bool(w.sink.of("phase")))
    host.drop()
    w.until(lambda: any("connection lost" in m for m in w.sink.messages()))
    w.advance(6.0)
    res = w.result(timeout=5.0)
    assert (res["outcome"], res["exit_code"]) == ("unreachable", 4)
    assert "--reconnect-for 5s" in res["reason"] and "last phase weight_load" in res["reason"]


def test_reconnect_resumes_the_log_without_repeating_lines(server: ModelServer) -> None:
    """A drop that heals: the log command is re-run, the records already seen are skipped, the start
    goes on to ready, and the result counts the reconnect."""
    host, log = log_host()
    w = Watch(settings(host="gpu1", log_cmd="cat server.log"), host).start()
    log.write(LOADING)
    w.until(lambda: bool(w.sink.of("phase")))
    again = host.on_follow("cat server.log")
    host.drop()
    w.until(lambda: any("reconnected" in m for m in w.sink.messages()))
    assert any("skipping 1 records already seen" in m for m in w.sink.messages())
    host.listen(30000, ("127.0.0.1", server.port))
    server.state = "ready"
    again.write(READY_LOG)  # the re-run command prints the log from its start
    res = w.result(step=0.05)
    assert (res["outcome"], res["reconnects"]) == ("ready", 1)
    assert [p["phase"] for p in res["phases"]].count("weight_load") == 1


def test_a_restart_rescopes_the_journal_to_the_new_start(server: ModelServer) -> None:
    """systemd restarts the unit after an OOM (--max-restarts 1): the watch follows the new
    invocation's journal from its first line, and the new start's ready is the verdict."""
    host = FakeHost()
    host.on_run("systemctl show", systemd_show("a", pid=41))
    first = host.on_follow("journalctl _SYSTEMD_INVOCATION_ID=a")
    second = host.on_follow("journalctl _SYSTEMD_INVOCATION_ID=b")
    sampler = host.on_follow("exec python3")
    host.listen(30000, ("127.0.0.1", server.port))
    w = Watch(settings(max_restarts=1), host).start()
    sampler.write(sampler_line(svc=systemd_show("a", pid=41)))
    first.write(journal(OOM, "a"))
    sampler.write(sampler_line(svc=systemd_show("a", active="activating", sub="auto-restart")))
    w.advance(2.0)
    sampler.write(sampler_line(svc=systemd_show("b", restarts=1, pid=42)))
    w.until(lambda: first.closed.is_set() and second in host.followed)
    server.state = "ready"
    second.write(journal(READY_LOG, "b"))
    sampler.write(sampler_line(pid=42, proc={"alive": True, "cpu": 2.0, "read": 0, "n": 1, "port": {"state": "own"}}))
    res = w.result(step=0.05)
    assert (res["outcome"], res["restarts"]) == ("ready", 1)
    assert any("server restarted (restart 1)" in m for m in w.sink.messages())


class Gate:
    """A sink that holds the judging thread (a slow terminal) until it is opened."""

    def __init__(self) -> None:
        self.open = threading.Event()

    def emit(self, ev: dict[str, Any]) -> None:
        self.open.wait(10.0)

    def close(self) -> None:
        pass


def test_readings_dropped_by_a_full_queue_are_counted_and_reported() -> None:
    """The judging thread falls behind (a sink blocks) and a chatty log overflows the queue: the lost
    readings are counted and reported as a warning, not dropped silently."""
    host, log = log_host()
    gate = Gate()
    w = Watch(settings(log_cmd="cat server.log"), host, sinks=[gate], queue_max=4).start()
    log.write("".join(f"[2026-11-29 18:24:{i % 60:02d} TP0] chatter {i}\n" for i in range(12)))
    w.until(lambda: w.monitor.nodes[0].dropped > 0, timeout=10.0)
    gate.open.set()
    w.until(lambda: any("dropped so far: the judging queue was full" in m for m in w.sink.messages()))
    w.monitor.cancel("done")
    assert w.result()["outcome"] == "incomplete"


# ---- status says what wait says -------------------------------------------------------------------


def status_of(s: Any, host: FakeHost) -> dict[str, Any]:
    return status_snapshot(s, host)


def both(
    log_text: str,
    server: ModelServer | None,
    watch_for: float = 4.0,
    sample: str | None = None,
    proc: str | None = None,
    log_cmd: str | None = "cat server.log",
    ends: bool = False,
    **kw: Any,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(status's snapshot, wait's result) of the same start: the same log, supervisor and process
    answers. ``log_cmd=None``: the unit's journal; ``ends``: the log command ends after the log (as
    `docker logs -f` does when its container stops), else it goes on."""
    s = settings(log_cmd=log_cmd, timeout=watch_for, **kw)
    text = log_text if log_cmd else journal(log_text, "c")
    host = FakeHost()
    host.on_run(f"timeout 5 {log_cmd}" if log_cmd else "journalctl", text, rc=0 if ends or not log_cmd else 124)
    if sample is not None:
        host.on_run("systemctl show", sample)
    if proc is not None:
        host.on_run("python3 -c", proc)
    if server is not None:
        host.listen(30000, ("127.0.0.1", server.port))
    snap = status_of(s, host)
    host = FakeHost()
    log = host.on_follow(log_cmd or "journalctl")
    sampler = host.on_follow("exec python3")
    if sample is not None:
        host.on_run("systemctl show", sample)
    if server is not None:
        host.listen(30000, ("127.0.0.1", server.port))
    w = Watch(s, host).start()
    if sample is not None or proc is not None:
        sampler.write(sampler_line(svc=sample, pid=kw.get("pid"), proc=json.loads(proc) if proc else None))
    log.write(text)
    if ends:
        log.end(0)
    res = w.result(timeout=10.0, step=0.05)
    return snap, res


def agree(snap: dict[str, Any], res: dict[str, Any]) -> None:
    assert snap["exit_code"] == res["exit_code"], (snap, res["reason"])
    assert snap["phase"] == (res["phase"] or "starting"), (snap["phase"], res["phase"], res["reason"])
    assert snap["failure_kind"] == res["failure_kind"], (snap["cause"], res["reason"])


def test_status_and_wait_agree_on_a_dead_unit() -> None:
    """The unit died (Result=signal) before coldwatch looked: failed, exit 3, to status as to wait."""
    dead = systemd_show("a", active="failed", sub="failed", result="signal")
    snap, res = both(LOADING, None, sample=dead, unit="sglang", log_cmd=None)
    agree(snap, res)
    assert (snap["exit_code"], snap["outcome"], snap["failure_kind"]) == (3, "failed", "killed")


def test_status_and_wait_agree_on_a_dead_pid() -> None:
    """--pid names a process that is gone: failed [killed], exit 3, to both."""
    snap, res = both(LOADING, None, proc='{"alive": false}', pid=4242)
    agree(snap, res)
    assert (snap["exit_code"], snap["failure_kind"]) == (3, "killed")


def test_a_crash_about_to_be_restarted_is_not_yet_failed() -> None:
    """--max-restarts 1 and a crash in the log: status says not decided (exit 124, pending), as wait
    keeps waiting for the restart; without restarts left both say failed."""
    s = settings(log_cmd="cat server.log", max_restarts=1)
    host = FakeHost()
    host.on_run("timeout 5 cat server.log", OOM)
    snap = status_of(s, host)
    assert (snap["exit_code"], snap["outcome"]) == (124, "pending")
    host2, log = log_host()
    w = Watch(s, host2).start()
    log.write(OOM)
    w.until(lambda: bool(w.sink.of("phase")))
    w.advance(2.0)
    assert not w.done, "wait waits for the restart too"
    w.advance(RESTART_WAIT)
    assert w.result()["exit_code"] == 3
    snap0, res0 = both(OOM, None, max_restarts=0)
    agree(snap0, res0)
    assert snap0["exit_code"] == 3


def _cases() -> list[tuple[Path, str]]:
    out = []
    for d in (SHARED_LOGS, OWN_LOGS / "real"):
        labels = d / "labels.json"
        if labels.exists():
            out += [(d / lab["file"], lab["outcome"]) for lab in json.loads(labels.read_text())]
    return out


CASES = _cases()


@pytest.mark.parametrize(("log", "outcome"), CASES, ids=[c[0].name[:40] for c in CASES])
def test_status_wait_and_replay_agree_on_every_fixture(log: Path, outcome: str, server: ModelServer) -> None:
    """Every shared fixture and recorded real-engine log: the same exit code, phase and failure kind
    from status (one look at the whole log), from wait (fed it live) and from replay."""
    text = log.read_bytes().decode("utf-8", "replace")
    if outcome == "ready":
        server.state = "ready"
    snap, res = both(text, server if outcome == "ready" else None, ends=outcome != "ready")
    agree(snap, res)
    with open(log, "rb") as fh:
        _, v = replay(read_chunks(fh))
    assert (res["exit_code"], res["failure_kind"]) == (v.exit_code if v.outcome != "incomplete" else 124, v.failure_kind)
