"""The NDJSON event stream of the contract: one dict per event, built in one place."""

from __future__ import annotations

import datetime as _dt
from typing import Any

from coldwatch.phases import Signal


def iso(epoch: float | None) -> str | None:
    if epoch is None:
        return None
    return _dt.datetime.fromtimestamp(epoch, _dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def event(event_name: str, t: float | None, epoch0: float | None, **data: Any) -> dict[str, Any]:
    """An event dict: ``event``, ``t`` (seconds since start) and ``ts`` (ISO 8601 UTC) first."""
    tt = round(t, 3) if t is not None else None
    ts = iso(epoch0 + t) if (epoch0 is not None and t is not None) else None
    return {"event": event_name, "t": tt, "ts": ts, **data}


def from_signal(s: Signal, epoch0: float | None) -> dict[str, Any] | None:
    """Classifier signal -> contract event (None for signals that have no event of their own)."""
    d = s.data
    if s.kind == "phase":
        return event("phase", s.t, epoch0, phase=d["phase"], rank=d.get("rank"), evidence=d.get("evidence", "")[:300])
    if s.kind == "progress":
        return event("progress", s.t, epoch0, phase=d["phase"], done=d["done"], total=d["total"])
    if s.kind == "warning":
        return event("warning", s.t, epoch0, message=d["message"][:300])
    return None
