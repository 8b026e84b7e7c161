"""What a new watch learns first: whether the server was already up (an attach, not a cold start), and
what its launch banner says of it (engine, model, TP size, version) for the panel's header."""

from __future__ import annotations

from coldwatch import eta
from coldwatch.evidence import SupervisorState
from coldwatch.judging.outbox import Outbox

Launch = tuple[str | None, str | None, int | None, str | None]
"""(engine, model, TP size, version)."""


class Attach:
    """The attach rule: the first probe was served a completion and nothing else ever came."""

    def __init__(self) -> None:
        self.first: str | None = None
        """The first HTTP answer's state: "ready" means the server was up before the watch."""
        self.not_ready_seen = False
        """An answer other than a completion came: a start happened during the watch (an old server's
        answers at first, then this start's), so it is not an attach."""

    def http(self, state: str) -> None:
        self.first = self.first or state
        self.not_ready_seen = self.not_ready_seen or state != "ready"

    def why(self, ready: bool, svc: SupervisorState | None) -> str:
        """Why the watch was an attach (``ready``: its verdict is ready), with the supervisor's start of
        the run when it says; "" for a cold start."""
        if not ready or self.first != "ready" or self.not_ready_seen:
            return ""
        since = f"since {svc.since}" if svc is not None and svc.known and svc.since and svc.since != "n/a" else "when the watch began"
        return f"already up {since}: an attach, not a cold start (not recorded in the ETA baseline)"


class LaunchBanner:
    """The launch banner as far as read: an internal ``_launch`` event whenever it says more."""

    def __init__(self, out: Outbox) -> None:
        self.out = out
        self.version: str | None = None
        self.said: Launch = (None, None, None, None)

    def line(self, text: str, t: float, engine: str | None, etas: eta.Tracker) -> None:
        if self.version is None and ("vLLM" in text or "LLM engine (v" in text):
            self.version = eta.launch_version(text)
        now = (engine, etas.model, etas.tp, self.version)
        if now != self.said:
            self.said = now
            engine, model, tp, version = now
            self.out.internal("_launch", t, engine=engine, model=model, tp=tp, version=version)
