"""The server's verdict from its nodes' judges (group.py), on a fake clock."""

from __future__ import annotations

from coldwatch.evidence import HttpState
from coldwatch.group import GroupJudge, NodeView
from coldwatch.judge import Judge, Policy
from coldwatch.normalise import LogLine


def node(stall: float = 30.0) -> Judge:
    return Judge(Policy(stall_after=stall, timeout=0.0))


def say(j: Judge, text: str, t: float, rank: str) -> None:
    j.line(LogLine(text, None, rank, text), t)


def test_an_idle_worker_while_the_head_works_is_not_a_stall() -> None:
    """The worker finished and waits silently; the head keeps loading: no stall, then ready."""
    head, worker = node(), node()
    g = GroupJudge([NodeView("a", head, True), NodeView("b", worker)])
    say(head, "Load weight begin. avail mem=75.00 GB", 0.0, "TP0")
    say(worker, "Load weight begin. avail mem=75.00 GB", 0.0, "TP8")
    for t in range(1, 120):
        say(head, f"Multi-thread loading shards: {t % 100}% Completed | {t}/200 [00:01<00:01]", float(t), "TP0")
        assert g.tick(float(t)) is None, (t, g.verdict)
    say(head, "The server is fired up and ready to roll!", 120.0, "")
    head.http(HttpState("ready", 200, "completion returned", "m"), 120.5)
    v = g.tick(120.5)
    assert v is not None and v.outcome == "ready"


def test_every_node_silent_is_a_stall_naming_the_node_stuck_mid_bar() -> None:
    """The worker stops at 41 % of its load, the head waits silently after its own: stalled, worker named."""
    head, worker = node(), node()
    g = GroupJudge([NodeView("a", head, True), NodeView("b", worker)])
    say(head, "Load weight begin. avail mem=75.00 GB", 0.0, "TP0")
    say(head, "Load weight end. elapsed=1.00 s, avail mem=10.00 GB, mem usage=65.00 GB.", 2.0, "TP0")
    say(worker, "Load weight begin. avail mem=75.00 GB", 0.0, "TP8")
    say(worker, "Multi-thread loading shards:  41% Completed | 41/100 [00:01<00:01]", 3.0, "TP8")
    assert g.tick(32.9) is None
    v = g.tick(40.0)
    assert v is not None and v.outcome == "stalled" and v.reason.startswith("b (TP8) in weight_load at 41 %"), v


def test_the_root_cause_wins_over_the_heads_consequence() -> None:
    """The head logs a consequence first, the worker its NCCL error a moment later: the worker's cause."""
    head, worker = node(), node()
    g = GroupJudge([NodeView("a", head, True), NodeView("b", worker)])
    say(head, "Init torch distributed begin.", 0.0, "TP0")
    say(worker, "Init torch distributed begin.", 0.0, "TP8")
    say(head, "Scheduler hit an exception: Traceback (most recent call last):", 5.0, "TP0")
    say(head, "RuntimeError: Connection closed by peer", 5.0, "TP0")
    say(worker, "Scheduler hit an exception: Traceback (most recent call last):", 5.2, "TP8")
    say(worker, "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error", 5.2, "TP8")
    t = 5.2
    while g.tick(t) is None and t < 10:
        t = round(t + 0.1, 2)
    assert g.verdict is not None and g.verdict.failure_kind == "nccl" and g.verdict.reason.startswith("node b (TP8)"), g.verdict
