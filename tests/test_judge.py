"""The judge's rules, driven with typed evidence on a fake clock: each test fails when its rule goes."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from coldwatch.evidence import Action, HttpState, ProbeNow, ProcReading, Rescope, SupervisorReading, SupervisorState
from coldwatch.judge import DEATH_GRACE, FAIL_GRACE, RESTART_WAIT, Judge, Policy
from coldwatch.normalise import LogLine
from coldwatch.probes.parse import GpuSample, ProcSample

STALL = 60.0
READY = HttpState("ready", 200, "completion returned", "m")


def judge(**kw: object) -> Judge:
    base: dict[str, object] = {"stall_after": STALL, "timeout": 0.0, "max_restarts": 0}
    base.update(kw)
    return Judge(Policy(**base))  # type: ignore[arg-type]


def say(j: Judge, text: str, t: float, rank: str = "") -> None:
    j.line(LogLine(text, None, rank, text), t)


def run_until(j: Judge, start: float, end: float, step: float = 0.1) -> float | None:
    """Tick from start to end; the first time a verdict stands, else None."""
    t = start
    while t <= end + 1e-9:
        if j.tick(t) is not None:
            return t
        t = round(t + step, 6)
    return None


def loading(j: Judge) -> None:
    say(j, "Load weight begin. avail mem=75.00 GB", 0.0, "TP0")


def scheduler_oom(j: Judge, t: float) -> None:
    """SGLang's scheduler reporting a CUDA OOM (the fatal line, its traceback, the root error)."""
    say(j, "Scheduler hit an exception: Traceback (most recent call last):", t, "TP5")
    say(j, '  File "/sgl/python/sglang/srt/model_executor/model_runner.py", line 1951, in load_model', t)
    say(j, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", t)


def alive(pid: int = 42, cpu: float = 1.0, read: int = 0, children: tuple[str, ...] = ()) -> ProcSample:
    return ProcSample(alive=True, cpu_s=cpu, read_bytes=read, children=children)


# ---- failure from the log alone, the process still alive --------------------------------------


def test_fatal_log_line_fails_within_the_grace_with_the_process_alive() -> None:
    """A CUDA OOM line while the process lives: failed [oom] within the fail grace, not at the deadline."""
    j = judge(timeout=600.0)
    j.supervisor(SupervisorState(True, running=True, main_pid=42, start_id="a"), 0.0, initial=True)
    loading(j)
    scheduler_oom(j, 10.0)
    assert j.tick(10.0 + FAIL_GRACE / 2) is None
    at = run_until(j, 10.0, 20.0, 0.05)
    assert at is not None and at - 10.0 <= FAIL_GRACE + 0.05
    assert j.verdict is not None and (j.verdict.outcome, j.verdict.failure_kind, j.verdict.exit_code) == ("failed", "oom", 3)


def test_root_cause_after_the_fatal_line_wins_within_the_grace() -> None:
    """The traceback's root error printed right after the fatal line is the cause."""
    j = judge()
    loading(j)
    say(j, "Scheduler hit an exception: Traceback (most recent call last):", 5.0)
    say(j, '  File "/x/model_runner.py", line 10, in load_model', 5.0)
    say(j, "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1, unhandled system error", 5.1)
    run_until(j, 5.1, 10.0)
    assert j.verdict is not None and j.verdict.failure_kind == "nccl"


# ---- death -----------------------------------------------------------------------------------


def test_death_without_a_logged_cause_is_killed_after_the_death_grace() -> None:
    """The process vanishes with a silent log: killed, after the death grace (the log may still explain)."""
    j = judge()
    loading(j)
    j.proc(42, alive(), 1.0)
    j.proc(42, ProcSample(alive=False), 2.0)
    assert j.tick(2.0 + DEATH_GRACE - 0.1) is None
    assert j.tick(2.0 + DEATH_GRACE) is not None
    assert j.verdict is not None and (j.verdict.outcome, j.verdict.failure_kind, j.verdict.phase) == ("failed", "killed", "weight_load")


def test_unit_death_names_the_supervisor_result() -> None:
    """systemd says failed (signal): killed, the reason names the unit's state."""
    j = judge()
    j.supervisor(SupervisorState(True, running=True, start_id="a", restarts=0), 0.0, initial=True)
    loading(j)
    dead = SupervisorState(
        True, dead=True, start_id="a", restarts=0, death_kind="killed", death_reason="unit sglang is failed/failed (Result=signal)"
    )
    j.supervisor(dead, 3.0)
    run_until(j, 3.0, 10.0)
    assert j.verdict is not None and j.verdict.failure_kind == "killed" and "Result=signal" in j.verdict.reason


def test_death_after_a_logged_ready_before_http_confirms_is_failed() -> None:
    """The log said ready, then the process died before a completion was served: failed, not an internal error."""
    j = judge()
    acts = j.observe(LogLine("The server is fired up and ready to roll!", None, "", ""), 1.0)
    assert j.verdict is None and ProbeNow() in acts
    j.proc(42, ProcSample(alive=False), 2.0)
    run_until(j, 2.0, 10.0)
    assert j.verdict is not None and (j.verdict.outcome, j.verdict.exit_code) == ("failed", 3)
    assert "before a completion was served" in j.verdict.reason


# ---- restarts --------------------------------------------------------------------------------


def _restart(j: Judge, logged: bool = True) -> list[Action]:
    """A start that fails and is restarted; the actions the restart asked for."""
    j.supervisor(SupervisorState(True, running=True, start_id="a", restarts=0, main_pid=1), 0.0, initial=True)
    loading(j)
    if logged:
        scheduler_oom(j, 2.0)
    j.supervisor(SupervisorState(True, running=True, waiting=True, start_id="a", restarts=0), 2.1)
    j.tick(2.2)
    j.actions()
    return j.observe(SupervisorReading(SupervisorState(True, running=True, start_id="b", restarts=1, main_pid=2)), 3.0)


def test_restart_with_max_restarts_0_fails() -> None:
    """A restart during the wait with --max-restarts 0 fails (a deploy gate wants that): the logged cause
    when there is one, else the restart itself."""
    j = judge(max_restarts=0)
    _restart(j)
    run_until(j, 3.0, 5.0)
    assert j.verdict is not None and (j.verdict.outcome, j.verdict.failure_kind) == ("failed", "oom")
    quiet = judge(max_restarts=0)
    _restart(quiet, logged=False)
    run_until(quiet, 3.0, 5.0)
    assert quiet.verdict is not None and quiet.verdict.outcome == "failed" and "restarted 1 time" in quiet.verdict.reason


def test_restart_with_max_restarts_1_waits_for_the_new_start() -> None:
    """With --max-restarts 1 the failure is waited out and the new start is judged on its own."""
    j = judge(max_restarts=1)
    acts = _restart(j)
    assert [a.state.start_id for a in acts if isinstance(a, Rescope)] == ["b"]
    assert run_until(j, 3.0, 3.0 + RESTART_WAIT + 1) is None
    say(j, "The server is fired up and ready to roll!", 20.0)
    j.http(READY, 20.5)
    assert j.verdict is not None and j.verdict.outcome == "ready" and j.life.restarts == 1


def test_failure_with_restarts_left_but_no_restart_fails_after_the_wait() -> None:
    """--max-restarts 1 and the supervisor never restarts: failed after RESTART_WAIT, not never."""
    j = judge(max_restarts=1)
    j.supervisor(SupervisorState(True, running=True, start_id="a", restarts=0), 0.0, initial=True)
    loading(j)
    scheduler_oom(j, 2.0)
    j.supervisor(SupervisorState(True, running=True, waiting=True, start_id="a", restarts=0), 2.5)
    at = run_until(j, 2.0, 30.0)
    assert at is not None and at >= 2.0 + RESTART_WAIT - 0.1
    assert j.verdict is not None and j.verdict.failure_kind == "oom"


def test_restart_in_a_saved_log_follows_max_restarts() -> None:
    """A second start marker after a failure in a log (no supervisor): a restart, judged by --max-restarts."""
    lines = [
        "server_args=ServerArgs(model_path='m')",
        "Load weight begin. avail mem=75.00 GB",
        "Scheduler hit an exception: Traceback (most recent call last):",
        "torch.OutOfMemoryError: CUDA out of memory.",
        "server_args=ServerArgs(model_path='m')",
        "Load weight begin. avail mem=75.00 GB",
        "The server is fired up and ready to roll!",
    ]
    for allowed, outcome in ((0, "failed"), (1, "ready")):
        j = Judge(Policy(confirm="log", max_restarts=allowed, stall_after=0.0))
        for i, text in enumerate(lines):
            say(j, text, float(i))
        v = j.finish()
        assert v.outcome == outcome, (allowed, v)


# ---- stall: exactly at the budget, for each kind of liveness on its own ------------------------


def _feed(j: Judge, kind: str, t: float, n: int) -> None:
    """Liveness of one kind at time t (n counts up so each sample differs)."""
    if kind == "log":
        say(j, f"some line {n}", t)
    elif kind == "bar":
        j.line(LogLine(f"Loading safetensors checkpoint shards: {n % 100}% Completed | {n}/1000 [00:01<00:01]", None, "", ""), t)
    elif kind == "gpu_mem":
        j.gpu([GpuSample(0, 1000 + n, 97871, 0)], t)
    elif kind == "gpu_util":
        j.gpu([GpuSample(0, 1000, 97871, 50)], t)
    elif kind == "cpu":
        j.proc(42, alive(cpu=float(n)), t)
    elif kind == "disk":
        j.proc(42, alive(read=n * 4096), t)
    elif kind == "compile":
        j.proc(42, alive(children=("ptxas",)), t)


@pytest.mark.parametrize("kind", ["log", "bar", "gpu_mem", "gpu_util", "cpu", "disk", "compile"])
def test_each_liveness_kind_alone_keeps_a_start_from_stalling(kind: str) -> None:
    """Liveness of one kind every 10 s for 10 minutes (budget 60 s): never stalled; then silence stalls at the budget."""
    j = judge()
    loading(j)
    if kind in ("log", "bar", "compile"):
        j.gpu([GpuSample(0, 1000, 97871, 0)], 0.0)
    else:
        # the log goes silent at once: only this kind of evidence speaks
        pass
    t = 0.0
    n = 1
    while t < 600.0:
        t += 10.0
        n += 1
        _feed(j, kind, t, n)
        assert j.tick(t) is None, (kind, t, j.verdict)
    last = t
    assert j.tick(last + STALL - 0.5) is None
    v = j.tick(last + STALL)
    assert v is not None and v.outcome == "stalled" and v.exit_code == 5


def test_stall_fires_exactly_at_the_budget_not_one_interval_before() -> None:
    """Everything silent after the last line: not stalled at budget - 0.1 s, stalled at the budget."""
    j = judge()
    loading(j)
    assert j.tick(STALL - 0.1) is None
    v = j.tick(STALL)
    assert v is not None and v.outcome == "stalled" and "weight_load" in v.reason


def test_silence_counts_from_the_hosts_first_reading_not_from_the_watchs_start() -> None:
    """Nothing from the host yet (its SSH exec channels slow under load: the CI failure of a fleet of
    50, one ready target stalled 'none ever'): no stall, however long; from the first reading, one
    that shows no life (GPU memory unmoved), the silence is counted and stalls at the budget."""
    j = judge()
    assert j.tick(STALL * 3) is None
    j.observe(ProcReading(42, ProcSample(alive=True)), STALL * 3)
    assert j.tick(STALL * 4 - 0.1) is None
    v = j.tick(STALL * 4)
    assert v is not None and v.outcome == "stalled" and "none ever" in v.reason and "for 60s" in v.reason


def test_history_grows_the_stall_budget() -> None:
    """A phase that usually takes 100 s gets a 150 s budget, not the 60 s default."""
    j = judge(baseline={"weight_load": 100.0})
    loading(j)
    assert j.tick(149.0) is None
    assert j.tick(150.0) is not None


# ---- ready, port holder, deadline --------------------------------------------------------------


def test_ready_needs_a_served_completion_in_wait() -> None:
    """A ready line alone asks for a probe now; only a validated completion is ready."""
    j = judge()
    acts = j.observe(LogLine("The server is fired up and ready to roll!", None, "", ""), 1.0)
    assert j.tick(5.0) is None and ProbeNow() in acts
    j.http(HttpState("status", 503, "/v1/completions answered 503"), 5.1)
    assert j.verdict is None
    j.http(READY, 6.0)
    assert j.verdict is not None and j.verdict.outcome == "ready"


def test_port_held_by_an_older_server_is_never_ready() -> None:
    """Another, older inference server answers on the port: held back, never ready; the deadline ends it."""
    j = judge(port=30000, timeout=100.0)
    j.supervisor(SupervisorState(True, running=True, main_pid=42, start_id="a"), 0.0, initial=True)
    loading(j)
    stale = ProcSample(alive=True, cpu_s=1.0, port="other", owner_pid=7, owner_name="python3", owner_older=True)
    for i in range(50):
        t = 2.0 * i + 1
        j.proc(42, stale, t)
        j.http(READY, t + 0.5)
        assert j.verdict is None
    assert any("held by python3" in e.get("message", "") for e in j.drain())
    v = j.tick(100.0)
    assert v is not None and v.outcome == "timeout"


def test_ready_answer_waits_for_the_first_process_sample() -> None:
    """A completion before anyone knows who holds the port is held until the first sample says it is the server's."""
    j = judge(port=30000)
    j.supervisor(SupervisorState(True, running=True, main_pid=42, start_id="a"), 0.0, initial=True)
    j.http(READY, 1.0)
    assert j.verdict is None and j.ports.held
    assert ProbeNow() in j.observe(ProcReading(42, ProcSample(alive=True, port="own")), 1.1)
    j.http(READY, 1.2)
    assert j.verdict is not None and j.verdict.outcome == "ready"


def test_deadline() -> None:
    """Not ready by --timeout: exit 124 naming the last phase."""
    j = judge(timeout=30.0, stall_after=0.0)
    loading(j)
    assert j.tick(29.9) is None
    v = j.tick(30.0)
    assert v is not None and (v.outcome, v.exit_code) == ("timeout", 124) and "weight_load" in v.reason


def test_slower_than_usual_needs_the_factor_and_the_floor() -> None:
    """A phase warns at 1.5x its median AND at least 30 s longer; a 0 s median never warns."""
    j = judge(baseline={"weight_load": 100.0, "dist_init": 0.0}, stall_after=0.0)
    loading(j)
    j.tick(149.0)
    assert not [e for e in j.drain() if e["event"] == "warning"]
    j.tick(150.0)
    evs = j.drain()
    assert [e for e in evs if "slower than usual" in e.get("message", "")]
    assert [e["phase"] for e in evs if e["event"] == "_slow"] == ["weight_load"]  # the panel marks what the judge found
    short = judge(baseline={"weight_load": 10.0}, stall_after=0.0)
    loading(short)
    short.tick(39.0)  # 3.9x but only 29 s longer
    assert not [e for e in short.drain() if e["event"] == "warning"]


# ---- purity ------------------------------------------------------------------------------------


PURE = ("coldwatch.judge", "coldwatch.group", "coldwatch.verdict", "coldwatch.evidence")
BANNED = {"threading", "queue", "paramiko", "httpx", "httpcore", "rich", "socket", "subprocess", "time", "select", "asyncio", "urllib"}


def _module_file(src: Path, mod: str) -> Path | None:
    parts = mod.split(".")[1:]
    if not parts:
        return src / "__init__.py"
    rel = Path(*parts)
    for cand in (src / rel.with_suffix(".py"), src / rel / "__init__.py"):
        if cand.is_file():
            return cand
    return None


def _imports(path: Path, mod: str) -> set[str]:
    """Every module ``path`` imports, anywhere in it (function bodies and TYPE_CHECKING blocks too)."""
    out: set[str] = set()
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names)  # `from pkg import submodule`
    return out


