"""Why a load is slow (bandwidth.py), as the ``load`` event and the panel say it: each rule's threshold,
the words and units of the verdict line, the tracker's deltas, and the bounds on the sampler's hostile
fields. Each test pins a behaviour a surviving mutant of bandwidth.py changed (scripts/mutate.py
bandwidth); thresholds are checked on both sides with absolute numbers."""

from __future__ import annotations

import pytest

from coldwatch.bandwidth import IoSample, LoadTarget, Reading, Tracker, decide, parse_io, parse_target, rate_text

DISK = LoadTarget("/models/k2", "ext4", "/models", "/dev/md0", ("nvme0n1", "nvme1n1"), size=100, cached=12)


def warm(cached: int) -> LoadTarget:
    return LoadTarget("/models/k2", "ext4", "/models", "/dev/sda1", ("sda",), size=1000, cached=cached)


def test_cache_warm_from_90_percent_of_the_weights_in_page_cache() -> None:
    assert decide(warm(900), None).kind == "cache-warm"
    assert decide(warm(900), None).line == "90% of the weights were in page cache at the start: cache-warm"
    assert decide(warm(899), None).kind is None
    assert decide(warm(5000), Reading(2e9, "sda", 0.1, 1e6, 0.2)).line == (
        "100% of the weights were in page cache at the start: cache-warm, reading 2.0 GB/s"
    )
    assert decide(LoadTarget("/m", "ext4", "/m", size=0, cached=10), None).line == "weights on ext4 /m"  # no size: no share


def test_disk_bound_from_80_percent_busy() -> None:
    assert decide(DISK, Reading(1e9, "nvme0n1", 0.8, 1e9, 0.3)).kind == "disk-bound"
    assert decide(DISK, Reading(1e9, "nvme0n1", 0.79, 1e9, 0.3)).kind is None


def test_loader_bound_needs_a_disk_under_half_busy_and_a_core_at_90_percent() -> None:
    assert decide(DISK, Reading(4e8, "nvme0n1", 0.49, 4e8, 0.9)).kind == "loader-bound"
    assert decide(DISK, Reading(4e8, "nvme0n1", 0.5, 4e8, 1.0)).kind is None
    assert decide(DISK, Reading(4e8, "nvme0n1", 0.1, 4e8, 0.89)).kind is None
    assert decide(DISK, Reading(4e8, "nvme0n1", 0.1, 4e8, None)).kind is None
    assert decide(DISK, Reading(4e8, None, None, None, 1.0)).kind is None


def test_the_line_without_a_bound_names_what_is_known() -> None:
    r = Reading(4e8, None, None, None, None)
    assert decide(DISK, r).line == (
        "reading 400.0 MB/s, the disk's load unknown, no per-thread CPU; 12% of the weights were in page cache at the start"
    )
    assert decide(DISK, None).line == "weights on ext4 nvme0n1/nvme1n1; 12% of the weights were in page cache at the start"
    bare = LoadTarget("/m/x", "", "/m")
    assert decide(bare, None).line == "weights on ? /m"
    assert decide(bare, Reading(4e8, "sda", 0.6, 4e8, 0.5)).line == "reading 400.0 MB/s, sda at 60% busy, one core at 50%"


def test_a_network_filesystem_is_named_by_its_source_else_its_mount() -> None:
    nfs = LoadTarget("/models/k2", "nfs4", "/models", "filer:/export", size=100, cached=0)
    assert decide(nfs, Reading(1e9, "sda", 0.99, 1e3, 1.0)).line == (
        "reading 1.0 GB/s from nfs4 filer:/export: network-filesystem; 0% of the weights were in page cache at the start"
    )
    assert decide(LoadTarget("/models/k2", "nfs3", "/models"), None).line == "reading from nfs3 /models: network-filesystem"
    assert decide(LoadTarget("/models/k2", "lustre", "/lus"), None).kind == "network-filesystem"
    assert decide(LoadTarget("/models/k2", "xfs", "/m"), None).kind is None


@pytest.mark.parametrize(
    ("bps", "text"),
    [(1e9, "1.0 GB/s"), (999e6, "999.0 MB/s"), (1e6, "1.0 MB/s"), (999e3, "999.0 kB/s"), (1e3, "1.0 kB/s"), (999, "999 B/s")],
)
def test_rates_are_said_in_the_largest_unit_they_reach(bps: float, text: str) -> None:
    assert rate_text(bps) == text


