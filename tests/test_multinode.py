"""One server across two nodes (HEAD + --worker): the head is the loopback sshd, the worker a second
host in its own network namespace (veth, its own address and sshd), each node with its own
simulator node, log, GPU feed and process; HTTP on the head only. One verdict."""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

import pytest
from conftest import coldwatch, json_lines

from coldwatch.sim import free_port

pytestmark = [pytest.mark.ssh, pytest.mark.slow]


@pytest.fixture(scope="module")
def worker(gpu_host):  # type: ignore[no-untyped-def]
    """The worker node's host: a network namespace with its own sshd (alias gpu2), and gpu3, a node
    nobody answers for. Where namespaces cannot be made, gpu2 is a second connection to the loopback
    sshd instead (the reason is printed)."""
    import hostfix

    cfg = gpu_host.home / ".ssh" / "config"
    text = cfg.read_text()
    block = text[text.index("Host gpu1") :].split("\nHost ", 1)[0]
    dead = block.replace("Host gpu1", "Host gpu3")
    dead = "\n".join(f"  Port {free_port()}" if ln.strip().startswith("Port ") else ln for ln in dead.splitlines())
    cfg.write_text(text + "\n" + dead + "\n  ConnectTimeout 2\n")
    why = hostfix.netns_why_not()
    if why:
        print(f"worker node on loopback: {why}")
        cfg.write_text(cfg.read_text() + "\n" + block.replace("Host gpu1", "Host gpu2") + "\n")
        yield None
        return
    host = hostfix.start_netns_host(gpu_host, "gpu2", 7)
    try:
        yield host
    finally:
        host.close()


def _node(sim, url: bool = False) -> str:  # type: ignore[no-untyped-def]
    pid = int((sim.dir / "sim.pid").read_text())
    lines = [f'log_cmd = "tail -n +1 -F {sim.dir}/server.log"', f'gpu_cmd = "cat {sim.dir}/gpu.csv"', f"pid = {pid}"]
    if url:
        lines.append(f'url = "{sim.url}"')
    return "\n".join(lines) + "\n"


def _watch(gpu_host, tmp_path: Path, head_sc: str, worker_sc: str, *extra: str, worker: str = "gpu2", head_speed: float = 0.15):  # type: ignore[no-untyped-def]
    head = gpu_host.start_sim(head_sc, head_speed)
    work = gpu_host.start_sim(worker_sc, 0.15, False, "--node-rank", "1")
    cfg = tmp_path / "nodes.toml"
    cfg.write_text(f"interval = 0.5\n[targets.gpu1]\n{_node(head, url=True)}[targets.gpu2]\n{_node(work)}")
    r = coldwatch("wait", "gpu1", "--worker", worker, "--config", str(cfg), "-o", "json", *extra, env=gpu_host.env, timeout=120)
    evs = json_lines(r.stdout)
    return r, evs, evs[-1]