def import_closure(roots: tuple[str, ...]) -> dict[str, set[str]]:
    """coldwatch module -> what it imports, for every coldwatch module reachable from ``roots``."""
    src = Path(__file__).resolve().parents[1] / "src" / "coldwatch"
    seen: dict[str, set[str]] = {}
    todo = list(roots)
    while todo:
        mod = todo.pop()
        path = _module_file(src, mod)
        if mod in seen or path is None:
            continue
        seen[mod] = _imports(path, mod)
        # the package itself is not followed: its __init__ holds the library's entry points (lazy
        # imports of the drivers inside functions), which `from coldwatch import eta` never runs
        todo += [m for m in seen[mod] if m.startswith("coldwatch.")]
    return seen


def test_judge_import_closure_is_pure() -> None:
    """Everything the judge, the group, the verdict and the evidence import, transitively, is free of
    threads, clocks, processes, sockets, HTTP, SSH and Rich."""
    closure = import_closure(PURE)
    assert {"coldwatch.judge", "coldwatch.eta", "coldwatch.bandwidth", "coldwatch.phases.rules", "coldwatch.exitcodes"} <= set(closure)
    for mod, imports in closure.items():
        top = {m.split(".")[0] for m in imports}
        assert not BANNED & top, (mod, sorted(BANNED & top))
        assert not {m for m in imports if m.startswith(("coldwatch.hosts", "coldwatch.monitor", "coldwatch.render", "coldwatch.http"))}, mod


def test_an_earlier_runs_lines_are_shown_and_never_decide() -> None:
    """An appended log's old lines arrive as EarlierLine readings: an earlier run's OOM is said once
    (and in the panel's tail as an earlier run's), never the verdict; this start's lines still count."""
    from coldwatch.evidence import EarlierEnded, EarlierLine

    j = Judge(Policy(tail=True, stall_after=0.0))
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    for t in (0.0, 0.1):
        j.observe(EarlierLine(LogLine(oom, None, "TP0", oom), "the unit's start"), t)
    j.observe(EarlierEnded(0), 0.2)
    evs = j.drain()
    warns = [e["message"] for e in evs if e["event"] == "warning"]
    assert len([w for w in warns if "earlier run" in w]) == 1 and "the unit's start" in warns[0], warns
    assert [e["text"] for e in evs if e["event"] == "_log"] == ["earlier run: " + oom] * 2
    assert j.tick(30.0) is None and j.status().failed_at is None
    say(j, "Load weight begin. avail mem=94.71 GB", 31.0)
    scheduler_oom(j, 32.0)
    v = j.tick(40.0)
    assert v is not None and v.failure_kind == "oom"
