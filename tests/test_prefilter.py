"""The classifier's prefilter answers exactly what searching each rule's pattern would: the rules a
line matches, never one more or one less, on real logs and on generated text built from the rules' own words."""

from __future__ import annotations

import re
from typing import Any

from conftest import ROOT
from hypothesis import given, settings
from hypothesis import strategies as st

from coldwatch.normalise import normalise
from coldwatch.phases.classifier import Classifier
from coldwatch.phases.prefilter import Prefilter, alternatives, literals

C = Classifier()
R = C.rules
RULES: list[Any] = [*R.phase, *R.failure, *R.start, *R.cause, *R.warning]  # five kinds of rule, each with its regex
PATTERNS: list[str] = [x.regex.pattern for x in RULES]
PRE = Prefilter(PATTERNS, C._any)
COMPILED = [re.compile(p) for p in PATTERNS]


def searched(text: str) -> set[int]:
    return {i for i, rx in enumerate(COMPILED) if rx.search(text)}


WORDS = sorted({w for p in PATTERNS for a in alternatives(p.removeprefix("(?i)")) for r in literals(a) for w in (r, r.upper(), r[:5])})


def test_literals_are_what_every_match_contains() -> None:
    assert literals(r"Load weight begin\.") == ["Load weight begin."]
    assert literals(r"(?:GPU|CPU) KV cache size") == [" KV cache size"]
    assert literals(r"ab?cdef") == ["a", "cdef"]
    assert literals(r"x{2,3}yz") == ["yz"]
    assert literals(r"abc\x41def") == ["abc"]
    assert alternatives(r"a|b(c|d)|[|]") == ["a", "b(c|d)", "[|]"]


def test_prefilter_agrees_with_the_alternation_on_every_labelled_log() -> None:
    files = sorted((ROOT / "tests" / "fixtures" / "logs").rglob("*.log"))
    texts = [line.text for f in files for line in normalise([f.read_bytes()])]
    assert texts
    assert [t for t in texts if PRE.which(t) != searched(t)] == []
    assert any(PRE.which(t) for t in texts)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(WORDS), st.text(alphabet="ab .:-_0123456789()[]'\"=/", max_size=6)), max_size=6))
def test_prefilter_agrees_with_the_alternation_on_text_made_of_rule_words(parts: list[str]) -> None:
    text = "".join(parts)
    assert PRE.which(text) == searched(text), text
    assert C._any is not None and PRE.matches(text) == bool(C._any.search(text)), text
