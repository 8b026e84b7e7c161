"""A large fleet spread over processes: one Python process holds one GIL, and a watch costs about
0.1 CPU s per target-minute, so one process fills one core near 500 targets (issue 25: at 500, 103
verdicts were right, coldwatch's process at 189 CPU s in 195 s). Above ``PER_PROCESS`` targets the
fleet runs its watches in child processes of ``PER_PROCESS`` targets or fewer each, and keeps the
table, the sinks and the run's result itself.

The protocol is the run's own, over pipes: the parent sends a child its job (the targets and their
resolved settings, pickled) on stdin, then one ``cancel REASON`` line when the run stops early
(``--fail-fast``, Ctrl-C, SIGTERM); the child writes each target's events as JSON lines on stdout,
the same events a one-process fleet hands its writer. A child that dies leaves its targets'
verdicts to the parent: an internal error (exit 1) for each one it had not reported, with the child's
last words.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import signal
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

PER_PROCESS = 100
"""Targets per process: a fleet of up to this many runs in one process (0.3-0.7 s readiness at 100)."""

ENV = "COLDWATCH_FLEET_PER_PROCESS"
"""Overrides PER_PROCESS (0: one process whatever the size), for the benchmark's baseline and tests."""


def per_process() -> int:
    said = os.environ.get(ENV, "").strip()
    if said.isdigit():
        return int(said)
    return PER_PROCESS


def split(items: list[Any], size: int) -> list[list[Any]]:
    """``items`` in as few even parts as keep each at ``size`` or under (one part when size is 0)."""
    if size <= 0 or len(items) <= size:
        return [items] if items else []
    parts = -(-len(items) // size)
    return [items[i::parts] for i in range(parts)]  # interleaved: a targets file's neighbours differ in kind


class Shard:
    """One child process watching some of the fleet's targets; ``on_event`` gets each event it writes
    (in its reader thread), ``on_lost`` each target it ends without a verdict for."""

    def __init__(self, job: dict[str, Any], on_event: Callable[[dict[str, Any]], None], on_lost: Callable[[str, str], None]) -> None:
        self.targets = [t for t, _ in job["targets"]]
        self.on_event = on_event
        self.on_lost = on_lost
        self.reported: set[str] = set()
        self.stderr: deque[str] = deque(maxlen=5)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "coldwatch.shard"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # the terminal's Ctrl-C is the parent's to handle, then passed on as a cancel
        )
        self.lock = threading.Lock()
        assert self.proc.stdin is not None
        try:
            pickle.dump(job, self.proc.stdin)
            self.proc.stdin.flush()
        except OSError:
            pass  # the child died at once: its reader reports every target lost
        self.err = threading.Thread(target=self._errors, name="coldwatch-fleet-shard-err", daemon=True)
        self.err.start()
        self.thread = threading.Thread(target=self._read, name="coldwatch-fleet-shard", daemon=True)
        self.thread.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            try:
                ev = json.loads(raw)
            except ValueError:
                continue
            if ev.get("event") == "target_result":
                self.reported.add(ev["target"])
            self.on_event(ev)
        code = self.proc.wait()
        self.proc.stdout.close()
        with self.lock, contextlib.suppress(OSError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        self.err.join(2.0)
        said = "; ".join(self.stderr) or "no message"
        for t in self.targets:
            if t not in self.reported:
                self.on_lost(t, f"its fleet process exited with code {code} before its verdict ({said[:300]})")

    def _errors(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            line = raw.decode("utf-8", "replace").strip()
            if line:
                self.stderr.append(line)
        self.proc.stderr.close()

    def cancel(self, why: str) -> None:
        with self.lock, contextlib.suppress(OSError, ValueError):
            assert self.proc.stdin is not None
            self.proc.stdin.write(f"cancel {' '.join(why.split())}\n".encode())
            self.proc.stdin.flush()

    def alive(self) -> bool:
        return self.thread.is_alive()

    def end(self, grace: float) -> None:
        """Wait up to ``grace`` s for the child to finish, then kill it and what it started (its own session)
        and reap it here: a process it started (a local target's log follower) may still hold its stdout
        open, so the reader's end-of-file, and the reader's wait, need not come."""
        self.thread.join(grace)
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(2.0)
            self.thread.join(0.5)


class _Out:
    """The child's sink: each event the fleet's writer hands it, one JSON line on stdout."""

    def __init__(self) -> None:
        self.stream = sys.stdout

    def emit(self, ev: dict[str, Any]) -> None:
        if ev["event"].startswith("_"):
            return
        with contextlib.suppress(BrokenPipeError):
            self.stream.write(json.dumps(ev, default=str) + "\n")
            self.stream.flush()

    def close(self) -> None:
        pass


def child() -> int:
    """The child process: read the job, watch its targets, take cancels from stdin."""
    from coldwatch.fleet import Fleet

    job = pickle.load(sys.stdin.buffer)
    settings = dict(job["targets"])
    fleet = Fleet(list(settings), settings.__getitem__, job["base"], [_Out()], table=False)

    def cancels() -> None:
        for raw in sys.stdin.buffer:
            line = raw.decode("utf-8", "replace").strip()
            if line.startswith("cancel "):
                fleet.cancel(line[7:])
        fleet.cancel("the fleet's parent process is gone")  # stdin closed: nobody reads the verdicts any more

    threading.Thread(target=cancels, name="coldwatch-fleet-cancels", daemon=True).start()
    fleet.run()  # every watch's host is closed by then
    return 0


if __name__ == "__main__":
    code = child()
    sys.stdout.flush()
    os._exit(code)  # without the interpreter's teardown (1 s here, joining the transports' threads), as the CLI
