"""The embedded cold-start simulator: a real HTTP server, a real log stream and a GPU feed
replaying a recorded-shape SGLang start (TP8, 1T-parameter INT4 MoE, EAGLE draft) in ~30 s.

Run as its own process: ``python -m coldwatch.sim --dir DIR --port PORT --scenario ready``.
It writes DIR/server.log (or stdout), DIR/gpu.csv (nvidia-smi CSV), DIR/unit.state
(systemctl show output) and DIR/sim.pid, and serves HTTP on 127.0.0.1:PORT once "bound".
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TextIO

SCENARIOS = (
    "ready",
    "oom",
    "hang",
    "restart",
    "slow",
    "silent_death",
    "error_body",
    "silent_load",
    "jit_busy",
    "crash_once",
    "hang_load",
    "barrier",
    "nccl",
    "rank_hang",
    "rank_busy",
    "rank_loading",
)
"""hang_load: the bar stops mid-way and the node goes silent; barrier: the node loads its weights,
then waits silently for a peer (a head whose worker never catches up); nccl: an NCCL error in
distributed init; rank_hang: two real rank processes (sglang::scheduler_TP0/TP1), TP1 hung in a read
under load_weights at 40 % of its shards while TP0 spins in all_reduce waiting for it (GPUs 100 %);
rank_loading: the same, but TP1 still works (CPU) in load_weights; rank_busy: both ranks compute in
silence (a compile-like capture)."""
MODEL = "moonshotai/Kimi-K2.6"
TP = 8
GPU_TOTAL = 97871  # MiB, a 96 GB card


class Sim:
    def __init__(
        self,
        d: Path,
        port: int,
        scenario: str,
        speed: float,
        fail_checks: bool,
        out: TextIO,
        gpus: int,
        jitter: float = 0.0,
        seed: int | None = None,
        virtual: bool = False,
    ) -> None:
        self.dir = d
        self.port = port
        self.bind_addr = "127.0.0.1"
        self.fatal_exit: int | None = None
        self.stay_alive = False
        self.scenario = scenario
        self.speed = speed * (1.6 if scenario == "slow" else 1.0)
        self.fail_checks = fail_checks
        self.out = out
        self.gpus = gpus
        self.http_state = "down"  # down | warmup | ready
        self.mem = [0] * gpus
        self.util = [0] * gpus
        self.restarts = 0
        self.invocation = uuid.uuid4().hex
        self.server: ThreadingHTTPServer | None = None
        self.t0 = time.time()
        self.stop = threading.Event()
        self.with_invocation = True
        self.model_path: Path | None = None
        self.rank_user: str | None = None
        self.node_ranks = 2
        self.started = time.time() - 1
        self.node_rank = 0  # a worker node (> 0) logs ranks from node_rank * gpus and serves no HTTP
        self.jitter = jitter
        """Each phase's duration (a sleep, a whole bar) is scaled by a factor drawn in [1 - jitter, 1 + jitter]."""
        self.rng = random.Random(seed)
        self.virtual = virtual
        """Time is a counter, not the clock: the log (stamped on it) is written at once, no HTTP served."""
        self.vt = 0.0

    # ---- outputs -----------------------------------------------------------------------
    def stamp(self) -> str:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.t0 + self.vt if self.virtual else None))

    def log(self, msg: str, rank: int | None = None) -> None:
        tag = f" TP{rank + self.node_rank * self.gpus}" if rank is not None else ""
        self.raw(f"[{self.stamp()}{tag}] {msg}\n")

    def ranks(self, msg: str) -> None:
        order = list(range(self.gpus))
        self.rng.shuffle(order)
        for r in order:
            self.log(msg, r)

    def raw(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    def factor(self) -> float:
        return 1.0 + self.rng.uniform(-self.jitter, self.jitter) if self.jitter else 1.0

    def sleep(self, s: float) -> None:
        self.wait(s * self.factor())

    def wait(self, s: float) -> None:
        if self.virtual:
            self.vt += s * self.speed
            return
        end = time.time() + s * self.speed
        while time.time() < end:
            time.sleep(min(0.05, max(end - time.time(), 0)))

    def gpu_writer(self) -> None:
        path = self.dir / "gpu.csv"
        while not self.stop.is_set():
            rows = "".join(f"{i}, {self.mem[i]}, {GPU_TOTAL}, {self.util[i]}\n" for i in range(self.gpus))
            tmp = path.with_suffix(".tmp")
            tmp.write_text(rows)
            os.chmod(tmp, 0o644)
            tmp.replace(path)
            time.sleep(0.2)

    def unit(self, active: str, sub: str, result: str = "success", status: int = 0) -> None:
        text = (
            f"ActiveState={active}\nSubState={sub}\nResult={result}\nNRestarts={self.restarts}\nMainPID={os.getpid() if active == 'active' else 0}\n"
            f"ExecMainStatus={status}\nInvocationID={self.invocation if self.with_invocation else ''}\nLoadState=loaded\n"
            f"ActiveEnterTimestamp={time.strftime('%a %Y-%m-%d %H:%M:%S UTC', time.gmtime(self.started))}\n"
        )
        tmp = self.dir / "unit.tmp"
        tmp.write_text(text)
        os.chmod(tmp, 0o644)
        tmp.replace(self.dir / "unit.state")

    def set_mem(self, mib: int, util: int = 0) -> None:
        self.mem = [mib + (i * 7) % 50 for i in range(self.gpus)]
        self.util = [util] * self.gpus

    def bar(
        self, desc: str, total: int, seconds: float, fmt: str = "sglang", mem_to: int | None = None, stop_at: int | None = None
    ) -> None:
        """A tqdm bar: updates joined by CR, one newline when it closes (``stop_at``: it hangs there)."""
        start = self.mem[0]
        seconds *= self.factor()
        for n in range(total + 1):
            if stop_at is not None and n > stop_at:
                self.set_mem(self.mem[0], 0)
                return
            pct = int(100 * n / total)
            times = tqdm_times(n, total, seconds)
            if fmt == "sglang":
                text = f"{desc}: {pct:3d}% Completed | {n}/{total} {times}"
            else:
                filled = "█" * (pct // 10)
                text = f"{desc}: {pct:3d}%|{filled:<10}| {n}/{total} {times}"
            if self.virtual:
                self.log(text)  # each update stamped when it happens, as a live watch receives it
            else:
                self.raw(f"\r{text}")
            if mem_to is not None:
                self.set_mem(int(start + (mem_to - start) * n / total), 30)
            if n < total:
                self.wait(seconds / total)
        if not self.virtual:
            self.raw("\n")

    # ---- HTTP --------------------------------------------------------------------------
    def reserve(self) -> None:
        """Bind the port at the start, listen only once the server serves: until then a client is
        refused, as by a real server that has not bound yet, and no other process (an outgoing
        connection's ephemeral port, another test's server) can take the port in between."""
        handler = type("Handler", (_Api,), {"sim": self})
        self.server = _NoDelayServer((self.bind_addr, self.port), handler, bind_and_activate=False)
        try:
            self.server.server_bind()
        except OSError:
            self.server.server_close()
            raise

    def bind(self) -> None:
        assert self.server is not None, "run() reserves the port first"
        self.server.server_activate()
        (self.dir / "bound.ts").write_text(f"{time.time():.6f}")
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    # ---- the start-up ------------------------------------------------------------------
    def die(self, code: int, result: str = "exit-code") -> None:
        if self.stay_alive:  # the process lives on after its fatal line (a hung main process)
            while True:
                time.sleep(1)
        if self.fatal_exit is not None:
            code, result = self.fatal_exit, "exit-code" if self.fatal_exit else "success"
        self.unit("failed", "failed", result, code)
        self.stop.set()
        self.out.flush()
        os._exit(code)

    def run(self, delay: float = 0.0) -> None:
        if not self.virtual:
            self.reserve()  # the port is ours from the start, listened on when the server serves
            threading.Thread(target=self.gpu_writer, daemon=True).start()
        if delay:  # the unit is starting, nothing logged yet (a fleet restarted at one moment)
            self.unit("activating", "start")
            time.sleep(delay)
        while True:
            self.unit("active", "running")
            if self.start_once():
                return
            # restart scenario: the unit restarts once and the second start succeeds
            self.restarts += 1
            self.invocation = uuid.uuid4().hex
            self.started = time.time()
            self.set_mem(0)
            self.sleep(1.0)

    def start_once(self) -> bool:
        """One start of the server: the ready start's steps (``START``), the scenario's deviation
        at its point; True when it ended ready (or a worker node's part is done), False when the
        unit restarts it."""
        for op, *args in START:
            ended = getattr(self, op)(*args)
            if ended is not None:
                return bool(ended)
        return True

    def at(self, point: str, *default: Any) -> bool | None:
        """A point where scenarios deviate: the scenario's own step, else the ``default`` step (if any)."""
        deviation = DEVIATIONS.get(self.scenario, {}).get(point)
        if deviation is not None:
            return deviation(self)
        if default:
            getattr(self, default[0])(*default[1:])
        return None

    def hang(self) -> None:
        """The process lives on and does nothing more."""
        while True:
            time.sleep(1)

    def tb(self, rank: int, frames: tuple[str, ...], exc: str) -> None:
        """A scheduler's traceback: its header logged by ``rank``, then its frames and exception raw."""
        self.log("Scheduler hit an exception: Traceback (most recent call last):", rank)
        for frame in frames:
            self.raw(f'  File "/sgl/python/sglang/srt/{frame}\n')
        self.raw(exc + "\n")

    # ---- serving -----------------------------------------------------------------------
    def worker_done(self) -> bool | None:
        """A worker node: its ranks serve through the head; it prints no ready line."""
        if not self.node_rank:
            return None
        self.set_mem(87450, 0)
        (self.dir / "worker.ts").write_text(f"{time.time():.6f}")
        return True

    def serve(self) -> None:
        self.http_state = "warmup"
        if not self.virtual:
            self.bind()
        self.log(f"INFO:     Uvicorn running on http://127.0.0.1:{self.port} (Press CTRL+C to quit)")

    def serve_ready(self) -> None:
        self.set_mem(87450, 5)
        self.http_state = "ready"
        (self.dir / "ready.ts").write_text(f"{time.time():.6f}")

    def spawn_ranks(self, roles: tuple[str, ...]) -> None:
        """Real rank processes titled like SGLang's schedulers (simranks.py), children of this one."""
        from coldwatch import simranks

        python = "/usr/bin/python3" if self.rank_user and os.path.exists("/usr/bin/python3") else None
        n = self.node_ranks  # of the server's ranks, this node runs n from node_rank * n
        for rank, role in list(enumerate(roles))[self.node_rank * n : (self.node_rank + 1) * n]:
            simranks.spawn(f"sglang::scheduler_TP{rank}", role, rank, len(roles), self.dir, python, self.rank_user)

    def silent_read(self, seconds: float) -> None:
        """Weight load with the bar hidden (journald style): the process reads the shards from disk,
        paced to take ``seconds``, and prints nothing."""
        files = sorted(self.model_path.glob("*.safetensors")) if self.model_path else []
        if not files:
            blob = self.dir / "model-00001-of-00001.safetensors"
            with open(blob, "wb") as fh:
                fh.write(os.urandom(1 << 20) * 32)
            files = [blob]
        total = sum(f.stat().st_size for f in files)
        per_mb = seconds * self.speed / max(total / (1 << 20), 1)
        for f in files:
            with open(f, "rb") as fh:
                with contextlib.suppress(OSError):
                    os.posix_fadvise(fh.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
                while fh.read(1 << 20):
                    self.set_mem(min(self.mem[0] + 1200, 76000), 0)
                    time.sleep(per_mb)

    def busy_child(self, seconds: float) -> None:
        """A JIT compiler child (named like one) burns CPU while the log is silent."""
        code = f"import time\nend=time.time()+{seconds * self.speed}\nwhile time.time()<end: pass\n"
        path = self.dir / "cicc"
        path.write_text(f"#!{sys.executable}\n{code}")
        path.chmod(0o755)
        subprocess.run([str(path)], check=False)


class _NoDelayServer(ThreadingHTTPServer):
    """Answers leave at once, as uvicorn's do (asyncio sets TCP_NODELAY): http.server writes a reply's
    headers and body apart, and with Nagle on the body waited up to 40 ms for the peer's delayed ACK."""

    def get_request(self) -> tuple[socket.socket, Any]:
        conn, addr = super().get_request()
        with contextlib.suppress(OSError):
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn, addr


class _Api(BaseHTTPRequestHandler):
    """The simulated server's HTTP API: health, models, completions, chat, generate (``sim`` is set
    on the subclass ``Sim.bind`` makes)."""

    protocol_version = "HTTP/1.1"
    sim: Sim

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        return

    def send(self, code: int, body: Any) -> None:
        data = json.dumps(body).encode() if not isinstance(body, bytes) else body
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802
        if self.path.startswith("/health"):
            self.send(200 if self.sim.http_state == "ready" else 503, b"")
        elif self.path == "/v1/models":
            self.send(200, {"object": "list", "data": [{"id": MODEL, "object": "model", "root": MODEL}]})
        elif self.path in ("/model_info", "/get_model_info"):
            self.send(200, {"model_path": MODEL, "is_generation": True})
        else:
            self.send(404, {"detail": "Not Found"})

    def do_POST(self) -> None:  # noqa: N802
        n = int(self.headers.get("Content-Length") or 0)
        req = json.loads(self.rfile.read(n) or b"{}")
        if self.sim.http_state != "ready":
            self.send(503, {"object": "error", "message": "Server is warming up", "code": 503})
        elif self.sim.scenario == "error_body":
            self.send(200, {"object": "error", "message": "choices unavailable: scheduler not ready", "type": "InternalError"})
        elif self.path == "/v1/completions":
            self.send(
                200,
                {
                    "id": "cmpl-1",
                    "object": "text_completion",
                    "model": MODEL,
                    "choices": [{"index": 0, "text": " world", "finish_reason": "length"}],
                },
            )
        elif self.path == "/v1/chat/completions":
            self.send(200, chat_reply(req, self.sim.fail_checks))
        elif self.path == "/generate":
            self.send(200, {"text": " Paris", "meta_info": {}})
        else:
            self.send(404, {"detail": "Not Found"})


def chat_reply(req: dict[str, Any], fail_checks: bool) -> dict[str, Any]:
    """A chat completion: a tool call when the request offers tools, else reasoning and an answer;
    with ``fail_checks`` both come back unparsed (the parsers not configured)."""
    if req.get("tools"):
        msg: dict[str, Any] = {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}],
        }
        if fail_checks:
            msg = {"role": "assistant", "content": '<|tool_call_begin|>get_weather {"city": "Paris"}'}
    else:
        msg = {"role": "assistant", "reasoning_content": "2 plus 2 is 4.", "content": "4"}
        if fail_checks:
            msg = {"role": "assistant", "content": "<think>2 plus 2 is 4.</think>4", "reasoning_content": None}
    return {
        "id": "chat-1",
        "object": "chat.completion",
        "model": MODEL,
        "choices": [{"index": 0, "message": msg, "finish_reason": "stop"}],
    }


# ---- the start as data ---------------------------------------------------------------------
_SIGQUIT = "Received sigquit from a child process. It usually means the child failed."
_LOAD_FRAME = 'model_loader/loader.py", line 377, in load_model'
_ILLEGAL_ACCESS = "RuntimeError: CUDA error: an illegal memory access was encountered"
_NCCL_ERROR = "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error, NCCL version 2.21.5"
_OOM_FRAMES = (
    'managers/scheduler.py", line 2870, in run_scheduler_process',
    'model_executor/model_runner.py", line 1951, in init_cuda_graphs',
    'model_executor/cuda_graph_runner.py", line 482, in capture',
)
_OOM_ERROR = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 5 has a total capacity "
    "of 95.58 GiB of which 412.00 MiB is free."
)
_SHARDS = "Multi-thread loading shards"

