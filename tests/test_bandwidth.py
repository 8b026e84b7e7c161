"""Why a load is slow: the verdict from typed samples, and for real on a loop-device filesystem read by a
stand-in loader (disk-bound through a throttled backing disk, loader-bound, cache-warm)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from coldwatch.bandwidth import IoSample, LoadTarget, Reading, Tracker, decide, parse_io, parse_target
from coldwatch.judge import Judge, Policy
from coldwatch.normalise import Normaliser
from coldwatch.probes.parse import proc_from_dict
from coldwatch.probes.sampler import parse_record, sampler_command

HERE = Path(__file__).resolve().parent
DISK = LoadTarget("/models/k2", "ext4", "/models", "/dev/md0", ("nvme0n1", "nvme1n1"), size=100, cached=12)


def test_verdict_rules_in_order() -> None:
    """Network filesystem first, then cache-warm, then a busy disk, then an idle disk with a saturated core."""
    busy = Reading(3.1e9, "nvme0n1", 0.98, 3.2e9, 0.4)
    assert decide(DISK, busy).kind == "disk-bound"
    assert (
        decide(DISK, busy).line
        == "reading 3.1 GB/s from nvme0n1 at 98% busy: disk-bound; 12% of the weights were in page cache at the start"
    )
    slow = Reading(0.4e9, "nvme0n1", 0.09, 0.4e9, 1.0)
    assert decide(DISK, slow).line.endswith(
        "with nvme0n1 at 9% busy and one core at 100%: loader-bound; 12% of the weights were in page cache at the start"
    )
    assert decide(DISK, Reading(1e8, "nvme0n1", 0.6, 1e8, 0.5)).kind is None
    nfs = LoadTarget("/models/k2", "nfs4", "/models", "filer:/export/models", (), size=100, cached=0)
    assert decide(nfs, busy).kind == "network-filesystem" and "filer:/export/models" in decide(nfs, busy).line
    warm = LoadTarget("/models/k2", "ext4", devices=("sda",), size=100, cached=97)
    assert decide(warm, None).kind == "cache-warm"


def test_tracker_measures_util_from_io_ticks_and_says_a_bound_once() -> None:
    """%util is the io_ticks delta over the interval (iostat's); the busiest device counts; a bound is announced once."""
    tr = Tracker()
    assert tr.feed(DISK, IoSample(10.0, {"nvme0n1": (0, 1000), "nvme1n1": (0, 1000)}), 0.0, True) is None  # nothing measured yet
    v = tr.feed(None, IoSample(12.0, {"nvme0n1": (4_000_000, 2960), "nvme1n1": (10, 1100)}, 0.3), 1e9, True)
    assert v is not None and v.kind == "disk-bound" and tr.fields()["device"] == "nvme0n1" and tr.fields()["util"] == 0.98
    assert tr.feed(None, IoSample(14.0, {"nvme0n1": (8_000_000, 4900), "nvme1n1": (10, 1100)}, 0.3), 1e9, True) is None


def test_hostile_sampler_fields_are_bounded_or_dropped() -> None:
    """Malformed or oversized fields from the host never raise: they are capped or ignored."""
    assert parse_target({"dir": 5}) is None and parse_io({"t": True}) is None
    t = parse_target({"dir": "/m" * 1000, "devs": ["x" * 500, 3, None] * 50, "size": -1, "cached": "12", "fs": "nfs" * 100})
    assert t is not None and len(t.dir) == 300 and len(t.devices) <= 32 and t.size is None and t.cached is None
    io = parse_io({"t": 1.0, "devs": {"sda": [1, 2], "sdb": ["x", 2], "sdc": [1]}, "core": "hot"})
    assert io is not None and io.devices == {"sda": (1, 2)} and io.core is None


# ---- for real: a loop device, a stand-in loader, the streaming sampler, the judge -----------------
BLKIO = Path("/sys/fs/cgroup/blkio")


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "needs root (losetup, mount)"
    for tool in ("losetup", "mkfs.ext4", "mount"):
        if shutil.which(tool) is None:
            return f"needs {tool}"
    return None


@pytest.fixture(scope="module")
def loopfs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """An ext4 filesystem on a loop device (direct I/O to its backing file) with 3 x 64 MB of weights."""
    reason = _why_not()
    if reason:
        pytest.skip(reason)
    base = tmp_path_factory.mktemp("loopfs")
    img, mnt = base / "disk.img", base / "mnt"
    mnt.mkdir()
    subprocess.run(["truncate", "-s", "300M", str(img)], check=True)
    r = subprocess.run(["losetup", "-f", "--show", "--direct-io=on", str(img)], capture_output=True, text=True)
    if r.returncode:
        pytest.skip(f"no loop device here: {r.stderr.strip()}")
    dev = r.stdout.strip()
    try:
        subprocess.run(["mkfs.ext4", "-q", "-F", dev], check=True)
        if subprocess.run(["mount", dev, str(mnt)]).returncode:
            pytest.skip("cannot mount the loop device")
        model = mnt / "models" / "tiny"
        model.mkdir(parents=True)
        for i in range(3):
            (model / f"model-0000{i + 1}-of-00003.safetensors").write_bytes(os.urandom(64_000_000))
        yield model, dev
    finally:
        subprocess.run(["umount", str(mnt)], check=False)
        subprocess.run(["losetup", "-d", dev], check=False)


def _backing_disk(img_dir: Path) -> str:
    st = os.stat(img_dir)
    return f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"


def watch_load(model: Path, mode: str, cache: str, cgroup: Path | None = None, limit: float = 20.0) -> list[dict[str, Any]]:
    """Run the stand-in loader and the real streaming sampler on it; feed the judge in weight_load; its events."""
    for f in model.glob("*.safetensors"):
        fd = os.open(f, os.O_RDONLY)
        try:
            if cache == "cold":
                os.fsync(fd)  # written back first: dirty pages cannot be dropped
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            else:
                while os.read(fd, 1 << 20):
                    pass
        finally:
            os.close(fd)
    for name in ("go", "done"):
        (model.parent / name).unlink(missing_ok=True)
    pre = ["sh", "-c", f'echo $$ > {cgroup}/cgroup.procs && exec "$@"', "sh"] if cgroup else []
    reader = subprocess.Popen([*pre, sys.executable, str(HERE / "loadreader.py"), "--model-path", str(model), mode])
    sampler = None
    try:
        time.sleep(0.3)
        sampler = subprocess.Popen(["sh", "-c", sampler_command(0.5, None, False, None, reader.pid, None)], stdout=subprocess.PIPE)
        assert sampler.stdout is not None
        j = Judge(Policy(confirm="log", stall_after=0.0))
        j.line(Normaliser().lines(b"[2026-01-01 00:00:00 TP0] Load weight begin. avail mem=94.71 GB")[0], 0.0)
        events: list[dict[str, Any]] = []
        t0 = time.monotonic()
        started = False
        while time.monotonic() - t0 < limit:
            rec = parse_record(sampler.stdout.readline())
            if rec is None or rec.proc is None:
                continue
            sample = proc_from_dict(rec.proc)
            assert sample is not None
            j.proc(reader.pid, sample, time.monotonic() - t0)
            events += j.drain()
            if not started:
                (model.parent / "go").write_text("1")
                started = True
            if (model.parent / "done").exists() or any(e["event"] == "load" and e["verdict"] for e in events):
                break
        return events
    finally:
        reader.kill()
        reader.wait()
        if sampler is not None:
            sampler.kill()
            sampler.wait()
            if sampler.stdout is not None:
                sampler.stdout.close()


def verdicts(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = [e for e in events if e["event"] == "load"]
    if out:
        print(f"\n  coldwatch: {out[0]['line']}")  # shown with -s: the figures in BENCHMARKS.md
    return out


def test_loop_device_cache_warm(loopfs: tuple[Path, str]) -> None:
    """Weights read once before the start: fincore says they are all in page cache: cache-warm."""
    model, dev = loopfs
    v = verdicts(watch_load(model, "cache", "warm"))
    assert v and v[0]["verdict"] == "cache-warm" and v[0]["cached_share"] >= 0.9, v
    assert v[0]["fstype"] == "ext4" and v[0]["devices"] == [os.path.basename(dev)]


@pytest.mark.serial  # the loader must have its core: beside parallel workers it gets half of one
def test_loop_device_loader_bound(loopfs: tuple[Path, str]) -> None:
    """Cold weights, a loader burning one core per block: the disk mostly idle: loader-bound."""
    model, _ = loopfs
    v = verdicts(watch_load(model, "cpu", "cold"))
    assert v and v[0]["verdict"] == "loader-bound", v
    assert v[0]["cached_share"] < 0.1 and v[0]["core"] >= 0.9 and v[0]["util"] < 0.5


def test_loop_device_disk_bound_behind_a_slow_backing_disk(loopfs: tuple[Path, str], tmp_path: Path) -> None:
    """The loop device's backing disk throttled to 20 MB/s for the loader (a blkio cgroup): the loop device
    is busy all the time while the loader waits: disk-bound."""
    model, _ = loopfs
    if not (BLKIO / "blkio.throttle.read_bps_device").exists():
        pytest.skip("no cgroup v1 blkio throttle here to slow the backing disk")
    group = BLKIO / f"cw-test-{os.getpid()}"
    group.mkdir()
    try:
        (group / "blkio.throttle.read_bps_device").write_text(f"{_backing_disk(model.parents[3])} {20 << 20}\n")
        v = verdicts(watch_load(model, "disk", "cold", cgroup=group))
    finally:
        for _ in range(50):
            try:
                group.rmdir()
                break
            except OSError:
                time.sleep(0.1)
    assert v and v[0]["verdict"] == "disk-bound", v
    assert v[0]["util"] >= 0.8 and v[0]["rate_mb_s"] <= 30


def test_mincore_fallback_agrees_with_fincore(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without fincore on PATH the host code measures the page-cache share with mincore(2): cached and
    dropped files read as such."""
    from coldwatch.probes.load import LOAD_FUNCS
    from coldwatch.probes.parse import PROC_FUNCS

    f = tmp_path / "model-00001-of-00001.safetensors"
    f.write_bytes(os.urandom(8 << 20))
    ns: dict[str, Any] = {}
    exec(PROC_FUNCS + LOAD_FUNCS, ns)  # the host-side code, as the sampler runs it
    if shutil.which("fincore"):
        assert ns["resident"]([str(f)]) == (8 << 20, "fincore")
    monkeypatch.setenv("PATH", "/nonexistent")
    res, how = ns["resident"]([str(f)])
    assert how == "mincore" and res == 8 << 20
    fd = os.open(f, os.O_RDONLY)
    os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
    res, how = ns["resident"]([str(f)])
    assert how == "mincore" and res < 1 << 20
