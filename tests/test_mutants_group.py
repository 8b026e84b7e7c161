"""A multi-node server's verdict (group.py) as its user reads it: when a failure is decided, whose cause
wins, who is named slowest or stalled, and the result line's and panel's per-node rows. Each test
pins a behaviour a surviving mutant of group.py changed (scripts/mutate.py group); seconds are
absolute, on a fake clock."""

from __future__ import annotations

from pathlib import Path

from coldwatch.evidence import HttpState
from coldwatch.exitcodes import ExitCode
from coldwatch.group import GroupJudge, NodeView
from coldwatch.judge import Judge, Policy
from coldwatch.normalise import LogLine
from coldwatch.probes.stacks import parse_sample

STACKS = Path(__file__).parent / "fixtures" / "stacks"

# one fatal line per failure kind, as the engines and the OS print them
FATAL = {
    "nccl": ["[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE) ran for 600010 ms"],
    "oom": [
        "Scheduler hit an exception: Traceback (most recent call last):",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    ],
    "killed": ["Killed"],
    "exception": ["OSError: [Errno 98] Address already in use"],
    "other": ["Segmentation fault (core dumped)"],
    "exited": ["sglang.service: Main process exited, code=exited, status=1/FAILURE"],
}


def node(stall: float = 30.0) -> Judge:
    return Judge(Policy(stall_after=stall, timeout=0.0))


def say(j: Judge, text: str, t: float, rank: str) -> None:
    j.line(LogLine(text, None, rank, text), t)


def fail(j: Judge, kind: str, t: float, rank: str) -> None:
    for text in FATAL[kind]:
        say(j, text, t, rank)


def pair(timeout: float = 0.0) -> tuple[GroupJudge, Judge, Judge]:
    """A head and a worker; with a deadline, no stall budget (the deadline decides)."""
    head, worker = (node(0.0), node(0.0)) if timeout else (node(), node())
    return GroupJudge([NodeView("a", head, True), NodeView("b", worker)], timeout=timeout), head, worker


def run(g: GroupJudge, t: float, until: float) -> float:
    """Tick every 50 ms from ``t`` until a verdict; the time it came."""
    while g.tick(t) is None and t < until:
        t = round(t + 0.05, 2)
    return t


def test_a_failure_waits_0_6_s_for_another_nodes_root_cause_then_decides() -> None:
    """The head fails at 0 s while the worker keeps loading: the server fails at 0.6 s, not before, not later."""
    g, head, worker = pair()
    say(worker, "Load weight begin. avail mem=75.00 GB", 0.0, "TP8")
    say(head, "Load weight begin. avail mem=75.00 GB", 0.0, "TP0")
    fail(head, "exception", 0.0, "TP0")
    assert g.tick(0.45) is None and g.tick(0.55) is None  # the head's own verdict is in (0.4 s), the group still waits
    v = g.tick(0.6)
    assert v is not None and v.outcome == "failed" and v.exit_code == ExitCode.FAILED
    assert v.reason == "node a (TP0): OSError: [Errno 98] Address already in use"


def test_when_every_node_has_failed_the_server_fails_without_waiting_out_the_grace() -> None:
    """Both nodes fail at once: each node's verdict at 0.4 s is the server's, 0.2 s before the group's grace ends."""
    g, head, worker = pair()
    fail(head, "exception", 0.0, "TP0")
    fail(worker, "exception", 0.0, "TP8")
    assert g.tick(0.35) is None
    v = g.tick(0.4)
    assert v is not None and v.outcome == "failed" and v.reason.endswith("(also failed: b)"), v


def _root(first: str, second: str) -> str:
    """The head fails with ``first`` at 0 s, the worker with ``second`` 0.1 s later: the server's failure kind."""
    g, head, worker = pair()
    fail(head, first, 0.0, "TP0")
    fail(worker, second, 0.1, "TP8")
    run(g, 0.0, 3.0)
    v = g.verdict
    assert v is not None and v.outcome == "failed"
    other = "a" if v.reason.startswith("node b") else "b"
    assert v.reason.endswith(f"(also failed: {other})"), v
    return str(v.failure_kind)


def test_the_root_cause_order_nccl_and_oom_over_a_kill_over_an_exception_over_the_rest() -> None:
    """A later root cause beats an earlier consequence: NCCL or OOM over a kill, a kill over an exception,
    an exception over a crash; between a crash and an exit (equal rank) the earlier one wins."""
    assert _root("killed", "nccl") == "nccl"
    assert _root("killed", "oom") == "oom"
    assert _root("exception", "killed") == "killed"
    assert _root("other", "exception") == "exception"
    assert _root("other", "exited") == "other"
    assert _root("exited", "other") == "exited"
    assert _root("oom", "nccl") == "oom"


