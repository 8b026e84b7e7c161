"""A fleet: 50 independent simulated servers behind the loopback sshd (one alias each in the test's
ssh config), a mix of ready, failed, stalled and unreachable, watched from one coldwatch process."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hostfix import GpuHost

from pathlib import Path

import pytest
from conftest import coldwatch, json_lines

from coldwatch.sim import free_port

pytestmark = [pytest.mark.ssh, pytest.mark.slow]

MIX = ["ready"] * 30 + ["oom"] * 10 + ["hang_load"] * 5 + ["unreachable"] * 5


def _fleet(gpu_host: GpuHost, tmp_path: Path, mix: list[str]) -> tuple[list[str], Path]:
    """One ssh alias and one [targets.NAME] table per server; unreachable ones point at a closed port."""
    cfg_ssh = gpu_host.home / ".ssh" / "config"
    text = cfg_ssh.read_text()
    block = text[text.index("Host gpu1") :].split("\nHost ", 1)[0]
    names, tables, aliases = [], ["interval = 0.5", 'stall_after = "8s"', 'timeout = "90s"'], []
    for i, sc in enumerate(mix):
        name = f"f{tmp_path.name[-6:]}-{i:02d}-{sc}"
        alias = block.replace("Host gpu1", f"Host {name}")
        if sc == "unreachable":
            alias = "\n".join(f"  Port {free_port()}" if ln.strip().startswith("Port ") else ln for ln in alias.splitlines())
            tables.append(f'[targets."{name}"]\nlog_cmd = "true"')
        else:
            # serving well past the watch: starting 50 servers can take longer than the default linger
            sim = gpu_host.start_sim(sc, 0.1, False, "--linger", "600")
            pid = int((sim.dir / "sim.pid").read_text())
            tables.append(
                f'[targets."{name}"]\nlog_cmd = "tail -n +1 -F {sim.dir}/server.log"\n'
                f'gpu_cmd = "cat {sim.dir}/gpu.csv"\npid = {pid}\nurl = "{sim.url}"'
            )
        aliases.append(alias)
        names.append(name)
    cfg_ssh.write_text(cfg_ssh.read_text() + "\n" + "\n".join(aliases) + "\n")
    cfg = tmp_path / "fleet.toml"
    cfg.write_text("\n".join(tables) + "\n")
    return names, cfg


def test_fifty_servers_one_table_one_result(gpu_host: GpuHost, tmp_path: Path) -> None:
    """Every target gets its own right verdict; the run's result lists them all and exits with the most
    severe code (3 failed before 5 stalled before 4 unreachable); --min-ready 60% makes it 0."""
    names, cfg = _fleet(gpu_host, tmp_path, MIX)
    tf = tmp_path / "targets.txt"
    tf.write_text("# the fleet\n" + "\n".join(names) + "\n")
    r = coldwatch("wait", "--targets-file", str(tf), "--config", str(cfg), "-o", "json", env=gpu_host.env, timeout=240)
    evs = json_lines(r.stdout)
    res = evs[-1]
    assert res["event"] == "result" and len(res["targets"]) == 50
    got = {t["target"]: t["outcome"] for t in res["targets"]}
    want = {"ready": "ready", "oom": "failed", "hang_load": "stalled", "unreachable": "unreachable"}
    reasons = {t["target"]: t["reason"] for t in res["targets"]}
    wrong = {n: (got[n], reasons[n]) for n, sc in zip(names, MIX, strict=True) if got[n] != want[sc]}
    assert not wrong, wrong
    assert r.returncode == 3 and res["outcome"] == "failed", res["reason"]
    assert all("target" in e for e in evs[:-1] if not e["event"].startswith("_"))
    assert sum(1 for e in evs if e["event"] == "result") == 1
    assert "30/50 ready" in res["reason"]


def test_min_ready_share_and_plain_table(gpu_host: GpuHost, tmp_path: Path) -> None:
    """--min-ready 60%: 3 of 5 ready is enough (exit 0); the plain output ends with one row per target."""
    names, cfg = _fleet(gpu_host, tmp_path, ["ready", "ready", "ready", "oom", "unreachable"])
    r = coldwatch("wait", *names, "--config", str(cfg), "--min-ready", "60%", "-o", "plain", env=gpu_host.env, timeout=120)
    err = r.stderr.decode()
    assert r.returncode == 0, err[-2000:]
    table = err[err.index("target ") :]
    for n in names:
        assert n in table
    assert "READY (exit 0)" in table.splitlines()[-1]