def test_both_nodes_ready(gpu_host, worker, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Head serves a completion, the worker came up: ready; events and the result name each node."""
    r, evs, res = _watch(gpu_host, tmp_path, "ready", "ready")
    assert r.returncode == 0, res
    assert {n["node"] for n in res["nodes"]} == {"gpu1", "gpu2"}
    worker = next(n for n in res["nodes"] if n["node"] == "gpu2")
    assert worker["ranks"] == "TP8-TP15" and worker["phase"] in ("graph_capture", "warmup")
    assert {e.get("node") for e in evs if e["event"] == "phase"} == {"gpu1", "gpu2"}
    assert r.stderr.decode().count("cannot be reached") == 0


def test_worker_oom_while_head_waits_fails_naming_the_worker(gpu_host, worker, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The worker's capture runs out of memory while the head waits for it: failed [oom], node gpu2 named."""
    r, _, res = _watch(gpu_host, tmp_path, "barrier", "oom")
    assert r.returncode == 3, res
    assert res["failure_kind"] == "oom" and res["reason"].startswith("node gpu2 (TP8-TP15)"), res["reason"]


def test_worker_hang_in_weight_load_is_a_stall_naming_the_laggard(gpu_host, worker, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The worker stops mid-load, the head waits silently after its own load: stalled, the worker named first."""
    r, _, res = _watch(gpu_host, tmp_path, "barrier", "hang_load", "--stall-after", "6s")
    assert r.returncode == 5, res
    assert re.match(r"gpu2 \(TP8-TP15\) in weight_load at [1-4]\d %, last liveness ", res["reason"]), res["reason"]
    assert "gpu1" in res["reason"] and "waiting" in res["reason"]


def test_unreachable_worker_is_named_and_the_head_decides(gpu_host, worker, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A worker nobody answers for: named as blind; the head's start is judged on what is left (ready)."""
    r, evs, res = _watch(gpu_host, tmp_path, "ready", "ready", worker="gpu3")
    assert r.returncode == 0, res
    assert any(e["event"] == "warning" and "gpu3 cannot be reached" in e["message"] for e in evs)
    assert next(n for n in res["nodes"] if n["node"] == "gpu3")["outcome"] == "unreachable"


def test_worker_death_fails_the_server_even_when_the_head_gets_ready(gpu_host, worker, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The worker's process dies without a word while the head goes on to serve: failed [killed], gpu2 named."""
    r, _, res = _watch(gpu_host, tmp_path, "ready", "silent_death")
    assert r.returncode == 3, res
    assert res["failure_kind"] == "killed" and res["reason"].startswith("node gpu2")


def test_worker_link_down_mid_start_leaves_it_blind_and_the_head_decides(gpu_host, worker, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The worker's network goes dark (a black hole, not a refusal) mid-start: the hung connection is
    noticed, reconnecting fails for --reconnect-for, the worker is named blind and the head's ready wins."""
    if worker is None:
        pytest.skip("needs the network-namespace worker host")
    import threading

    timer = threading.Timer(4.0, worker.link, args=(False,))
    timer.start()
    try:
        r, evs, res = _watch(gpu_host, tmp_path, "ready", "ready", "--reconnect-for", "3s", head_speed=1.0)
    finally:
        timer.cancel()
        worker.link(True)
        worker.kill_sessions()  # the black-holed session's processes on the worker host
    assert r.returncode == 0, res
    msgs = [e["message"] for e in evs if e["event"] == "warning"]
    assert any("node gpu2" in m and "SSH connection lost" in m for m in msgs), msgs
    assert next(n for n in res["nodes"] if n["node"] == "gpu2")["outcome"] == "unreachable"


def test_the_final_frame_shows_every_node_ready_under_ready(gpu_host, worker, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The live panel of a two-node start: under READY the last frame's node rows say ready, not the
    `warmup` of the table drawn before the verdict."""
    head = gpu_host.start_sim("ready", 0.15)
    work = gpu_host.start_sim("ready", 0.15, False, "--node-rank", "1")
    cfg = tmp_path / "nodes.toml"
    cfg.write_text(f"interval = 0.5\n[targets.gpu1]\n{_node(head, url=True)}[targets.gpu2]\n{_node(work)}")
    env = {**gpu_host.env, "COLUMNS": "100", "LINES": "40", "TERM": "xterm", "FORCE_COLOR": "0"}
    r = coldwatch("wait", "gpu1", "--worker", "gpu2", "--config", str(cfg), "-o", "live", env=env, timeout=120)
    assert r.returncode == 0, r.stderr.decode()[-600:]
    text = r.stderr.decode(errors="replace")
    frame = text[text.rfind("╭") :]
    rows = [ln for ln in frame.splitlines() if "gpu1 (head)" in ln or " gpu2 " in ln]
    assert len(rows) == 2, frame
    assert all("✓" in ln and "ready" in ln and "READY" in ln for ln in rows), frame
    assert "warmup " not in "".join(rows), frame


def test_a_cut_off_host_ends_coldwatch_s_commands_while_the_link_stays_down(gpu_host, worker, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A black hole keeps the SSH channel open on the host (sshd never hears that the client went),
    so the log follower and the sampler would run there until the link came back. They hear
    coldwatch's heartbeats; when those stop they end, with everything they started, in about 20 s."""
    if worker is None:
        pytest.skip("needs the network-namespace worker host")
    import subprocess
    import sys
    import time

    log = tmp_path / "quiet.log"
    log.write_text("[2026-12-01 10:00:00] Init torch distributed begin.\n")
    gpu = tmp_path / "gpu.csv"
    gpu.write_text("0, 1000, 97871, 0\n")
    holder = subprocess.Popen(["sleep", "300"])  # the "server" process the sampler samples
    env = {**gpu_host.env}
    args = ["wait", "gpu2", "--log-cmd", f"tail -n +1 -F {log}", "--gpu-cmd", f"cat {gpu}", "--pid", str(holder.pid)]
    args += ["--interval", "0.5", "--timeout", "180s", "--reconnect-for", "170s", "--stall-after", "170s", "-o", "json"]
    p = subprocess.Popen([sys.executable, "-m", "coldwatch", *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def remote() -> list[str]:
        out = subprocess.run(["ip", "netns", "pids", worker.name], capture_output=True, text=True).stdout
        names = []
        for pid in (int(x) for x in out.split() if x.isdigit()):
            with contextlib.suppress(OSError):
                names.append(Path(f"/proc/{pid}/comm").read_text().strip())
        return names

    try:
        deadline = time.time() + 30
        while not ({"tail", "python3"} <= set(remote())) and time.time() < deadline:
            time.sleep(0.2)
        assert {"tail", "python3"} <= set(remote()), remote()
        worker.link(False)
        cut = time.time()
        while ({"tail", "python3"} & set(remote())) and time.time() < cut + 40:
            time.sleep(0.5)
        gone_after = time.time() - cut
        left = {"tail", "python3", "cat", "sleep"} & set(remote())
        assert not left, f"still on the host {gone_after:.0f} s after the link went dark: {sorted(left)}"
        assert 15 <= gone_after <= 30, gone_after  # not while heartbeats still come; not long after they stop
    finally:
        p.terminate()
        p.wait(10)
        holder.kill()
        holder.wait()
        worker.link(True)
        worker.kill_sessions()
