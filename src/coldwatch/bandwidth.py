"""Why a weight load runs at the speed it does: disk-bound, loader-bound, a network filesystem, or
served from page cache. Pure: typed samples and the time in, a verdict out.

The host side (``probes/load.py``, inside the streaming sampler) reports once where the model lives
(mount, filesystem, the block devices under it, the share of the weights in page cache at the start)
and, every interval, the devices' ``/proc/diskstats`` counters and the busiest thread's CPU share.
Utilisation is iostat's %util: the ``io_ticks`` delta over the wall-clock delta.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

NETWORK_FS = (
    "nfs",
    "nfs4",
    "cifs",
    "smb3",
    "lustre",
    "9p",
    "ceph",
    "glusterfs",
    "fuse.glusterfs",
    "gpfs",
    "beegfs",
    "fuse.sshfs",
    "fuse.s3fs",
    "fuse.gcsfuse",
    "fuse.juicefs",
    "wekafs",
)
"""Filesystems whose reads cross a network: this host's disk counters do not see them."""
CACHE_WARM = 0.9
"""At least this share of the weights in page cache at the start: the load is served from memory."""
DISK_BUSY = 0.8
"""A device at least this busy (io_ticks) is the bottleneck."""
DISK_IDLE = 0.5
CORE_SATURATED = 0.9
"""A thread using this share of one core while the disk is below DISK_IDLE: the loader is the bottleneck."""
MIN_DT = 0.5


@dataclass(frozen=True, slots=True)
class LoadTarget:
    """Where the weights live, as the host saw it once."""

    dir: str
    fstype: str = ""
    mount: str = ""
    source: str = ""
    devices: tuple[str, ...] = ()
    size: int | None = None
    cached: int | None = None
    how: str | None = None  # fincore | mincore

    @property
    def cached_share(self) -> float | None:
        if self.cached is None or not self.size:
            return None
        return min(self.cached / self.size, 1.0)

    @property
    def network(self) -> bool:
        return self.fstype in NETWORK_FS or self.fstype.startswith("nfs")


@dataclass(frozen=True, slots=True)
class IoSample:
    """One interval's counters, on the host's monotonic clock."""

    t: float
    devices: dict[str, tuple[int, int]]  # name -> (sectors read, io_ticks ms)
    core: float | None = None  # the busiest thread's share of one core since the previous sample


def _s(v: Any, cap: int = 300) -> str:
    return str(v)[:cap] if isinstance(v, str) else ""


