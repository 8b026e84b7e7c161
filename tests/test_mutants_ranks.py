"""Each rank's state as a stalled or timed-out verdict names it (ranks.py): what counts as working,
waiting or blocked, where a rank sits, the order ranks are listed in, the culprit. Each test pins a
behaviour a surviving mutant of ranks.py changed (scripts/mutate.py ranks); processes are built as the
stack sampler reports them (``parse_sample`` of its JSON, or the readings it makes)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from coldwatch import ranks
from coldwatch.evidence import ProcReading, ProcSample, SampleStacks
from coldwatch.judge import Judge, Policy
from coldwatch.normalise import Normaliser
from coldwatch.probes.stacks import parse_sample
from coldwatch.ranks import Frame, ProcStack, RankWatch, StackSample, ThreadStack

VOCAB = ranks.vocabulary("sglang")


def proc(
    state: str = "S",
    cpu: float = 0.0,
    syscall: str = "",
    wchan: str = "",
    read: int = 0,
    frames: tuple[Frame, ...] | None = None,
    pid: int = 100,
    title: str = "sglang::scheduler_TP0",
) -> ProcStack:
    """A one-thread rank process as the sampler sees it."""
    th = ThreadStack(pid, state, wchan, syscall, cpu, "python", frames)
    return ProcStack(pid, title, True, state, read, (th,), frames is not None)


def said(p: ProcStack) -> str:
    """The rank as a verdict says it."""
    return ranks.classify(p, VOCAB, "TP0").says()


def user(name: str) -> Frame:
    return Frame(name, "/srv/app/model.py", 10)


def test_a_thread_is_working_from_10_percent_of_a_core_or_while_running() -> None:
    assert said(proc(cpu=10.0)) == "TP0 working (S state, 10 % CPU)"
    assert said(proc(cpu=15.0)) == "TP0 working (S state, 15 % CPU)"
    assert said(proc(cpu=9.9)) == "TP0 idle (S state, 10 % CPU)"
    assert said(proc(state="R")) == "TP0 working (R state, 0 % CPU)"


def test_a_thread_in_a_wait_syscall_or_wait_channel_is_waiting() -> None:
    assert said(proc(syscall="futex")) == "TP0 waiting in futex (S state, 0 % CPU)"
    assert said(proc(syscall="futex", wchan="futex_wait_queue")) == "TP0 waiting in futex (wchan futex_wait_queue) (S state, 0 % CPU)"
    assert said(proc(wchan="do_epoll_wait")) == "TP0 waiting in wchan do_epoll_wait (S state, 0 % CPU)"
    assert said(proc(wchan="0")) == "TP0 idle (S state, 0 % CPU)"
    assert said(proc(state="?", wchan="pipe_read")) == "TP0 idle in wchan pipe_read (0 % CPU)"


def test_a_read_is_work_while_bytes_come_and_a_block_while_none_do() -> None:
    assert said(proc(syscall="pread64", read=4096)) == "TP0 working in pread64 (S state, 0 % CPU)"
    assert said(proc(syscall="pread64")) == "TP0 blocked in pread64 (S state, 0 % CPU)"
    assert said(proc(syscall="pread64", cpu=50.0)) == "TP0 working in pread64 (S state, 50 % CPU)"
    assert said(proc(state="D")) == "TP0 blocked (D state, 0 % CPU)"
    assert said(proc(state="D", syscall="read", read=1)) == "TP0 working in read (D state, 0 % CPU)"
    blocked = proc(state="D", frames=(user("read_shard"), user("load_weights")))
    assert said(blocked) == "TP0 blocked in read_shard ← load_weights (D state)"


def test_where_a_rank_waits_is_its_frame_and_one_caller_not_a_wrapper() -> None:
    frames: tuple[Frame, ...] = (Frame("all_reduce", "/t/torch/distributed/distributed_c10d.py", 1), Frame("wrapper", "/t/x.py", 2))
    frames += (Frame("<lambda>", "/t/x.py", 3), user("init_memory_pool"), user("init_model"), user("main_loop"))
    assert said(proc(frames=frames)) == "TP0 waiting in all_reduce ← init_memory_pool"


def test_only_the_12_innermost_frames_are_searched_for_a_wait() -> None:
    wait = Frame("all_reduce", "/t/torch/distributed/distributed_c10d.py", 1)
    inner = tuple(user(f"f{i}") for i in range(12))
    assert said(proc(frames=inner[:11] + (wait,))) == "TP0 waiting in all_reduce"
    assert said(proc(frames=inner + (wait,))).startswith("TP0 idle in f0 ← f1")


def test_ranks_are_listed_in_rank_order_whatever_their_pids() -> None:
    procs = tuple(proc(pid=pid, title=f"sglang::scheduler_TP{r}") for r, pid in ((10, 100), (2, 200), (0, 300)))
    assert [s.rank for s in ranks.rank_states(StackSample(procs), VOCAB)] == ["TP0", "TP2", "TP10"]


def test_a_gone_rank_reports_no_cpu() -> None:
    gone = ranks.classify(ProcStack(7, "sglang::scheduler_TP1", alive=False), VOCAB, "TP1", "b")
    assert gone.as_dict() == {
        "rank": "TP1",
        "node": "b",
        "pid": 7,
        "state": "dead",
        "frames": [],
        "where": "",
        "detail": "process gone",
        "cpu_pct": 0.0,
    }
    assert gone.says() == "TP1 gone (process gone)"


def test_py_spy_refused_is_said_even_when_a_rank_has_died() -> None:
    """py-spy is on the host but could not read the live rank; another rank is gone: the warning still comes."""
    sample = parse_sample(
        json.dumps(
            {
                "pyspy": "/usr/local/bin/py-spy",
                "procs": [
                    {"pid": 11, "title": "sglang::scheduler_TP0", "alive": False},
                    {
                        "pid": 12,
                        "title": "sglang::scheduler_TP1",
                        "alive": True,
                        "state": "S",
                        "threads": [[12, "S", "0", "202", 0.0, "x"]],
                    },
                ],
                "errors": ["Permission denied (os error 13)"],
            }
        )
    )
    warnings = RankWatch(engine="sglang").observe(sample, 5.0, None, {})
    assert [k for k, _ in warnings] == ["pyspy"] and "could not read the server's stacks" in warnings[0][1]


def test_a_zombie_or_a_process_seen_gone_is_a_dead_rank() -> None:
    zombie = ProcStack(8, "sglang::scheduler_TP2", True, "Z", 0, (ThreadStack(8, "Z"),))
    assert ranks.classify(zombie, VOCAB, "TP2").state == "dead"
    assert ranks.classify(ProcStack(9, "sglang::scheduler_TP3", alive=False, state="S"), VOCAB, "TP3").state == "dead"
    assert ranks.classify(ProcStack(10, "sglang::scheduler_TP4", True, "S"), VOCAB, "TP4").says() == "TP4 idle (no threads readable)"


def test_a_rank_is_its_busiest_thread_not_only_its_main_one() -> None:
    """The main thread waits on futures while a loader thread reads (py-spy) or sits in D state (/proc alone)."""
    main = ThreadStack(20, "S", "", "futex", 0.0, "python", (Frame("result", "/usr/lib/python3.11/concurrent/futures/_base.py", 1),))
    loader = ThreadStack(21, "S", "", "", 80.0, "loader", (user("parse_tensors"), user("load_weights")))
    p = ProcStack(20, "sglang::scheduler_TP0", True, "S", 0, (main, loader), True)
    assert said(p) == "TP0 working in parse_tensors ← load_weights (thread loader)"
    main_raw = ThreadStack(30, "S", "", "futex", 0.0, "python")
    stuck = ThreadStack(31, "D", "", "", 0.0, "reader")
    spinning = ThreadStack(32, "S", "", "", 90.0, "nccl-proxy")  # a native helper: not the rank's state without py-spy
    raw = ProcStack(30, "sglang::scheduler_TP0", True, "S", 0, (main_raw, spinning, stuck), False)
    assert said(raw) == "TP0 blocked (D state, 0 % CPU)"
    busy_main = ThreadStack(40, "R", "", "", 99.0, "python", (user("forward"), user("capture")))
    both = ProcStack(40, "sglang::scheduler_TP0", True, "R", 0, (busy_main, loader), True)
    assert said(both) == "TP0 working in forward ← capture"


KERNEL_HEADERS = {
    # the kernel's own syscall numbers as the C library's headers ship them (linux-libc-dev)
    "x86_64": Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h"),
    "aarch64": Path("/usr/include/asm-generic/unistd.h"),  # arm64 uses the generic table
}


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_the_syscall_names_a_thread_waits_in_are_the_kernels(machine: str) -> None:
    """Without py-spy a rank's state comes from the syscall number /proc shows: each number the sampler
    names must be the kernel's number for that call, or a rank reading a shard reads as waiting."""
    header = KERNEL_HEADERS[machine]
    if not header.is_file():
        pytest.skip(f"{header} is not installed (linux-libc-dev for this machine's architecture)")
    kernel: dict[str, int] = {}
    for m in re.finditer(r"^#define __NR(?:3264)?_(\w+)\s+(\d+)\s*$", header.read_text(), re.M):
        kernel.setdefault(m.group(1), int(m.group(2)))
    table = ranks.SYSCALLS[machine]
    assert {name: kernel.get(name) for name in table.values()} == {name: num for num, name in table.items()}
    vocab = ranks.vocabulary()
    # and every call the vocabulary waits or reads in that this kernel has is in the table
    assert sorted(table.values()) == sorted(n for n in vocab.syscalls | vocab.reads if n in kernel)


