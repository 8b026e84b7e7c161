"""The judge's parts as a watch shows them (coldwatch.judging): each test pins a behaviour a surviving
mutant of a part changed (scripts/mutate.py judging), fed through the judge's public face (observe,
tick, status, snapshot, result) and asserted in seconds, counts, exit codes and words."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from coldwatch.bandwidth import IoSample, LoadTarget
from coldwatch.evidence import (
    GpuReading,
    GpuSample,
    HttpState,
    ProbeFast,
    ProbeNow,
    ProcReading,
    ProcSample,
    ProcUnavailable,
    SampleStacks,
    SupervisorReading,
    SupervisorState,
)
from coldwatch.judge import Judge, Policy
from coldwatch.judging.first_hour import Attach
from coldwatch.normalise import LogLine
from coldwatch.replay import replay_policy

LOAD = "Load weight begin. avail mem=75.00 GB"
MARKER = "server_args=ServerArgs(model_path='m')"
READY_LINE = "The server is fired up and ready to roll!"
READY = HttpState("ready", 200, "completion returned", "m")


def oom(j: Judge, t: float) -> None:
    """SGLang's scheduler reporting a CUDA OOM: the fatal line and the root error."""
    say(j, "Scheduler hit an exception: Traceback (most recent call last):", t)
    say(j, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", t)


def say(j: Judge, text: str, t: float) -> list[Any]:
    return j.observe(LogLine(text, None, "", text), t)


def of(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] == kind]


def warnings(j: Judge) -> list[str]:
    return [e["message"] for e in of(j.drain(), "warning")]


def proc(j: Judge, t: float, pid: int = 42, **kw: Any) -> list[Any]:
    return j.observe(ProcReading(pid, ProcSample(alive=True, **kw)), t)


def supervised(j: Judge, restarts: int | None, start_id: str, t: float, initial: bool = False) -> None:
    j.observe(SupervisorReading(SupervisorState(True, running=True, restarts=restarts, start_id=start_id), initial), t)


# ---- first_hour: the launch banner and the attach ------------------------------------------------


def test_the_launch_banner_names_the_first_version_said_once() -> None:
    """With --launch, vLLM's version is read from its first banner line and said once; a later line
    with another version, or a vLLM line without one, keeps it; V1's 'LLM engine (v…)' line says it too."""
    j = Judge(Policy(stall_after=0.0, launch=True))
    say(j, "INFO vLLM API server version 0.6.3", 0.0)
    launches = of(j.drain(), "_launch")
    assert [e["version"] for e in launches] == ["0.6.3"]
    say(j, "INFO vLLM API server version 0.9.9", 1.0)
    say(j, "INFO vLLM is using the default settings", 2.0)
    assert of(j.drain(), "_launch") == []
    v1 = Judge(Policy(stall_after=0.0, launch=True))
    say(v1, "INFO Initializing a V1 LLM engine (v0.8.1) with config: model='m'", 0.0)
    assert [e["version"] for e in of(v1.drain(), "_launch")][-1] == "0.8.1"


def test_without_launch_or_tail_the_judge_says_no_banner_and_no_log_lines() -> None:
    """A default policy: no _launch and no _log events (the panel asks for them); with tail, each line."""
    j = Judge(Policy())
    say(j, "INFO vLLM API server version 0.6.3", 0.0)
    say(j, LOAD, 1.0)
    evs = j.drain()
    assert of(evs, "_launch") == [] and of(evs, "_log") == []
    tail = Judge(Policy(tail=True))
    say(tail, LOAD, 1.0)
    assert [e["text"] for e in of(tail.drain(), "_log")] == [LOAD]


def test_an_attach_says_when_the_supervisor_started_the_server_if_it_says() -> None:
    """The words of an attach: the supervisor's start time when it gives one, else 'when the watch began'."""
    for svc in (None, SupervisorState(False, since="Tue 09:00"), SupervisorState(True, since="n/a"), SupervisorState(True, since="")):
        a = Attach()
        a.http("ready")
        assert a.why(True, svc).startswith("already up when the watch began: an attach"), svc
    a = Attach()
    a.http("ready")
    assert a.why(True, SupervisorState(True, since="Tue 09:00")).startswith("already up since Tue 09:00: an attach")