START: tuple[tuple[Any, ...], ...] = (
    (
        "log",
        f"server_args=ServerArgs(model_path='{MODEL}', tp_size={TP}, quantization='compressed-tensors', "
        "speculative_algorithm='EAGLE', tool_call_parser='kimi_k2', reasoning_parser='kimi_k2', port=30001)",
    ),
    ("sleep", 0.6),
    ("ranks", "Init torch distributed begin."),
    ("set_mem", 600),
    ("sleep", 0.6),
    ("at", "dist_init"),
    ("ranks", "Init torch distributed ends. elapsed=0.58 s, mem usage=0.61 GB"),
    ("ranks", "Load weight begin. avail mem=94.71 GB"),
    ("log", "Using CompressedTensorsWNA16MarlinMoEMethod", 0),
    ("at", "weight_load"),
    ("at", "shards", "bar", _SHARDS, 64, 10.0, "sglang", 76000),
    ("sleep", 3.0),  # Marlin repack: silent, memory climbs a little
    ("set_mem", 80500, 60),
    (
        "ranks",
        "Load weight end. elapsed=13.10 s, type=KimiK25ForConditionalGeneration, quant=compressed-tensors, "
        "avail mem=17.20 GB, mem usage=77.51 GB.",
    ),
    ("at", "weights_in"),
    ("ranks", "Init torch distributed begin."),  # the EAGLE draft model
    ("ranks", "Init torch distributed ends. elapsed=0.01 s, mem usage=0.00 GB"),
    ("ranks", "Load weight begin. avail mem=17.20 GB"),
    ("bar", _SHARDS, 1, 1.0),
    ("ranks", "Load weight end. elapsed=1.20 s, type=DeepseekV3ForCausalLMNextN, avail mem=16.10 GB, mem usage=1.10 GB."),
    ("sleep", 0.4),
    ("ranks", "KV Cache is allocated. dtype: torch.float8_e4m3fn, #tokens: 412000, KV size: 6.10 GB"),
    ("set_mem", 87100, 10),
    ("ranks", "Memory pool end. avail mem=9.80 GB"),
    (
        "log",
        "Entering DeepGEMM JIT Pre-Compile session. It may take a long time (typically 10-20 mins) "
        "if you have not run `sglang.compile_deep_gemm`.",
        0,
    ),
    ("bar", "DeepGEMM warmup", 24, 2.0, "tqdm"),
    (
        "ranks",
        "Capture target verify CUDA graph begin. backend=full, num_tokens_per_req=4, bs=[1, 2, 4, 8, 16, 32, 48, 64], avail mem=9.60 GB",
    ),
    ("set_mem", 87400, 90),
    ("at", "capture"),
    ("bar", "Capturing batches (bs=1 avail_mem=9.10 GB)", 36, 5.0, "tqdm"),
    ("ranks", "Capture target verify CUDA graph end. elapsed=5.20 s, mem usage=0.52 GB, avail mem=9.08 GB."),
    ("ranks", "Capture draft decode CUDA graph begin. backend=full, num_tokens_per_req=1, bs=[1, 2, 4, 8], avail mem=9.08 GB"),
    ("sleep", 0.8),
    ("ranks", "Capture draft decode CUDA graph end. elapsed=0.80 s, mem usage=0.10 GB, avail mem=8.98 GB."),
    (
        "log",
        "max_total_num_tokens=412000, chunked_prefill_size=8192, max_prefill_tokens=16384, "
        "max_running_requests=48, context_len=262144, available_gpu_mem=8.90 GB",
        0,
    ),
    ("sleep", 0.3),
    ("worker_done",),
    ("log", "INFO:     Started server process [4242]"),
    ("log", "INFO:     Waiting for application startup."),
    ("log", "INFO:     Application startup complete."),
    ("serve",),
    ("sleep", 0.5),
    ("log", 'INFO:     127.0.0.1:48908 - "GET /model_info HTTP/1.1" 200 OK'),
    ("log", "Prefill batch, #new-seq: 1, #new-token: 7, #cached-token: 0, #running-req: 0, #queue-req: 0,", 0),
    ("sleep", 1.5),
    ("serve_ready",),
    ("log", 'INFO:     127.0.0.1:48924 - "POST /generate HTTP/1.1" 200 OK'),
    ("log", "The server is fired up and ready to roll!"),
)
"""The ready start, step by step: a Sim method and its arguments. A step that returns a bool ends the
start with it; an ``at`` step is a point where a scenario deviates (its default step, if any, follows)."""