def rs(rank: str, state: str, phase: str | None = None, node: str = "") -> ranks.RankState:
    return ranks.RankState(rank, node, 100 + int(rank[2:] or 0), state, where="f", phase=phase)


def test_the_culprit_is_gone_then_blocked_then_working_then_idle_then_furthest_behind_then_lowest() -> None:
    # each state beats every one before it, though its rank is higher (the rank only breaks ties)
    order = [rs("TP1", "waiting"), rs("TP2", "idle"), rs("TP3", "working"), rs("TP4", "blocked"), rs("TP5", "dead")]
    while order:
        c = ranks.culprit(order)
        assert c is not None and c.rank == order[-1].rank
        order.pop()
    behind = [rs("TP1", "waiting", "kv_alloc"), rs("TP2", "waiting", "weight_load"), rs("TP3", "waiting", None)]
    assert ranks.culprit(behind[:2]) is behind[1] and ranks.culprit([behind[0], behind[2]]) is behind[0]
    assert ranks.culprit([rs("TP10", "blocked"), rs("TP9", "blocked")]) == rs("TP9", "blocked")
    assert ranks.culprit([]) is None


def test_a_summary_names_the_culprit_then_four_others_then_counts_the_rest() -> None:
    states = [rs("TP0", "blocked", node="b")] + [rs(f"TP{i}", "waiting", node="b") for i in range(1, 6)] + [rs("TP6", "idle", node="b")]
    assert ranks.summary(states) == (
        "TP0 blocked in f; TP1 waiting in f; TP2 waiting in f; TP3 waiting in f; TP4 waiting in f; and 1 more waiting, 1 more idle"
    )
    assert ranks.summary(states[:2], with_nodes=True) == "b TP0 blocked in f; b TP1 waiting in f"
    untitled = [ranks.RankState("", "", 7, "idle")]
    assert not ranks.informative(untitled) and ranks.summary(untitled) == ""
    assert ranks.informative([ranks.RankState("", "", 7, "dead")]) and ranks.informative([ranks.RankState("", "", 7, "blocked")])
    assert ranks.informative([ranks.RankState("", "", 7, "idle", frames=("f (x.py:1)",))])
    assert ranks.RankState("", "", 7, "idle").says() == "pid 7 idle"


