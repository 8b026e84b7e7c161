"""The first hour of a new operator: the mistakes a fresh user makes (an unset $HOST, a typo in a
number, a wrong port, a re-run deploy) get a clear answer, never a traceback or a wrong baseline."""

from __future__ import annotations

import pytest
from conftest import coldwatch


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["wait", ""], "HOST: is empty (an unset variable?)"),
        (["status", ""], "HOST: is empty (an unset variable?)"),
        (["wait", "", "gpu-b"], "HOST: is empty (an unset variable?)"),
        (["wait", "--interval", "nan"], "--interval: expected a duration"),
        (["wait", "--interval", "inf"], "--interval: expected a duration"),
        (["wait", "--interval", "1e308"], "--interval: at most"),
        (["wait", "--interval", "7200"], "--interval: must be at most 3600s"),
        (["wait", "--timeout", "1e308"], "--timeout: expected a duration"),
        (["wait", "--timeout", "99999h"], "--timeout: at most 366 days"),
        (["wait", "a.invalid", "b.invalid", "--min-ready", "0"], "--min-ready: 0 targets ready"),
        (["wait", "a.invalid", "b.invalid", "--min-ready", "0%"], "--min-ready: 0 targets ready"),
        (["wait", "a.invalid", "b.invalid", "--min-ready", "5"], "--min-ready: 5 targets ready needed, but the fleet has only 2"),
        (["replay", "-", "--stall-after", "nan"], "--stall-after: expected a duration"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], needle: str) -> None:
    """Each of these is exit 2 with one line naming the mistake: never a watch of this machine (an
    unset $HOST), a busy loop (nan), an OverflowError, or a fleet that passes with 0 ready."""
    r = coldwatch(*args, input=b"", timeout=30)
    err = r.stderr.decode()
    assert r.returncode == 2, (r.returncode, err)
    assert needle in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