# ---- the scenarios' deviations from the ready start ----------------------------------------
def _nccl_error(sim: Sim) -> None:
    sim.tb(1, ('distributed/parallel_state.py", line 1085, in init_distributed_environment',), _NCCL_ERROR)
    sim.log(_SIGQUIT)
    sim.sleep(0.3)
    sim.die(1)


def _silent_death(sim: Sim) -> None:
    sim.sleep(2.0)
    sim.die(137, "signal")


def _crash_once(sim: Sim) -> None:
    if (sim.dir / "crashed").exists():
        return
    # for a real supervisor: the first process fails and exits; systemd starts a new one
    (sim.dir / "crashed").write_text("1")
    sim.sleep(8.0)
    sim.tb(2, (_LOAD_FRAME,), _ILLEGAL_ACCESS)
    sim.log(_SIGQUIT)
    sim.die(1)


def _restart_once(sim: Sim) -> bool | None:
    if sim.restarts:
        return None
    sim.sleep(1.5)
    sim.tb(3, (_LOAD_FRAME,), _ILLEGAL_ACCESS)
    sim.log(_SIGQUIT)
    sim.unit("activating", "auto-restart", "exit-code", 1)
    sim.sleep(1.0)
    return False


def _rank_stuck(sim: Sim) -> None:
    """rank_hang and rank_loading: TP1 stops in load_weights, TP0 waits for it in a collective."""
    sim.spawn_ranks(("collective", "hung_read" if sim.scenario == "rank_hang" else "loading"))
    sim.bar(_SHARDS, 10, 3.0, mem_to=40000, stop_at=4)
    sim.log("Load weight end. elapsed=3.10 s, type=KimiK25ForConditionalGeneration, avail mem=17.20 GB, mem usage=77.51 GB.", 0)
    sim.set_mem(sim.mem[0], 100)  # TP0's NCCL kernel polls: 100 % utilisation, nothing moves
    sim.hang()