def test_the_bar_is_said_of_the_culprit_only_when_it_works_in_the_nodes_phase() -> None:
    states = [rs("TP0", "waiting"), rs("TP1", "blocked")]
    out = ranks.with_log(states, {"TP0": "kv_alloc"}, "weight_load", "40 % of shards")
    assert [(s.rank, s.phase, s.progress) for s in out] == [("TP0", "kv_alloc", ""), ("TP1", "weight_load", "40 % of shards")]
    assert out[1].says() == "TP1 blocked in f, 40 % of shards"
    behind = ranks.with_log(states, {"TP1": "dist_init"}, "weight_load", "40 % of shards")
    assert [s.progress for s in behind] == ["", ""]
    waiting = ranks.with_log([rs("TP0", "waiting")], {}, "weight_load", "40 % of shards")
    assert waiting[0].progress == ""
    spaced = ranks.with_log([rs("TP0", "idle")], {"DP1_TP0": "warmup"}, "kv_alloc", "")
    assert spaced[0].phase == "kv_alloc"
    dp = ranks.with_log([ranks.RankState("DP1 TP0", "", 5, "idle")], {"DP1_TP0": "warmup"}, "kv_alloc", "")
    assert dp[0].phase == "warmup"


def test_a_busy_helper_process_counts_only_beside_titled_ranks() -> None:
    helper = ProcStack(50, "/usr/bin/python -m compile_worker", True, "S", 0, (ThreadStack(50, "S", cpu_pct=10.0),))
    rank = proc(pid=51)
    assert ranks.helpers_busy(StackSample((rank, helper)))
    assert not ranks.helpers_busy(
        StackSample((rank, ProcStack(52, "/usr/bin/python -m w", True, "S", 0, (ThreadStack(52, "S", cpu_pct=9.9),))))
    )
    assert not ranks.helpers_busy(StackSample((helper,)))  # no titled rank: every process is a rank already
    dead = ProcStack(53, "/usr/bin/python -m w", False, "Z", 0, (ThreadStack(53, "S", cpu_pct=99.0),))
    assert not ranks.helpers_busy(StackSample((rank, dead)))


