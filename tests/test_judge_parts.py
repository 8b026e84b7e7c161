"""The judge's parts, each rule alone (coldwatch.judging): what one rule decides from its own inputs,
with no classifier, driver or clock around it."""

from __future__ import annotations

import dataclasses

import pytest

from coldwatch import eta
from coldwatch.evidence import (
    CheckResult,
    ConnectionLost,
    EarlierEnded,
    EarlierLine,
    LogLine,
    NodeLost,
    ProbeFailed,
    ProbeNow,
    ProbeWarning,
    ProcFailed,
    ProcSample,
    Reading,
    ReadingsDropped,
    Reconnected,
    SamplerOff,
    ServedAt,
    SupervisorState,
)
from coldwatch.judging.first_hour import Attach
from coldwatch.judging.lifecycle import Lifecycle
from coldwatch.judging.liveness import Liveness
from coldwatch.judging.notes import warning_for
from coldwatch.judging.outbox import Outbox
from coldwatch.judging.policy import Policy
from coldwatch.judging.ports import PortRule
from coldwatch.judging.process import ProcessRule
from coldwatch.phases import Classifier
from coldwatch.ranks import RankWatch


def warnings(out: Outbox) -> list[str]:
    return [e["message"] for e in out.drain() if e["event"] == "warning"]


# ---- lifecycle: failures, deaths, restarts ---------------------------------------------------


def test_a_failure_is_final_after_its_grace_unless_a_restart_may_come() -> None:
    out = Outbox()
    life = Lifecycle(out, Policy(max_restarts=1, fail_grace=0.4, restart_wait=15.0))
    life.failed(10.0)
    assert life.due(10.3, log_failed=True) is None  # inside the grace
    assert life.due(11.0, log_failed=True) is None  # no supervisor to ask: a restart may still show in the log
    assert life.due(25.0, log_failed=True) == "failed"  # the restart wait is over
    assert life.due(25.0, log_failed=False) is None  # the classifier no longer says failed
    no_restarts = Lifecycle(out, Policy(max_restarts=0, fail_grace=0.4))
    no_restarts.failed(10.0)
    assert no_restarts.due(10.4, log_failed=True) == "failed"  # no restart to wait for


def test_a_supervisor_that_gave_up_ends_the_wait_for_a_restart() -> None:
    """With restarts left, a dead unit that is not waiting to restart fails at once after the grace."""
    life = Lifecycle(Outbox(), Policy(max_restarts=2))
    assert not life.supervisor(SupervisorState(True, running=True, restarts=0), 0.0, initial=True)
    assert not life.supervisor(SupervisorState(True, dead=True, restarts=0, death_kind="oom"), 5.0, initial=False)
    assert life.death is not None and life.death[1] == "oom"
    assert life.due(5.0 + 1.4, log_failed=False) is None
    assert life.due(5.0 + 1.5, log_failed=False) == "died"
    waiting = Lifecycle(Outbox(), Policy(max_restarts=2))
    waiting.supervisor(SupervisorState(True, running=True, restarts=0), 0.0, initial=True)
    waiting.supervisor(SupervisorState(True, dead=True, waiting=True, restarts=0), 5.0, initial=False)
    assert waiting.due(8.0, log_failed=False) is None  # the supervisor scheduled a restart


def test_a_restart_is_counted_from_the_supervisors_counter_and_past_the_limit_is_due() -> None:
    out = Outbox()
    life = Lifecycle(out, Policy(max_restarts=1))
    life.supervisor(SupervisorState(True, running=True, restarts=4), 0.0, initial=True)
    assert life.supervisor(SupervisorState(True, running=True, restarts=5), 3.0, initial=False)
    assert life.restart(3.0, SupervisorState(True, restarts=5), "CUDA out of memory")
    assert life.restarts == 1 and life.due(3.0, log_failed=False) is None
    assert "restart 1" in warnings(out)[0]
    assert not life.restart(9.0, SupervisorState(True, restarts=6), "CUDA out of memory")
    assert life.due(9.0, log_failed=False) == "restarts"


def test_a_new_start_id_is_a_restart_and_an_unknown_supervisor_is_said_once() -> None:
    out = Outbox()
    life = Lifecycle(out, Policy(unit="sglang.service"))
    assert not life.supervisor(SupervisorState(False), 0.0, initial=True)
    assert not life.supervisor(SupervisorState(False), 1.0, initial=True)
    assert warnings(out) == ["no supervisor state for sglang.service (container?); service stream off"]
    life.supervisor(SupervisorState(True, running=True, start_id="a"), 2.0, initial=False)
    assert life.supervisor(SupervisorState(True, running=True, start_id="b"), 3.0, initial=False)


