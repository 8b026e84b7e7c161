"""An in-process harness for coldwatch's drivers: a fake host, a fake clock, a model server.

``FakeHost`` answers ``run`` by command prefix with scripted output, hands out ``FollowStream``s
that a test writes to (the log, the sampler), and connects TCP to endpoints the test opens (a real
``ModelServer`` on loopback). ``FakeClock`` is the watch's clock: the judge's graces, deadlines and
reconnect windows pass when the test advances it, not when the wall clock does. ``Watch`` runs the
real ``wait`` driver (``Monitor``) on a thread and collects its events, so a whole watch runs in
milliseconds::

    host = FakeHost()
    log = host.on_follow("cat server.log")
    watch = Watch(settings(log_cmd="cat server.log"), host).start()
    log.write("torch.OutOfMemoryError: CUDA out of memory\\n")
    watch.advance(1.0)
    assert watch.result()["outcome"] == "failed"
"""

from __future__ import annotations

import dataclasses
import json
import queue
import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from coldwatch.errors import UnreachableError
from coldwatch.hosts.base import RunResult, TcpStream
from coldwatch.settings import Settings

__all__ = ["FakeClock", "FakeHost", "FollowStream", "ListSink", "ModelServer", "Watch", "sampler_line", "settings"]


def settings(**kw: Any) -> Settings:
    """Settings for an in-process watch: a fast cadence, no history written, no panel."""
    base: dict[str, Any] = {"interval": 0.05, "record": False, "output": "json", "stall_after": 600.0, "timeout": 60.0}
    base.update(kw)
    return dataclasses.replace(Settings(), **base)


class FakeClock:
    """The watch's clock: ``now()`` moves only when ``advance`` says."""

    def __init__(self, start: float = 1000.0) -> None:
        self._t = start
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self._t

    def wall(self) -> float:
        return 1_780_000_000.0 + self.now()

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._t += seconds


class FollowStream:
    """A follower whose output a test writes: ``write`` chunks, ``end`` the command."""

    def __init__(self, cmd: str) -> None:
        self.cmd = cmd
        self._q: queue.Queue[bytes | None] = queue.Queue()
        self._status: int | None = None
        self.closed = threading.Event()

    def write(self, data: str | bytes) -> None:
        self._q.put(data.encode() if isinstance(data, str) else data)

    def end(self, status: int | None = 0) -> None:
        self._status = status
        self._q.put(None)

    def chunks(self) -> Iterator[bytes]:
        while not self.closed.is_set():
            item = self._q.get()
            if item is None:
                return
            yield item

    @property
    def exit_status(self) -> int | None:
        return self._status

    def close(self) -> None:
        self.closed.set()
        self._q.put(None)


Answer = RunResult | Callable[[str], RunResult]


