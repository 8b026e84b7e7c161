"""The judge as its drivers feed it (judge.py): each test pins a behaviour a surviving mutant of judge.py
changed (scripts/mutate.py judge), asserted in seconds, counts, exit codes and reasons."""

from __future__ import annotations

from typing import Any

import pytest

from coldwatch.evidence import (
    CheckResult,
    HttpState,
    LogEnded,
    ProcReading,
    ProcSample,
    SupervisorReading,
    SupervisorState,
    WatchPid,
)
from coldwatch.judge import Judge, Policy
from coldwatch.normalise import LogLine
from coldwatch.replay import replay_policy

READY = HttpState("ready", 200, "completion returned", "m")
LOAD = "Load weight begin. avail mem=75.00 GB"
MARKER = "server_args=ServerArgs(model_path='m')"


def say(j: Judge, text: str, t: float | None = None, own: float | None = None) -> None:
    """A log line at ``t`` (the monitor's clock) or, with ``t`` None, on its own clock ``own``."""
    j.line(LogLine(text, own, "", text), t)


def oom(j: Judge, t: float) -> None:
    say(j, "Scheduler hit an exception: Traceback (most recent call last):", t)
    say(j, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", t)


def of(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] == kind]


def warnings(j: Judge) -> list[str]:
    return [e["message"] for e in of(j.drain(), "warning")]


def test_an_unstamped_line_at_the_start_is_live_at_0_and_a_stamped_line_is_at_its_own_second() -> None:
    """A watch begins at 0 s: an unstamped first line is liveness at 0 s, so with a 60 s stall budget the
    start is stalled at 60 s (exit 5), not later; a line stamped 12.5 s puts the judge at 12.5 s."""
    j = Judge(Policy(stall_after=60.0))
    assert j.status().now == 0.0
    say(j, LOAD)
    assert j.tick(59.9) is None
    v = j.tick(60.0)
    assert v is not None and (v.outcome, v.exit_code) == ("stalled", 5)
    own = Judge(replay_policy())
    say(own, LOAD)
    say(own, "The server is fired up and ready to roll!", own=12.5)
    assert [(e["phase"], e["t"]) for e in of(own.drain(), "phase")][-1] == ("ready", 12.5)
    assert own.status().now == 12.5


def test_a_saved_log_fails_at_its_first_line_past_the_fail_grace() -> None:
    """A replay (no stall rule, no deadline): an OOM at 10 s is the verdict at the first line 0.4 s later
    or more, with no tick; a line at 10.3 s is still inside the grace."""
    j = Judge(replay_policy())
    say(j, LOAD, 0.0)
    oom(j, 10.0)
    say(j, "a later line", 10.3)
    assert j.status().verdict is None
    say(j, "a later line", 10.5)
    v = j.status().verdict
    assert v is not None and (v.outcome, v.exit_code, v.failure_kind) == ("failed", 3, "oom")


def test_a_restart_in_a_saved_log_begins_the_new_start_at_its_marker() -> None:
    """With --max-restarts 1 a start marker after a failure begins the new start: its timeline starts
    at the marker's second (40 s), the restart is said once, and the new start is ready at 60 s."""
    lines = [MARKER, LOAD, "Scheduler hit an exception: Traceback (most recent call last):"]
    lines += ["torch.OutOfMemoryError: CUDA out of memory.", MARKER, LOAD, "The server is fired up and ready to roll!"]
    j = Judge(replay_policy(max_restarts=1))
    for i, text in enumerate(lines):
        say(j, text, 10.0 * i)
    v = j.finish()
    assert (v.outcome, v.exit_code) == ("ready", 0)
    res = j.result(60.0)
    assert [(p["phase"], p["start"], p["end"]) for p in res["phases"]] == [
        ("starting", 40.0, 50.0),
        ("weight_load", 50.0, 60.0),
        ("ready", 60.0, None),
    ]
    assert len([w for w in warnings(j) if w.startswith("server restarted (restart 1)")]) == 1


def test_a_restart_past_max_restarts_in_a_saved_log_fails_at_the_marker() -> None:
    """--max-restarts 0: a start marker right after the OOM (inside the fail grace) is the end: failed
    [oom] at that line, exit 3, the restart counted once; the lines after it change nothing."""
    j = Judge(replay_policy(max_restarts=0))
    say(j, MARKER, 0.0)
    say(j, LOAD, 1.0)
    oom(j, 10.0)
    say(j, MARKER, 10.1)
    v = j.status().verdict
    assert v is not None and (v.outcome, v.exit_code, v.failure_kind) == ("failed", 3, "oom")
    say(j, LOAD, 11.0)
    say(j, "The server is fired up and ready to roll!", 12.0)
    assert j.finish() == v
    assert len([w for w in warnings(j) if w.startswith("server restarted")]) == 1


