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
    frames = (Frame("all_reduce", "/t/torch/distributed/distributed_c10d.py", 1), Frame("wrapper", "/t/x.py", 2))
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
