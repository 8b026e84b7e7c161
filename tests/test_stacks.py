"""Where is it stuck, end to end: `coldwatch wait` against the stand-in rank server (real rank
processes, real py-spy from PyPI, real /proc), on this machine and through the loopback sshd."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hostfix import GpuHost

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import hostfix
import pytest
import rankserver
from conftest import coldwatch, json_lines

from coldwatch.sim import free_port

PYSPY = shutil.which("py-spy") or shutil.which(str(Path(sys.executable).parent / "py-spy"))
needs_pyspy = pytest.mark.skipif(PYSPY is None, reason="py-spy is not installed (pip install py-spy)")
pytestmark = [pytest.mark.slow, pytest.mark.skipif(sys.platform != "linux", reason="/proc")]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[Path, dict[str, subprocess.Popen[bytes]]]]:
    procs: dict[str, subprocess.Popen[bytes]] = {}
    yield tmp_path / "srv", procs
    for p in procs.values():
        rankserver.stop(p)


def args(d: Path, pid: int, *more: str) -> list[str]:
    return [
        "wait",
        "--log-cmd",
        f"tail -n +1 -F {d}/server.log",
        "--url",
        f"http://127.0.0.1:{free_port()}",
        "--pid",
        str(pid),
        "--interval",
        "0.5",
        "-o",
        "json",
        *more,
    ]


def env_with(pyspy: bool) -> dict[str, str]:
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if not (Path(p) / "py-spy").exists()]
    if pyspy and PYSPY is not None:
        path.insert(0, str(Path(PYSPY).parent))
    return {"PATH": os.pathsep.join(path)}


def run(
    scenario: str, server: tuple[Path, dict[str, subprocess.Popen[bytes]]], *more: str, pyspy: bool = True
) -> tuple[int, list[dict], float]:  # type: ignore[type-arg]
    d, procs = server
    procs[scenario] = p = rankserver.start(d, scenario)
    quiet = (d / "server.log").stat().st_mtime
    r = coldwatch(*args(d, p.pid, *more), env=env_with(pyspy), timeout=180)
    return r.returncode, json_lines(r.stdout), time.time() - quiet


@needs_pyspy
def test_a_rank_hung_in_a_read_while_its_peer_waits_in_all_reduce_is_a_stall(server: tuple[Path, dict]) -> None:  # type: ignore[type-arg]
    rc, evs, after = run("hang", server, "--stall-after", "8s", "--timeout", "90s")
    res = evs[-1]
    assert rc == 5, res
    assert res["reason"].startswith("TP1 blocked in read_shard ← load_weights"), res["reason"]
    assert "TP0 waiting in all_reduce ← init_memory_pool" in res["reason"]
    assert after < 8 + 15  # within the budget plus 15 s of the log going quiet
    by_rank = {r["rank"]: r for r in res["ranks"]}
    assert by_rank["TP1"]["state"] == "blocked" and by_rank["TP1"]["frames"][0].startswith("read_shard (simranks.py:")
    assert by_rank["TP0"]["state"] == "waiting" and by_rank["TP1"]["pid"] != by_rank["TP0"]["pid"]
    stall = [e for e in evs if e["event"] == "stall"]
    assert stall and stall[0]["ranks"] == res["ranks"]
    assert not any("py-spy" in e.get("message", "") for e in evs if e["event"] == "warning")


@needs_pyspy
@pytest.mark.parametrize(
    ("scenario", "who"), [("loading", "TP1 working in parse_tensors ← load_weights"), ("busy", "working in compile_graph")]
)
def test_silent_work_is_not_a_stall(scenario: str, who: str, server: tuple[Path, dict]) -> None:  # type: ignore[type-arg]
    rc, evs, _ = run(scenario, server, "--stall-after", "6s", "--timeout", "20s")
    res = evs[-1]
    assert rc == 124, res
    assert res["outcome"] == "timeout" and who in res["reason"], res["reason"]
    assert not [e for e in evs if e["event"] == "stall"]


def test_without_pyspy_the_verdict_says_thread_states_and_wchan(server: tuple[Path, dict]) -> None:  # type: ignore[type-arg]
    rc, evs, _ = run("hang", server, "--stall-after", "6s", "--timeout", "16s", pyspy=False)
    res = evs[-1]
    # without frames a spinning rank may be working: no stall is claimed, the deadline ends it
    assert rc == 124, res
    assert "TP1 blocked in read (wchan " in res["reason"] and "TP0 working (R state" in res["reason"], res["reason"]
    warnings = [e["message"] for e in evs if e["event"] == "warning" and "py-spy" in e["message"]]
    assert len(warnings) == 1 and "install py-spy on the host" in warnings[0]


USER = "cwstack"
"""The server's user on the loopback host: py-spy attaches only to its own user's processes (a user of
these tests' own, so that no other test's clean-up of the fixture's user ends the server)."""


def stack_user(gpu_host: GpuHost) -> str:
    """An SSH alias of the loopback host that logs in as USER (same key and stand-ins)."""
    if subprocess.run(["id", USER], capture_output=True).returncode != 0:
        subprocess.run(["useradd", "-m", "-s", "/bin/sh", USER], check=True, capture_output=True)
    subprocess.run(["usermod", "-p", "*", USER], check=True, capture_output=True)
    shutil.copy(gpu_host.fix / "ak" / hostfix.USER, gpu_host.fix / "ak" / USER)
    cfg = gpu_host.home / ".ssh" / "config"
    text = cfg.read_text()
    if "Host gpu1-stacks" not in text:
        block = text[text.index("Host gpu1") :].split("\nHost ", 1)[0]
        cfg.write_text(text + "\n" + block.replace("Host gpu1", "Host gpu1-stacks").replace(f"User {hostfix.USER}", f"User {USER}") + "\n")
    return "gpu1-stacks"


@needs_pyspy
@pytest.mark.ssh
def test_through_ssh_as_the_servers_user(gpu_host: GpuHost, tmp_path: Path) -> None:
    assert PYSPY is not None
    shutil.copy(PYSPY, gpu_host.fix / "bin" / "py-spy")  # on the session's PATH, as on a GPU host
    alias = stack_user(gpu_host)
    d = gpu_host.fix / "ranks" / tmp_path.name
    d.parent.mkdir(exist_ok=True, mode=0o755)
    p = rankserver.start(d, "hang", user=USER)
    try:
        r = coldwatch("wait", alias, *args(d, p.pid, "--stall-after", "8s", "--timeout", "60s")[1:], env=gpu_host.env, timeout=120)
    finally:
        rankserver.stop(p)
        (gpu_host.fix / "bin" / "py-spy").unlink()
    res = json_lines(r.stdout)[-1]
    assert r.returncode == 5, res
    assert res["reason"].startswith("TP1 blocked in read_shard ← load_weights") and "TP0 waiting in all_reduce" in res["reason"]
    assert {x["node"] for x in res["ranks"]} == {alias}


@needs_pyspy
@pytest.mark.engine
def test_a_real_gloo_collective_one_rank_never_joins(server: tuple[Path, dict]) -> None:  # type: ignore[type-arg]
    pytest.importorskip("torch")
    rc, evs, after = run("gloo", server, "--stall-after", "8s", "--timeout", "90s")
    res = evs[-1]
    assert rc == 5, res
    assert res["reason"].startswith("TP1 blocked in read_shard ← load_weights") and "TP0 waiting in all_reduce" in res["reason"]
    tp0 = next(r for r in res["ranks"] if r["rank"] == "TP0")
    assert tp0["frames"][0].startswith("all_reduce (distributed_c10d.py:")  # torch's frame, no stand-in name


@needs_pyspy
@pytest.mark.ssh
def test_split_over_two_nodes_names_the_worker_its_rank_and_frame(gpu_host: GpuHost, tmp_path: Path) -> None:
    """TP0 on the head spins in all_reduce; TP1 on the worker (its own network namespace and sshd)
    hangs in a read: stalled, naming the worker, TP1 and its frame."""
    import hostfix

    why = hostfix.netns_why_not()
    if why:
        pytest.skip(why)
    assert PYSPY is not None
    shutil.copy(PYSPY, gpu_host.fix / "bin" / "py-spy")
    head_alias = stack_user(gpu_host)
    net = hostfix.start_netns_host(gpu_host, "gpu-worker-cw", 9)
    cfg_ssh = gpu_host.home / ".ssh" / "config"
    text = cfg_ssh.read_text()
    block = text[text.index("Host gpu-worker-cw") :].split("\nHost ", 1)[0]
    cfg_ssh.write_text(
        text + "\n" + block.replace("Host gpu-worker-cw", "Host gpu-worker").replace(f"User {hostfix.USER}", f"User {USER}") + "\n"
    )
    dirs = {n: gpu_host.fix / "ranks" / f"{tmp_path.name}-{n}" for n in ("head", "worker")}
    (gpu_host.fix / "ranks").mkdir(exist_ok=True, mode=0o755)
    procs = [rankserver.start(dirs["head"], "hang", USER, 0, 1), rankserver.start(dirs["worker"], "hang", USER, 1, 1)]
    try:
        cfg = tmp_path / "nodes.toml"
        node = 'log_cmd = "tail -n +1 -F {d}/server.log"\npid = {pid}\n'
        cfg.write_text(
            f'interval = 0.5\n[targets.{head_alias}]\nurl = "http://127.0.0.1:{free_port()}"\n'
            + node.format(d=dirs["head"], pid=procs[0].pid)
            + "[targets.gpu-worker]\n"
            + node.format(d=dirs["worker"], pid=procs[1].pid)
        )
        r = coldwatch(
            "wait", head_alias, "--worker", "gpu-worker", "--config", str(cfg), "--stall-after", "8s", "--timeout", "60s", "-o", "json",
            env=gpu_host.env, timeout=120,
        )  # fmt: skip
    finally:
        for p in procs:
            rankserver.stop(p)
        net.close()
        (gpu_host.fix / "bin" / "py-spy").unlink()
    res = json_lines(r.stdout)[-1]
    assert r.returncode == 5, res
    assert res["reason"].startswith("gpu-worker TP1 blocked in read_shard ← load_weights, 40 % of shards"), res["reason"]
    assert f"{head_alias} TP0 waiting in all_reduce" in res["reason"]
    assert re.search(r"; gpu-worker( \(TP1\))? in weight_load", res["reason"]), res["reason"]  # the group's laggard too
    assert {(x["node"], x["rank"], x["state"]) for x in res["ranks"]} == {("gpu-worker", "TP1", "blocked"), (head_alias, "TP0", "waiting")}


@needs_pyspy
def test_status_stacks_prints_every_ranks_stack(server: tuple[Path, dict]) -> None:  # type: ignore[type-arg]
    d, procs = server
    procs["hang"] = p = rankserver.start(d, "hang")
    base = ["status", "--pid", str(p.pid), "--log-cmd", f"cat {d}/server.log", "--url", f"http://127.0.0.1:{free_port()}", "--stacks"]
    r = coldwatch(*base, "-o", "json", env=env_with(True))
    snap = json_lines(r.stdout)[-1]
    assert r.returncode == 124, snap
    by = {x["rank"]: x for x in snap["ranks"]}
    assert by["TP0"]["state"] == "waiting" and by["TP0"]["frames"][0].startswith("all_reduce (simranks.py:")
    assert by["TP1"]["state"] == "blocked" and by["TP1"]["frames"][1].startswith("load_weights (simranks.py:")
    text = coldwatch(*base, "-o", "plain", env=env_with(True)).stdout.decode()
    assert f"TP1 (pid {by['TP1']['pid']}) blocked in read_shard ← load_weights\n    read_shard (simranks.py:" in text


@needs_pyspy
def test_the_demo_names_the_rank_and_the_frame() -> None:
    """`coldwatch demo --scenario rank_hang`: the simulator's ranks are real processes, so are their frames."""
    r = coldwatch("demo", "--scenario", "rank_hang", "--stall-after", "6s", "-o", "json", env=env_with(True), timeout=120)
    res = json_lines(r.stdout)[-1]
    assert r.returncode == 5, res
    assert res["reason"].startswith("TP1 blocked in read_shard ← load_weights, 40 % of shards; TP0 waiting in all_reduce"), res["reason"]
    assert "rank_hang (one rank hangs, the other waits in all_reduce" in " ".join(coldwatch("demo", "--help").stdout.decode().split())