def test_a_start_marker_is_a_restart_only_without_a_supervisor_and_after_the_start_got_somewhere() -> None:
    life = Lifecycle(Outbox(), Policy())
    assert not life.is_log_restart("starting", failing=False)
    assert life.is_log_restart("starting", failing=True)
    assert life.is_log_restart("weight_load", failing=False)
    life.supervisor(SupervisorState(True, running=True), 0.0, initial=True)
    assert not life.is_log_restart("weight_load", failing=True)


def test_a_library_s_build_before_the_log_s_first_start_marker_is_that_start_s_own() -> None:
    life = Lifecycle(Outbox(), Policy())
    assert not life.is_log_restart("jit_compile", failing=False, phases=["starting", "jit_compile"])
    assert life.is_log_restart("jit_compile", failing=False, phases=["starting", "jit_compile"])  # a second marker
    life = Lifecycle(Outbox(), Policy())
    assert life.is_log_restart("weight_load", failing=False, phases=["starting", "weight_load"])  # an earlier run's load


def test_a_gone_process_is_a_death_only_when_no_supervisor_answers() -> None:
    life = Lifecycle(Outbox(), Policy())
    life.gone(4.0, "server process 7 is gone")
    assert life.death == (4.0, "killed", "server process 7 is gone")
    supervised = Lifecycle(Outbox(), Policy())
    supervised.supervisor(SupervisorState(True, running=True), 0.0, initial=True)
    supervised.gone(4.0, "server process 7 is gone")
    assert supervised.death is None


# ---- liveness: stall and slower than usual ---------------------------------------------------


def _state_in(phase_line: str, t: float) -> Classifier:
    c = Classifier()
    c.feed(LogLine(phase_line, t, "", phase_line))
    return c


def test_the_stall_budget_is_the_larger_of_stall_after_and_the_history() -> None:
    live = Liveness(Outbox(), Policy(stall_after=60.0, baseline={"weight_load": 100.0}), RankWatch())
    assert live.budget("weight_load") == 150.0
    assert live.budget("kv_alloc") == 60.0


def test_a_stall_names_every_kind_of_evidence_with_its_age() -> None:
    out = Outbox()
    live = Liveness(out, Policy(stall_after=10.0), RankWatch())
    c = _state_in("Load weight begin. avail mem=94.71 GB", 0.0)
    live.seen("log", 0.0)
    live.seen("gpu_mem", 2.0)
    assert live.stall(11.9, c.state, None) is None
    stall = live.stall(12.0, c.state, None)
    assert stall is not None
    assert stall["evidence"] == {"log": 12.0, "gpu_mem": 10.0}
    assert "gpu_mem 10s ago, log 12s ago" in stall["message"] and "in weight_load" in stall["message"]
    assert Liveness(out, Policy(stall_after=0.0), RankWatch()).stall(1e6, c.state, None) is None


def test_slower_than_usual_is_said_once_per_phase() -> None:
    out = Outbox()
    live = Liveness(out, Policy(baseline={"weight_load": 100.0}), RankWatch())
    c = _state_in("Load weight begin. avail mem=94.71 GB", 0.0)
    live.slow(c.state, 149.0)
    assert out.drain() == []
    short = Liveness(out, Policy(baseline={"weight_load": 20.0}), RankWatch())
    short.slow(c.state, 40.0)  # twice its median, but only 20 s longer: under the floor
    assert out.drain() == []
    short.slow(c.state, 50.0)
    assert [e["event"] for e in out.drain()] == ["warning", "_slow"]
    live.slow(c.state, 150.0)
    live.slow(c.state, 200.0)
    evs = out.drain()
    assert [e["event"] for e in evs] == ["warning", "_slow"]
    assert evs[0]["message"] == "weight_load slower than usual: 150s vs median 100s"


# ---- the process tree ---------------------------------------------------------------------


def test_bytes_read_during_the_load_are_its_progress_and_disk_liveness() -> None:
    out = Outbox()
    live = Liveness(out, Policy(), RankWatch())
    procs = ProcessRule(out, live, eta.Tracker([], "", False))
    procs.sample(ProcSample(True, cpu_s=1.0, read_bytes=1000, model_bytes=10_000), 0.0, loading=True)
    assert out.drain() == [] and live.evidence == {}
    procs.sample(ProcSample(True, cpu_s=1.0, read_bytes=6000), 1.0, loading=True)  # model size kept from before
    evs = out.drain()
    progress = next(e for e in evs if e["event"] == "progress")
    assert (progress["done"], progress["total"], progress["unit"]) == (5000, 10_000, "bytes")
    assert set(live.evidence) == {"disk"}
    assert procs.last is not None and procs.last.model_bytes == 10_000


def test_a_compiler_child_is_compile_activity() -> None:
    out = Outbox()
    live = Liveness(out, Policy(), RankWatch())
    procs = ProcessRule(out, live, eta.Tracker([], "", False))
    assert procs.sample(ProcSample(True, children=("bash", "nvcc", "cicc")), 3.0, loading=False) == ["cicc", "nvcc"]
    assert live.evidence == {"compile": 3.0}