def test_the_head_ready_while_a_worker_is_dying_is_not_ready() -> None:
    """The head serves a completion while the worker's fatal line is inside its grace: the server failed."""
    g, head, worker = pair()
    say(head, "The server is fired up and ready to roll!", 10.0, "")
    say(worker, "Load weight begin. avail mem=75.00 GB", 0.0, "TP8")
    fail(worker, "nccl", 10.3, "TP8")
    head.http(HttpState("ready", 200, "completion returned", "m"), 10.5)
    assert g.tick(10.5) is None
    t = run(g, 10.5, 12.0)
    v = g.verdict
    assert v is not None and v.outcome == "failed" and v.failure_kind == "nccl" and v.reason.startswith("node b (TP8)"), v
    assert t <= 10.3 + 0.6 + 0.05


def test_the_deadline_is_the_servers_and_names_the_slowest_node() -> None:
    """A 60 s deadline: nothing at 59.9 s, timeout at 60 s, naming the node in the earliest phase."""
    g, head, worker = pair(timeout=60.0)
    say(head, "Load weight begin. avail mem=75.00 GB", 0.0, "TP0")
    say(head, "Load weight end. elapsed=1.00 s, avail mem=10.00 GB, mem usage=65.00 GB.", 1.0, "TP0")
    say(worker, "Init torch distributed begin.", 0.0, "TP8")
    say(worker, "NCCL INFO Bootstrap : Using eth0", 30.0, "TP8")  # the worker showed life last, yet it is the slowest
    assert g.tick(59.9) is None
    v = g.tick(60.0)
    assert v is not None and v.outcome == "timeout" and v.exit_code == ExitCode.TIMEOUT
    assert v.reason == "not ready after 60s; slowest node b (TP8) in dist_init", v


def test_in_one_phase_the_slowest_is_the_node_stuck_mid_bar_else_the_one_silent_longest() -> None:
    """Same phase: a node part-way through its bar is slowest; without bars, the one whose last life is older."""
    g, head, worker = pair(timeout=60.0)
    say(head, "Load weight begin. avail mem=75.00 GB", 0.0, "TP0")
    say(head, "Multi-thread loading shards:  41% Completed | 41/100 [00:01<00:01]", 20.0, "TP0")
    say(worker, "Load weight begin. avail mem=75.00 GB", 0.0, "TP8")
    say(worker, "Multi-thread loading shards: 100% Completed | 100/100 [00:01<00:01]", 2.0, "TP8")
    v = g.tick(60.0)
    assert v is not None and v.reason == "not ready after 60s; slowest node a (TP0) in weight_load at 41 %", v

    g, head, worker = pair(timeout=60.0)
    say(head, "Load weight begin. avail mem=75.00 GB", 0.0, "TP0")
    say(head, "Load weight begin. avail mem=75.00 GB", 30.0, "TP1")
    say(worker, "Load weight begin. avail mem=75.00 GB", 10.0, "TP8")
    v = g.tick(60.0)
    assert v is not None and v.reason == "not ready after 60s; slowest node b (TP8) in weight_load", v


def test_a_node_that_never_showed_life_is_slower_than_one_that_did() -> None:
    """Neither node entered a phase; the head logged once at 0.5 s, the worker never: the worker is the slowest."""
    g, head, worker = pair(timeout=30.0)
    say(head, "INFO: some banner", 0.5, "")
    v = g.tick(30.0)
    assert v is not None and v.reason.startswith("not ready after 30s; slowest node b in starting"), v


def test_a_blind_node_is_never_the_slowest() -> None:
    """The worker was lost in dist_init, the head is in weight_load: the deadline names the head."""
    g, head, worker = pair(timeout=60.0)
    say(head, "Load weight begin. avail mem=75.00 GB", 0.0, "TP0")
    say(worker, "Init torch distributed begin.", 0.0, "TP8")
    g.blind("b", "unreachable: connection reset")
    v = g.tick(60.0)
    assert v is not None and v.reason == "not ready after 60s; slowest node a (TP0) in weight_load", v


