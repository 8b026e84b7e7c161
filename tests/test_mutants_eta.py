"""The per-phase ETA's numbers as a user reads them in the ``eta`` event: the floor, when a bar's rate is
trusted, rare phases, bad history records, how often it speaks. Each test pins a behaviour a surviving
mutant of eta.py changed (scripts/mutate.py eta); every number is absolute seconds."""

from __future__ import annotations

from typing import Any

from coldwatch import eta


def rec(target: str, starts: dict[str, Any], total: float | str, **extra: Any) -> dict[str, Any]:
    return {"target": target, "outcome": "ready", "starts": starts, "total": total, "durations": {}, **extra}


# a usual start: 5 s starting, 5 s dist_init, 100 s weight_load, 40 s capture, 20 s warm-up (170 s)
A = {"starting": 0.0, "dist_init": 5.0, "weight_load": 10.0, "kv_alloc": 110.0, "graph_capture": 110.0, "warmup": 150.0}
IN_LOAD = {"starting": 0.0, "dist_init": 5.0, "weight_load": 10.0}


def base() -> eta.Baseline:
    b = eta.select([rec("t", A, 170.0)], "t")
    assert b is not None
    return b


def test_a_phase_past_its_median_keeps_5_percent_of_it_and_a_short_one_1_s() -> None:
    """300 s into a usual 100 s load: 5 s of it left (plus 60 s after); a usual 5 s phase long overrun: 1 s."""
    est = eta.estimate(base(), IN_LOAD, 310.0)
    assert est.remaining == 5.0 + 60.0 and est.basis == "history"
    short = eta.estimate(base(), {"starting": 0.0, "dist_init": 5.0}, 100.0)
    assert short.remaining == 1.0 + 100.0 + 40.0 + 20.0


def test_a_phase_the_history_never_saw_is_given_1_s() -> None:
    """A phase none of the earlier starts had: 1 s for it, then the usual rest."""
    est = eta.estimate(base(), {**IN_LOAD, "marlin_repack": 50.0}, 60.0)
    assert est.phase == "marlin_repack" and est.remaining == 1.0 + 60.0


def test_ready_has_nothing_left() -> None:
    est = eta.estimate(base(), {**A, "ready": 170.0}, 170.0)
    assert est.remaining == 0.0 and est.phase == "ready"


def test_a_bar_is_trusted_from_a_tenth_of_it_measured_over_2_s() -> None:
    """10 % in 4 s (36 s left at that rate) and 50 % in exactly 2 s (2 s left) are trusted; 9 % or 1.9 s are not."""
    ten = eta.BarRate("weight_load", 10.0, 0, 14.0, 10, 100)
    assert ten.left() == 36.0
    est = eta.estimate(base(), IN_LOAD, 14.0, ten)
    assert est.basis == "progress" and est.remaining == 36.0 + 60.0
    assert eta.BarRate("weight_load", 10.0, 0, 12.0, 50, 100).left() == 2.0
    assert eta.BarRate("weight_load", 10.0, 0, 13.0, 15, 100).left() == 17.0  # 15 % in 3 s
    assert eta.BarRate("weight_load", 10.0, 0, 14.0, 9, 100).left() is None
    assert eta.BarRate("weight_load", 10.0, 0, 11.9, 50, 100).left() is None
    untrusted = eta.estimate(base(), IN_LOAD, 14.0, eta.BarRate("weight_load", 10.0, 0, 14.0, 9, 100))
    assert untrusted.basis == "history" and untrusted.remaining == 96.0 + 60.0


def test_a_bar_that_did_not_move_or_is_full_says_nothing() -> None:
    """No progress since the first sample, an empty total, or a full bar: the history's estimate stands."""
    assert eta.BarRate("weight_load", 10.0, 50, 60.0, 50, 100).left() is None
    assert eta.BarRate("weight_load", 10.0, 0, 60.0, 50, 0).left() is None
    full = eta.BarRate("weight_load", 10.0, 0, 30.0, 100, 100)
    assert full.left() is None
    est = eta.estimate(base(), IN_LOAD, 30.0, full)
    assert est.basis == "history" and est.remaining == 80.0 + 60.0


def test_a_phase_seen_in_half_the_starts_counts_half_its_median() -> None:
    """A 40 s draft load in one of two starts adds 20 s to the estimate, not 40 or 80."""
    with_draft = {**A, "draft_init": 110.0, "kv_alloc": 150.0, "graph_capture": 150.0, "warmup": 190.0}
    b = eta.select([rec("t", A, 170.0), rec("t", with_draft, 210.0)], "t")
    assert b is not None and b.segments["draft_init"] == 20.0
    assert eta.estimate(b, IN_LOAD, 10.0).remaining == 100.0 + 20.0 + 40.0 + 20.0


