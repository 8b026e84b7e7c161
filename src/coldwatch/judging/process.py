"""The server's process tree, sample by sample: CPU and disk liveness, the weight load's progress from
the bytes read, the load path's bandwidth verdict, and the compilers it runs."""

from __future__ import annotations

import dataclasses

from coldwatch import bandwidth, eta
from coldwatch.evidence import ProcSample
from coldwatch.judging.liveness import Liveness
from coldwatch.judging.outbox import Outbox
from coldwatch.probes.parse import COMPILERS


class ProcessRule:
    """What the process samples say, one live sample after the other."""

    def __init__(self, out: Outbox, live: Liveness, etas: eta.Tracker) -> None:
        self.out = out
        self.live = live
        self.etas = etas
        self.last: ProcSample | None = None
        """The latest live sample (its model size and command line kept from earlier ones)."""
        self.t = 0.0
        self.read0: int | None = None
        """Bytes read when the weight load began (None: not in it yet, or a new start)."""
        self.off = False
        """The host cannot sample processes."""
        self.bw = bandwidth.Tracker()

    def unavailable(self, detail: str, t: float) -> None:
        """The host cannot sample processes (no python3): liveness and the port rule go without it."""
        self.off = True
        self.out.warn("proc", f"process sampling unavailable on the host (python3?): {detail}", t)

    def sample(self, sample: ProcSample, t: float, loading: bool) -> list[str]:
        """One live sample at ``t`` (``loading``: the start is in weight_load); the compilers running."""
        prev = self.last
        if loading and self.read0 is None:
            self.read0 = prev.read_bytes if prev is not None else sample.read_bytes
        rate = self._disk(prev, sample, t, loading) if prev is not None else 0.0
        self.t = t
        if sample.load is not None or sample.io is not None:
            self._load(sample, rate, loading, t)
        compilers = sorted({c for c in sample.children if c in COMPILERS})
        if compilers:
            self.live.seen("compile", t)
            self.out.internal("_jit", t, names=compilers)
        if prev is not None and (sample.model_bytes is None or not sample.cmdline):
            sample = dataclasses.replace(sample, model_bytes=sample.model_bytes or prev.model_bytes, cmdline=sample.cmdline or prev.cmdline)
        self.last = sample
        return compilers

    def _disk(self, prev: ProcSample, sample: ProcSample, t: float, loading: bool) -> float:
        """CPU and disk liveness since ``prev``; the read rate (bytes/s), and the load's progress by it."""
        if sample.cpu_s > prev.cpu_s + 0.05:
            self.live.seen("cpu", t)
        if sample.read_bytes <= prev.read_bytes:
            return 0.0
        self.live.seen("disk", t)
        rate = (sample.read_bytes - prev.read_bytes) / max(t - self.t, 0.001)
        model = sample.model_bytes or prev.model_bytes
        self.out.internal("_disk", t, rate=rate, read=sample.read_bytes, model=model)
        if model and loading and self.read0 is not None:
            done = min(sample.read_bytes - self.read0, model)
            left = (model - done) / rate if rate > 0 else None
            self.etas.progress("weight_load", done, model, t)
            self.out.emit(
                "progress",
                t,
                phase="weight_load",
                done=done,
                total=model,
                unit="bytes",
                rate_mb_s=round(rate / 1e6, 1),
                eta_s=round(left, 1) if left is not None else None,
            )
        return rate

    def _load(self, sample: ProcSample, rate: float, loading: bool, t: float) -> None:
        """The load path's bandwidth: a verdict event when it changes, the panel's line while loading."""
        v = self.bw.feed(sample.load, sample.io, rate, loading)
        if v is not None:
            self.out.emit("load", t, verdict=v.kind, line=v.line, **self.bw.fields())
        if loading and self.bw.last is not None:
            self.out.internal("_load", t, line=self.bw.last.line, verdict=self.bw.last.kind, **self.bw.fields())