# ---- http_rule ---------------------------------------------------------------------------------


def test_an_http_event_is_said_on_each_change_only() -> None:
    """refused, refused, 503, 503, 502: three http events, each marked changed."""
    j = Judge(Policy(stall_after=0.0))
    for i, st in enumerate(
        [HttpState("refused"), HttpState("refused"), HttpState("status", 503), HttpState("status", 503), HttpState("status", 502)]
    ):
        j.observe(st, float(i))
    evs = of(j.drain(), "http")
    assert [(e["t"], e["state"], e["status"], e["changed"]) for e in evs] == [
        (0.0, "refused", None, True),
        (2.0, "status", 503, True),
        (4.0, "status", 502, True),
    ]


def test_an_http_status_answer_is_liveness_and_a_refused_port_is_not() -> None:
    """Stall budget 60 s, the log silent from 0 s: a 503 at 50 s keeps the start alive until 110 s;
    a refused port at 50 s does not (stalled at 60 s)."""
    answered = Judge(Policy(stall_after=60.0))
    say(answered, LOAD, 0.0)
    answered.observe(HttpState("status", 503, "loading"), 50.0)
    assert answered.tick(109.9) is None
    v = answered.tick(110.0)
    assert v is not None and v.exit_code == 5
    refused = Judge(Policy(stall_after=60.0))
    say(refused, LOAD, 0.0)
    refused.observe(HttpState("refused"), 50.0)
    v = refused.tick(60.0)
    assert v is not None and v.exit_code == 5


# ---- lifecycle: the restart count --------------------------------------------------------------


def test_restarts_are_counted_by_the_supervisors_counter_and_by_new_starts() -> None:
    """The counter at 4 when the watch begins: a jump to 6 is restart 2; a new start id with the same
    counter is one more (restart 3); a counter that was unknown at first counts from 0 (2 is restart 2)."""
    j = Judge(Policy(stall_after=0.0, max_restarts=5))
    supervised(j, 4, "a", 0.0, initial=True)
    supervised(j, 6, "b", 1.0)
    supervised(j, 6, "c", 2.0)
    said = [w for w in warnings(j) if w.startswith("server restarted")]
    assert [w.split(";")[0] for w in said] == ["server restarted (restart 2)", "server restarted (restart 3)"]
    plain = Judge(Policy(stall_after=0.0, max_restarts=5))
    supervised(plain, 0, "a", 0.0, initial=True)
    supervised(plain, 0, "b", 1.0)
    supervised(plain, 0, "c", 2.0)
    supervised(plain, 3, "c", 3.0)
    said = [w.split(";")[0] for w in warnings(plain) if w.startswith("server restarted")]
    assert said == ["server restarted (restart 1)", "server restarted (restart 2)", "server restarted (restart 3)"]
    unknown = Judge(Policy(stall_after=0.0, max_restarts=5))
    supervised(unknown, None, "a", 0.0, initial=True)
    supervised(unknown, 2, "a", 1.0)
    assert [w.split(";")[0] for w in warnings(unknown) if w.startswith("server restarted")] == ["server restarted (restart 2)"]


def test_a_counter_that_goes_unknown_is_no_restart_and_one_that_appears_is() -> None:
    """The supervisor's counter at 0, then not given (same start): no restart; unknown, then 1: restart 1."""
    j = Judge(Policy(stall_after=0.0, max_restarts=5))
    supervised(j, 0, "a", 0.0, initial=True)
    supervised(j, None, "a", 1.0)
    assert not [w for w in warnings(j) if w.startswith("server restarted")]
    k = Judge(Policy(stall_after=0.0, max_restarts=5))
    supervised(k, None, "a", 0.0, initial=True)
    supervised(k, None, "a", 0.5)
    supervised(k, 1, "a", 1.0)
    assert [w.split(";")[0] for w in warnings(k) if w.startswith("server restarted")] == ["server restarted (restart 1)"]


