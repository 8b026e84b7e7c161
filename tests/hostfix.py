"""Real parts for the tests: a loopback OpenSSH server with a test user, a standalone
systemd-journald, stand-in nvidia-smi/systemctl scripts, and the simulator as the server.

Recipe: shared research (testing-setup.md). Needs root and Debian's openssh-server; tests that
use it are skipped with the reason otherwise.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from coldwatch.sim import free_port, spawn

WORKER = int(os.environ.get("PYTEST_XDIST_WORKER", "gw")[2:] or -1)
"""This pytest-xdist worker's number (-1 without xdist): each worker has its own test user and
addresses, so that one worker's teardown (``pkill -u``) never ends another's sessions."""
USER = "cwtest" if WORKER < 0 else f"cwtest{WORKER}"
SSHD = "/usr/sbin/sshd"
JOURNALD = "/lib/systemd/systemd-journald"


def why_not() -> str | None:
    if os.geteuid() != 0:
        return "needs root to run a test sshd and user"
    if not os.path.exists(SSHD):
        return "openssh-server is not installed (apt-get install openssh-server)"
    if not shutil.which("ssh-keygen"):
        return "ssh-keygen not found"
    return None


def sh(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True)


@dataclass
class SimServer:
    """A simulator process and its files (readable by the test user)."""

    dir: Path
    port: int
    proc: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(3)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(3)


@dataclass
class GpuHost:
    fix: Path
    port: int
    home: Path
    unit: str
    cgroup: Path | None
    sshd: subprocess.Popen[bytes]
    journald: subprocess.Popen[bytes] | None
    sims: list[SimServer] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        """Environment for a coldwatch run as the operator (own HOME with ~/.ssh/config)."""
        return {"HOME": str(self.home), "COLDWATCH_HOME": str(self.home / "cw")}

    def sim_dir(self) -> Path:
        d = self.fix / "sims" / uuid.uuid4().hex[:8]
        d.mkdir(parents=True)
        d.chmod(0o755)
        (self.fix / "current").unlink(missing_ok=True)
        (self.fix / "current").symlink_to(d)
        return d

    def start_sim(self, scenario: str = "ready", speed: float = 0.15, journal: bool = False, *extra: str) -> SimServer:
        """The simulator as the server; with ``journal`` its log goes to journald from the unit's cgroup."""
        d = self.sim_dir()
        prefix = None
        if journal:
            assert self.cgroup is not None
            prefix = ["sh", "-c", f'echo $$ > {self.cgroup}/cgroup.procs; exec systemd-cat -t sglang "$@"', "sh"]
            extra = (*extra, "--stdout", "--no-invocation")
        proc, port = spawn(d, scenario, speed, *extra, prefix=prefix)
        sim = SimServer(d, port, proc)
        self.sims.append(sim)
        return sim

    def handshakes(self) -> int:
        text = (self.fix / "sshd.log").read_text(errors="replace")
        return len(re.findall(r"Accepted publickey for " + USER, text))

    def user_processes(self) -> list[str]:
        out = subprocess.run(["ps", "-u", USER, "-o", "pid=,args="], capture_output=True, text=True).stdout
        return [ln.strip() for ln in out.splitlines() if ln.strip() and "sshd" not in ln]

    def session_pids(self) -> list[int]:
        """PIDs of this fixture's per-connection 'sshd: cwtest@notty' processes (descendants of its own
        sshd, so that another test run on the same machine keeps its sessions)."""
        out = subprocess.run(["ps", "-eo", "pid=,ppid=,args="], capture_output=True, text=True).stdout
        parent: dict[int, int] = {}
        pids = []
        for ln in out.splitlines():
            parts = ln.split(None, 2)
            if len(parts) < 3:
                continue
            pid, ppid = int(parts[0]), int(parts[1])
            parent[pid] = ppid
            if f"sshd: {USER}@notty" in parts[2]:
                pids.append(pid)

        def ours(pid: int) -> bool:
            for _ in range(8):
                pid = parent.get(pid, 0)
                if pid == self.sshd.pid:
                    return True
                if pid <= 1:
                    return False
            return False

        return [p for p in pids if ours(p)]

    def close(self) -> None:
        for sim in self.sims:
            sim.stop()
        for p in (self.sshd, self.journald):
            if p is not None and p.poll() is None:
                p.terminate()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    p.wait(5)
        subprocess.run(["pkill", "-KILL", "-u", USER], capture_output=True)
        if self.cgroup is not None:
            with contextlib.suppress(OSError):
                for pid in (self.cgroup / "cgroup.procs").read_text().split():
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(int(pid), signal.SIGKILL)
                time.sleep(0.1)
                self.cgroup.rmdir()