def test_the_ranks_stacks_name_the_slowest_node_and_join_the_timeout_reason() -> None:
    """The worker's TP1 is blocked reading a shard while the head sits in an earlier phase: the stacks name the worker."""
    head = Judge(Policy(stall_after=0.0, timeout=0.0, pid=4242), engine="sglang")
    worker = Judge(Policy(stall_after=0.0, timeout=0.0, pid=4242), engine="sglang")
    head.ranks.node, worker.ranks.node = "a", "b"  # as the monitor names each node's ranks
    g = GroupJudge([NodeView("a", head, True), NodeView("b", worker)], timeout=60.0)
    say(head, "Init torch distributed begin.", 0.0, "TP0")
    say(worker, "Load weight begin. avail mem=75.00 GB", 0.0, "TP1")
    worker.observe(parse_sample((STACKS / "hang.json").read_text()), 30.0)
    v = g.tick(60.0)
    assert v is not None and v.outcome == "timeout"
    assert v.reason == (
        "not ready after 60s; slowest node b (TP1) in weight_load; "
        "b TP1 blocked in read_shard ← load_weights; b TP0 waiting in all_reduce ← init_memory_pool"
    ), v


def test_a_stall_names_the_laggard_then_what_every_other_node_does() -> None:
    """Every node silent: the worker stuck at 41 % first, with its last life; then the head waiting in its phase."""
    g, head, worker = pair()
    say(head, "Load weight begin. avail mem=75.00 GB", 0.0, "TP0")
    say(head, "Load weight end. elapsed=1.00 s, avail mem=10.00 GB, mem usage=65.00 GB.", 2.0, "TP0")
    for r in range(8, 16):
        say(worker, "Load weight begin. avail mem=75.00 GB", 0.0, f"TP{r}")
    say(worker, "Multi-thread loading shards:  41% Completed | 41/100 [00:01<00:01]", 3.0, "TP8")
    v = g.tick(40.0)
    assert v is not None and v.outcome == "stalled" and v.exit_code == ExitCode.STALLED
    assert v.reason == "b (TP8-TP15) in weight_load at 41 %, last liveness log 37s ago; a (TP0) waiting in weight_load", v


def test_a_ready_node_in_a_stall_is_not_called_waiting() -> None:
    """The head logged ready and is then silent with the worker: it is 'in ready', not 'waiting in ready'."""
    g, head, worker = pair()
    say(head, "The server is fired up and ready to roll!", 1.0, "TP0")
    say(worker, "Load weight begin. avail mem=75.00 GB", 0.0, "TP8")
    v = g.tick(40.0)
    assert v is not None and v.outcome == "stalled" and v.reason.endswith("; a in ready"), v


def test_the_result_lines_nodes_and_the_panels_rows() -> None:
    """Per node: head or not, its ranks as a range, its outcome (pending, unreachable when blind, its verdict)."""
    g, head, worker = pair()
    for r in range(8, 16):
        say(worker, "Load weight begin. avail mem=75.00 GB", 0.0, f"TP{r}")
    say(head, "Load weight begin. avail mem=75.00 GB", 1.0, "TP0")
    assert g.tick(5.0) is None
    assert g.node_results() == [
        {"node": "a", "head": True, "ranks": "TP0", "phase": "weight_load", "outcome": "pending", "failure_kind": None, "reason": ""},
        {"node": "b", "head": False, "ranks": "TP8-TP15", "phase": "weight_load", "outcome": "pending", "failure_kind": None, "reason": ""},
    ]
    g.blind("b", "unreachable: connection reset")
    res = g.node_results()
    assert [r["outcome"] for r in res] == ["pending", "unreachable"] and res[1]["reason"] == "unreachable: connection reset"
    rows = g.rows(5.0)
    assert [(r["name"], r["age"], r["verdict"]) for r in rows] == [("a (head)", 4.0, None), ("b BLIND", 5.0, None)]
    fail(head, "exception", 6.0, "TP0")
    run(g, 6.0, 8.0)
    res = g.node_results()
    assert res[0]["outcome"] == "failed" and res[0]["failure_kind"] == "exception" and str(res[0]["reason"]).startswith("OSError")
    assert g.rows(8.0)[0]["verdict"] == "failed"


def test_ending_the_watch_gives_that_verdict_once_and_keeps_one_reached() -> None:
    """An interrupt before any verdict is the verdict; after a verdict it changes nothing."""
    g, head, worker = pair()
    say(head, "Load weight begin. avail mem=75.00 GB", 0.0, "TP0")
    v = g.end("interrupted", ExitCode.INTERRUPTED, "interrupted by SIGINT", 3.0)
    assert v.outcome == "interrupted" and v.exit_code == ExitCode.INTERRUPTED and v.reason.startswith("interrupted by SIGINT")
    assert g.tick(4.0) is v
    g2, head2, _ = pair()
    fail(head2, "exception", 0.0, "TP0")
    first = run(g2, 0.0, 2.0)
    assert g2.end("interrupted", ExitCode.INTERRUPTED, "late", first + 1).outcome == "failed"