def test_a_logged_failure_is_final_exactly_at_its_0_4_second_grace() -> None:
    """An OOM logged at 0 s: still open at 0.39 s, failed at exactly 0.4 s (exit 3)."""
    j = Judge(Policy(stall_after=0.0))
    oom(j, 0.0)
    assert j.tick(0.39) is None
    v = j.tick(0.4)
    assert v is not None and (v.exit_code, v.failure_kind) == (3, "oom")


# ---- liveness ----------------------------------------------------------------------------------


def test_slower_than_usual_counts_from_when_the_phase_began() -> None:
    """weight_load begins at 100 s and usually takes 100 s: no warning at 200 s (100 s in), one at 250 s."""
    j = Judge(Policy(stall_after=0.0, baseline={"weight_load": 100.0}))
    say(j, MARKER, 0.0)
    say(j, LOAD, 100.0)
    j.tick(200.0)
    assert not [w for w in warnings(j) if "slower than usual" in w]
    j.tick(250.0)
    assert [w for w in warnings(j) if "slower than usual" in w] == ["weight_load slower than usual: 150s vs median 100s"]


def test_stacks_are_asked_once_after_a_quarter_of_the_budget_without_progress_and_only_with_a_pid() -> None:
    """Budget 60 s, no progress since 0 s: one stack sample asked at 15 s (not at 14 s, not again at 16 s
    or 20 s while it is pending); a server with no known PID is never asked."""
    j = Judge(Policy(stall_after=60.0))
    j.observe(SupervisorReading(SupervisorState(True, running=True, main_pid=42, start_id="a"), True), 0.0)
    say(j, LOAD, 0.0)
    j.actions()

    def asked(t: float) -> int:
        j.tick(t)
        return len([a for a in j.actions() if isinstance(a, SampleStacks)])

    assert [asked(t) for t in (14.0, 15.0, 16.0, 20.0)] == [0, 1, 0, 0]
    nopid = Judge(Policy(stall_after=60.0))
    say(nopid, LOAD, 0.0)
    nopid.tick(15.0)
    nopid.tick(30.0)
    assert not [a for a in nopid.actions() if isinstance(a, SampleStacks)]


def test_gpu_memory_is_liveness_only_when_it_moves() -> None:
    """Budget 60 s, the log silent from 0 s: GPU memory steady at 1000 MiB from 30 s is no liveness
    (stalled at 60 s); memory that moves at 40 s is (not stalled until 100 s)."""
    steady = Judge(Policy(stall_after=60.0))
    say(steady, LOAD, 0.0)
    for t in (30.0, 40.0, 50.0):
        steady.observe(GpuReading((GpuSample(0, 1000, 81559, 0),)), t)
    v = steady.tick(60.0)
    assert v is not None and v.exit_code == 5
    moving = Judge(Policy(stall_after=60.0))
    say(moving, LOAD, 0.0)
    moving.observe(GpuReading((GpuSample(0, 1000, 81559, 0),)), 30.0)
    moving.observe(GpuReading((GpuSample(0, 2000, 81559, 0),)), 40.0)
    assert moving.tick(99.9) is None
    assert moving.tick(100.0) is not None


def test_a_one_second_stall_budget_stalls_after_one_second() -> None:
    """--stall-after 1s with no history: stalled 1 s after the last line, exit 5."""
    j = Judge(Policy(stall_after=1.0))
    say(j, LOAD, 0.0)
    assert j.tick(0.9) is None
    v = j.tick(1.0)
    assert v is not None and v.exit_code == 5


def test_the_default_stall_budget_is_ten_minutes() -> None:
    """A default policy: a silent start is stalled at 600 s, not before."""
    j = Judge(Policy())
    say(j, LOAD, 0.0)
    assert j.tick(599.9) is None
    v = j.tick(600.0)
    assert v is not None and (v.outcome, v.exit_code) == ("stalled", 5)


# ---- pace: probes on ready and warm-up, the ETA on progress --------------------------------------