def test_the_tracker_measures_over_at_least_half_a_second_and_keeps_the_older_base() -> None:
    """A sample 0.4 s after the base is too close: the next, 1 s after the base, measures the whole second."""
    tr = Tracker()
    assert tr.feed(DISK, IoSample(10.0, {"nvme0n1": (0, 0)}), 0.0, True) is None
    assert tr.feed(None, IoSample(10.4, {"nvme0n1": (1000, 390)}), 5e8, True) is None
    v = tr.feed(None, IoSample(11.0, {"nvme0n1": (2_000_000, 900)}), 5e8, True)
    assert v is not None and v.kind == "disk-bound"
    assert tr.fields() == {
        "fstype": "ext4",
        "devices": ["nvme0n1", "nvme1n1"],
        "cached_share": 0.12,
        "rate_mb_s": 500.0,
        "disk_mb_s": 1024.0,
        "device": "nvme0n1",
        "util": 0.9,
        "core": None,
    }
    # 0.5 s exactly is enough; io_ticks beyond the interval cap at 100 %; a counter going back counts 0
    v2 = tr.feed(None, IoSample(11.5, {"nvme0n1": (1_000_000, 2000)}, 0.95), 5e8, True)
    assert v2 is None and tr.fields()["util"] == 1.0 and tr.fields()["disk_mb_s"] == 0.0 and tr.fields()["core"] == 0.95


def test_the_busiest_device_of_those_seen_twice_is_the_one_named() -> None:
    tr = Tracker()
    tr.feed(DISK, IoSample(0.0, {"nvme0n1": (0, 0), "nvme1n1": (0, 0)}), 0.0, True)
    tr.feed(None, IoSample(2.0, {"nvme0n1": (100, 200), "nvme1n1": (100, 1800), "sdz": (10**9, 2000)}), 1e8, True)
    f = tr.fields()
    assert f["device"] == "nvme1n1" and f["util"] == 0.9 and f["disk_mb_s"] == round(200 * 512 / 2.0 / 1e6, 1)


def test_a_bound_is_said_once_an_unclear_interval_does_not_withdraw_it_and_a_new_target_starts_over() -> None:
    tr = Tracker()
    assert tr.feed(None, IoSample(0.0, {}), 0.0, True) is None  # no target yet: nothing to say
    tr.feed(DISK, IoSample(0.0, {"sda": (0, 0)}), 0.0, True)
    assert tr.feed(None, IoSample(1.0, {"sda": (0, 900)}), 1e9, True) is not None  # disk-bound
    assert tr.feed(None, IoSample(2.0, {"sda": (0, 1500)}), 1e9, True) is None  # 60 %: unclear, the bound stands
    assert tr.last is not None and tr.last.kind is None
    loader = tr.feed(None, IoSample(3.0, {"sda": (0, 1600)}, 1.0), 1e9, True)
    assert loader is not None and loader.kind == "loader-bound"
    tr.feed(warm(0), IoSample(4.0, {"sda": (0, 1600)}), 0.0, True)
    assert tr.fields()["cached_share"] == 0.0 and tr.fields()["rate_mb_s"] == 1000.0
    again = tr.feed(None, IoSample(5.0, {"sda": (0, 2500)}), 1e9, True)
    assert again is not None and again.kind == "disk-bound"


def test_nothing_is_said_outside_the_load_but_the_base_moves_on() -> None:
    tr = Tracker()
    tr.feed(DISK, IoSample(0.0, {"sda": (0, 0)}), 0.0, False)
    assert tr.feed(None, IoSample(1.0, {"sda": (0, 1000)}), 1e9, False) is None
    assert tr.reading is None
    v = tr.feed(None, IoSample(2.0, {"sda": (0, 1100)}, 1.0), 1e8, True)
    assert v is not None and v.kind == "loader-bound"  # measured from 1.0 s: 10 % busy, not 55 %


def test_cache_warm_and_network_are_said_before_anything_is_measured() -> None:
    tr = Tracker()
    v = tr.feed(warm(950), None, 0.0, True)
    assert v is not None and v.kind == "cache-warm"
    assert Tracker().feed(DISK, None, 0.0, True) is None
    nfs = Tracker().feed(LoadTarget("/m", "nfs", "/m", "filer:/m"), None, 0.0, True)
    assert nfs is not None and nfs.kind == "network-filesystem"
    assert Tracker().fields() == {
        "fstype": None,
        "devices": [],
        "cached_share": None,
        "rate_mb_s": None,
        "disk_mb_s": None,
        "device": None,
        "util": None,
        "core": None,
    }