def test_untitled_processes_are_ranks_only_when_no_process_has_a_rank_title() -> None:
    a = proc(pid=61, title="/usr/bin/python3 serve.py")
    b = ProcStack(62, "/usr/bin/python3 serve.py", alive=False)
    assert [(s.rank, s.pid) for s in ranks.rank_states(StackSample((a, b)), VOCAB)] == [("", 61)]
    titled = proc(pid=63)
    assert [s.pid for s in ranks.rank_states(StackSample((a, titled)), VOCAB)] == [63]


def test_a_rank_seen_before_and_missing_now_is_gone_and_changed_frames_are_progress() -> None:
    w = RankWatch(engine="sglang")
    one = proc(pid=70, frames=(user("step_a"), user("loop")), title="sglang::scheduler_TP0")
    two = proc(pid=71, frames=(user("step_a"), user("loop")), title="sglang::scheduler_TP1")
    states, changed = w.feed(StackSample((one, two)), 10.0)
    assert not changed and [s.state for s in states] == ["idle", "idle"] and w.quiet_since == 10.0
    moved = proc(pid=70, frames=(user("step_b"), user("loop")), title="sglang::scheduler_TP0")
    states, changed = w.feed(StackSample((moved,)), 15.0)
    assert changed and w.quiet_since is None
    assert [(s.rank, s.state, s.detail) for s in states] == [("TP0", "idle", ""), ("TP1", "dead", "process gone")]
    states, changed = w.feed(StackSample(()), 20.0)  # a failed sample: what was known stays
    assert not changed and len(states) == 2 and w.samples == 2 and w.sampled_at == 20.0


def test_activity_counts_as_life_only_until_the_stacks_show_no_rank_working() -> None:
    w = RankWatch()
    assert w.last_life({"log": 5.0, "cpu": 30.0}) == 30.0
    w.quiet_since = 12.0
    assert w.last_life({"log": 5.0, "cpu": 30.0}) == 12.0
    assert w.last_life({"log": 20.0, "cpu": 30.0}) == 20.0
    assert w.last_life({}) == 0.0


def test_frames_are_shown_with_their_file_and_line() -> None:
    assert Frame("load", "/srv/app/model.py", 12).short() == "load (model.py:12)"
    assert Frame("load", "", 12).short() == "load" and Frame("load", "/x/m.py").short() == "load"


def test_a_bad_waits_vocabulary_is_one_clear_error() -> None:
    with pytest.raises(ValueError, match="waits: frames must be a list of strings"):
        ranks.parse_vocabulary({"common": {"frames": "all_reduce"}}, None)
    with pytest.raises(ValueError, match="waits: bad pattern"):
        ranks.parse_vocabulary({"common": {"frames": ["("]}}, None)
    v = ranks.parse_vocabulary({"common": {"syscalls": ["futex"]}, "sglang": {"syscalls": ["poll"]}, "vllm": {"syscalls": ["ppoll"]}}, None)
    assert v.syscalls == {"futex", "poll", "ppoll"}
    assert ranks.parse_vocabulary({"common": {"syscalls": ["futex"]}, "vllm": {"syscalls": ["ppoll"]}}, "sglang").syscalls == {"futex"}


def test_frame_names_in_a_verdict_are_capped_at_60_characters() -> None:
    long_a, long_b = "a" * 80, "b" * 80
    assert said(proc(frames=(user(long_a), user(long_b)))) == f"TP0 idle in {'a' * 59}… ← {'b' * 59}…"