def test_a_logged_ready_asks_a_probe_now_and_fast_probes_for_30_seconds() -> None:
    """wait: the ready line asks a probe at once and fast probing until 30 s after it; warm-up asks fast
    probing too; weight_load asks neither. replay (the log confirms): no probe is asked."""
    j = Judge(Policy(stall_after=0.0))
    assert [a for a in say(j, LOAD, 5.0) if isinstance(a, ProbeFast | ProbeNow)] == []
    warm = say(j, "INFO:     Started server process [42]", 8.0)
    assert [a for a in warm if isinstance(a, ProbeFast | ProbeNow)] == [ProbeFast(38.0)]
    ready = say(j, READY_LINE, 10.0)
    assert ProbeNow() in ready and ProbeFast(40.0) in ready
    r = Judge(replay_policy())
    assert [a for a in say(r, READY_LINE, 10.0) if isinstance(a, ProbeNow)] == []
    http = Judge(Policy(stall_after=0.0))
    say(http, LOAD, 1.0)
    assert [a for a in http.observe(READY, 2.0) if isinstance(a, ProbeNow)] == []


def test_a_progress_bar_carries_the_time_left_and_a_phase_event_does_not() -> None:
    """A usual total of 100 s: a checkpoint bar at 10 s carries eta_s 90.0; the phase event has none."""
    j = Judge(Policy(stall_after=0.0, baseline={"total": 100.0}))
    say(j, LOAD, 0.0)
    say(j, "Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:05<00:05,  5.00s/it]", 10.0)
    evs = j.drain()
    bars = [e for e in of(evs, "progress") if e.get("unit") != "bytes"]
    assert [(e["t"], e["eta_s"]) for e in bars] == [(10.0, 90.0)]
    assert all("eta_s" not in e for e in of(evs, "phase"))


# ---- ports ------------------------------------------------------------------------------------


def test_a_process_sample_asks_a_probe_only_to_release_a_held_answer_once() -> None:
    """--port: a first sample with nothing held asks no probe; a completion served before any sample is
    held, the next sample (the server's own port) releases it with one probe, the one after asks none."""
    j = Judge(Policy(stall_after=0.0, port=30000))
    j.observe(SupervisorReading(SupervisorState(True, running=True, main_pid=42, start_id="a"), True), 0.0)
    assert ProbeNow() not in proc(j, 0.5, port="own")
    k = Judge(Policy(stall_after=0.0, port=30000))
    k.observe(SupervisorReading(SupervisorState(True, running=True, main_pid=42, start_id="a"), True), 0.0)
    k.observe(READY, 1.0)
    assert k.status().verdict is None
    assert ProbeNow() in proc(k, 1.1, port="own")
    assert ProbeNow() not in proc(k, 2.1, port="own")


def test_a_host_that_cannot_sample_processes_never_holds_a_completion() -> None:
    """--port on a host without python3: a completion is ready at once (exit 0)."""
    j = Judge(Policy(stall_after=0.0, port=30000))
    j.observe(SupervisorReading(SupervisorState(True, running=True, main_pid=42, start_id="a"), True), 0.0)
    j.observe(ProcUnavailable("python3: not found"), 0.1)
    j.observe(READY, 1.0)
    v = j.status().verdict
    assert v is not None and v.exit_code == 0


def test_the_port_is_said_only_for_another_holder_that_is_known() -> None:
    """The server's own port with an owner named, or 'other' with no owner: no warning; another holder
    named: one warning naming it."""
    j = Judge(Policy(stall_after=0.0, port=30000))
    say(j, LOAD, 0.0)
    j.drain()
    proc(j, 1.0, port="own", owner_pid=42, owner_name="python3")
    proc(j, 2.0, port="other")
    assert warnings(j) == []
    proc(j, 3.0, port="other", owner_pid=99, owner_name="nginx")
    assert warnings(j) == ["port 30000 is served by nginx (pid 99), outside the server's process tree; probing through it"]


def test_the_logged_listen_port_is_compared_only_when_there_is_one_to_compare() -> None:
    """The probed URL's port is 8000: vLLM's 'API server on …:8001' line is said; with no port to
    compare (a URL without one), nothing is said."""
    j = Judge(Policy(stall_after=0.0, listen_port=8000))
    say(j, "INFO Starting vLLM API server 0 on http://0.0.0.0:8001", 0.0)
    assert [w for w in warnings(j) if "listens on port 8001" in w]
    none = Judge(Policy(stall_after=0.0))
    say(none, "INFO:     Uvicorn running on http://0.0.0.0:8001 (Press CTRL+C to quit)", 0.0)
    assert warnings(none) == []