def test_a_wrong_typed_total_in_history_is_left_out() -> None:
    """A record whose total is text ("200s") or a truth value neither crashes the ETA nor counts."""
    b = eta.select([rec("t", A, "200s"), {**rec("t", A, 0), "total": True}, rec("t", A, 170.0)], "t")
    assert b is not None and b.total == 170.0 and b.starts == 3
    assert eta.select([rec("t", A, "200s")], "t") is None


def test_todays_estimate_is_the_usual_total_minus_the_time_elapsed() -> None:
    assert eta.total_based(base(), 50.0) == 120.0
    assert eta.total_based(base(), 500.0) == 0.0
    assert eta.total_based(None, 50.0) is None
    assert eta.total_based(eta.Baseline({}, None, "target", 0), 50.0) is None


def test_an_eta_event_at_most_every_5_s_and_at_every_phase_change() -> None:
    """The tracker speaks at 0 s, not at 4.9 s, again at 5 s; a new phase at 6 s speaks at once."""
    tr = eta.Tracker([rec("t", A, 170.0)], "t")
    assert tr.due(IN_LOAD, 10.0) is not None
    assert tr.due(IN_LOAD, 14.9) is None
    est = tr.due(IN_LOAD, 15.0)
    assert est is not None and est.remaining == 95.0 + 60.0
    assert tr.due({**IN_LOAD, "kv_alloc": 16.0}, 16.0) is not None


def learn(tr: eta.Tracker, *lines: str) -> None:
    """Feed launch-banner lines as the judge does: only while the tracker still wants them."""
    for text in lines:
        if tr.want_launch:
            tr.line(text)


def test_the_model_and_tp_are_learnt_from_separate_banner_lines_first_one_wins() -> None:
    """SGLang prints the model path and the TP size apart: both reach the history record; a later banner changes neither."""
    tr = eta.Tracker([], "t", learn=True)
    learn(tr, "[x] model_path='/m/Kimi' dtype=auto", "[x] tp_size=8 pp_size=1", "[x] model_path='/m/Other' tp_size=4")
    assert (tr.model, tr.tp) == ("/m/Kimi", 8)


def test_a_banner_brings_in_the_same_model_elsewhere_unless_this_targets_own_total_is_known() -> None:
    """No start of this target: its banner's model and TP select other targets' starts; its own usual total keeps priority."""
    recs = [rec("other", A, 170.0, model_path="/m/Kimi", tp=8)]
    tr = eta.Tracker(recs, "new", learn=True)
    assert tr.estimate(IN_LOAD, 10.0) is None
    learn(tr, "server_args=ServerArgs(model_path='/m/Kimi', tp_size=8)")
    est = tr.estimate(IN_LOAD, 10.0)
    assert est is not None and (est.source, est.basis, est.remaining) == ("model", "history", 160.0)
    own = eta.Tracker(recs, "new", learn=True, total=300.0)
    learn(own, "server_args=ServerArgs(model_path='/m/Kimi', tp_size=8)")
    est = own.estimate(IN_LOAD, 10.0)
    assert est is not None and (est.source, est.basis, est.remaining) == ("target", "total", 290.0)


def test_only_a_usual_total_gives_todays_estimate() -> None:
    """A target whose history has only its usual total (300 s): 270 s left at 30 s, 0 s past it, basis 'total'."""
    tr = eta.Tracker([], "t", total=300.0)
    est = tr.estimate({"starting": 0.0, "weight_load": 10.0}, 30.0)
    assert est is not None and (est.remaining, est.basis, est.phase) == (270.0, "total", "weight_load")
    late = tr.estimate({"starting": 0.0}, 400.0)
    assert late is not None and late.remaining == 0.0
    assert eta.Tracker([], "t").estimate({}, 5.0) is None


def test_a_bars_rate_is_measured_from_its_first_sample_not_from_zero() -> None:
    """A bar first seen at 50 %: 5 points more in 4 s is not enough to trust; 10 points is, at 2.5 points a second."""
    assert eta.BarRate("weight_load", 10.0, 50, 14.0, 55, 100).left() is None
    assert eta.BarRate("weight_load", 10.0, 50, 14.0, 60, 100).left() == 16.0


def test_a_bar_repeating_its_value_keeps_its_measure() -> None:
    """tqdm prints the same 20 % twice: the rate is still measured from the bar's first sample (10 % at 10 s)."""
    tr = eta.Tracker([rec("t", A, 170.0)], "t")
    for done, t in ((10, 10.0), (20, 12.0), (20, 14.0)):
        tr.progress("weight_load", done, 100, t)
    est = tr.estimate(IN_LOAD, 14.0)
    assert est is not None and (est.basis, est.remaining) == ("progress", 32.0 + 60.0)
    tr.progress("weight_load", 5, 100, 15.0)  # a new bar (the draft's load) starts the measure again
    est = tr.estimate(IN_LOAD, 15.0)
    assert est is not None and est.basis == "history"


