"""The classifier and its parts (phases/classifier.py, state.py, tracker.py, tracebacks.py, causes.py)
as a log shows them: each test pins a behaviour a surviving mutant changed (scripts/mutate.py
classifier phases), through the classifier's public face only (``Classifier.feed`` and its notes,
``state``, ``timeline()``) so that the parts can be reshaped behind it."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from coldwatch.normalise import LogLine
from coldwatch.phases import Classifier, load_rules
from coldwatch.replay import replay

LOAD = "Load weight begin. avail mem=75.00 GB"
CAPTURE = "Capture cuda graph begin. This can take up to several minutes."
READY_LINE = "The server is fired up and ready to roll!"


def feed(c: Classifier, text: str, t: float | None, rank: str = "") -> list[tuple[str, float | None, dict[str, Any]]]:
    return [(s.kind, s.t, s.data) for s in c.feed(LogLine(text, t, rank, text))]


def phases(signals: list[tuple[str, float | None, dict[str, Any]]]) -> list[tuple[str, float | None, str | None]]:
    return [(d["phase"], t, d.get("rank")) for k, t, d in signals if k == "phase"]


def timeline(c: Classifier) -> list[tuple[str, float | None, float | None]]:
    return [(s.phase, s.start, s.end) for s in c.state.timeline()]


def test_a_bar_without_a_drawn_bar_is_progress_of_its_own_numbers() -> None:
    """FlashInfer's autotuner logs '50% 11/22 [...]' with no bar drawn: progress 11 of 22 in the phase."""
    c = Classifier()
    feed(c, LOAD, 0.0)
    sig = feed(c, "[AutoTuner]: Tuning op:  50% 11/22 [06:15<07:51, 42.84s/profile]", 1.0)
    assert [(d["phase"], d["done"], d["total"]) for k, _, d in sig if k == "progress"] == [("weight_load", 11, 22)]


def test_the_first_line_begins_the_starting_span() -> None:
    """A line no rule knows at 0 s, then the load at 5 s: 'starting' ran from 0 s to 5 s."""
    c = Classifier()
    feed(c, "some banner line", 0.0)
    feed(c, LOAD, 5.0)
    assert timeline(c) == [("starting", 0.0, 5.0), ("weight_load", 5.0, None)]


def test_only_fatal_errors_after_ready_are_counted() -> None:
    """After ready: a phase line is no error; the scheduler's exception is one (counted, the ready start kept)."""
    c = Classifier()
    feed(c, LOAD, 0.0)
    feed(c, READY_LINE, 5.0)
    feed(c, LOAD, 6.0)
    feed(c, CAPTURE, 6.5)
    assert c.state.late_errors == 0
    feed(c, "Scheduler hit an exception: Traceback (most recent call last):", 7.0)
    assert (c.state.late_errors, c.state.outcome) == (1, "ready")


def test_a_compiler_seen_from_outside_is_the_lead_ranks_phase() -> None:
    """TP1 speaks first, then TP0: TP0 is the lead; a compiler process moves TP0 into jit_compile."""
    c = Classifier()
    assert phases(feed(c, LOAD, 0.0, "TP1")) == [("weight_load", 0.0, "TP1")]
    feed(c, LOAD, 0.1, "TP0")
    sig = [(s.kind, s.t, s.data) for s in c.note_activity(3.0, "jit_compile", "compiler process running: ptxas")]
    assert phases(sig) == [("jit_compile", 3.0, "TP0")]


def test_a_jit_end_inside_capture_returns_to_capture_and_an_old_end_marker_moves_nothing() -> None:
    """JIT inside graph capture: its end returns the start to graph_capture (a phase event); a late
    'distributed init ends' line records that phase but does not move the start back."""
    c = Classifier()
    feed(c, LOAD, 0.0)
    feed(c, CAPTURE, 2.0)
    assert phases(feed(c, "Entering DeepGEMM JIT Pre-Compile", 3.0)) == [("jit_compile", 3.0, None)]
    assert phases(feed(c, "FlashInfer autotune completed", 4.0)) == [("graph_capture", 4.0, None)]
    assert phases(feed(c, "Init torch distributed ends. mem usage=1.0 GB", 5.0)) == []
    assert c.state.phase == "graph_capture"
    assert ("dist_init", 5.0, 5.0) in timeline(c) and ("jit_compile", 3.0, 4.0) in timeline(c)


