"""The Ansible example runs for real: a rolling restart of six servers behind the loopback sshd in
batches of two, each batch gated on one `coldwatch wait` of the batch; an OOM in the second batch
stops the roll before the third batch is touched."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hostfix import GpuHost

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PLAYBOOK = ROOT / "examples" / "ansible" / "rolling-restart.yml"
pytestmark = [pytest.mark.ssh, pytest.mark.slow]


def _ansible() -> str | None:
    found = Path(sys.executable).parent / "ansible-playbook"
    return str(found) if found.exists() else shutil.which("ansible-playbook")


@pytest.mark.skipif(_ansible() is None, reason="ansible-core is not installed (a test extra: pip install -e '.[test]')")
def test_rolling_restart_stops_at_the_batch_that_fails(gpu_host: GpuHost, tmp_path: Path) -> None:
    """Batch 1 ready, batch 2 has an OOM: the play fails there, batch 3 is never restarted, and each
    gated batch left its JUnit report."""
    cfg_ssh = gpu_host.home / ".ssh" / "config"
    text = cfg_ssh.read_text()
    block = text[text.index("Host gpu1") :].split("\nHost ", 1)[0]
    hosts = [f"an{tmp_path.name[-4:]}{i}" for i in range(1, 7)]
    cfg_ssh.write_text(text + "\n" + "\n".join(block.replace("Host gpu1", f"Host {h}") for h in hosts) + "\n")
    markers = gpu_host.fix / f"restarted-{tmp_path.name}"  # the remote user can reach it
    markers.mkdir()
    markers.chmod(0o777)
    scenarios = ["ready", "ready", "ready", "oom", "ready", "ready"]
    tables = ["interval = 0.5", 'timeout = "60s"']
    for h, sc in zip(hosts, scenarios, strict=True):
        sim = gpu_host.start_sim(sc, 0.1)
        pid = int((sim.dir / "sim.pid").read_text())
        tables.append(
            f'[targets.{h}]\nlog_cmd = "tail -n +1 -F {sim.dir}/server.log"\ngpu_cmd = "cat {sim.dir}/gpu.csv"\n'
            f'pid = {pid}\nurl = "{sim.url}"'
        )
    fleet = tmp_path / "fleet.toml"
    fleet.write_text("\n".join(tables) + "\n")
    inventory = tmp_path / "inventory.ini"
    inventory.write_text("[inference]\n" + "\n".join(hosts) + "\n")
    reports = tmp_path / "reports"
    env = {
        **os.environ,
        **gpu_host.env,
        "ANSIBLE_HOST_KEY_CHECKING": "True",
        "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-local"),
        "ANSIBLE_SSH_ARGS": f"-F {cfg_ssh}",
        "ANSIBLE_PYTHON_INTERPRETER": "/usr/bin/python3",
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_PIPELINING": "True",  # modules over the SSH session itself (the test sshd has no sftp)
    }
    r = subprocess.run(
        [
            str(_ansible()),
            "-i",
            str(inventory),
            str(PLAYBOOK),
            "-e",
            f"coldwatch={Path(sys.executable).parent / 'coldwatch'}",
            "-e",
            f"coldwatch_config={fleet}",
            "-e",
            f"report_dir={reports}",
            "-e",
            "restart_become=false",
            "-e",
            f"restart_cmd='touch {markers}/{{{{ inventory_hostname }}}}'",
        ],
        capture_output=True,
        env=env,
        timeout=300,
    )
    out = r.stdout.decode() + r.stderr.decode()
    assert r.returncode != 0, out[-3000:]
    assert sorted(p.name for p in markers.iterdir()) == hosts[:4], out[-3000:]
    first = (reports / f"batch-{hosts[0]}.xml").read_text()
    second = (reports / f"batch-{hosts[2]}.xml").read_text()
    assert 'tests="2"' in first and "<failure" not in first
    assert "<failure" in second and hosts[3] in second and "oom" in second.lower()
    assert "FAILED [oom]" in out
