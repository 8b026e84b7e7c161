"""Phase inference: rules as data and a pure classifier."""

from coldwatch.phases.classifier import Classifier, Failure, Signal, Span, State, step
from coldwatch.phases.rules import ENGINES, FAILURE_KINDS, PHASES, RuleSet, load_rules

__all__ = [
    "ENGINES",
    "FAILURE_KINDS",
    "PHASES",
    "Classifier",
    "Failure",
    "RuleSet",
    "Signal",
    "Span",
    "State",
    "load_rules",
    "step",
]