def _cgroup_base() -> Path | None:
    for base in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified")):
        r = subprocess.run(["stat", "-fc", "%T", str(base)], capture_output=True, text=True)
        if r.stdout.strip() == "cgroup2fs":
            return base
    return None


def _journald(fix: Path) -> subprocess.Popen[bytes] | None:
    """Start a standalone journald unless one runs already; None when one is running. Under
    pytest-xdist the workers share one, started by the first under a lock and left running."""
    if not os.path.exists(JOURNALD):
        return None
    with open("/run/cwtest-journald.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        p = _journald_locked(fix)
    if p is not None and WORKER >= 0:
        _SHARED.append(p)  # held, so that it is never collected as a leaked child
        return None  # the other workers log to it: it outlives this worker
    return p


_SHARED: list[subprocess.Popen[bytes]] = []


def _journald_locked(fix: Path) -> subprocess.Popen[bytes] | None:
    mid = Path("/etc/machine-id")
    if not mid.exists() or not mid.read_text().strip():
        subprocess.run(["systemd-machine-id-setup"], capture_output=True)
    machine = mid.read_text().strip()
    subprocess.run(["install", "-d", "-m", "2755", "-g", "systemd-journal", "/run/log/journal"], capture_output=True)
    subprocess.run(["install", "-d", "-m", "2750", "-g", "systemd-journal", f"/run/log/journal/{machine}"], capture_output=True)
    probe = subprocess.run(["sh", "-c", "echo probe | systemd-cat -t cw-probe"], capture_output=True)
    if probe.returncode == 0:
        return None
    with open(fix / "journald.log", "wb") as log:
        p = subprocess.Popen([JOURNALD], stdout=log, stderr=subprocess.STDOUT)
    for _ in range(300):
        if os.path.exists("/run/systemd/journal/stdout"):
            break
        time.sleep(0.01)
    return p


def start(fix: Path) -> GpuHost:
    fix.chmod(0o711)
    if subprocess.run(["id", USER], capture_output=True).returncode != 0:
        sh("useradd", "-m", "-s", "/bin/sh", USER)
    sh("usermod", "-p", "*", USER)
    subprocess.run(["usermod", "-aG", "systemd-journal", USER], capture_output=True)
    (fix / "ak").mkdir(mode=0o755)
    (fix / "bin").mkdir(mode=0o755)
    sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(fix / "host_ed25519"), "-C", "cw-host")
    home = fix / "operator"
    (home / ".ssh").mkdir(parents=True, mode=0o700)
    key = home / ".ssh" / "id_gpu"
    sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key), "-C", "cw-client")
    shutil.copy(str(key) + ".pub", fix / "ak" / USER)
    (fix / "ak" / USER).chmod(0o644)
    # stand-ins first on the session PATH: they read the current simulator's feeds
    (fix / "bin" / "nvidia-smi").write_text(f"#!/bin/sh\nexec cat {fix}/current/gpu.csv\n")
    (fix / "bin" / "systemctl").write_text(
        f'#!/bin/sh\n[ "$1" = show ] || {{ echo "stand-in systemctl: only show" >&2; exit 1; }}\nexec cat {fix}/current/unit.state\n'
    )
    for f in ("nvidia-smi", "systemctl"):
        (fix / "bin" / f).chmod(0o755)
    port = free_port()
    (fix / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {fix}/host_ed25519\nPidFile {fix}/sshd.pid\n"
        f"AuthorizedKeysFile {fix}/ak/%u\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
        f"PubkeyAuthentication yes\nUsePAM no\nStrictModes no\nAllowTcpForwarding yes\n"
        f"SetEnv PATH={fix}/bin:/usr/local/bin:/usr/bin:/bin\nLogLevel VERBOSE\nMaxStartups 1000\nMaxSessions 50\n"
    )
    os.makedirs("/run/sshd", exist_ok=True)
    os.chmod("/run/sshd", 0o755)
    with open(fix / "sshd.log", "wb") as log:  # the child keeps its own descriptor
        sshd = subprocess.Popen([SSHD, "-D", "-e", "-f", str(fix / "sshd_config")], stdout=log, stderr=subprocess.STDOUT)
    for _ in range(500):
        try:
            with socket.create_connection(("127.0.0.1", port), 0.2) as s:
                if s.recv(8).startswith(b"SSH-"):
                    break
        except OSError:
            time.sleep(0.01)
    else:
        raise RuntimeError("test sshd did not come up: " + (fix / "sshd.log").read_text())
    hostkey = (fix / "host_ed25519.pub").read_text().split()
    (home / ".ssh" / "known_hosts").write_text(f"[127.0.0.1]:{port} {hostkey[0]} {hostkey[1]}\n")
    (home / ".ssh" / "config").write_text(
        f"Host gpu1\n  HostName 127.0.0.1\n  Port {port}\n  User {USER}\n  IdentityFile {key}\n  ServerAliveInterval 5\n"
        f"  UserKnownHostsFile {home}/.ssh/known_hosts\n"
    )
    journald = _journald(fix)
    unit = f"cw-{uuid.uuid4().hex[:8]}.service"
    base = _cgroup_base()
    cgroup = None
    if base is not None and os.path.exists("/run/systemd/journal/stdout"):
        cgroup = base / "system.slice" / unit
        cgroup.mkdir(parents=True, exist_ok=True)
    return GpuHost(fix, port, home, unit, cgroup, sshd, journald)


