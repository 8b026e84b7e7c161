"""SSH reliability against the real loopback sshd: known_hosts markers read as ``ssh`` reads them,
signals during connect and --check answered with a result, bounded identity and known_hosts."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hostfix import GpuHost

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import coldwatch

pytestmark = pytest.mark.ssh


def _home(gpu_host: GpuHost, tmp_path: Path, known_hosts: str) -> Path:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    cfg = (gpu_host.home / ".ssh" / "config").read_text()
    (home / ".ssh" / "config").write_text(cfg.replace(str(gpu_host.home / ".ssh" / "known_hosts"), str(home / ".ssh" / "known_hosts")))
    (home / ".ssh" / "known_hosts").write_text(known_hosts)
    return home


def _other_key(tmp_path: Path, name: str) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / name)], check=True)
    return " ".join((tmp_path / f"{name}.pub").read_text().split()[:2])


def _ssh_connects(home: Path) -> bool:
    """What OpenSSH's own client does with the same config and known_hosts."""
    r = subprocess.run(
        ["ssh", "-F", str(home / ".ssh" / "config"), "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "gpu1", "true"],
        capture_output=True,
        timeout=30,
    )
    return r.returncode == 0


def test_cert_authority_and_revoked_lines_connect_as_ssh_does(gpu_host: GpuHost, tmp_path: Path) -> None:
    host_key = " ".join((gpu_host.fix / "host_ed25519.pub").read_text().split()[:2])
    ca, old = _other_key(tmp_path, "ca"), _other_key(tmp_path, "old")
    kh = f"@cert-authority *.example.com {ca}\n@revoked * {old}\n[127.0.0.1]:{gpu_host.port} {host_key}\n"
    home = _home(gpu_host, tmp_path, kh)
    assert _ssh_connects(home)
    sim = gpu_host.start_sim("ready")
    r = coldwatch(
        "wait", "gpu1", "--log-cmd", f"tail -n +1 -F {sim.dir}/server.log", "--url", sim.url, "-o", "plain", env={"HOME": str(home)}
    )
    assert r.returncode == 0, r.stderr.decode()


def test_revoked_host_key_is_refused_as_ssh_refuses_it(gpu_host: GpuHost, tmp_path: Path) -> None:
    host_key = " ".join((gpu_host.fix / "host_ed25519.pub").read_text().split()[:2])
    home = _home(gpu_host, tmp_path, f"@revoked * {host_key}\n[127.0.0.1]:{gpu_host.port} {host_key}\n")
    assert not _ssh_connects(home)
    r = coldwatch("wait", "gpu1", "--accept-new-host-key", "--timeout", "10s", env={"HOME": str(home)})
    err = r.stderr.decode()
    assert r.returncode == 4 and "REVOKED" in err and "Traceback" not in err and "internal error" not in err


def test_hung_gpu_command_warns_once_and_never_piles_up(gpu_host: GpuHost, tmp_path: Path) -> None:
    """nvidia-smi that never answers: one warning, and never more than one copy on the host."""
    import json
    import time

    sim = gpu_host.start_sim("ready", 0.5)
    marker = "sleep 3017"
    p = subprocess.Popen(
        [
            sys.executable, "-m", "coldwatch", "wait", "gpu1", "--log-cmd", f"tail -n +1 -F {sim.dir}/server.log", "--url", sim.url,
            "--gpu-cmd", f"{marker}; cat {sim.dir}/gpu.csv", "--interval", "0.5", "--timeout", "16s", "--stall-after", "10m", "-o", "json",
        ],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**__import__("os").environ, **gpu_host.env},
    )  # fmt: skip
    most = 0
    while p.poll() is None:
        # the command itself ("PID sleep 3017"), not the shell or the sampler whose arguments name it
        most = max(most, sum(1 for ln in gpu_host.user_processes() if ln.split(None, 1)[-1].startswith(marker)))
        time.sleep(0.3)
    out, err = p.communicate()
    evs = [json.loads(ln) for ln in out.decode().splitlines() if ln.strip()]
    hung = [e for e in evs if e["event"] == "warning" and "GPU command hung" in e["message"]]
    assert len(hung) == 1, [e for e in evs if e["event"] == "warning"]
    assert most <= 1, most
    time.sleep(1.0)
    assert not [ln for ln in gpu_host.user_processes() if marker in ln]


def test_every_remote_command_ends_on_the_host_at_its_deadline(gpu_host: GpuHost) -> None:
    """A command that never ends: the call returns at its deadline and nothing of it stays on the host."""
    import time

    from coldwatch.hosts.local import LocalHost
    from coldwatch.hosts.ssh import SshHost

    host = SshHost.connect("gpu1", ssh_config=gpu_host.home / ".ssh" / "config")
    try:
        t0 = time.monotonic()
        r = host.run("sleep 3019; echo never", timeout=2.0)
        assert r.rc is None and time.monotonic() - t0 < 6
        ok = host.run("echo fine", timeout=5.0)
        assert (ok.rc, ok.stdout) == (0, b"fine\n")
        with_stdin = host.run("cat", timeout=5.0, stdin=b"through")
        assert with_stdin.stdout == b"through"
        for _ in range(50):
            if not [ln for ln in gpu_host.user_processes() if "sleep 3019" in ln]:
                break
            time.sleep(0.1)
        assert not [ln for ln in gpu_host.user_processes() if "sleep 3019" in ln]
    finally:
        host.close()
    local = LocalHost()
    r = local.run("sleep 3021; echo never", timeout=1.0)
    assert r.rc is None
    time.sleep(0.3)
    left = subprocess.run(["pgrep", "-f", "sleep 302[1]"], capture_output=True, text=True).stdout.split()
    assert left == []


def test_a_keepalive_reply_held_up_in_coldwatch_is_not_a_hung_link(gpu_host: GpuHost) -> None:
    """A fleet on few cores: the server answers the keepalive, but coldwatch's own reader is too busy to
    take the reply in time. That is a slow watcher, not a dead link (no false 'connection lost'); a
    connection whose server sends nothing at all, not even a keepalive reply, is still hung."""
    import os
    import signal
    import time

    from coldwatch.hosts.ssh import SshHost

    before = set(gpu_host.session_pids())
    host = SshHost.connect("gpu1", ssh_config=gpu_host.home / ".ssh" / "config")
    try:
        f = host.follow("while :; do echo tick; sleep 0.05; done")
        assert next(iter(f.chunks())).startswith(b"tick")
        assert host.ping(5.0)
        # the transport's one reader thread is held up in this channel's buffer (as a starved process's
        # reader is held up by the scheduler): the keepalive reply waits behind the ticks
        lock = f._chan.in_buffer._lock  # type: ignore[attr-defined]  # paramiko's BufferedPipe
        with lock:
            time.sleep(0.3)
            host.ping(0.5)  # the ticks heard before the hold-up answer this one without a request
            assert host.ping(0.5), "a reply waiting behind data taken for a hung link"
            assert host._pinger is not None and not host._pinger.done.is_set()  # the reply really was late
        f.close()
        assert host.ping(5.0)
        stopped = [p for p in gpu_host.session_pids() if p not in before]
        assert stopped
        for pid in stopped:
            os.kill(pid, signal.SIGSTOP)  # the server side hangs: nothing arrives
        try:
            time.sleep(0.3)
            host.ping(1.0)  # what arrived before the stop may answer this one
            assert not host.ping(1.0)
        finally:
            for pid in stopped:
                os.kill(pid, signal.SIGCONT)
    finally:
        host.close()