def test_with_py_spy_a_native_thread_spinning_is_not_the_ranks_work() -> None:
    """py-spy sees the main thread wait in all_reduce; an NCCL proxy thread (no Python frames) spins: the rank waits."""
    main = ThreadStack(80, "S", "", "futex", 0.0, "python", (Frame("all_reduce", "/t/torch/distributed/distributed_c10d.py", 1),))
    proxy = ThreadStack(81, "R", "", "running", 100.0, "nccl-proxy")
    p = ProcStack(80, "sglang::scheduler_TP0", True, "S", 0, (main, proxy), True)
    assert said(p) == "TP0 waiting in all_reduce"


def test_a_top_level_value_beside_the_vocabularys_tables_is_ignored() -> None:
    v = ranks.parse_vocabulary({"version": 2, "common": {"syscalls": ["futex"]}, "vllm": {"syscalls": ["ppoll"]}}, None)
    assert v.syscalls == {"futex", "ppoll"}


def test_a_worker_thread_blocked_on_the_disk_is_named_with_its_state_and_name() -> None:
    main = ThreadStack(90, "S", "", "futex", 0.0, "python", (Frame("result", "/usr/lib/python3.11/concurrent/futures/_base.py", 1),))
    reader = ThreadStack(91, "D", "", "", 0.0, "reader", (user("read_shard"), user("load_weights")))
    p = ProcStack(90, "sglang::scheduler_TP0", True, "S", 0, (main, reader), True)
    assert said(p) == "TP0 blocked in read_shard ← load_weights (D state, thread reader)"
    unnamed = ThreadStack(92, "D", "", "", 0.0, "", (user("read_shard"),))
    assert said(ProcStack(90, "sglang::scheduler_TP0", True, "S", 0, (main, unnamed), True)).endswith("(D state, thread 92)")


STACKS = Path(__file__).parent / "fixtures" / "stacks"
LOG = [
    "[2026-12-01 10:00:00 TP0] Load weight begin. avail mem=78.00 GB",
    "[2026-12-01 10:00:00 TP1] Load weight begin. avail mem=78.00 GB",
    "[2026-12-01 10:00:01 TP1] Multi-thread loading shards:  41% Completed | 41/100 [00:01<00:01]",
]


def spinning(until: float, then: str = "") -> Judge:
    """A judge fed the log at 0-2 s, a CPU-busy tree every second and, when it asks, a real stack sample
    of a rank blocked reading a shard while its peer spins in all_reduce; ``then`` is logged at 10 s."""
    j = Judge(Policy(stall_after=20.0, timeout=0.0, confirm="log", pid=4242), engine="sglang")
    norm = Normaliser()
    for k, text in enumerate(LOG):
        for line in norm.lines(text.encode()):
            j.line(line, float(k))
    t, cpu = 3.0, 0.0
    while t <= until and j.verdict is None:
        cpu += 1.0
        j.observe(ProcReading(4242, ProcSample(alive=True, cpu_s=cpu, read_bytes=0)), t)
        j.tick(t)
        if any(isinstance(a, SampleStacks) for a in j.actions()):
            j.observe(parse_sample((STACKS / "hang.json").read_text()), t)
            j.tick(t)
        if then and t == 10.0:
            for line in norm.lines(then.encode()):
                j.line(line, t)
            j.tick(t)
        t += 1.0
    return j


def test_a_stall_with_spinning_ranks_says_since_when_nothing_progressed_and_no_rank_worked() -> None:
    """Log progress last at 2 s, CPU busy to the end, no rank working from the sample at 7 s: stalled at 27 s."""
    v = spinning(60.0).verdict
    assert v is not None and v.outcome == "stalled"
    assert v.reason == (
        "TP1 blocked in read_shard ← load_weights, 41 % of shards; TP0 waiting in all_reduce ← init_memory_pool; "
        "no progress for 25s (budget 20s) in weight_load, and no rank working for 20s (cpu still busy: waiting spins)"
    )


def test_a_ready_verdict_carries_no_rank_words() -> None:
    j = spinning(12.0, "[2026-12-01 10:00:10] The server is fired up and ready to roll!")
    v = j.verdict
    assert v is not None and v.outcome == "ready" and "TP1" not in j.result(j.now)["reason"], v


def test_a_failed_samples_error_is_said_capped_at_240_characters() -> None:
    warnings = RankWatch().observe(StackSample((), errors=("py-spy: " + "x" * 400,)), 5.0, None, {})
    assert [k for k, _ in warnings] == ["stacks"] and len(warnings[0][1]) == 240


def test_without_log_progress_activity_counts_until_the_ranks_went_quiet() -> None:
    w = RankWatch()
    w.quiet_since = 0.5
    assert w.last_life({"cpu": 30.0}) == 0.5