def test_the_samplers_fields_are_capped_and_typed() -> None:
    t = parse_target(
        {
            "dir": "d" * 400,
            "fs": "f" * 50,
            "mount": "m" * 400,
            "src": "s" * 400,
            "devs": [f"dev{i}" for i in range(40)],
            "size": True,
            "cached": 7,
            "how": "fincore-and-more-words",
        }
    )
    assert t is not None
    assert (len(t.dir), len(t.fstype), len(t.mount), len(t.source)) == (300, 40, 300, 300)
    assert len(t.devices) == 32 and t.devices[31] == "dev31" and t.size is None and t.cached == 7 and t.how == "fincore-and-more"
    assert parse_target({"dir": ""}) is None and parse_target(["/m"]) is None
    assert parse_target({"dir": "/m", "devs": "sda", "how": ""}) == LoadTarget("/m")
    assert parse_target({"dir": "/m", "size": 0, "cached": 0}) == LoadTarget("/m", size=0, cached=0)
    io = parse_io({"t": 3, "devs": {f"d{i}": [i, i] for i in range(40)} | {"neg": [-1, 2]}, "core": True})
    assert io is not None and io.t == 3.0 and len(io.devices) == 32 and io.devices["d0"] == (0, 0) and io.core is None
    assert "neg" not in io.devices
    assert parse_io({"t": 1.5, "devs": {"sda": [1, 2, 3], "sdb": [1, True]}, "core": 1}) == IoSample(1.5, {}, 1.0)
    assert parse_io({"t": "1"}) is None and parse_io(None) is None


def test_the_disk_rate_is_the_sectors_read_times_512_over_the_interval() -> None:
    """48 sectors in 0.5 s are 49 152 B/s: shown as 0.0 MB/s; 49 sectors (50 176 B/s) would show 0.1."""
    tr = Tracker()
    tr.feed(DISK, IoSample(0.0, {"sda": (1000, 0)}), 0.0, True)
    tr.feed(None, IoSample(0.5, {"sda": (1048, 100)}), 1e6, True)
    assert tr.fields()["disk_mb_s"] == 0.0
    tr.feed(None, IoSample(1.0, {"sda": (1097, 200)}), 1e6, True)
    assert tr.fields()["disk_mb_s"] == 0.1


def test_a_device_whose_counter_went_back_adds_no_sector() -> None:
    """Over 0.5 s sda read 48 sectors (49 152 B/s: 0.0 MB/s shown) and sdb's counter went back: still 0.0."""
    tr = Tracker()
    tr.feed(DISK, IoSample(0.0, {"sda": (1000, 0), "sdb": (5000, 0)}), 0.0, True)
    tr.feed(None, IoSample(0.5, {"sda": (1048, 100), "sdb": (10, 50)}), 1e6, True)
    assert tr.fields()["disk_mb_s"] == 0.0 and tr.fields()["device"] == "sda"


def test_of_two_devices_equally_busy_the_first_listed_is_named() -> None:
    tr = Tracker()
    tr.feed(DISK, IoSample(0.0, {"nvme0n1": (0, 0), "nvme1n1": (0, 0)}), 0.0, True)
    tr.feed(None, IoSample(1.0, {"nvme0n1": (0, 900), "nvme1n1": (0, 900)}), 1e9, True)
    assert tr.fields()["device"] == "nvme0n1"


def test_devices_not_seen_before_leave_the_disk_unknown() -> None:
    """The devices changed between two samples (a remount): no device, no use, no disk rate; the thread's CPU stays."""
    tr = Tracker()
    tr.feed(DISK, IoSample(0.0, {"sda": (0, 0)}), 0.0, True)
    assert tr.feed(None, IoSample(1.0, {"sdb": (100, 900)}, 0.5), 2e8, True) is None
    f = tr.fields()
    assert (f["device"], f["util"], f["disk_mb_s"], f["core"], f["rate_mb_s"]) == (None, None, None, 0.5, 200.0)
    assert tr.last is not None and tr.last.line.startswith("reading 200.0 MB/s, the disk's load unknown, one core at 50%")


def test_device_names_are_capped_at_64_characters() -> None:
    t = parse_target({"dir": "/m", "devs": ["d" * 100]})
    assert t is not None and t.devices == ("d" * 64,)
    io = parse_io({"t": 1.0, "devs": {"d" * 100: [1, 2]}})
    assert io is not None and list(io.devices) == ["d" * 64]


def test_a_sample_measured_at_exactly_half_a_second_becomes_the_next_base() -> None:
    """Busy from 0 to 0.5 s, idle from 0.5 to 1 s: the second interval is 0 % busy, not 50 % over the whole second."""
    tr = Tracker()
    tr.feed(DISK, IoSample(0.0, {"sda": (0, 0)}), 0.0, True)
    tr.feed(None, IoSample(0.5, {"sda": (0, 500)}), 1e9, True)
    assert tr.fields()["util"] == 1.0
    tr.feed(None, IoSample(1.0, {"sda": (0, 500)}), 1e9, True)
    assert tr.fields()["util"] == 0.0
