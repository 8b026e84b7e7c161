"""Restart semantics against a real systemd: a Debian container booted with systemd-nspawn runs the
simulator as a unit with Restart=on-failure and its own sshd; coldwatch watches it over SSH on the
default journald path (real `systemctl show`, real InvocationID scoping).

The root filesystem is built once with debootstrap (about 80 s and 270 MB) and cached under
$COLDWATCH_NSPAWN (default ~/.cache/coldwatch-nspawn). Run: `pytest -m systemd`.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ROOT, coldwatch, json_lines

from coldwatch.sim import free_port

pytestmark = pytest.mark.systemd
CACHE = Path(os.environ.get("COLDWATCH_NSPAWN", Path.home() / ".cache" / "coldwatch-nspawn"))
UNIT = "cwsim.service"


def mirror() -> str | None:
    """The Debian mirror apt already uses on this machine."""
    for f in (Path("/etc/apt/sources.list.d/debian.sources"), Path("/etc/apt/sources.list")):
        if f.exists():
            for line in f.read_text().splitlines():
                parts = line.split()
                if line.startswith("URIs:") and len(parts) > 1:
                    return parts[1]
                if line.startswith("deb ") and len(parts) > 1:
                    return parts[1]
    return None


def build_rootfs() -> Path:
    rootfs = CACHE / "bookworm"
    if (rootfs / "usr" / "bin" / "python3").exists() and (rootfs / ".complete").exists():
        return rootfs
    if shutil.which("debootstrap") is None or shutil.which("systemd-nspawn") is None:
        pytest.skip("debootstrap and systemd-nspawn are needed (apt-get install debootstrap systemd-container)")
    url = mirror()
    if url is None:
        pytest.skip("no Debian mirror configured for apt")
    shutil.rmtree(rootfs, ignore_errors=True)
    CACHE.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(
        [
            "debootstrap",
            "--variant=minbase",
            "--include=systemd,systemd-sysv,dbus,openssh-server,python3,iproute2",
            "bookworm",
            str(rootfs),
            url,
        ],
        capture_output=True,
        text=True,
    )
    if r.returncode != 0:
        pytest.skip(f"debootstrap failed: {(r.stderr or r.stdout).strip().splitlines()[-1:]}")
    (rootfs / ".complete").write_text("ok")
    return rootfs


def wait_banner(port: int, seconds: float) -> bool:
    end = time.time() + seconds
    while time.time() < end:
        try:
            with socket.create_connection(("127.0.0.1", port), 0.5) as s:
                if s.recv(8).startswith(b"SSH-"):
                    return True
        except OSError:
            time.sleep(0.1)
    return False


class Container:
    def __init__(self, rootfs: Path, home: Path) -> None:
        self.rootfs = rootfs
        self.home = home
        self.ssh_port = free_port()
        self.http_port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def prepare(self) -> None:
        r = self.rootfs
        key = self.home / ".ssh" / "id_ed25519"
        if not key.exists():
            (self.home / ".ssh").mkdir(parents=True, mode=0o700, exist_ok=True)
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
        (r / "root" / ".ssh").mkdir(parents=True, mode=0o700, exist_ok=True)
        shutil.copy(str(key) + ".pub", r / "root" / ".ssh" / "authorized_keys")
        (r / "etc" / "ssh" / "sshd_config.d").mkdir(parents=True, exist_ok=True)
        (r / "etc" / "ssh" / "sshd_config.d" / "cw.conf").write_text(
            f"Port {self.ssh_port}\nListenAddress 127.0.0.1\nPermitRootLogin prohibit-password\nAllowTcpForwarding yes\n"
        )
        pkg = r / "opt" / "cw" / "coldwatch"
        pkg.mkdir(parents=True, exist_ok=True)
        for f in ("__init__.py", "sim.py"):  # the simulator uses the standard library only
            shutil.copy(ROOT / "src" / "coldwatch" / f, pkg / f)
        (r / "etc" / "systemd" / "system" / UNIT).write_text(
            "[Unit]\nDescription=coldwatch simulator\n[Service]\nEnvironment=PYTHONPATH=/opt/cw PYTHONUNBUFFERED=1\n"
            f"ExecStart=/usr/bin/python3 -m coldwatch.sim --dir /var/lib/cwsim --port {self.http_port} --scenario crash_once "
            "--speed 0.5 --stdout --linger 600\nRestart=on-failure\nRestartSec=1\n"
        )
        shutil.rmtree(r / "var" / "lib" / "cwsim", ignore_errors=True)

    def boot(self) -> None:
        log = open(self.home / "nspawn.log", "wb")  # noqa: SIM115 - closed in stop()
        self._log = log
        self.proc = subprocess.Popen(
            ["systemd-nspawn", "-D", str(self.rootfs), "--boot", "--register=no", "--keep-unit", "--console=passive"],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        if not wait_banner(self.ssh_port, 60):
            self.stop()
            pytest.skip("container did not boot to sshd: " + (self.home / "nspawn.log").read_text(errors="replace")[-300:])

    def ssh(self, cmd: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                "ssh",
                "-F",
                "/dev/null",
                "-o",
                "StrictHostKeyChecking=no",
                "-o",
                f"UserKnownHostsFile={self.home}/kh",
                "-i",
                str(self.home / ".ssh" / "id_ed25519"),
                "-p",
                str(self.ssh_port),
                "root@127.0.0.1",
                cmd,
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        if getattr(self, "_log", None):
            self._log.close()


@pytest.fixture(scope="module")
def container(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Container]:
    if os.geteuid() != 0:
        pytest.skip("needs root for systemd-nspawn")
    rootfs = build_rootfs()
    c = Container(rootfs, tmp_path_factory.mktemp("nspawn"))
    c.prepare()
    c.boot()
    yield c
    c.stop()


def wait_args(c: Container, *more: str) -> list[str]:
    return [
        "wait",
        f"root@127.0.0.1:{c.ssh_port}",
        "--unit",
        UNIT,
        "--url",
        f"http://127.0.0.1:{c.http_port}",
        "--accept-new-host-key",
        "--timeout",
        "90",
        "-o",
        "json",
        *more,
    ]


def test_real_systemd_restart_tolerated_with_max_restarts(container: Container) -> None:
    """First process crashes, systemd restarts it (NRestarts=1, new InvocationID): with --max-restarts 1 the
    wait follows the new invocation's journal to ready."""
    env = {"HOME": str(container.home), "COLDWATCH_HOME": str(container.home / "cw")}
    assert container.ssh(f"systemctl start {UNIT}").returncode == 0
    r = coldwatch(*wait_args(container, "--max-restarts", "1"), env=env, timeout=150)
    evs = json_lines(r.stdout)
    assert r.returncode == 0, evs[-1] if evs else r.stderr.decode()
    res = evs[-1]
    assert res["restarts"] == 1
    assert any(e["event"] == "warning" and "restarted" in e["message"] for e in evs)
    show = container.ssh(f"systemctl show {UNIT} -p NRestarts").stdout
    assert "NRestarts=1" in show


def test_real_systemd_restart_is_a_failure_by_default(container: Container) -> None:
    """The same crash-and-restart with the default --max-restarts 0: exit 3 naming the crash."""
    container.ssh(f"rm -f /var/lib/cwsim/crashed; systemctl restart {UNIT}")
    env = {"HOME": str(container.home), "COLDWATCH_HOME": str(container.home / "cw")}
    r = coldwatch(*wait_args(container), env=env, timeout=150)
    res = json_lines(r.stdout)[-1]
    assert r.returncode == 3, res
    assert "illegal memory access" in res["reason"]