def _n(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


def parse_target(data: Any) -> LoadTarget | None:
    """The sampler's ``load`` object; None when malformed. Strings are capped; the text is hostile."""
    if not isinstance(data, dict) or not _s(data.get("dir")):
        return None
    devs = data.get("devs")
    return LoadTarget(
        dir=_s(data["dir"]),
        fstype=_s(data.get("fs"), 40),
        mount=_s(data.get("mount")),
        source=_s(data.get("src")),
        devices=tuple(_s(d, 64) for d in devs[:32] if _s(d, 64)) if isinstance(devs, list) else (),
        size=_n(data.get("size")),
        cached=_n(data.get("cached")),
        how=_s(data.get("how"), 16) or None,
    )


def parse_io(data: Any) -> IoSample | None:
    """The sampler's ``io`` object; None when malformed."""
    if not isinstance(data, dict) or not isinstance(data.get("t"), int | float) or isinstance(data.get("t"), bool):
        return None
    devs: dict[str, tuple[int, int]] = {}
    raw = data.get("devs")
    if isinstance(raw, dict):
        for name, pair in list(raw.items())[:32]:
            if isinstance(pair, list) and len(pair) == 2 and _n(pair[0]) is not None and _n(pair[1]) is not None:
                devs[_s(name, 64)] = (int(pair[0]), int(pair[1]))
    core = data.get("core")
    return IoSample(float(data["t"]), devs, float(core) if isinstance(core, int | float) and not isinstance(core, bool) else None)


@dataclass(frozen=True, slots=True)
class Reading:
    """One interval of the load: the server tree's read rate and what the storage and CPU did meanwhile."""

    rate: float  # bytes/s the server's processes read from storage
    device: str | None  # the busiest device
    util: float | None  # its io_ticks share of the interval, 0..1
    device_rate: float | None  # bytes/s read from the devices (everyone's reads)
    core: float | None  # the busiest thread's share of one core


@dataclass(frozen=True, slots=True)
class LoadVerdict:
    kind: str | None  # disk-bound | loader-bound | network-filesystem | cache-warm | None (no bound)
    line: str


def rate_text(bps: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if bps >= scale:
            return f"{bps / scale:.1f} {unit}/s"
    return f"{bps:.0f} B/s"


def decide(target: LoadTarget, r: Reading | None) -> LoadVerdict:
    """The verdict line for the load: the first rule that holds, in this order."""
    share = target.cached_share
    cached = f"; {share:.0%} of the weights were in page cache at the start" if share is not None else ""
    reading = f"reading {rate_text(r.rate)}" if r is not None else "reading"
    if target.network:
        where = target.source or target.mount
        return LoadVerdict("network-filesystem", f"{reading} from {target.fstype} {where}: network-filesystem{cached}")
    if share is not None and share >= CACHE_WARM:
        return LoadVerdict(
            "cache-warm", f"{share:.0%} of the weights were in page cache at the start: cache-warm" + (f", {reading}" if r else "")
        )
    if r is None:
        return LoadVerdict(None, f"weights on {target.fstype or '?'} {'/'.join(target.devices) or target.mount}{cached}")
    util = f"{r.device} at {r.util:.0%} busy" if r.device is not None and r.util is not None else "the disk's load unknown"
    core = f"one core at {r.core:.0%}" if r.core is not None else "no per-thread CPU"
    if r.util is not None and r.util >= DISK_BUSY:
        return LoadVerdict("disk-bound", f"{reading} from {util}: disk-bound{cached}")
    if r.util is not None and r.util < DISK_IDLE and r.core is not None and r.core >= CORE_SATURATED:
        return LoadVerdict("loader-bound", f"{reading} with {util} and {core}: loader-bound{cached}")
    return LoadVerdict(None, f"{reading}, {util}, {core}{cached}")


class Tracker:
    """Deltas between samples, and the verdict once it settles. Pure: the host's clock comes in the samples."""

    def __init__(self) -> None:
        self.target: LoadTarget | None = None
        self.prev: IoSample | None = None
        self.kind: str | None = None
        self.said = False
        self.last: LoadVerdict | None = None
        self.reading: Reading | None = None

    def feed(self, target: LoadTarget | None, io: IoSample | None, rate: float, loading: bool) -> LoadVerdict | None:
        """One sample; while ``loading``, a bound to announce when it is new (the first, or another kind)."""
        if target is not None and target != self.target:
            self.target, self.prev, self.said, self.kind = target, None, False, None
        if self.target is None:
            return None
        r = self._reading(io, rate)
        if not loading:
            return None
        if r is not None:
            self.reading = r
        v = decide(self.target, r)
        self.last = v
        if r is None and v.kind not in ("cache-warm", "network-filesystem"):
            return None  # nothing measured yet
        if v.kind is None or v.kind == self.kind:
            return None  # an unclear interval does not withdraw a bound; the panel shows it (``last``)
        self.said, self.kind = True, v.kind
        return v

    def fields(self) -> dict[str, Any]:
        """The numbers behind the verdict, for the ``load`` event."""
        t, r = self.target, self.reading
        share = t.cached_share if t is not None else None
        return {
            "fstype": t.fstype if t else None,
            "devices": list(t.devices) if t else [],
            "cached_share": round(share, 3) if share is not None else None,
            "rate_mb_s": round(r.rate / 1e6, 1) if r else None,
            "disk_mb_s": round(r.device_rate / 1e6, 1) if r and r.device_rate is not None else None,
            "device": r.device if r else None,
            "util": round(r.util, 3) if r and r.util is not None else None,
            "core": round(r.core, 3) if r and r.core is not None else None,
        }

    def _reading(self, io: IoSample | None, rate: float) -> Reading | None:
        if io is None:
            return None
        prev, self.prev = self.prev, io
        if prev is None or io.t - prev.t < MIN_DT:
            if prev is not None and io.t - prev.t < MIN_DT:
                self.prev = prev  # too close to measure: keep the older base
            return None
        dt = io.t - prev.t
        best: tuple[float, str] | None = None
        sectors = 0
        for name, (sec, ticks) in io.devices.items():
            old = prev.devices.get(name)
            if old is None:
                continue
            util = min(max(ticks - old[1], 0) / (dt * 1000.0), 1.0)
            sectors += max(sec - old[0], 0)
            if best is None or util > best[0]:
                best = (util, name)
        return Reading(
            rate=rate,
            device=best[1] if best else None,
            util=best[0] if best else None,
            device_rate=sectors * 512 / dt if best else None,
            core=io.core,
        )