# ---- process: CPU, disk, the load path, the command line ----------------------------------------


def test_cpu_time_is_liveness_only_past_50_milliseconds() -> None:
    """Budget 60 s, the log silent from 0 s: 50 ms more CPU at 30 s is no liveness (stalled at 60 s);
    80 ms more is (alive until 90 s)."""
    idle = Judge(Policy(stall_after=60.0))
    say(idle, LOAD, 0.0)
    proc(idle, 1.0, cpu_s=1.0)
    proc(idle, 30.0, cpu_s=1.05)
    v = idle.tick(60.0)
    assert v is not None and v.exit_code == 5
    busy = Judge(Policy(stall_after=60.0))
    say(busy, LOAD, 0.0)
    proc(busy, 1.0, cpu_s=1.0)
    proc(busy, 30.0, cpu_s=1.08)
    assert busy.tick(89.9) is None
    assert busy.tick(90.0) is not None


def test_the_load_progress_is_the_bytes_read_since_the_load_began_at_the_read_rate() -> None:
    """Model 1000 B; 100 B read before the load: 300 B more over 2 s is 300/1000 at 150 B/s (4.7 s
    left), then 300 more in 1 s is 600/1000 (1.3 s left); 1 B in 2 s is 0.5 B/s (798 s left); two
    samples in the same second are a 1 ms interval (1 MB read: 1000 MB/s)."""
    j = Judge(Policy(stall_after=0.0))
    say(j, MARKER, 0.0)
    proc(j, 1.0, read_bytes=100, model_bytes=1000)
    say(j, LOAD, 2.0)
    proc(j, 2.0, read_bytes=100, model_bytes=1000)
    proc(j, 4.0, read_bytes=400, model_bytes=1000)
    proc(j, 5.0, read_bytes=700, model_bytes=1000)
    proc(j, 7.0, read_bytes=701, model_bytes=1000)
    prog = [e for e in of(j.drain(), "progress") if e.get("unit") == "bytes"]
    assert [(e["t"], e["done"], e["eta_s"]) for e in prog] == [(4.0, 300, 4.7), (5.0, 600, 1.3), (7.0, 601, 798.0)]
    fast = Judge(Policy(stall_after=0.0))
    say(fast, LOAD, 0.0)
    proc(fast, 1.0, read_bytes=0, model_bytes=10_000_000)
    proc(fast, 1.0, read_bytes=1_000_000, model_bytes=10_000_000)
    prog = [e for e in of(fast.drain(), "progress") if e.get("unit") == "bytes"]
    assert [e["rate_mb_s"] for e in prog] == [1000.0]


def test_the_model_size_and_command_line_are_kept_from_earlier_samples() -> None:
    """Only the first sample names the model's size: later samples' progress still has its total; the
    command line a later sample does not repeat is kept, and a new one replaces it."""
    j = Judge(Policy(stall_after=0.0))
    say(j, LOAD, 0.0)
    proc(j, 1.0, read_bytes=0, model_bytes=1000, cmdline="python -m sglang.launch_server")
    proc(j, 2.0, read_bytes=200, cmdline="python -m sglang.launch_server")
    proc(j, 3.0, read_bytes=600)
    prog = [e for e in of(j.drain(), "progress") if e.get("unit") == "bytes"]
    assert [(e["t"], e["total"]) for e in prog] == [(2.0, 1000), (3.0, 1000)]
    last = j.last_proc
    assert last is not None and (last.model_bytes, last.cmdline) == (1000, "python -m sglang.launch_server")
    proc(j, 4.0, read_bytes=600, model_bytes=1000)
    last = j.last_proc
    assert last is not None and last.cmdline == "python -m sglang.launch_server"
    proc(j, 5.0, read_bytes=600, cmdline="python -m vllm.entrypoints.openai.api_server")
    last = j.last_proc
    assert last is not None and last.cmdline == "python -m vllm.entrypoints.openai.api_server"


NFS = LoadTarget("/models/k2", "nfs4", "/models", "filer:/export/models", (), size=100, cached=0)