@dataclass
class NetnsHost:
    """A second host: its own network namespace, veth link and address, its own sshd (same user, keys
    and stand-ins as the loopback host). ``alias`` is its name in the operator's ssh config."""

    name: str
    alias: str
    addr: str
    sshd: subprocess.Popen[bytes]

    def link(self, up: bool) -> None:
        """Take the host's link down (a black hole) or up again."""
        subprocess.run(["ip", "link", "set", f"{self.name}a", "up" if up else "down"], check=True)

    def kill_sessions(self) -> None:
        """End every process in the namespace but the sshd listener: after a black hole the server side
        of a session never learns that its client went away (no ClientAlive keepalives here)."""
        out = subprocess.run(["ip", "netns", "pids", self.name], capture_output=True, text=True).stdout
        for pid in (int(x) for x in out.split() if x.isdigit()):
            if pid != self.sshd.pid:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)

    def close(self) -> None:
        self.kill_sessions()
        if self.sshd.poll() is None:
            self.sshd.kill()
            self.sshd.wait(5)
        subprocess.run(["ip", "link", "del", f"{self.name}a"], capture_output=True)
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True)


def netns_why_not() -> str | None:
    """Why a network-namespace host cannot be made here, or None."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "iproute2 (ip) is not installed"
    probe = f"cwp{os.getpid() % 100000}"
    r = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if r.returncode != 0:
        return f"ip netns add failed: {r.stderr.strip()[:120]}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def start_netns_host(host: GpuHost, alias: str, index: int) -> NetnsHost:
    """A sshd in a fresh network namespace at 10.213.<index>.2 (each xdist worker in its own block of
    twenty), reached over a veth pair."""
    name = f"cw{os.getpid() % 10000}n{index}"
    a, b = f"{name}a", f"{name}b"
    net = f"10.213.{index + 20 * max(WORKER, 0)}"
    sh("ip", "netns", "add", name)
    sh("ip", "link", "add", a, "type", "veth", "peer", "name", b)
    sh("ip", "link", "set", b, "netns", name)
    sh("ip", "addr", "add", f"{net}.1/30", "dev", a)
    sh("ip", "link", "set", a, "up")
    sh("ip", "netns", "exec", name, "ip", "addr", "add", f"{net}.2/30", "dev", b)
    sh("ip", "netns", "exec", name, "ip", "link", "set", b, "up")
    sh("ip", "netns", "exec", name, "ip", "link", "set", "lo", "up")
    cfg = host.fix / f"sshd_{name}.config"
    text = (host.fix / "sshd_config").read_text()
    text = text.replace("ListenAddress 127.0.0.1", f"ListenAddress {net}.2").replace(f"Port {host.port}", "Port 22")
    cfg.write_text(text.replace(f"PidFile {host.fix}/sshd.pid", f"PidFile {host.fix}/sshd_{name}.pid"))
    with open(host.fix / f"sshd_{name}.log", "wb") as log:
        sshd = subprocess.Popen(["ip", "netns", "exec", name, SSHD, "-D", "-e", "-f", str(cfg)], stdout=log, stderr=subprocess.STDOUT)
    for _ in range(500):
        try:
            with socket.create_connection((f"{net}.2", 22), 0.2) as s:
                if s.recv(8).startswith(b"SSH-"):
                    break
        except OSError:
            time.sleep(0.01)
    else:
        sshd.kill()
        raise RuntimeError("netns sshd did not come up: " + (host.fix / f"sshd_{name}.log").read_text())
    hostkey = (host.fix / "host_ed25519.pub").read_text().split()
    kh = host.home / ".ssh" / "known_hosts"
    kh.write_text(kh.read_text() + f"{net}.2 {hostkey[0]} {hostkey[1]}\n")
    cfg_ssh = host.home / ".ssh" / "config"
    text = cfg_ssh.read_text()
    block = text[text.index("Host gpu1") :].split("\nHost ", 1)[0]
    block = block.replace("Host gpu1", f"Host {alias}").replace("HostName 127.0.0.1", f"HostName {net}.2")
    block = "\n".join("  Port 22" if ln.strip().startswith("Port ") else ln for ln in block.splitlines())
    cfg_ssh.write_text(text + "\n" + block + "\n")
    return NetnsHost(name, alias, f"{net}.2", sshd)
