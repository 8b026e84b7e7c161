"""The server's process tree as the host-side sampler reads it: from its threads' /proc children lists
(a few files for a server of a few processes) or from a scan of every process on the host, the same
processes either way, including a child that a thread other than the main one started."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from typing import Any

import pytest

from coldwatch.probes.parse import PROC_FUNCS

# a server-like tree: the root starts one child from its main thread and one from a worker thread
# (as a compile pool does); the first child starts a grandchild
TREE = r"""
import subprocess, sys, threading, time
kid = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time; subprocess.Popen(['sleep', '60']); time.sleep(60)"])
box = []
t = threading.Thread(target=lambda: box.append(subprocess.Popen(["sleep", "60"])))
t.start(); t.join()
print("up", flush=True)
time.sleep(60)
"""


def _funcs() -> dict[str, Any]:
    g: dict[str, Any] = {"__name__": "sampler"}
    exec(PROC_FUNCS, g)  # noqa: S102 - the sampler's own code, as the host runs it
    return g


def _descendants(root: int) -> set[int]:
    """Every process whose parent chain reaches ``root``, by ps (outside the sampler's code)."""
    out = subprocess.run(["ps", "-eo", "pid=,ppid="], capture_output=True, text=True, check=True).stdout
    parent = {int(a): int(b) for a, b in (ln.split() for ln in out.splitlines())}
    found = {root}
    grew = True
    while grew:
        grew = False
        for pid, pp in parent.items():
            if pp in found and pid not in found:
                found.add(pid)
                grew = True
    return found


@pytest.fixture
def server() -> Any:
    p = subprocess.Popen([sys.executable, "-c", TREE], stdout=subprocess.PIPE)
    assert p.stdout is not None and p.stdout.readline() == b"up\n"
    want = _descendants(p.pid)
    for _ in range(50):  # the grandchild starts a moment after its parent
        if len(want) >= 4:
            break
        time.sleep(0.1)
        want = _descendants(p.pid)
    yield p.pid, want
    for pid in want:
        with contextlib.suppress(OSError):
            os.kill(pid, 9)
    p.wait()
    p.stdout.close()


def test_children_lists_and_a_full_scan_find_the_same_tree(server: tuple[int, set[int]]) -> None:
    root, want = server
    assert len(want) == 4, want  # root, its two children, the grandchild
    g = _funcs()
    scanned = g["tree"](root, 0)  # no thread count yet: a scan of /proc, which counts the host's processes
    assert set(scanned) == want
    assert g["SCAN"]["procs"] > len(want)
    if not os.path.exists(f"/proc/{root}/task/{root}/children"):
        pytest.skip("this kernel has no /proc children lists")
    g["SCAN"]["procs"] = 10**6  # a host where a scan would read far more files than the tree's threads
    walked = g["tree"](root, 8)
    assert set(walked) == want and len(walked) == len(want)
    assert g["SCAN"]["procs"] == 10**6, "the children lists were read, not the whole of /proc"


def test_a_sample_counts_the_tree_s_threads_for_the_next_choice(server: tuple[int, set[int]]) -> None:
    root, want = server
    g = _funcs()
    first = g["proc_sample"](root, False, None)
    assert first["n"] == len(want)
    assert g["SCAN"]["threads"] >= len(want)  # every process has at least its main thread
    second = g["proc_sample"](root, False, None)  # the children lists this time
    assert second["n"] == len(want) and set(second["_pids"]) == want
