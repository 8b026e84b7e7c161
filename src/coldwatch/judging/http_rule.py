"""The HTTP ladder's answers: the state changes the sinks see, HTTP liveness, the model served, and
whether a completion counts as ready now (the port-holder rule may hold it back)."""

from __future__ import annotations

from coldwatch.evidence import HttpState
from coldwatch.judging.first_hour import Attach
from coldwatch.judging.liveness import Liveness
from coldwatch.judging.outbox import Outbox
from coldwatch.judging.ports import PortRule


class HttpRule:
    """The last HTTP answer and what it is worth."""

    def __init__(self, out: Outbox, live: Liveness, ports: PortRule) -> None:
        self.out = out
        self.live = live
        self.ports = ports
        self.state: HttpState | None = None
        self.model: str | None = None
        """The model the server said it serves."""
        self.attach = Attach()

    def answer(self, st: HttpState, t: float, pid: int | None, sampled: bool) -> bool:
        """One rung at ``t``; whether it is a completion that counts as ready (``pid``: the server's
        main process; ``sampled``: a process sample came, or none can)."""
        prev = self.state
        self.state = st
        self.attach.http(st.state)
        if st.model:
            self.model = st.model
        if prev is None or (st.state, st.status) != (prev.state, prev.status):
            self.out.emit("http", t, state=st.state, status=st.status, detail=st.detail, changed=True)
            if st.state in ("status", "ready"):
                self.live.seen("http", t)
        return st.state == "ready" and not self.ports.holds(pid, sampled, t)