def test_a_network_filesystem_is_said_in_the_load_and_read_at_its_own_rate() -> None:
    """Weights on NFS: before the load nothing is said; in weight_load one load event
    (network-filesystem) and the panel's load line for each sample, the next sample's io alone
    included; an interval with no bytes read reads 0 B/s; after the load the panel's line stops."""
    j = Judge(Policy(stall_after=0.0))
    say(j, MARKER, 0.0)
    proc(j, 0.5, load=NFS, read_bytes=100)
    evs = j.drain()
    assert of(evs, "load") == [] and of(evs, "_load") == []
    say(j, LOAD, 1.0)
    proc(j, 1.0, load=NFS, read_bytes=100)
    proc(j, 2.0, io=IoSample(2.0, {}), read_bytes=100)
    proc(j, 3.0, io=IoSample(3.0, {}), read_bytes=100)
    evs = j.drain()
    assert [(e["t"], e["verdict"]) for e in of(evs, "load")] == [(1.0, "network-filesystem")]
    lines = [e["line"] for e in of(evs, "_load")]
    assert len(lines) == 3 and lines[-1].startswith("reading 0 B/s from nfs4 filer:/export/models"), lines
    say(j, "KV Cache is allocated. #tokens: 1000, K size: 1.00 GB, V size: 1.00 GB", 4.0)
    proc(j, 4.0, io=IoSample(4.0, {}), read_bytes=100)
    assert of(j.drain(), "_load") == []


# ---- views: the status view and the status snapshot ---------------------------------------------


