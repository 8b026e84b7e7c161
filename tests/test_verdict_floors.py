"""Floors on `python -m benchmarks.verdicts`: a rule change that breaks a labelled log fails here.

Per corpus: the share of outcomes, last phases and failure kinds that match the labels must not drop
below what the classifier reached when the floor was set. The team's fixtures (shared, real,
composed) must stay all right; the public corpus (real logs from public reports, labelled blind)
keeps the few misses it has for a reason (see BENCHMARKS.md). Raise a floor when a change gains.
"""

from __future__ import annotations

import sys

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT))

from benchmarks import verdicts  # noqa: E402

# corpus: (outcome %, last phase %, kind %)
FLOORS = {
    "shared": (100.0, 100.0, 100.0),
    "real": (100.0, 100.0, 100.0),
    "composed": (100.0, 100.0, 100.0),
    "public": (99.0, 98.0, 98.5),
    # the blind 2026 corpus, scored with the rules written before it was seen (first score with the
    # unchanged code: outcome 98.2, last phase 76.4, kind 77.8); its misses are findings, not labels to edit
    "blind26": (98.0, 98.0, 77.0),
}


@pytest.mark.parametrize("corpus", sorted(FLOORS))
def test_verdicts_stay_above_their_floors(corpus: str) -> None:
    """Outcome, last-phase and kind accuracy of one labelled corpus against its floors."""
    folder = verdicts.CORPORA[corpus]
    if not verdicts.labels(folder):
        pytest.skip(f"no labelled logs at {folder}")
    s = verdicts.score(folder)
    got = (s.pct(s.outcome, s.n), s.pct(s.phase, s.phase_n), s.pct(s.kind, s.kind_n))
    misses = "\n".join(f"{m['file']}: want {m['want']} got {m['got']} ({m['line'][:100]!r})" for m in s.misses)
    for name, value, floor in zip(("outcome", "last phase", "kind"), got, FLOORS[corpus], strict=True):
        assert value >= floor, f"{corpus} {name} {value:.1f}% < floor {floor}%; misses:\n{misses}"
