"""The judge's parameters for one watch (frozen) and the constants of its time-bound rules."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

FAIL_GRACE = 0.4
"""Seconds to keep reading after a fatal line, so the traceback's root error is the cause."""
DEATH_GRACE = 1.5
"""Seconds to wait for the log after the process died, so the logged cause wins."""
RESTART_WAIT = 15.0
"""With --max-restarts left, seconds to wait after a failure for the supervisor to restart the server."""
FAST_FOR = 30.0
"""Once the log reaches warm-up or ready, a refused port is re-probed quickly for this long."""
SLOW_FACTOR = 1.5
SLOW_FLOOR = 30.0
"""A phase is slower than usual at SLOW_FACTOR x its median AND at least SLOW_FLOOR seconds longer."""


@dataclass(frozen=True, slots=True)
class Policy:
    """The rules' parameters for one watch. Frozen: a driver builds a new one (``dataclasses.replace``)."""

    timeout: float = 0.0
    """Deadline in seconds; 0 = none."""
    stall_after: float = 600.0
    """Stalled after this long with no liveness evidence (grown by history); 0 = never."""
    max_restarts: int = 0
    confirm: str = "http"
    """"http": only a validated completion is ready (wait); "log": the log's ready line is (replay)."""
    fail_grace: float = FAIL_GRACE
    death_grace: float = DEATH_GRACE
    restart_wait: float = RESTART_WAIT
    baseline: dict[str, float] = field(default_factory=dict)
    """Median seconds per phase (and "total") of earlier ready starts of this target."""
    port: int | None = None
    """The probed port when the host can see who listens on it (the port-holder rule applies)."""
    pid: int | None = None
    """The server's main process when given (--pid); else the supervisor's main PID."""
    unit: str = "the server"
    tail: bool = False
    """Emit the log tail (internal ``_log`` events) for the live panel."""
    history: list[dict[str, Any]] = field(default_factory=list)
    """Earlier starts' records for the per-phase ETA (this target's, else the same model's and TP's)."""
    target: str = ""
    launch: bool = False
    """Read the model and TP from the log's launch banner (wait: the ETA's fallback, the history record)."""
    listen_port: int | None = None
    """The port the probed URL expects the server to log that it listens on (None: not comparable)."""
