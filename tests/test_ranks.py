"""Ranks and their stacks: titles to ranks, work told from waiting, the culprit, and the judge's stall
rule, on real stack-sampler readings (tests/fixtures/stacks/, captured by ``rankserver.py capture``
from real processes: py-spy's JSON and /proc, a real gloo group among them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coldwatch import ranks
from coldwatch.evidence import ProcReading, ProcSample, SampleStacks
from coldwatch.judge import Judge, Policy
from coldwatch.normalise import Normaliser
from coldwatch.probes.stacks import parse_sample
from coldwatch.ranks import StackSample

FIX = Path(__file__).parent / "fixtures" / "stacks"


def sample(name: str, pyspy: bool = True) -> StackSample:
    data = json.loads((FIX / f"{name}.json").read_text())
    if not pyspy:  # the same processes as /proc alone shows them
        data["pyspy"] = None
        for p in data["procs"]:
            p["dump"] = None
    return parse_sample(json.dumps(data))


def states(name: str, pyspy: bool = True) -> dict[str, ranks.RankState]:
    return {s.rank: s for s in ranks.rank_states(sample(name, pyspy), ranks.vocabulary("sglang"), "gpu1")}


@pytest.mark.parametrize(
    ("title", "rank"),
    [
        ("sglang::scheduler_TP3", "TP3"),
        ("sglang::scheduler_DP1_TP3", "DP1 TP3"),
        ("sglang::gpu_worker_TP3_PP1", "TP3 PP1"),
        ("sglang::semi_pd_scheduler_PREFILL_DP0_TP2", "DP0 TP2"),
        ("VLLM::Worker_TP3", "TP3"),
        ("VLLM::Worker_DP0_PP1_TP3_EP3", "DP0 PP1 TP3 EP3"),
        ("VLLM::Worker", ""),
        ("VLLM::EngineCore_DP1", "DP1"),
        ("sglang::scheduler_TP0 -P /srv/x.py", "TP0"),
        ("sglang::detokenizer", None),
        ("sglang::tokenizer_worker:4242", None),
        ("VLLM::APIServer", None),
        ("/usr/bin/python3", None),
        ("sglang::scheduler_TP3x", None),
    ],
)
def test_process_titles_name_ranks(title: str, rank: str | None) -> None:
    assert ranks.rank_of(title) == rank


def test_a_hung_rank_and_its_waiting_peer() -> None:
    st = states("hang")
    assert st["TP1"].state == "blocked" and st["TP1"].where == "read_shard ← load_weights"
    assert st["TP0"].state == "waiting" and st["TP0"].where.startswith("all_reduce ← init_memory_pool")
    assert st["TP0"].cpu_pct > 30  # it spins: a busy core is not work
    assert not ranks.working(list(st.values()))
    lag = ranks.culprit(list(st.values()))
    assert lag is not None and lag.rank == "TP1"
    assert ranks.summary(list(st.values())).startswith("TP1 blocked in read_shard ← load_weights; TP0 waiting in all_reduce")


def test_a_real_gloo_collective_one_rank_never_joins() -> None:
    st = states("gloo")
    assert st["TP0"].state == "waiting"
    assert st["TP0"].frames[0].startswith("all_reduce (distributed_c10d.py:")  # torch's own frame
    assert "c10d_logger" not in st["TP0"].where  # its decorator is not named as a caller
    assert st["TP1"].state == "blocked"


@pytest.mark.parametrize(("name", "who"), [("loading", "TP1"), ("busy", "TP0")])
def test_work_in_other_frames_is_work(name: str, who: str) -> None:
    st = states(name)
    assert st[who].state == "working"
    assert ranks.working(list(st.values()))


def test_without_pyspy_thread_states_and_wchan() -> None:
    st = states("hang", pyspy=False)
    assert st["TP1"].state == "blocked" and st["TP1"].where.startswith("read (wchan ")
    assert st["TP1"].frames == ()
    assert st["TP0"].state == "working" and "% CPU" in st["TP0"].detail  # frames unknown: it may be work
    text = ranks.summary(list(st.values()))
    assert text.startswith("TP1 blocked in read (wchan ") and "TP0 working (R state" in text


def test_the_vocabulary_is_data() -> None:
    v = ranks.parse_vocabulary({"common": {"frames": ["my_wait"]}}, None)
    assert v.waiting_frame(ranks.Frame("my_wait", "/x/y.py")) and not v.waiting_frame(ranks.Frame("all_reduce"))
    with pytest.raises(ValueError, match="bad pattern"):
        ranks.parse_vocabulary({"common": {"frames": ["("]}}, None)
    shipped = ranks.vocabulary("vllm")
    assert shipped.waiting_frame(ranks.Frame("dequeue", "/site/vllm/distributed/device_communicators/shm_broadcast.py"))
    assert not shipped.waiting_frame(ranks.Frame("reduce", "/usr/lib/python3.11/functools.py"))


def test_a_rank_that_disappears_is_dead() -> None:
    w = ranks.RankWatch("gpu1", "sglang")
    w.feed(sample("hang"), 10.0)
    s = sample("hang")
    gone = StackSample(tuple(p for p in s.procs if ranks.rank_of(p.title) != "TP1"), s.pyspy)
    got, _ = w.feed(gone, 15.0)
    dead = [x for x in got if x.state == "dead"]
    assert [x.rank for x in dead] == ["TP1"] and ranks.culprit(got) is dead[0]


def test_remote_text_is_cleaned() -> None:
    data = json.loads((FIX / "hang.json").read_text())
    for p in data["procs"]:
        for th in p.get("dump") or []:
            th["frames"][0]["name"] = "evil\x1b[2J"
    st = ranks.rank_states(parse_sample(json.dumps(data)), ranks.vocabulary("sglang"))
    assert all("\x1b" not in s.where and all("\x1b" not in f for f in s.frames) for s in st)


# ---- the judge's stall rule -------------------------------------------------------------------
LOG = [
    "[2026-12-01 10:00:00 TP0] Load weight begin. avail mem=78.00 GB",
    "[2026-12-01 10:00:00 TP1] Load weight begin. avail mem=78.00 GB",
    "[2026-12-01 10:00:01 TP0] Load weight end. elapsed=1.50 s, type=X, avail mem=40.00 GB, mem usage=38.00 GB.",
]


def watch(name: str, until: float, pyspy: bool = True, timeout: float = 0.0) -> Judge:
    """A judge fed the log at t=0..2, then a CPU-busy process tree every second (a spinning rank)
    and, as the driver does, a stack sample whenever the judge asks for one."""
    j = Judge(Policy(stall_after=20.0, timeout=timeout, confirm="log", pid=4242), engine="sglang")
    norm = Normaliser()
    for k, text in enumerate(LOG):
        for line in norm.lines(text.encode()):
            j.line(line, float(k))
    t = 3.0
    cpu = 0.0
    while t <= until and j.verdict is None:
        cpu += 1.0
        j.observe(ProcReading(4242, ProcSample(alive=True, cpu_s=cpu, read_bytes=0)), t)
        j.tick(t)
        if any(isinstance(a, SampleStacks) for a in j.actions()):  # the driver's answer: one sample
            j.observe(sample(name, pyspy), t)
            j.tick(t)
        t += 1.0
    return j


def test_spinning_in_a_collective_is_a_stall_naming_the_culprit() -> None:
    j = watch("hang", 60.0)
    assert j.verdict is not None and j.verdict.outcome == "stalled"
    assert j.now <= 2 + 20 + 5 + 1  # the budget, plus at most a quarter of it to take the sample
    assert j.verdict.reason.startswith("TP1 blocked in read_shard ← load_weights; TP0 waiting in all_reduce ← init_memory_pool")
    stall = [e for e in j.drain() if e["event"] == "stall"]
    assert stall and {r["rank"]: r["state"] for r in stall[0]["ranks"]} == {"TP0": "waiting", "TP1": "blocked"}
    res = j.result(j.now)
    assert {r["rank"] for r in res["ranks"]} == {"TP0", "TP1"} and res["ranks"][0]["node"] is None


@pytest.mark.parametrize("name", ["loading", "busy"])
def test_a_working_rank_keeps_a_silent_start_alive(name: str) -> None:
    assert watch(name, 90.0).verdict is None


def test_without_stacks_the_old_rule_holds() -> None:
    j = Judge(Policy(stall_after=20.0, timeout=0.0, confirm="log"), engine="sglang")
    for t in range(3, 60):
        j.proc(4242, ProcSample(alive=True, cpu_s=float(t), read_bytes=0), float(t))
        j.tick(float(t))
    assert j.verdict is None  # CPU growth is life when nothing says it is a wait


def test_timeout_names_the_ranks() -> None:
    j = watch("loading", 31.0, timeout=31.0)
    v = j.verdict
    assert v is not None and v.outcome == "timeout"
    res = j.result(31.0)
    assert "TP1 working in parse_tensors ← load_weights" in res["reason"] and "TP0 waiting in all_reduce" in res["reason"]


def test_sampling_starts_at_a_quarter_of_the_budget_without_progress() -> None:
    w = ranks.RankWatch()
    assert not w.due(4.9, {"log": 0.0, "cpu": 4.9}, 20.0)  # CPU is activity, not progress
    assert w.due(5.0, {"log": 0.0, "cpu": 5.0}, 20.0)
    w.pending = True
    assert not w.due(6.0, {"log": 0.0}, 20.0)
    w.pending = False
    w.sampled_at = 5.0
    assert not w.due(9.0, {"log": 0.0}, 20.0) and w.due(10.0, {"log": 0.0}, 20.0)
    assert not w.due(100.0, {"log": 0.0}, 0.0)  # no stall budget, no sampling
    assert not w.due(12.0, {"log": 9.0}, 20.0)  # progress: no sample


def test_the_panel_shows_one_line_per_rank_once_a_start_stops_moving() -> None:
    from coldwatch.render.panel import PanelState, layout

    j = watch("hang", 60.0)
    s = PanelState()
    before = [t.plain for t in layout(s, 100, 60)]
    assert not any("read_shard" in x for x in before)
    for ev in j.drain():
        s.apply(ev)
    s.apply(j.result(j.now))
    text = [t.plain for t in layout(s, 100, 60)]
    rows = [x for x in text if x.startswith("  TP")]
    assert rows[0].split()[:2] == ["TP0", "waiting"] and "all_reduce ← init_memory_pool" in rows[0]
    assert rows[1].split()[:2] == ["TP1", "blocked"] and "read_shard ← load_weights" in rows[1]


def test_the_engines_own_words_about_ranks() -> None:
    w = ranks.RankWatch()
    w.note_line(
        "TP rank 1 could finish the model loading, but there are other ranks that didn't finish loading. "
        "It is likely due to unexpected failures (e.g., OOM) or a slow node."
    )
    w.note_line(
        "[rank0]:[E1218 20:27:13.123 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600010 milliseconds before timing out."
    )
    w.note_line("[2026-12-01 10:00:00 TP0] Rank 0 loaded")
    assert w.log_words() == "the log: TP1 finished loading, other ranks did not, rank 0 timed out waiting in ALLREDUCE (NCCL watchdog)"
    j = Judge(Policy(stall_after=0.0, timeout=10.0, confirm="log"), engine="sglang")
    for line in Normaliser().lines(
        b"[2026-12-01 10:00:00 TP1] TP rank 1 could finish the model loading, but there are other ranks that didn't finish loading.\n"
    ):
        j.line(line, 1.0)
    j.tick(10.0)
    assert "the log: TP1 finished loading, other ranks did not" in j.result(10.0)["reason"]


def test_a_busy_helper_process_keeps_the_ranks_alive() -> None:
    """Ranks waiting on their own worker processes (an inductor compile pool, a loader child) are not stuck."""
    data = json.loads((FIX / "busy.json").read_text())
    helper = next(p for p in data["procs"] if p["title"].startswith("sglang::scheduler_TP0"))
    hang = json.loads((FIX / "hang.json").read_text())
    hang["procs"].append({**helper, "pid": 99999, "title": "/opt/venv/bin/python -m torch._inductor.compile_worker", "dump": None})
    w = ranks.RankWatch()
    w.feed(parse_sample(json.dumps(hang)), 5.0)
    assert w.quiet_since is None
    w.feed(sample("hang"), 10.0)
    assert w.quiet_since == 10.0