class FakeHost:
    """A host whose commands are scripted. ``run``: the first prefix that matches answers (else
    exit 127, as a shell says of a missing command). ``follow``: a ``FollowStream`` registered for
    the prefix (a fresh one per call when ``on_follow(..., each=True)``), else a stream that ends at
    once with status 127. ``drop()`` takes the connection down; ``reconnect()`` fails while
    ``refuse_reconnects`` is set."""

    handshakes = 0

    def __init__(self, name: str = "fake-host") -> None:
        self.name = name
        self._runs: list[tuple[str, Answer]] = []
        self._follows: list[tuple[str, Callable[[str], FollowStream]]] = []
        self.followed: list[FollowStream] = []
        self.ran: list[str] = []
        self.endpoints: dict[int, tuple[str, int]] = {}
        self.up = True
        self.hung = False
        self.refuse_reconnects = False
        self.reconnects = 0
        self._lock = threading.Lock()

    # ---- scripting ---------------------------------------------------------------------
    def on_run(self, prefix: str, stdout: str | bytes = b"", rc: int | None = 0, stderr: str | bytes = b"") -> None:
        out = stdout.encode() if isinstance(stdout, str) else stdout
        err = stderr.encode() if isinstance(stderr, str) else stderr
        self._runs.insert(0, (prefix, RunResult(rc, out, err)))

    def on_run_call(self, prefix: str, answer: Callable[[str], RunResult]) -> None:
        self._runs.insert(0, (prefix, answer))

    def on_follow(self, prefix: str) -> FollowStream:
        """The stream the next ``follow`` of a command starting with ``prefix`` returns."""
        box: list[FollowStream] = [FollowStream(prefix)]

        def make(cmd: str) -> FollowStream:
            with self._lock:
                s = box[0] if box else FollowStream(cmd)
                box.clear()
            s.cmd = cmd
            return s

        self._follows.insert(0, (prefix, make))
        return box[0]

    def listen(self, port: int, address: tuple[str, int]) -> None:
        """``connect_tcp(_, port)`` reaches ``address`` (a real server on loopback)."""
        self.endpoints[port] = address

    def stream(self, prefix: str, timeout: float = 5.0, index: int = -1) -> FollowStream:
        """A follower already opened for a command starting with ``prefix`` (waits for it)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            found = [f for f in self.followed if f.cmd.startswith(prefix) or f"; else exec {prefix}" in f.cmd]
            if found and len(found) > (index if index >= 0 else -index - 1):
                return found[index]
            time.sleep(0.005)
        raise AssertionError(f"no follower of {prefix!r}; followed: {[f.cmd[:60] for f in self.followed]}")

    def drop(self) -> None:
        """The connection goes down: every follower ends, every command fails."""
        self.up = False
        for f in list(self.followed):
            f.end(None)

    # ---- the Host interface --------------------------------------------------------------
    def run(self, cmd: str, timeout: float = 10.0, stdin: bytes | None = None) -> RunResult:
        self.ran.append(cmd)
        if not self.up:
            raise UnreachableError(f"{self.name}: connection lost")
        for prefix, answer in self._runs:
            if cmd.startswith(prefix):
                return answer(cmd) if callable(answer) else answer
        return RunResult(127, b"", f"sh: 1: {cmd.split()[0] if cmd.split() else cmd}: not found\n".encode())

    def follow(self, cmd: str) -> FollowStream:
        if not self.up:
            raise UnreachableError(f"{self.name}: connection lost")
        # a journal follower is a python3 poller with journalctl -f as its fallback: the fake host
        # answers as a host without the poller would, by the journalctl command
        scripted = cmd.split("; else exec ", 1)[1].removesuffix("; fi") if cmd.startswith("if command -v python3") else cmd
        for prefix, make in self._follows:
            if scripted.startswith(prefix):
                s = make(cmd)
                break
        else:
            s = FollowStream(cmd)
            s.end(127)
        self.followed.append(s)
        return s

    def connect_tcp(self, host: str, port: int, timeout: float) -> TcpStream:
        if not self.up:
            raise UnreachableError(f"{self.name}: connection lost")
        address = self.endpoints.get(port)
        if address is None:
            raise ConnectionRefusedError(111, "Connection refused")
        return socket.create_connection(address, timeout=timeout)

    def alive(self) -> bool:
        return self.up

    def ping(self, timeout: float) -> bool:
        return self.up and not self.hung

    def reconnect(self) -> None:
        if self.refuse_reconnects:
            raise UnreachableError(f"{self.name}: connection refused")
        self.up = True
        self.hung = False
        self.reconnects += 1

    def close(self) -> None:
        for f in list(self.followed):
            f.close()


def sampler_line(
    gpu: tuple[int, str] | None = None, svc: str | None = None, pid: int | None = None, proc: dict[str, Any] | None = None
) -> str:
    """One record of the streaming sampler, as the host prints it (``gpu``: (rc, nvidia-smi CSV))."""
    rec: dict[str, Any] = {}
    if gpu is not None:
        rec["gpu"] = [gpu[0], gpu[1], ""]
    if svc is not None:
        rec["svc"] = [0, svc]
    if pid is not None:
        rec["pid"] = pid
        rec["proc"] = proc if proc is not None else {"alive": True, "cpu": 1.0, "read": 0, "n": 1}
    return json.dumps(rec) + "\n"


class ModelServer:
    """A real OpenAI-style server on loopback: ``state`` "loading" answers 503, "ready" completes."""

    def __init__(self, model: str = "fake-model") -> None:
        self.state = "loading"
        self.model = model
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, code: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802
                if outer.state != "ready":
                    self._send(503, {"error": "loading"})
                else:
                    self._send(200, {"data": [{"id": outer.model}]})

            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if outer.state != "ready":
                    self._send(503, {"error": "loading"})
                else:
                    self._send(200, {"choices": [{"text": "!", "finish_reason": "length"}]})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = int(self.httpd.server_address[1])
        threading.Thread(target=self.httpd.serve_forever, name="coldwatch-model-server", daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class ListSink:
    """Keeps every event (the contract's and the panel's internal ones)."""

    takes_internal = True

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def emit(self, ev: dict[str, Any]) -> None:
        with self._lock:
            self.events.append(dict(ev))

    def close(self) -> None:
        pass

    def of(self, name: str) -> list[dict[str, Any]]:
        with self._lock:
            return [e for e in self.events if e["event"] == name]

    def messages(self) -> list[str]:
        return [str(e.get("message", "")) for e in self.of("warning")]


class Watch:
    """The real ``wait`` driver on a thread, on a fake clock, over a fake host."""

    def __init__(
        self,
        s: Settings,
        host: Any,
        clock: FakeClock | None = None,
        workers: list[Any] | None = None,
        sinks: list[Any] | None = None,
        **kw: Any,
    ) -> None:
        from coldwatch.monitor import Monitor

        self.clock = clock or FakeClock()
        self.sink = ListSink()
        every = [self.sink, *(sinks or [])]
        self.monitor = Monitor(s, host, every, now=self.clock.now, wall=self.clock.wall, workers=workers, idle=0.005, **kw)
        self._result: dict[str, Any] | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="coldwatch-watch", daemon=True)

    def _run(self) -> None:
        try:
            self._result = self.monitor.run()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test's thread by result()
            self._error = exc

    def start(self) -> Watch:
        self._thread.start()
        return self

    def advance(self, seconds: float, settle: float = 0.05) -> None:
        """Let the watch's clock run ``seconds`` forward, then give the threads ``settle`` real seconds."""
        self.clock.advance(seconds)
        time.sleep(settle)

    def until(self, pred: Callable[[], bool], timeout: float = 5.0) -> None:
        """Wait (real time) until ``pred()`` holds."""
        end = time.monotonic() + timeout
        while not pred():
            if time.monotonic() > end:
                raise AssertionError(f"timed out waiting; last events: {[e['event'] for e in self.sink.events[-12:]]}")
            time.sleep(0.005)

    @property
    def done(self) -> bool:
        return not self._thread.is_alive()

    def result(self, timeout: float = 5.0, step: float = 0.0) -> dict[str, Any]:
        """The result line, once the watch ends (advancing the clock ``step`` s per real 5 ms)."""
        end = time.monotonic() + timeout
        while self._thread.is_alive() and time.monotonic() < end:
            if step:
                self.clock.advance(step)
            self._thread.join(0.005)
        if self._error is not None:
            raise self._error
        if self._result is None:
            self.monitor.cancel("the test gave up waiting")
            self._thread.join(2.0)
            raise AssertionError(f"the watch did not end; last events: {self.sink.events[-12:]}")
        return self._result