def test_the_supervisors_main_pid_is_watched_once_and_never_over_a_given_pid() -> None:
    """The supervisor names main PID 7: watched once (the same answer again asks nothing); an answer
    without a PID, or from an unknown supervisor, asks nothing; with --pid 42 its PID is never watched."""
    j = Judge(Policy(stall_after=0.0))

    def watched(r: SupervisorReading, t: float, judge: Judge = j) -> list[WatchPid]:
        return [a for a in judge.observe(r, t) if isinstance(a, WatchPid)]

    running = SupervisorState(True, running=True, main_pid=7, start_id="a", restarts=0)
    assert watched(SupervisorReading(running, initial=True), 0.0) == [WatchPid(7)]
    assert watched(SupervisorReading(running), 1.0) == []
    assert watched(SupervisorReading(SupervisorState(True, running=True, start_id="a", restarts=0)), 2.0) == []
    assert watched(SupervisorReading(SupervisorState(False, main_pid=9)), 3.0) == []
    given = Judge(Policy(stall_after=0.0, pid=42))
    assert watched(SupervisorReading(running, initial=True), 0.0, given) == []


def ready_judge() -> Judge:
    j = Judge(Policy(stall_after=0.0))
    j.observe(HttpState("ready", 200, "completion returned", "m"), 5.0)
    v = j.status().verdict
    assert v is not None and v.outcome == "ready"
    return j


def test_a_failed_check_fails_a_ready_start_a_late_one_times_it_out_a_passing_one_keeps_it() -> None:
    """--check after ready: a passing check keeps ready (exit 0); a failing one is failed [other] with
    its detail (exit 3); one not answered by the deadline is a timeout (exit 124)."""
    ok = ready_judge()
    ok.observe(CheckResult("chat", True, "answered"), 6.0)
    assert ok.result(6.0)["exit_code"] == 0
    bad = ready_judge()
    bad.observe(CheckResult("chat", False, "chat answered 500"), 6.0)
    res = bad.result(6.0)
    assert (res["outcome"], res["exit_code"], res["failure_kind"], res["reason"]) == ("failed", 3, "other", "chat answered 500")
    late = ready_judge()
    late.observe(CheckResult("chat", False, "no answer", late=True), 36.0)
    res = late.result(36.0)
    assert (res["outcome"], res["exit_code"]) == ("timeout", 124)
    assert res["reason"].startswith("--check chat not answered by the deadline")
    direct = ready_judge()
    direct.check("chat", False, "chat answered 500", 6.0)  # not late unless said
    assert direct.result(6.0)["exit_code"] == 3


def test_a_check_changes_nothing_but_a_ready_verdict() -> None:
    """A failing check before any verdict decides nothing; after a failed verdict it keeps its cause."""
    j = Judge(Policy(stall_after=0.0))
    j.observe(CheckResult("chat", False, "refused"), 1.0)
    assert j.status().verdict is None
    failed = Judge(Policy(stall_after=0.0, max_restarts=0))
    say(failed, LOAD, 0.0)
    oom(failed, 1.0)
    failed.tick(2.0)
    failed.observe(CheckResult("chat", False, "refused"), 3.0)
    res = failed.result(3.0)
    assert (res["exit_code"], res["failure_kind"]) == (3, "oom")


def test_a_log_that_ends_mid_load_is_incomplete() -> None:
    """The end of a saved log in weight_load with no verdict: incomplete, exit 124, naming the phase;
    a result asked with no verdict yet is that verdict too."""
    j = Judge(replay_policy())
    say(j, LOAD, 3.0)
    v = j.finish()
    assert (v.outcome, v.exit_code, v.reason) == ("incomplete", 124, "log ended in weight_load without ready or a failure")
    fresh = Judge(replay_policy())
    say(fresh, LOAD, 3.0)
    res = fresh.result(50.0)
    assert (res["outcome"], res["exit_code"], res["t"]) == ("incomplete", 124, 50.0)


def test_finish_at_a_later_second_applies_the_deadline_at_that_second() -> None:
    """The evidence ends at 10 s, the driver finishes at 40 s with a 30 s deadline: a timeout, exit 124."""
    j = Judge(Policy(stall_after=0.0, timeout=30.0))
    say(j, LOAD, 10.0)
    v = j.finish(40.0)
    assert (v.outcome, v.exit_code) == ("timeout", 124)


