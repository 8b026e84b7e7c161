"""The classifier's signals as the sinks and the probe see them: progress and phase events (with the
ETA left), the fast-probe window once warm-up or ready is near, a probe at once on a logged ready, and
the ETA's own events."""

from __future__ import annotations

from coldwatch import eta
from coldwatch.events import from_signal
from coldwatch.evidence import ProbeFast, ProbeNow
from coldwatch.judging.lifecycle import Lifecycle
from coldwatch.judging.liveness import Liveness
from coldwatch.judging.outbox import Outbox
from coldwatch.judging.policy import FAST_FOR
from coldwatch.phases import Signal, State


def entered(st: State) -> dict[str, float]:
    """When the start entered each phase it reached."""
    return {ph: s.start for ph, s in st.spans.items() if s.start is not None}


class Pace:
    """One signal at a time: its evidence, its actions and its event; and the ETA."""

    def __init__(self, out: Outbox, live: Liveness, life: Lifecycle, etas: eta.Tracker, confirm: str) -> None:
        self.out = out
        self.live = live
        self.life = life
        self.etas = etas
        self.confirm = confirm

    def signal(self, sig: Signal, t: float, st: State, now: float, decided: bool) -> bool:
        """Apply one signal of the start ``st`` at ``t``; whether it is the log's ready line and the
        log is what confirms ready (replay)."""
        kind = sig.kind
        if kind == "start":
            return False
        if kind == "progress":
            self.live.seen("progress", t)
            self.etas.progress(sig.data["phase"], sig.data["done"], sig.data["total"], t)
        elif kind == "failed":
            self.life.failed(t)
        if kind == "ready" or (kind == "phase" and sig.data.get("phase") == "warmup"):
            self.out.act(ProbeFast(t + FAST_FOR))
        log_ready = kind == "ready" and sig.data.get("source") == "log"
        if log_ready and self.confirm != "log":
            self.out.act(ProbeNow())
        ev = from_signal(sig, self.out.epoch0)
        if ev is not None:
            if ev["event"] == "progress":
                left = self.eta(st, now)
                if left is not None:
                    ev["eta_s"] = left
            self.out.append(ev)
            if ev["event"] == "phase":
                self.due(st, t, decided)
        return log_ready and self.confirm == "log"

    def eta(self, st: State, now: float) -> float | None:
        """Seconds until ready by the per-phase estimate (eta.py); None without history."""
        est = self.etas.estimate(entered(st), now)
        return round(est.remaining, 1) if est is not None else None

    def due(self, st: State, t: float, decided: bool) -> None:
        """The ETA's event when one is due at ``t`` (none once decided, or once the log says ready)."""
        if self.etas.base is None or decided or st.ready:
            return
        est = self.etas.due(entered(st), t)
        if est is not None:
            self.out.emit("eta", t, **est.as_event())
