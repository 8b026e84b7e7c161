"""Readings that only warn: what each says, and whether it is said once (a key) or every time."""

from __future__ import annotations

from coldwatch.evidence import (
    ConnectionLost,
    EarlierEnded,
    EarlierLine,
    NodeLost,
    ProbeFailed,
    ProbeWarning,
    ProcFailed,
    Reading,
    ReadingsDropped,
    Reconnected,
    SamplerOff,
)


def warning_for(r: Reading) -> tuple[str | None, str] | None:
    """(key, message) of the warning ``r`` calls for (key None: said every time); None when ``r``
    is not a reading that only warns."""
    if isinstance(r, ProcFailed):
        return "proc", f"process sampling failed on the host: {r.detail[:160]}"
    if isinstance(r, SamplerOff):
        return "sampler", f"the streaming sampler did not start on the host (python3?, status {r.status}); one command per sample"
    if isinstance(r, ConnectionLost):
        return None, f"{r.where}SSH connection lost ({r.why}); reconnecting for up to {r.retry_for:g}s"
    if isinstance(r, Reconnected):
        return None, f"{r.where}SSH reconnected after a {r.gap:.1f}s gap; log resumed {r.how}"
    if isinstance(r, NodeLost):
        return "blind", r.message + "; the start is judged on the other nodes"
    if isinstance(r, ProbeFailed):
        return r.probe, f"probe error: {r.probe}: {r.detail}"
    if isinstance(r, ProbeWarning):
        return r.key, r.message
    if isinstance(r, EarlierLine):
        return "earlier", f"log lines stamped before {r.why} are an earlier run's: shown as such, never judged"
    if isinstance(r, EarlierEnded):
        return "earlier_end", f"the log ended on {r.count} line(s) stamped before this start: judged as this start's last lines"
    if isinstance(r, ReadingsDropped):
        return None, f"{r.count} reading(s) dropped so far: the judging queue was full"
    return None