# ---- who holds the port ---------------------------------------------------------------------


def test_an_older_server_on_the_port_holds_back_its_completions() -> None:
    out = Outbox()
    ports = PortRule(out, 30000, None)
    old = ProcSample(True, port="other", owner_pid=99, owner_name="python3", owner_older=True)
    ports.holder(10, old, 1.0)
    assert ports.holds(10, sampled=True, t=2.0)
    said = warnings(out)
    assert "port 30000 is held by python3 (pid 99)" in said[0] and "from python3 (pid 99)" in said[1]
    ports.holder(10, ProcSample(True, port="own"), 3.0)  # the old server is gone: the held answer can count
    assert out.actions() == [ProbeNow()] and not ports.holds(10, sampled=True, t=3.0)


def test_a_proxy_in_front_is_probed_through() -> None:
    out = Outbox()
    ports = PortRule(out, 8000, None)
    ports.holder(10, ProcSample(True, port="other", owner_pid=5, owner_name="nginx"), 1.0)
    assert not ports.holds(10, sampled=True, t=1.0)
    assert "served by nginx (pid 5), outside the server's process tree" in warnings(out)[0]


def test_a_server_younger_than_this_start_on_the_port_is_its_own() -> None:
    """``docker run --network host``: the container this start launched holds the port, as a process
    outside the server's tree but younger than it: probed through, never held back."""
    out = Outbox()
    ports = PortRule(out, 30000, None)
    ports.holder(10, ProcSample(True, port="other", owner_pid=77, owner_name="python3", owner_older=False), 1.0)
    assert not ports.holds(10, sampled=True, t=1.0)
    assert "served by python3 (pid 77)" in warnings(out)[0]


def test_a_completion_before_the_first_process_sample_waits_for_it() -> None:
    ports = PortRule(Outbox(), 8000, None)
    assert ports.holds(10, sampled=False, t=0.0) and ports.held
    assert not PortRule(Outbox(), None, None).holds(10, sampled=False, t=0.0)  # the host cannot see the port


def test_the_logged_listen_port_is_compared_with_the_probed_one() -> None:
    out = Outbox()
    ports = PortRule(out, None, 8000)
    ports.line("INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)", 1.0)
    assert ports.note == ""
    ports.line("INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)", 2.0)
    assert "listens on port 30000" in ports.note and "but port 8000 is probed" in ports.note
    assert warnings(out) == [ports.note + ": check --url or --port"]


# ---- first hour, notes, outbox ----------------------------------------------------------------


def test_an_attach_is_a_first_answer_that_was_already_a_completion() -> None:
    a = Attach()
    a.http("ready")
    assert a.why(True, SupervisorState(True, running=True, since="Tue 2026-12-01 09:00:00 UTC")).startswith(
        "already up since Tue 2026-12-01 09:00:00 UTC"
    )
    assert a.why(False, None) == ""
    cold = Attach()
    for state in ("refused", "status", "ready"):
        cold.http(state)
    assert cold.why(True, None) == ""
    restarted = Attach()  # an old server answered first, then this start's 503s, then its completion
    for state in ("ready", "status", "ready"):
        restarted.http(state)
    assert restarted.why(True, None) == ""


@pytest.mark.parametrize(
    ("reading", "key"),
    [
        (ProcFailed("boom"), "proc"),
        (SamplerOff(127), "sampler"),
        (ConnectionLost("EOF", 120.0, "node b: "), None),
        (Reconnected(3.2, "from the cursor"), None),
        (NodeLost("node b cannot be reached"), "blind"),
        (ProbeFailed("gpu", "timeout"), "gpu"),
        (ProbeWarning("x", "a warning"), "x"),
        (EarlierLine(LogLine("old", None, "", "old"), "the unit's start"), "earlier"),
        (EarlierEnded(2), "earlier_end"),
        (ReadingsDropped(5), None),
    ],
)
def test_every_warn_only_reading_has_its_words(reading: Reading, key: str | None) -> None:
    said = warning_for(reading)
    assert said is not None and said[0] == key and said[1]


def test_readings_that_change_the_judge_are_not_warnings() -> None:
    assert warning_for(ServedAt("http://h:8001", 8001)) is None
    assert warning_for(CheckResult("chat", True, "ok")) is None


def test_the_outbox_says_a_keyed_warning_once() -> None:
    out = Outbox(epoch0=1_700_000_000.0)
    out.say("k", "once", 1.0)
    out.say("k", "once", 2.0)
    out.say(None, "every time", 3.0)
    out.say(None, "every time", 4.0)
    evs = out.drain()
    assert [e["message"] for e in evs] == ["once", "every time", "every time"]
    assert evs[0]["ts"] is not None and out.drain() == []


def test_a_policy_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        Policy().timeout = 5.0  # type: ignore[misc]  # the point: it cannot be assigned
