"""What the judge says: events for the sinks, in order, and actions for the node's probe."""

from __future__ import annotations

from typing import Any

from coldwatch.events import event
from coldwatch.evidence import Action


class Outbox:
    """The judge's outgoing events and actions, gathered until a driver drains them."""

    def __init__(self, epoch0: float | None = None) -> None:
        self.epoch0 = epoch0
        """The wall-clock time of t=0 (the events' ``ts``); replay learns it from the log."""
        self._events: list[dict[str, Any]] = []
        self._actions: list[Action] = []
        self.warned: set[str] = set()

    def emit(self, event_name: str, t: float, **data: Any) -> None:
        """A contract event (``event``, ``t``, ``ts`` first)."""
        self._events.append(event(event_name, t, self.epoch0, **data))

    def internal(self, event_name: str, t: float, **data: Any) -> None:
        """An internal event for the live panel (``_log``, ``_disk`` ...): no ``ts``."""
        self._events.append({"event": event_name, "t": round(t, 3), **data})

    def append(self, ev: dict[str, Any]) -> None:
        """An event built elsewhere (a classifier signal's)."""
        self._events.append(ev)

    def warn(self, key: str, message: str, t: float) -> bool:
        """A warning, once per key; whether it was said now."""
        if key in self.warned:
            return False
        self.warned.add(key)
        self.emit("warning", t, message=message)
        return True

    def say(self, key: str | None, message: str, t: float) -> None:
        """A warning: once per ``key``, or every time without one."""
        if key is None:
            self.emit("warning", t, message=message)
        else:
            self.warn(key, message, t)

    def act(self, a: Action) -> None:
        self._actions.append(a)

    def drain(self) -> list[dict[str, Any]]:
        """The events since the last drain, in order."""
        out, self._events = self._events, []
        return out

    def actions(self) -> list[Action]:
        """The actions asked for since the last call."""
        out, self._actions = self._actions, []
        return out