def test_a_bar_of_one_unit_is_measured_like_any_other() -> None:
    """Half of a 1.0 GB bar read in 4 s: 4 s left."""
    assert eta.BarRate("weight_load", 0.0, 0.0, 4.0, 0.5, 1.0).left() == 4.0


def test_a_part_of_phase_bar_that_agrees_with_the_history_leaves_the_basis_history() -> None:
    """5 s into a usual 40 s capture, its bar says exactly the 35 s the history says: the basis stays 'history'."""
    bar = eta.BarRate("graph_capture", 110.0, 0, 115.0, 12.5, 100)
    assert bar.left() == 35.0
    est = eta.estimate(base(), {**IN_LOAD, "kv_alloc": 110.0, "graph_capture": 110.0}, 115.0, bar)
    assert (est.basis, est.remaining) == ("history", 35.0 + 20.0)
    longer = eta.BarRate("graph_capture", 110.0, 0, 115.0, 10, 100)  # 45 s left at its rate: at least that long
    est = eta.estimate(base(), {**IN_LOAD, "kv_alloc": 110.0, "graph_capture": 110.0}, 115.0, longer)
    assert (est.basis, est.remaining) == ("progress", 45.0 + 20.0)


def test_the_engine_version_model_and_tp_come_from_the_banner() -> None:
    assert eta.launch_version("(APIServer pid=1) INFO vLLM API server version 0.11.0rc1") == "0.11.0rc1"
    assert eta.launch_version("INFO Initializing a V1 LLM engine (v0.10.2) with config") == "0.10.2"
    assert eta.launch_version("nothing here") is None
    assert eta.launch_info("server_args=ServerArgs(model_path='/m/K2', tp_size=16)") == ("/m/K2", 16)
    assert eta.launch_info("args: model='/m/Q', tensor_parallel_size=4") == ("/m/Q", 4)
    assert eta.launch_info("no banner") == (None, None)


def test_a_records_ready_mark_and_wrong_typed_marks_are_no_segments() -> None:
    """'ready' ends the last segment, it is not one; a mark that is text or a truth value is skipped."""
    marks = {**A, "ready": 170.0, "jit_compile": "soon", "draft_init": True}
    assert eta.segments(rec("t", marks, 170.0)) == eta.segments(rec("t", A, 170.0))


def test_a_nearly_full_load_bar_gives_its_fraction_of_a_second() -> None:
    """99 of 100 shards in 10 s: 0.1 s of the load left, not a rounded-up second."""
    bar = eta.BarRate("weight_load", 10.0, 0, 20.0, 99, 100)
    est = eta.estimate(base(), IN_LOAD, 20.0, bar)
    assert est.basis == "progress" and round(est.remaining - 60.0, 3) == 0.101


def test_a_usual_total_alone_counts_no_start() -> None:
    est = eta.Tracker([], "t", total=300.0).estimate({}, 0.0)
    assert est is not None and est.as_event() == {
        "remaining_s": 300.0,
        "phase": "starting",
        "basis": "total",
        "history": "target",
        "starts": 0,
    }


def test_vllms_banner_gives_the_tp_size_on_its_own_line() -> None:
    tr = eta.Tracker([], "t", learn=True)
    learn(tr, "INFO args: model='/m/Q' served_model_name=None", "INFO args: tensor_parallel_size=4")
    assert (tr.model, tr.tp) == ("/m/Q", 4)


def test_the_tp_size_narrows_a_same_model_baseline_once_it_is_known() -> None:
    """Other targets ran the model at TP 8 (170 s) and TP 4 (400 s): the model alone mixes them; TP 8 picks its own."""
    recs = [
        rec("o8", A, 170.0, model_path="/m/Kimi", tp=8),
        rec("o4", {"starting": 0.0, "weight_load": 10.0}, 400.0, model_path="/m/Kimi", tp=4),
    ]
    tr = eta.Tracker(recs, "new", learn=True)
    learn(tr, "server_args=ServerArgs(model_path='/m/Kimi', dtype=auto)")
    assert tr.base is not None and tr.base.total == 285.0 and tr.base.starts == 2
    learn(tr, "tp_size=8")
    assert tr.base is not None and tr.base.total == 170.0 and tr.base.starts == 1


def test_a_bar_with_another_total_is_a_new_bar() -> None:
    """After a 100-shard bar, a 200-shard one (the draft's weights): its rate is measured afresh."""
    tr = eta.Tracker([rec("t", A, 170.0)], "t")
    tr.progress("weight_load", 0, 100, 10.0)
    tr.progress("weight_load", 50, 100, 14.0)
    tr.progress("weight_load", 60, 200, 15.0)
    est = tr.estimate(IN_LOAD, 15.0)
    assert est is not None and est.basis == "history"