def test_ready_ends_every_ranks_phase_at_its_second() -> None:
    """TP0 and TP1 capture graphs; the server's ready line at 10 s ends graph_capture at 10 s."""
    c = Classifier()
    feed(c, LOAD, 0.0, "TP0")
    feed(c, LOAD, 0.0, "TP1")
    feed(c, CAPTURE, 2.0, "TP0")
    feed(c, CAPTURE, 2.5, "TP1")
    feed(c, READY_LINE, 10.0)
    assert timeline(c) == [("weight_load", 0.0, 2.5), ("graph_capture", 2.0, 10.0), ("ready", 10.0, None)]


def test_a_signal_is_frozen() -> None:
    """What the classifier concluded cannot be changed by whoever reads it."""
    c = Classifier()
    sig = c.feed(LogLine(LOAD, 0.0, "", LOAD))[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        sig.t = 5.0  # type: ignore[misc]  # the point: it cannot be assigned


def test_a_phase_closed_by_its_end_marker_is_not_stretched_by_a_later_summary_line() -> None:
    """kv_alloc from 2 s to its 'Memory pool end.' at 3 s; the scheduler's summary at 9 s (which ends
    kv_alloc too) leaves it ending at 3 s. An end marker with no begin is a 0 s span, kept so."""
    c = Classifier()
    feed(c, LOAD, 0.0)
    feed(c, "Load weight end. type=X, dtype=torch.bfloat16, avail mem=40.00 GB", 1.0)
    feed(c, "KV Cache is allocated. #tokens: 1000, K size: 1.00 GB, V size: 1.00 GB", 2.0)
    feed(c, "Memory pool end. avail mem=10.00 GB", 3.0)
    feed(c, "max_total_num_tokens=1000, chunked_prefill_size=8192", 9.0)
    assert timeline(c) == [("weight_load", 0.0, 1.0), ("kv_alloc", 2.0, 3.0)]
    excerpt = Classifier()
    feed(excerpt, "some banner line", 0.0)
    assert phases(feed(excerpt, "Memory pool end. avail mem=10.00 GB", 3.0)) == [("kv_alloc", 3.0, None)]
    feed(excerpt, "max_total_num_tokens=1000, chunked_prefill_size=8192", 9.0)
    assert timeline(excerpt) == [("starting", 0.0, 3.0), ("kv_alloc", 3.0, 3.0)]


@pytest.mark.parametrize(("bar", "phase"), [("4/4", "marlin_repack"), ("1/1", "marlin_repack"), ("0/0", "weight_load")])
def test_a_complete_shards_bar_of_a_marlin_model_begins_the_repack(bar: str, phase: str) -> None:
    """A Marlin-quantised model: its shards bar at 4 of 4 begins marlin_repack; a bar of 0 of 0 is no
    completed load and begins nothing."""
    c = Classifier()
    feed(c, LOAD, 0.0)
    feed(c, "Using CompressedTensorsWNA16MarlinMoEMethod", 0.5)
    feed(c, f"Loading safetensors checkpoint shards: 100% Completed | {bar} [00:01<00:00,  1.00s/it]", 1.0)
    assert c.state.phase == phase


def test_a_bar_is_its_phases_progress() -> None:
    """A shards bar at 3 of 10: the weight_load span holds 3 of 10."""
    c = Classifier()
    feed(c, LOAD, 0.0)
    feed(c, "Loading safetensors checkpoint shards:  30% Completed | 3/10 [00:03<00:07,  1.00s/it]", 4.0)
    span = next(s for s in c.state.timeline() if s.phase == "weight_load")
    assert (span.done, span.total) == (3, 10)


def test_before_rank_0_speaks_outside_evidence_belongs_to_no_rank() -> None:
    """Only TP1 has spoken: a compiler process is the start's (no rank), not TP1's."""
    c = Classifier()
    feed(c, LOAD, 0.0, "TP1")
    sig = [(s.kind, s.t, s.data) for s in c.note_activity(3.0, "jit_compile", "compiler process running: ptxas")]
    assert phases(sig) == [("jit_compile", 3.0, None)]


def test_a_users_phase_rule_with_unless_applies_until_its_flag_is_set(tmp_path: Path) -> None:
    """A user rule 'SITE WARM' (warmup) unless the flag 'cold' is set by 'SITE COLD': it moves the start
    to warmup while the flag is not set, and not on a rank that set it."""
    f = tmp_path / "site.toml"
    f.write_text(
        "[[phase]]\nid='site.cold'\npattern='SITE COLD'\nsets='cold'\n"
        "[[phase]]\nid='site.warm'\npattern='SITE WARM'\nenter='warmup'\nunless='cold'\n"
    )
    c = Classifier(load_rules([f]))
    feed(c, LOAD, 0.0)
    assert phases(feed(c, "SITE WARM", 1.0)) == [("warmup", 1.0, None)]
    other = Classifier(load_rules([f]))
    feed(other, LOAD, 0.0)
    feed(other, "SITE COLD", 0.5)
    assert phases(feed(other, "SITE WARM", 1.0)) == []


def test_a_frame_line_behind_a_prefix_is_still_a_frame() -> None:
    """In weight_load, a traceback whose frame line carries a prefix the normaliser does not know
    ('model worker 3: File …cuda_graph_runner.py…'): the frames place the failure in graph_capture."""
    c = Classifier()
    feed(c, LOAD, 0.0)
    feed(c, "Traceback (most recent call last):", 1.0)
    feed(c, 'model worker 3: File "/sgl/python/sglang/srt/model_executor/cuda_graph_runner.py", line 10, in capture', 1.0)
    failed = [d for k, _, d in [(s.kind, s.t, s.data) for s in c.finish()] if k == "failed"]
    assert [d["phase"] for d in failed] == ["graph_capture"]


def test_a_log_that_ends_in_bare_frames_fails_at_its_end() -> None:
    """A paste that starts and ends inside a traceback (frames only): its end is a failure, said then,
    cut before its exception line, in the phase its frames name."""
    c = Classifier()
    feed(c, LOAD, 0.0)
    feed(c, 'File "/sgl/python/sglang/srt/model_executor/cuda_graph_runner.py", line 10, in capture', 1.0)
    assert c.state.outcome != "failed"
    sig = [(s.kind, s.data) for s in c.finish()]
    assert sig == [("failed", {"kind": "other", "cause": "traceback cut before its exception line", "phase": "graph_capture"})]


@pytest.mark.parametrize(("fillers", "phase"), [(63, "graph_capture"), (64, "weight_load")])
def test_a_traceback_keeps_its_innermost_64_frames(fillers: int, phase: str) -> None:
    """A capture frame, then wrapper frames no rule knows, then the exception: with 63 wrappers the
    capture frame is among the 64 kept and places the failure in graph_capture; with 64 it is dropped
    and the failure is where the start was (weight_load)."""
    c = Classifier()
    feed(c, LOAD, 0.0)
    feed(c, "Traceback (most recent call last):", 1.0)
    feed(c, 'File "/sgl/python/sglang/srt/model_executor/cuda_graph_runner.py", line 10, in capture', 1.0)
    for i in range(fillers):
        feed(c, f'File "/app/wrap{i}.py", line 1, in call{i}', 1.0)
    feed(c, "RuntimeError: boom", 1.0)
    failed = [s.data for s in c.finish() if s.kind == "failed"]
    assert [(d["kind"], d["phase"]) for d in failed] == [("exception", phase)]


def replayed(*lines: str) -> tuple[str, str | None, str]:
    """A saved log (one line a second from 0 s, the load first): its verdict's outcome, kind and reason."""
    text = "".join(f"[2026-01-01 00:00:{i:02d}] {line}\n" for i, line in enumerate((LOAD, *lines)))
    _, v = replay([text.encode()])
    return str(v.outcome), v.failure_kind, v.reason


def test_the_root_error_right_after_an_engines_traceback_line_is_the_cause() -> None:
    """'Scheduler hit an exception: Traceback …' and the NCCL error on the next line, no frames between:
    failed [nccl], that error the reason."""
    assert replayed(
        "Scheduler hit an exception: Traceback (most recent call last):",
        "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1, unhandled system error",
    ) == ("failed", "nccl", "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1, unhandled system error")


def test_an_engines_fatal_line_inside_a_bare_traceback_is_the_cause_and_a_consequence_is_not() -> None:
    """A traceback header and a frame, then SGLang's 'scheduler died … (exit code: -9)': failed [killed]
    with that line; a 'Received sigquit' line there (a consequence) is never the reason."""
    tb = ("Traceback (most recent call last):", 'File "/x/a.py", line 1, in f')
    assert replayed(*tb, "scheduler died during initialization (exit code: -9)") == (
        "failed",
        "killed",
        "scheduler died during initialization (exit code: -9)",
    )
    outcome, _, reason = replayed(*tb, "Received sigquit from a child process")
    assert outcome == "failed" and "sigquit" not in reason


def test_a_death_is_the_failure_unless_the_log_already_holds_one() -> None:
    """The process is gone with nothing in the log: failed [killed] with the death's reason; gone after
    a pending traceback: that traceback is the failure (its cause kept), now final."""
    c = Classifier()
    feed(c, LOAD, 0.0)
    sig = [(s.kind, s.data) for s in c.note_death(3.0, "killed", "server process 42 is gone")]
    assert sig == [("failed", {"kind": "killed", "cause": "server process 42 is gone", "phase": "weight_load"})]
    tb = Classifier()
    feed(tb, LOAD, 0.0)
    feed(tb, "Traceback (most recent call last):", 1.0)
    feed(tb, 'File "/x/a.py", line 1, in f', 1.0)
    assert tb.state.outcome == "pending"
    sig = [(s.kind, s.data) for s in tb.note_death(3.0, "killed", "server process 42 is gone")]
    assert [(k, d["cause"]) for k, d in sig] == [("failed", "Traceback (most recent call last):")]
    assert tb.state.outcome == "failed"


def test_a_completion_after_a_fatal_line_is_ready_and_keeps_what_the_log_said() -> None:
    """A fatal OOM logged, then a completion served: the start is ready, and its state still names the
    OOM (status shows what the log said); a completion after a traceback that the start went on from
    forgets that traceback."""
    c = Classifier()
    feed(c, LOAD, 0.0)
    feed(c, "Scheduler hit an exception: Traceback (most recent call last):", 1.0)
    feed(c, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", 1.0)
    c.note_ready(1.2, "HTTP: completion returned")
    f = c.state.failure
    assert c.state.outcome == "ready" and f is not None and f.kind == "oom"
    went_on = Classifier()
    feed(went_on, LOAD, 0.0)
    feed(went_on, "Traceback (most recent call last):", 1.0)
    went_on.note_ready(2.0, "HTTP: completion returned")
    assert went_on.state.outcome == "ready" and went_on.state.failure is None


def test_a_phase_without_a_timestamp_sits_where_the_phase_order_puts_it() -> None:
    """An excerpt whose load line has no timestamp and whose capture line is at 5 s: the timeline is
    weight_load (start unknown), then graph_capture from 5 s."""
    c = Classifier()
    feed(c, LOAD, None)
    feed(c, CAPTURE, 5.0)
    assert [(p, start) for p, start, _ in timeline(c) if p != "starting"] == [("weight_load", None), ("graph_capture", 5.0)]


def test_a_phase_ends_when_its_last_rank_leaves_it() -> None:
    """TP0, TP1 and TP2 load from 0 s and begin capture at 2, 3 and 4 s: weight_load is still open after
    the first two leave it and ends at 4 s, when the last one does."""
    c = Classifier()
    for rank in ("TP0", "TP1", "TP2"):
        feed(c, LOAD, 0.0, rank)
    ends = []
    for t, rank in ((2.0, "TP0"), (3.0, "TP1"), (4.0, "TP2")):
        feed(c, CAPTURE, t, rank)
        ends.append(next(end for p, _, end in timeline(c) if p == "weight_load"))
    assert ends == [None, None, 4.0]


def test_a_second_server_line_in_warmup_does_not_end_warmup() -> None:
    """SGLang's HTTP server lines at 8 s and 9 s (both warm-up, said for every rank): warm-up is still
    open after the second, and ends at the ready line at 10 s."""
    c = Classifier()
    feed(c, LOAD, 0.0, "TP0")
    feed(c, "INFO:     Started server process [42]", 8.0)
    feed(c, "INFO:     Waiting for application startup.", 9.0)
    assert ("warmup", 8.0, None) in timeline(c)
    feed(c, READY_LINE, 10.0)
    assert ("warmup", 8.0, 10.0) in timeline(c)


def test_a_second_server_line_inside_a_traceback_keeps_its_frames() -> None:
    """In warm-up a traceback begins with a capture frame; SGLang's next server line comes before the
    exception line: the frames still place the failure in graph_capture."""
    c = Classifier()
    feed(c, LOAD, 0.0, "TP0")
    feed(c, "INFO:     Started server process [42]", 8.0)
    feed(c, "Traceback (most recent call last):", 9.0)
    feed(c, 'File "/sgl/python/sglang/srt/model_executor/cuda_graph_runner.py", line 10, in capture', 9.0)
    feed(c, "INFO:     Waiting for application startup.", 9.5)
    feed(c, "RuntimeError: boom", 9.6)
    failed = [s.data for s in c.finish() if s.kind == "failed"]
    assert [(d["kind"], d["phase"]) for d in failed] == [("exception", "graph_capture")]


def test_a_rank_whose_jit_ends_leaves_the_start_where_the_other_ranks_are() -> None:
    """TP0 loads then captures graphs; TP1's first words are a JIT compile, then its end: the start is
    back in graph_capture, where TP0 still is; with TP0 still loading, back in weight_load (never in a
    phase no rank is in any more)."""
    c = Classifier()
    feed(c, LOAD, 0.0, "TP0")
    feed(c, CAPTURE, 2.0, "TP0")
    assert phases(feed(c, "Entering DeepGEMM JIT Pre-Compile", 3.0, "TP1")) == [("jit_compile", 3.0, "TP1")]
    assert phases(feed(c, "FlashInfer autotune completed", 4.0, "TP1")) == [("graph_capture", 4.0, "TP1")]
    assert c.state.phase == "graph_capture"
    loading = Classifier()
    feed(loading, LOAD, 0.0, "TP0")
    feed(loading, "Entering DeepGEMM JIT Pre-Compile", 3.0, "TP1")
    assert phases(feed(loading, "FlashInfer autotune completed", 4.0, "TP1")) == [("weight_load", 4.0, "TP1")]


@pytest.mark.parametrize(("width", "phase"), [(599, "graph_capture"), (600, "weight_load")])
def test_a_frame_wrapped_over_two_lines_is_joined_below_600_characters(width: int, phase: str) -> None:
    """A capture frame wrapped after its path: a first part of 599 characters is joined with the next
    line into the frame (graph_capture); one of 600 is not (the failure stays in weight_load)."""
    path = "/sgl/python/sglang/srt/model_executor/cuda_graph_runner.py"
    head = 'File "/' + "p" * (width - len('File "/') - len(path)) + path
    assert len(head) == width
    c = Classifier()
    feed(c, LOAD, 0.0)
    feed(c, "Traceback (most recent call last):", 1.0)
    feed(c, head, 1.0)
    feed(c, '", line 10, in capture', 1.0)
    feed(c, "RuntimeError: boom", 1.0)
    failed = [s.data for s in c.finish() if s.kind == "failed"]
    assert [(d["kind"], d["phase"]) for d in failed] == [("exception", phase)]


def test_a_parents_traceback_after_a_crash_dump_adds_no_frames_to_the_dumps() -> None:
    """A segfault's faulthandler dump in capture (a frame no rule knows), then the launcher's traceback
    about the dead child (frames in the load code, EOFError): the failure is where the log was
    (graph_capture), not in the launcher's load frames."""
    c = Classifier()
    feed(c, LOAD, 0.0)
    feed(c, CAPTURE, 1.0)
    for text in (
        "Fatal Python error: Segmentation fault",
        "Current thread 0x00007f (most recent call first):",
        'File "/app/plugin/kernels.py", line 10 in launch',
        "Traceback (most recent call last):",
        'File "/sgl/python/sglang/srt/model_executor/model_runner.py", line 1951, in load_model',
        "EOFError",
    ):
        feed(c, text, 2.0)
    c.finish()
    f = c.state.failure
    assert f is not None and (f.phase, f.cause) == ("graph_capture", "EOFError")


def test_the_kernels_oom_kill_is_the_cause_and_a_later_exception_line_is_not_its_root() -> None:
    """The kernel's OOM killer line, then an exception line from elsewhere: failed [killed], the
    kernel's line the reason (no traceback was open to take the exception as its root)."""
    assert replayed("Out of memory: Killed process 123 (python)", "RuntimeError: x") == (
        "failed",
        "killed",
        "Out of memory: Killed process 123 (python)",
    )


def test_a_traceback_with_its_exception_line_takes_its_kind_from_that_line_not_its_frames() -> None:
    """A traceback through the distributed init code (an NCCL frame) that ends in 'RuntimeError: boom':
    failed [exception] with that line; the frames decide a kind only when no exception line came."""
    frame = 'File "/x/parallel_state.py", line 1, in init_distributed_environment'
    assert replayed("Traceback (most recent call last):", frame, "RuntimeError: boom") == ("failed", "exception", "RuntimeError: boom")


def test_a_failure_is_said_once_and_a_candidate_does_not_make_a_pending_one_final() -> None:
    """The scheduler's exception is said as a failure; the 'scheduler died' line after it says no
    second failure. A traceback still pending stays pending after a candidate line."""
    c = Classifier()
    feed(c, LOAD, 0.0)
    assert [k for k, _, _ in feed(c, "Scheduler hit an exception: Traceback (most recent call last):", 1.0)] == ["failed"]
    assert [k for k, _, _ in feed(c, "scheduler died during initialization (exit code: -9)", 1.5)] == []
    pending = Classifier()
    feed(pending, LOAD, 0.0)
    feed(pending, "Traceback (most recent call last):", 1.0)
    feed(pending, 'File "/x/a.py", line 1, in f', 1.0)
    assert [k for k, _, _ in feed(pending, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", 1.0)] == []
    assert pending.state.outcome == "pending"
