"""Verdicts from the engines' own structure and 2026's wording: the phase contract ('starting', never
null, for a start with lines), traceback frames placed by the generated structure map (outermost
engine frame that belongs to a phase), vLLM's logger tags, and the 2026 vocabulary."""

from __future__ import annotations

from coldwatch.replay import replay


def verdict(text: str) -> tuple[str, str | None, str | None]:
    _, v = replay([text.encode()])
    return v.outcome, v.phase, v.failure_kind


def test_a_failure_before_any_phase_is_in_starting() -> None:
    """DESIGN: a start is in 'starting' from its first line; a failure there reports 'starting', not null."""
    log = (
        "[2026-08-01 10:00:00] server_args=ServerArgs(model_path='m')\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.12/runpy.py", line 198, in _run_module_as_main\n'
        "ValueError: unknown model type 'qwen9'\n"
    )
    assert verdict(log) == ("failed", "starting", "exception")


def test_a_log_cut_before_any_phase_is_in_starting() -> None:
    _, v = replay([b"INFO 08-01 10:00:00 [utils.py:1] non-default args: {'model': 'm'}\n"])
    assert (v.outcome, v.phase) == ("incomplete", "starting")
    assert "before any start-up phase" in v.reason


def test_an_empty_log_has_no_phase() -> None:
    """Null only when the log has no line of the start."""
    _, v = replay([b""])
    assert v.phase is None