def test_one_look_at_a_start_that_just_failed_or_died_is_its_verdict() -> None:
    """`status` looks once: an OOM logged at the very second of the look is failed [oom] (exit 3);
    a process that is gone at that second is failed [killed]; a healthy start decides nothing."""
    failed = Judge(Policy(stall_after=0.0))
    say(failed, LOAD, 0.0)
    oom(failed, 10.0)
    v = failed.settle(10.0)
    assert v is not None and (v.exit_code, v.failure_kind) == (3, "oom")
    dead = Judge(Policy(stall_after=0.0))
    say(dead, LOAD, 0.0)
    dead.observe(ProcReading(42, ProcSample(alive=False)), 10.0)
    v = dead.settle(10.0)
    assert v is not None and (v.exit_code, v.failure_kind) == (3, "killed")
    healthy = Judge(Policy(stall_after=0.0))
    say(healthy, LOAD, 0.0)
    assert healthy.settle(10.0) is None


@pytest.mark.parametrize(
    ("status", "ran_s", "said"),
    [
        (1, 0.5, "log command exited with status 1; watching without the log"),
        (1, 1.9, "log command exited with status 1; watching without the log"),
        (1, 2.0, "the log stream ended"),
        (1, 3.0, "the log stream ended"),
        (0, 0.5, "the log stream ended"),
        (None, 0.5, "the log stream ended"),
    ],
)
def test_a_log_command_that_fails_at_once_is_said_apart_from_a_log_that_ends(status: int | None, ran_s: float, said: str) -> None:
    """The log command exits within 2 s with a failing status: said so; any other end of the log is the
    stream's end."""
    j = Judge(Policy(stall_after=0.0))
    say(j, LOAD, 0.0)
    j.drain()
    j.observe(LogEnded(status, ran_s), 5.0)
    assert warnings(j) == [said]


def test_a_log_that_ends_after_its_failure_says_nothing_more() -> None:
    """The log ends after it logged the failure: no 'stream ended' warning (the failure says it all)."""
    j = Judge(Policy(stall_after=0.0))
    say(j, LOAD, 0.0)
    oom(j, 1.0)
    j.drain()
    j.observe(LogEnded(0, 30.0), 2.0)
    assert warnings(j) == []


def test_bytes_read_in_weight_load_are_its_progress_and_not_before() -> None:
    """Process samples: 400 of 1000 model bytes read in weight_load is a progress event (400/1000
    bytes, 1.5 s left at 400 B/s); bytes read before weight_load are no progress."""
    j = Judge(Policy(stall_after=0.0))
    say(j, MARKER, 0.0)
    j.observe(ProcReading(42, ProcSample(alive=True, read_bytes=0, model_bytes=1000)), 1.0)
    j.observe(ProcReading(42, ProcSample(alive=True, read_bytes=100, model_bytes=1000)), 2.0)
    assert [e for e in of(j.drain(), "progress") if e.get("unit") == "bytes"] == []
    say(j, LOAD, 3.0)
    j.observe(ProcReading(42, ProcSample(alive=True, read_bytes=100, model_bytes=1000)), 3.0)
    j.observe(ProcReading(42, ProcSample(alive=True, read_bytes=500, model_bytes=1000)), 4.0)
    prog = [e for e in of(j.drain(), "progress") if e.get("unit") == "bytes"]
    assert [(e["t"], e["done"], e["total"], e["eta_s"]) for e in prog] == [(4.0, 400, 1000, 1.5)]


def test_the_eta_is_said_at_each_phase_and_every_5_seconds() -> None:
    """A usual total of 100 s: an eta event as weight_load begins at 0 s (100 s left), none at 3 s, one at
    5 s (95 s left), none once ready."""
    j = Judge(Policy(stall_after=0.0, baseline={"total": 100.0}))
    say(j, LOAD, 0.0)
    assert [(e["t"], e["remaining_s"]) for e in of(j.drain(), "eta")] == [(0.0, 100.0)]
    j.tick(3.0)
    assert of(j.drain(), "eta") == []
    j.tick(5.0)
    assert [(e["t"], e["remaining_s"]) for e in of(j.drain(), "eta")] == [(5.0, 95.0)]
    j.observe(READY, 6.0)
    j.tick(20.0)
    assert of(j.drain(), "eta") == []