def _silent_shards(sim: Sim) -> None:
    sim.silent_read(12.0)


def _load_stops(sim: Sim) -> None:
    sim.bar(_SHARDS, 64, 10.0, mem_to=76000, stop_at=26)
    sim.hang()


def _waits_for_peer(sim: Sim) -> None:
    """Its weights are in; it waits for a peer that never arrives: no log, GPUs idle."""
    sim.set_mem(80500, 0)
    sim.hang()


def _ranks_busy(sim: Sim) -> None:
    """Every rank computes in silence: slow, not stuck."""
    sim.spawn_ranks(("busy", "busy"))
    sim.set_mem(87400, 0)
    sim.hang()


def _jit_in_capture(sim: Sim) -> None:
    """A FlashInfer-style JIT inside capture: silent log, GPUs idle, a compiler busy."""
    sim.set_mem(87400, 0)
    sim.busy_child(14.0)


def _capture_stops(sim: Sim) -> None:
    sim.raw("\rCapturing batches (bs=64 avail_mem=9.50 GB):   0%|          | 0/36 [00:00<?, ?it/s]")
    sim.set_mem(87400, 0)
    sim.hang()


def _capture_oom(sim: Sim) -> None:
    sim.raw("\rCapturing batches (bs=64 avail_mem=9.50 GB):   3%|▎         | 1/36 [00:02<01:10,  2.00s/it]")
    sim.sleep(1.0)
    sim.raw("\n")
    (sim.dir / "fatal.ts").write_text(f"{time.time():.6f}")
    sim.tb(5, _OOM_FRAMES, _OOM_ERROR)
    sim.log(_SIGQUIT)
    sim.log("kill_process_tree called: parent_pid=4242, include_parent=True")
    sim.sleep(0.3)
    sim.die(137, "signal")


