"""A fleet: many independent servers watched at once from one process, each with its own monitor and
verdict, and one result for the run (``--min-ready``, ``--fail-fast``, ``--parallel``)."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from coldwatch.errors import ColdwatchError, Terminated, UnreachableError
from coldwatch.events import event
from coldwatch.exitcodes import ExitCode
from coldwatch.render import Sink
from coldwatch.settings import Settings
from coldwatch.verdict import Outcome, Verdict, error_verdict, result_line, target_result

if TYPE_CHECKING:
    from coldwatch.shard import Shard

SEVERITY = (ExitCode.INTERRUPTED, ExitCode.TERMINATED, ExitCode.FAILED, ExitCode.STALLED, ExitCode.UNREACHABLE, ExitCode.TIMEOUT)
"""A fleet that is not ready exits with the most severe code among the targets that are not."""


def needed(min_ready: str | None, total: int) -> int:
    """--min-ready N or P% -> how many targets must be ready (default: all)."""
    if not min_ready:
        return total
    if min_ready.endswith("%"):
        return -(-int(min_ready[:-1]) * total // 100)  # ceiling
    return min(int(min_ready), total)


def aggregate(results: list[dict[str, Any]], min_ready: str | None) -> tuple[str, int, str]:
    """(outcome, exit code, reason) of the run from the targets' results."""
    ready = sum(1 for r in results if r["outcome"] == "ready")
    need = needed(min_ready, len(results))
    counts: dict[str, int] = {}
    for r in results:
        counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
    summary = ", ".join(f"{n} {k}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1]))
    if ready >= need:
        return "ready", int(ExitCode.READY), f"{ready}/{len(results)} ready (needed {need}): {summary}"
    codes = {int(r["exit_code"]) for r in results if r["outcome"] != "ready"}
    code = next((int(c) for c in SEVERITY if int(c) in codes), max(codes) if codes else int(ExitCode.TIMEOUT))
    outcome = next(r["outcome"] for r in results if int(r["exit_code"]) == code)
    return outcome, code, f"{ready}/{len(results)} ready (needed {need}): {summary}"


class Writer:
    """The run's sinks, fed by one thread of their own. A target hands its events over without taking a
    lock (a deque append is atomic) and never waits for a sink: with every target's thread writing to
    the sinks under one lock, a 100-target fleet had 84 of its watches queued on that lock at once
    (py-spy dump, issue 25), each wait a GIL convoy behind the others. Events keep their order per
    target; ``close`` writes what is left before the run's result."""

    def __init__(self, sinks: list[Sink]) -> None:
        self.sinks = sinks
        self.pending: deque[dict[str, Any]] = deque()
        self.wake = threading.Event()
        self.lock = threading.Lock()
        """Held while events go to the sinks: one writer at a time (the thread, or ``close``)."""
        self.closed = False
        self.error: Exception | None = None
        self.thread = threading.Thread(target=self._run, name="coldwatch-fleet-writer", daemon=True)
        self.thread.start()

    def put(self, ev: dict[str, Any]) -> None:
        if self.closed:
            return  # the run's result line is (being) written: a cancelled watch's late events never follow it
        self.pending.append(ev)
        if not self.wake.is_set():  # set only when the writer sleeps: no lock taken per event
            self.wake.set()

    def _run(self) -> None:
        while not self.closed:
            self.wake.wait()
            self.wake.clear()
            self.drain()

    def drain(self) -> None:
        with self.lock:
            while self.pending:
                ev = self.pending.popleft()
                try:
                    for s in self.sinks:
                        s.emit(ev)
                except Exception as exc:  # noqa: BLE001 - raised again by close, in the run's thread
                    self.error = self.error or exc

    def close(self) -> None:
        """Every event handed over so far is written (the caller then writes the result itself)."""
        self.closed = True
        self.wake.set()
        self.thread.join(5.0)
        self.drain()
        if self.error is not None:
            raise self.error


class TargetSink:
    """Tags one target's events and hands them to the run's writer; its own result line becomes a
    ``target_result`` (the run's ``result`` is the last line)."""

    def __init__(self, target: str, writer: Writer, on_event: Callable[[str, dict[str, Any]], None]) -> None:
        self.target = target
        self.writer = writer
        self.on_event = on_event

    def emit(self, ev: dict[str, Any]) -> None:
        ev = {**ev, "target": self.target}
        if ev["event"] == "result":
            ev["event"] = "target_result"
        self.on_event(self.target, ev)
        if ev["event"].startswith("_"):
            return  # the panel's internal events are per target; the fleet table replaces them
        self.writer.put(ev)

    def close(self) -> None:
        pass


class TableOnly:
    """The live panel of a fleet: the table of targets and the run's verdict, not each server's events."""

    takes_internal = True  # the fleet table's rows and ticks (render.Pipeline)

    KEEP = ("_rows", "_tick", "result")

    def __init__(self, inner: Sink) -> None:
        self.inner = inner

    def emit(self, ev: dict[str, Any]) -> None:
        if ev["event"] in self.KEEP:
            self.inner.emit(ev)

    def close(self) -> None:
        self.inner.close()


class Fleet:
    """Watch ``targets`` concurrently; ``settings_for(target)`` resolves each one's settings."""

    def __init__(
        self, targets: list[str], settings_for: Callable[[str], Settings], base: Settings, sinks: list[Sink], table: bool = True
    ) -> None:
        self.targets = targets
        self.table = table
        """The live table's rows every second (a fleet process's child has none: its parent shows them)."""
        self.shards: list[Shard] = []
        """The child processes watching the targets (a fleet above coldwatch.shard's share per process)."""
        self.settings_for = settings_for
        self.base = base
        self.sinks = sinks
        self.writer = Writer(sinks)
        self.t0 = time.monotonic()
        self.epoch0 = time.time()
        self.cancelled: str | None = None
        self.monitors: dict[str, Any] = {}
        self.rows: dict[str, dict[str, Any]] = {t: {"name": t, "kind": "targets", "phase": "queued"} for t in targets}
        self.results: dict[str, dict[str, Any]] = {}
        self.over = False

    def t(self) -> float:
        return time.monotonic() - self.t0

    def _note(self, target: str, ev: dict[str, Any]) -> None:
        row = self.rows[target]
        kind = ev["event"]
        if kind == "phase":
            row["phase"] = ev["phase"]
            row["progress"] = None
        elif kind == "progress" and ev.get("unit") != "bytes":
            row["progress"] = (ev["done"], ev["total"])
        elif kind == "gpu":
            gpus = ev.get("gpus") or []
            total = sum(g.get("total_mib") or 0 for g in gpus)
            row["gpu_mem"] = (sum(g.get("used_mib") or 0 for g in gpus), total) if total else None
        elif kind == "target_result":
            row["verdict"] = ev["outcome"]
            row["phase"] = ev.get("phase") or row.get("phase")

    def _one(self, target: str) -> dict[str, Any]:
        from coldwatch.hosts import open_host
        from coldwatch.monitor import Monitor

        def done(outcome: str, code: ExitCode, reason: str, phase: str | None = None) -> dict[str, Any]:
            res = target_result(target, Verdict(outcome, int(code), phase, None, reason))
            self._note(target, {"event": "target_result", **res})
            self.writer.put(event("target_result", self.t(), self.epoch0, **res))
            return res

        if self.cancelled:
            return done(Outcome.INCOMPLETE, ExitCode.TIMEOUT, f"not watched: {self.cancelled}")
        try:
            s = self.settings_for(target)
            host = open_host(s)
        except UnreachableError as exc:
            return done(Outcome.UNREACHABLE, ExitCode.UNREACHABLE, str(exc))
        except ColdwatchError as exc:
            v = error_verdict(exc.exit_code, str(exc))
            return done(v.outcome, ExitCode(exc.exit_code), str(exc))
        self.rows[target]["phase"] = "starting"
        try:
            m = Monitor(s, host, [TargetSink(target, self.writer, self._note)])
            self.monitors[target] = m
            if self.cancelled:
                m.cancel(self.cancelled)
            res = m.run()
        finally:
            host.close()
        return target_result(target, Verdict(res["outcome"], res["exit_code"], res.get("phase"), res.get("failure_kind"), res["reason"]))

    def _guarded(self, target: str) -> dict[str, Any]:
        """One target's watch; a bug in it is that target's internal error, not the run's end."""
        try:
            return self._one(target)
        except Exception as exc:  # noqa: BLE001 - reported in the target's result (exit 1: a coldwatch bug)
            return target_result(target, error_verdict(1, f"internal error ({type(exc).__name__}: {exc}); please report it"))

    def _finished(self, res: dict[str, Any]) -> None:
        if self.over:
            return  # the run was interrupted and has reported already
        self.results[res["target"]] = res
        if self.base.fail_fast and res["outcome"] != "ready" and not self.cancelled:
            self.cancel(f"--fail-fast: {res['target']} is {res['outcome']}")

    def cancel(self, why: str) -> None:
        """Every watch still going ends now (incomplete, ``why``); targets not started are not watched."""
        self.cancelled = self.cancelled or why
        for m in list(self.monitors.values()):
            m.cancel(self.cancelled)
        for sh in self.shards:
            sh.cancel(self.cancelled)

    def _table(self, stop: threading.Event) -> None:
        """The live table: one row per target, refreshed every second."""
        while not stop.wait(1.0):
            rows = [dict(self.rows[t]) for t in self.targets]
            self.writer.put({"event": "_rows", "t": round(self.t(), 3), "rows": rows})

    def _in_threads(self) -> None:
        """Every watch in a thread of this process, at most ``--parallel`` at once."""
        pool = ThreadPoolExecutor(max_workers=min(self.base.parallel, len(self.targets)), thread_name_prefix="coldwatch-target")
        try:
            futures = [pool.submit(self._guarded, t) for t in self.targets]
            for f in futures:
                f.add_done_callback(lambda fut: None if fut.cancelled() else self._finished(fut.result()))
            pending = set(futures)
            while pending:  # woken by the last target's end at once (a signal still interrupts the wait)
                _, pending = wait(pending, timeout=1.0)
            pool.shutdown(wait=True)
        except (KeyboardInterrupt, Terminated):
            pool.shutdown(wait=False, cancel_futures=True)
            raise

    def _in_processes(self, size: int) -> None:
        """The watches in child processes of ``size`` targets or fewer (coldwatch.shard); a target whose
        settings do not resolve is reported here, as in a thread."""
        from coldwatch.shard import Shard, split

        jobs: list[tuple[str, Settings]] = []
        for t in self.targets:
            try:
                jobs.append((t, self.settings_for(t)))
            except ColdwatchError as exc:
                v = error_verdict(exc.exit_code, str(exc))
                self._reported(event("target_result", self.t(), self.epoch0, **target_result(t, v)))
        parts = split(jobs, size)
        base = replace(self.base, parallel=max(1, -(-self.base.parallel // max(1, len(parts)))))
        try:
            for part in parts:
                job = {"targets": part, "base": base}
                self.shards.append(Shard(job, self._reported, self._lost))
                if self.cancelled:
                    self.shards[-1].cancel(self.cancelled)
            for sh in self.shards:
                while sh.alive():
                    sh.thread.join(1.0)  # (a signal still interrupts the wait)
        except (KeyboardInterrupt, Terminated):
            self.over = True  # what the children still say is not this run's verdict: it was interrupted
            for sh in self.shards:
                sh.cancel("interrupted")
            for sh in self.shards:
                sh.end(3.0)  # each child closes its SSH sessions, so the hosts' followers end too
            raise

    def _reported(self, ev: dict[str, Any]) -> None:
        """An event of a child process's target (or a verdict given here), as its own thread would give it."""
        target = ev.get("target")
        if target not in self.rows or self.over:
            return
        self._note(target, ev)
        if ev["event"] == "target_result":
            self._finished(
                target_result(target, Verdict(ev["outcome"], ev["exit_code"], ev.get("phase"), ev.get("failure_kind"), ev["reason"]))
            )
        self.writer.put(ev)

    def _lost(self, target: str, why: str) -> None:
        res = target_result(target, error_verdict(1, f"internal error ({why}); please report it"))
        self._reported(event("target_result", self.t(), self.epoch0, **res))

    def run(self) -> dict[str, Any]:
        from coldwatch.shard import per_process

        stop = threading.Event()
        if self.table:
            threading.Thread(target=self._table, args=(stop,), name="coldwatch-fleet-table", daemon=True).start()
        interrupted: ExitCode | None = None
        size = per_process()
        try:
            if size and len(self.targets) > size:
                self._in_processes(size)
            else:
                self._in_threads()
        except (KeyboardInterrupt, Terminated) as exc:
            # the run ends now: targets still being watched are told to stop, never waited for
            interrupted = ExitCode.INTERRUPTED if isinstance(exc, KeyboardInterrupt) else ExitCode.TERMINATED
            self.cancel("interrupted (Ctrl-C)" if interrupted == ExitCode.INTERRUPTED else "terminated (SIGTERM)")
        finally:
            stop.set()
        if interrupted is not None:
            self.over = True
            for t in self.targets:
                if t not in self.results:
                    self.results[t] = target_result(
                        t, Verdict(Outcome.INTERRUPTED, int(interrupted), None, None, f"{self.cancelled} before its verdict")
                    )
        results = [
            self.results.get(t) or target_result(t, Verdict(Outcome.INCOMPLETE, int(ExitCode.TIMEOUT), None, None, "not watched"))
            for t in self.targets
        ]
        outcome, code, reason = aggregate(results, self.base.min_ready)
        if interrupted is not None:
            outcome, code = Outcome.INTERRUPTED, int(interrupted)
        worst = next((r for r in results if r["exit_code"] == code and r["outcome"] != "ready"), None)
        phase = worst["phase"] if worst else "ready"
        why = reason + (f"; first of the worst: {worst['target']}: {str(worst['reason'])[:200]}" if worst else "")
        v = Verdict(outcome, code, phase, worst["failure_kind"] if worst else None, why)
        res = result_line(v, self.t(), self.epoch0, targets=results)
        self.writer.close()  # every target's events before the run's result line
        with self.writer.lock:
            for s in self.sinks:
                s.emit(res)
        return res
