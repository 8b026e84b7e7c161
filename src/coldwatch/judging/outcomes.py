"""The verdicts the judge's rules build, from the classifier's state and what else they need."""

from __future__ import annotations

from coldwatch.evidence import HttpState
from coldwatch.exitcodes import ExitCode
from coldwatch.phases import State
from coldwatch.verdict import Outcome, Verdict


def failed(st: State) -> Verdict:
    """The start failed: the logged failure, else a stop with no cause in the log."""
    f = st.failure
    if f is None:
        return Verdict(Outcome.FAILED, ExitCode.FAILED, st.last_phase(), "exited", "the server stopped with no cause in the log")
    return Verdict(Outcome.FAILED, ExitCode.FAILED, st.last_phase(), f.kind, f.cause)


def too_many_restarts(st: State, restarts: int, max_restarts: int, last_cause: str) -> Verdict:
    return Verdict(
        Outcome.FAILED,
        ExitCode.FAILED,
        st.last_phase(),
        st.failure.kind if st.failure else "exited",
        f"server restarted {restarts} time(s) (--max-restarts {max_restarts}); last failure: {last_cause}",
    )


def died_after_ready(kind: str, reason: str) -> Verdict:
    """The log said ready, but the server died before a completion proved it."""
    return Verdict(
        Outcome.FAILED, ExitCode.FAILED, "warmup", kind, f"{reason}, after its log said ready and before a completion was served"
    )


def unfinished(outcome: str, code: ExitCode, why: str, t: float, st: State, http: HttpState | None, port_note: str) -> Verdict:
    """A verdict for a watch that ended before the start did (deadline, interrupt, unreachable)."""
    phase = st.last_phase()
    said = ""
    if http is not None:
        said = f"; HTTP {http.state}{' ' + str(http.status) if http.status else ''}: {http.detail}"
    port = f"; {port_note}" if port_note else ""
    return Verdict(outcome, code, phase, None, f"{why}{port}; last phase {phase or 'none'}, {t:.0f}s elapsed{said}")


def log_ended(st: State, confirm: str) -> Verdict:
    """What a log that ended with no verdict yet supports: ready by its ready line (``confirm``
    "log"), its failure, else incomplete."""
    if st.outcome == "ready" and confirm == "log":
        return Verdict(Outcome.READY, ExitCode.READY, "ready", None, st.ready_evidence)
    if st.outcome == "failed":
        return failed(st)
    phase = st.last_phase()
    where = f"in {phase}" if phase and phase != "starting" else "before any start-up phase"
    return Verdict(Outcome.INCOMPLETE, ExitCode.TIMEOUT, phase, None, f"log ended {where} without ready or a failure")