DEVIATIONS: dict[str, dict[str, Callable[[Sim], bool | None]]] = {
    "nccl": {"dist_init": _nccl_error},
    "silent_death": {"weight_load": _silent_death},
    "crash_once": {"weight_load": _crash_once},
    "restart": {"weight_load": _restart_once},
    "rank_hang": {"shards": _rank_stuck},
    "rank_loading": {"shards": _rank_stuck},
    "silent_load": {"shards": _silent_shards},
    "hang_load": {"shards": _load_stops},
    "barrier": {"weights_in": _waits_for_peer},
    "rank_busy": {"capture": _ranks_busy},
    "jit_busy": {"capture": _jit_in_capture},
    "hang": {"capture": _capture_stops},
    "oom": {"capture": _capture_oom},
}
"""Each scenario's deviation from the ready start: at which point, and what it does there instead
(ready, slow and error_body follow the ready start; slow runs at 1.6 times the durations,
error_body answers badly)."""


def tqdm_times(n: int, total: int, seconds: float) -> str:
    """tqdm's ``[elapsed<remaining, rate]`` for step ``n`` of a bar lasting ``seconds``."""

    def mmss(x: float) -> str:
        m, sec = divmod(round(x), 60)
        return f"{m:02d}:{sec:02d}"

    per = seconds / total if total else 0.0
    rate = f"{1 / per:.2f}it/s" if per and per <= 1 else f"{per:.2f}s/it"
    return f"[{mmss(n * per)}<{mmss((total - n) * per)}, {rate}]"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def spawn(
    d: Path,
    scenario: str = "ready",
    speed: float = 1.0,
    *extra: str,
    linger: float = 60.0,
    prefix: list[str] | None = None,
) -> tuple[subprocess.Popen[bytes], int]:
    """Start the simulator as its own process (``prefix`` wraps it, e.g. in systemd-cat); returns it and
    its HTTP port once its feeds exist."""
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "coldwatch.sim",
        "--dir",
        str(d),
        "--port",
        str(port),
        "--scenario",
        scenario,
        "--speed",
        str(speed),
        "--linger",
        f"{linger:g}",
        *extra,
    ]
    proc = subprocess.Popen([*(prefix or []), *cmd], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(500):
        if (d / "unit.state").exists() and (d / "gpu.csv").exists():
            break
        time.sleep(0.01)
    return proc, port


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m coldwatch.sim")
    ap.add_argument("--dir", required=True, type=Path)
    ap.add_argument("--port", required=True, type=int)
    ap.add_argument("--scenario", default="ready", choices=SCENARIOS)
    ap.add_argument("--speed", type=float, default=1.0, help="time factor (0.1 = ten times faster)")
    ap.add_argument("--fail-checks", action="store_true")
    ap.add_argument("--stdout", action="store_true", help="write the log to stdout instead of DIR/server.log")
    ap.add_argument("--gpus", type=int, default=TP)
    ap.add_argument("--model-path", type=Path, help="a directory of *.safetensors the silent_load scenario reads")
    ap.add_argument("--no-invocation", action="store_true", help="report no InvocationID (journald without systemd)")
    ap.add_argument("--linger", type=float, default=600.0, help="seconds to keep serving after ready")
    ap.add_argument("--node-rank", type=int, default=0, help="a worker node of a multi-node server (> 0): no HTTP")
    ap.add_argument("--delay", type=float, default=0.0, help="seconds before the start begins")
    ap.add_argument("--jitter", type=float, default=0.0, help="scale each phase's duration by a random factor in [1-J, 1+J]")
    ap.add_argument("--seed", type=int, help="random seed (rank order, jitter)")
    ap.add_argument("--virtual", action="store_true", help="write the log on a virtual clock at once (no HTTP, no waiting)")
    ap.add_argument("--bind", default="127.0.0.1", help="address the HTTP server binds (0.0.0.0 in a container)")
    ap.add_argument("--scenario-file", type=Path, help="read the scenario from this file at start (a restarted container may run another)")
    ap.add_argument("--fatal-exit", type=int, help="exit status of a failed start (default: the scenario's)")
    ap.add_argument("--rank-user", help="run the rank scenarios' rank processes as this user (py-spy over SSH as that user)")
    ap.add_argument("--node-ranks", type=int, default=2, help="rank processes on this node in the rank scenarios (1: split over nodes)")
    ap.add_argument("--stay-alive", action="store_true", help="after a fatal line the process lives on (the log alone says it failed)")
    a = ap.parse_args(argv)
    if a.scenario_file is not None:
        a.scenario = a.scenario_file.read_text().strip()
        if a.scenario not in SCENARIOS:
            ap.error(f"{a.scenario_file}: unknown scenario {a.scenario!r}")
    a.dir.mkdir(parents=True, exist_ok=True)
    (a.dir / "sim.pid").write_text(str(os.getpid()))
    out: TextIO = sys.stdout if a.stdout else open(a.dir / "server.log", "a", encoding="utf-8")  # noqa: SIM115
    if not a.stdout:
        os.chmod(a.dir / "server.log", 0o644)
    if a.virtual and a.scenario not in ("ready", "oom", "slow", "error_body"):
        ap.error("--virtual: only the ready, oom, slow and error_body scenarios run on a virtual clock")
    if not 0.0 <= a.jitter < 1.0:
        ap.error("--jitter: expected a fraction in [0, 1)")
    sim = Sim(a.dir, a.port, a.scenario, a.speed, a.fail_checks, out, a.gpus, a.jitter, a.seed, a.virtual)
    sim.with_invocation = not a.no_invocation
    sim.bind_addr = a.bind
    sim.fatal_exit = a.fatal_exit
    sim.stay_alive = a.stay_alive
    sim.model_path = a.model_path
    sim.node_rank = a.node_rank
    sim.rank_user = a.rank_user
    sim.node_ranks = a.node_ranks

    def on_term(*_: Any) -> None:
        sim.unit("inactive", "dead")
        os._exit(0)

    signal.signal(signal.SIGTERM, on_term)
    sim.run(a.delay)
    if a.virtual:
        out.flush()
        return 0
    time.sleep(a.linger)
    sim.unit("inactive", "dead")
    return 0


if __name__ == "__main__":
    sys.exit(main())