def test_the_status_view_of_a_start_that_has_not_begun_and_of_one_loading() -> None:
    """Nothing logged: the phase shown is 'starting', nothing pending, alive never, no progress; a
    bar at 3 of 10 is progress (3, 10) and stuck part-way; at 10 of 10 it is not stuck."""
    j = Judge(Policy(stall_after=0.0))
    st = j.status()
    assert (st.shown_phase, st.dying, st.failing_since, st.last_alive, st.progress, st.stuck) == ("starting", False, 0.0, None, None, False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        st.now = 5.0  # type: ignore[misc]  # a status is a frozen view
    say(j, LOAD, 1.0)
    say(j, "Loading safetensors checkpoint shards:   0% Completed | 0/10 [00:00<?, ?it/s]", 1.0)
    assert j.status().progress == (0, 10)
    say(j, "Loading safetensors checkpoint shards:  30% Completed | 3/10 [00:03<00:07,  1.00s/it]", 4.0)
    j.observe(GpuReading((GpuSample(0, 1000, 81559, 5),)), 5.0)
    st = j.status()
    assert (st.progress, st.stuck, st.last_alive) == ((3, 10), True, ("gpu_util", 5.0))
    say(j, "Loading safetensors checkpoint shards: 100% Completed | 10/10 [00:10<00:00,  1.00s/it]", 11.0)
    st = j.status()
    assert (st.progress, st.stuck) == ((10, 10), False) and st.last_alive is not None and st.last_alive[1] == 11.0


def test_the_status_view_of_a_failing_and_of_a_dying_start() -> None:
    """An OOM at 10 s: dying, failing since 10 s; a process gone at 20 s: died at 20 s, failing since 20 s."""
    j = Judge(Policy(stall_after=0.0))
    say(j, LOAD, 0.0)
    oom(j, 10.0)
    st = j.status()
    assert (st.dying, st.failed_at, st.failing_since, st.died_at) == (True, 10.0, 10.0, None)
    d = Judge(Policy(stall_after=0.0))
    say(d, LOAD, 0.0)
    d.observe(ProcReading(42, ProcSample(alive=False)), 20.0)
    st = d.status()
    assert (st.dying, st.failed_at, st.died_at, st.failing_since) == (True, None, 20.0, 20.0)


def test_gpu_memory_is_summed_over_what_each_gpu_reports() -> None:
    """Two GPUs, one without its use, one without its total: (1000, 81559) MiB."""
    j = Judge(Policy(stall_after=0.0))
    j.observe(GpuReading((GpuSample(0, 1000, 81559, 0), GpuSample(1, None, None, 0))), 1.0)
    assert j.status().gpu_mem == (1000, 81559)
    k = Judge(Policy(stall_after=0.0))
    k.observe(GpuReading((GpuSample(0, 1000, None, 0), GpuSample(1, None, 81559, 0))), 1.0)
    assert k.status().gpu_mem == (1000, 81559)


def test_the_status_snapshot_before_and_after_a_verdict() -> None:
    """`status` fields: a loading start is pending in weight_load (no supervisor known); a logged ready
    line not yet proven is ready; a dead process gives its kind and cause; the supervisor's fields when
    it answers; a verdict gives its outcome."""
    j = Judge(Policy(stall_after=0.0))
    snap = j.snapshot()
    assert (snap["phase"], snap["outcome"], snap["supervisor"]) == ("starting", "pending", None)
    say(j, LOAD, 0.0)
    assert (j.snapshot()["phase"], j.snapshot()["outcome"]) == ("weight_load", "pending")
    say(j, READY_LINE, 5.0)
    assert j.snapshot()["outcome"] == "ready" and j.status().verdict is None
    d = Judge(Policy(stall_after=0.0))
    d.observe(SupervisorReading(SupervisorState(False), True), 0.0)
    say(d, LOAD, 0.0)
    d.observe(ProcReading(42, ProcSample(alive=False)), 20.0)
    snap = d.snapshot()
    assert (snap["failure_kind"], snap["cause"], snap["supervisor"]) == ("killed", "server process 42 is gone", None)
    d.tick(30.0)
    assert d.snapshot()["outcome"] == "failed"
    s = Judge(Policy(stall_after=0.0))
    s.observe(SupervisorReading(SupervisorState(True, running=True, restarts=2, main_pid=42, start_id="a"), True), 0.0)
    assert s.snapshot()["supervisor"] == {"running": True, "dead": False, "restarts": 2, "main_pid": 42}


def test_the_eta_names_the_phase_it_is_in() -> None:
    """A usual total of 100 s: the eta event as weight_load begins at 20 s says weight_load, 80 s left."""
    j = Judge(Policy(stall_after=0.0, baseline={"total": 100.0}))
    say(j, MARKER, 0.0)
    j.drain()
    say(j, LOAD, 20.0)
    assert [(e["phase"], e["remaining_s"]) for e in of(j.drain(), "eta")] == [("weight_load", 80.0)]


def test_a_wait_whose_log_said_ready_but_served_nothing_is_not_ready_at_its_end() -> None:
    """wait (a completion confirms ready): the log's ready line and then the end of the evidence is
    incomplete, exit 124, never ready."""
    j = Judge(Policy(stall_after=0.0))
    say(j, LOAD, 0.0)
    say(j, READY_LINE, 5.0)
    v = j.finish(10.0)
    assert (v.outcome, v.exit_code) == ("incomplete", 124)


@pytest.mark.parametrize("lines", [[], ["a line no rule knows"]])
def test_a_log_that_ends_before_any_phase_says_so(lines: list[str]) -> None:
    """A log with no line, or none that starts a phase: 'log ended before any start-up phase', exit 124."""
    j = Judge(replay_policy())
    for text in lines:
        say(j, text, 1.0)
    v = j.finish(2.0)
    assert (v.exit_code, v.reason) == (124, "log ended before any start-up phase without ready or a failure")


def test_a_container_restart_seen_in_two_samples_is_one_restart() -> None:
    """Docker bumps RestartCount while the container is restarting (its StartedAt still the failed run's)
    and gives the new run's StartedAt only once it runs: two samples, one restart (with --max-restarts 1
    the watch goes on). A manual restart after it (a new run, the counter unmoved) is one more."""
    j = Judge(Policy(stall_after=0.0, max_restarts=1))
    supervised(j, 0, "a", 0.0, initial=True)
    supervised(j, 1, "a", 1.0)
    supervised(j, 1, "b", 2.0)
    said = [w.split(";")[0] for w in warnings(j) if w.startswith("server restarted")]
    assert said == ["server restarted (restart 1)"]
    assert j.tick(10.0) is None
    supervised(j, 1, "c", 11.0)
    said = [w.split(";")[0] for w in warnings(j) if w.startswith("server restarted")]
    assert said == ["server restarted (restart 2)"]
