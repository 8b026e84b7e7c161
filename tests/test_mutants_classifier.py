"""The classifier's timeline and verdict inputs as a user reads them (phases/classifier.py): a start
proven ready over HTTP, errors after ready. Each test pins a behaviour a surviving mutant of
classifier.py changed (scripts/mutate.py classifier, a sample); only the public Classifier is used."""

from __future__ import annotations

from coldwatch.normalise import normalise
from coldwatch.phases import Classifier


def feed(c: Classifier, *lines: bytes) -> None:
    for line in normalise(list(lines)):
        c.feed(line)


def test_a_completion_proves_ready_when_the_log_never_says_so() -> None:
    """The load began at 0 s; the HTTP ladder served a completion at 5 s: the timeline ends in ready at 5 s, once."""
    c = Classifier()
    feed(c, b"[2026-01-01 00:00:00] Load weight begin. avail mem=1 GB\n")
    assert [s.kind for s in c.note_ready(5.0, "completion returned")] == ["phase", "ready"]
    assert c.state.outcome == "ready"
    assert [(s.phase, s.start, s.end) for s in c.state.timeline()] == [("weight_load", 0.0, 5.0), ("ready", 5.0, None)]
    assert c.note_ready(9.0, "again") == [] and c.state.ready_t == 5.0


def test_errors_after_ready_are_counted_one_each_and_leave_the_start_ready() -> None:
    c = Classifier()
    feed(c, b"[2026-01-01 00:00:00] The server is fired up and ready to roll!\n")
    feed(c, b"[2026-01-01 00:00:09] Segmentation fault (core dumped)\n", b"[2026-01-01 00:00:10] Segmentation fault (core dumped)\n")
    assert c.state.outcome == "ready" and c.state.late_errors == 2


def test_an_end_marker_seen_first_is_the_phase_of_the_rank_that_logged_it() -> None:
    """A log joined mid-load: TP0's 'Load weight end' is the first line: a weight_load phase event for TP0."""
    c = Classifier()
    out = []
    for line in normalise([b"[2026-01-01 00:00:01 TP0] Load weight end. elapsed=1.00 s, avail mem=10.00 GB, mem usage=65.00 GB.\n"]):
        out += c.feed(line)
    assert [(s.kind, s.data.get("phase"), s.data.get("rank")) for s in out] == [("phase", "weight_load", "TP0")]
