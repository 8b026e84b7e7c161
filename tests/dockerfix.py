"""Real parts for the container tests: Debian's dockerd (started here when none runs, stopped after)
and a local image holding only a Python interpreter, built with ``docker import`` from this machine's
own interpreter (no registry is reachable). The simulator runs in it from the bind-mounted sources.

Needs root and ``docker.io`` (``apt-get install docker.io``); tests that use it are skipped with the
daemon's own error otherwise, never faked.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
SKIP_STDLIB = {
    "test",
    "idlelib",
    "tkinter",
    "turtledemo",
    "ensurepip",
    "lib2to3",
    "site-packages",
    "dist-packages",
    "config-3.11-x86_64-linux-gnu",
}


def docker_bin() -> str | None:
    return shutil.which("docker")


def why_not() -> str | None:
    if os.geteuid() != 0:
        return "needs root to run dockerd"
    if docker_bin() is None or shutil.which("dockerd") is None:
        return "docker.io is not installed (apt-get install docker.io)"
    return None


def docker(*args: str, timeout: float = 60, check: bool = True, runtime: str = "docker") -> subprocess.CompletedProcess[str]:
    exe = docker_bin() if runtime == "docker" else shutil.which(runtime)
    assert exe is not None
    r = subprocess.run([exe, *args], capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise RuntimeError(f"{runtime} {' '.join(args[:3])}: {(r.stderr or r.stdout).strip()[-400:]}")
    return r


class DaemonError(RuntimeError):
    pass


@dataclass
class Daemon:
    """A running dockerd: ours (started here, stopped by ``close``) or one that already ran."""

    proc: subprocess.Popen[bytes] | None
    log: Path
    images: list[str] = field(default_factory=list)

    def close(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


def _answers() -> str | None:
    """None when the daemon answers; else the client's error."""
    r = subprocess.run([docker_bin() or "docker", "version", "--format", "{{.Server.Version}}"], capture_output=True, text=True, timeout=20)
    return None if r.returncode == 0 else (r.stderr or r.stdout).strip()


def start_daemon(fix: Path) -> Daemon:
    """The machine's dockerd if one answers, else Debian's started now (default socket and data root,
    so the image stays cached); DaemonError with dockerd's own last lines when it cannot run here."""
    log = fix / "dockerd.log"
    if _answers() is None:
        return Daemon(None, log)
    with open(log, "wb") as out:
        proc = subprocess.Popen(["dockerd"], stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    err = "no answer"
    for _ in range(300):
        if proc.poll() is not None:
            break
        err = _answers() or ""
        if not err:
            return Daemon(proc, log)
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    proc.wait(5)
    tail = [ln for ln in log.read_text(errors="replace").splitlines() if "level=error" in ln or "level=fatal" in ln or "failed" in ln]
    raise DaemonError(f"dockerd did not come up: {(tail[-1] if tail else err)[-300:]}")


def _libs(path: str) -> set[str]:
    r = subprocess.run(["ldd", path], capture_output=True, text=True)
    out = set()
    for ln in r.stdout.splitlines():
        m = re.search(r"(/\S+) \(0x", ln)
        if m:
            out.add(m.group(1))
    return out


def _root_files() -> tuple[str, list[str]]:
    """This interpreter, its standard library (without tests and tools) and every shared library they load."""
    exe = (
        os.path.realpath(sys.base_exec_prefix + "/bin/python3")
        if os.path.exists(sys.base_exec_prefix + "/bin/python3")
        else os.path.realpath(sys.executable)
    )
    stdlib = sysconfig.get_paths()["stdlib"]
    files = [exe]
    for dirpath, dirnames, filenames in os.walk(stdlib):
        dirnames[:] = [d for d in dirnames if not (dirpath == stdlib and d in SKIP_STDLIB)]
        files += [os.path.join(dirpath, f) for f in filenames]
    libs = _libs(exe)
    for f in files:
        if f.endswith(".so"):
            libs |= _libs(f)
    return exe, sorted(set(files) | libs)


def build_image() -> str:
    """``coldwatch-py:HASH``, built once per interpreter (docker import of a root with python3 only)."""
    exe, files = _root_files()
    tag = "coldwatch-py:" + hashlib.sha256(("\n".join(files) + sys.version).encode()).hexdigest()[:12]
    if docker("image", "inspect", tag, check=False).returncode == 0:
        return tag
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for d in ("tmp", "opt/cw", "sim", "etc", "usr/bin"):
            info = tarfile.TarInfo(d)
            info.type = tarfile.DIRTYPE
            info.mode = 0o1777 if d == "tmp" else 0o755
            tar.addfile(info)
        for top in ("lib", "lib64", "bin", "sbin"):  # merged /usr: the same links as here
            if os.path.islink("/" + top):
                info = tarfile.TarInfo(top)
                info.type = tarfile.SYMTYPE
                info.linkname = os.readlink("/" + top)
                tar.addfile(info)
        added: set[str] = set()
        for f in files:
            real = os.path.realpath(f)
            if real not in added:
                added.add(real)
                tar.add(real, arcname=real.lstrip("/"), recursive=False)
            here = os.path.join(os.path.realpath(os.path.dirname(f)), os.path.basename(f))
            if here != real and here not in added:  # a symlinked library (libz.so.1 -> libz.so.1.2.13)
                added.add(here)
                info = tarfile.TarInfo(here.lstrip("/"))
                info.type = tarfile.SYMTYPE
                info.linkname = real
                tar.addfile(info)
        link = tarfile.TarInfo("usr/bin/python3")
        link.type = tarfile.SYMTYPE
        link.linkname = exe
        tar.addfile(link)
        passwd = b"root:x:0:0:root:/root:/bin/false\n"
        info = tarfile.TarInfo("etc/passwd")
        info.size = len(passwd)
        tar.addfile(info, io.BytesIO(passwd))
    r = subprocess.run([docker_bin() or "docker", "import", "-", tag], input=buf.getvalue(), capture_output=True, timeout=300)
    if r.returncode != 0:
        raise DaemonError(f"docker import failed: {r.stderr.decode(errors='replace').strip()[-300:]}")
    return tag


PODMAN_LIMITS = ("--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024")
"""Podman raises RLIMIT_NOFILE and RLIMIT_NPROC in a new container by default, which needs
CAP_SYS_RESOURCE; a sandbox without it (this one) refuses with "error setting rlimit type 7:
operation not permitted". Docker leaves them as they are."""


def podman_image(tag: str) -> str:
    """The same image in Podman's store (``docker save | podman load``); DaemonError when podman cannot run it."""
    if docker("image", "inspect", tag, check=False, runtime="podman").returncode != 0:
        with tempfile.NamedTemporaryFile(suffix=".tar") as tar:
            docker("save", "-o", tar.name, tag, timeout=300)
            docker("load", "-i", tar.name, timeout=300, runtime="podman")
    r = docker("run", "--rm", *PODMAN_LIMITS, tag, "python3", "-c", "print('ok')", check=False, runtime="podman")
    if r.stdout.strip() != "ok":
        raise DaemonError(f"podman cannot run a container here: {(r.stderr or r.stdout).strip()[-300:]}")
    return "localhost/" + tag


@dataclass
class SimContainer:
    """The simulator as a container's main process; its feeds (gpu.csv, ready.ts) in ``dir`` on the host."""

    name: str
    dir: Path
    port: int
    host_port: int | None
    runtime: str = "docker"

    def logs(self) -> str:
        return docker("logs", self.name, check=False, runtime=self.runtime).stdout


def run_sim(
    image: str,
    d: Path,
    scenario: str = "ready",
    speed: float = 0.15,
    *extra: str,
    restart: str | None = None,
    network: str = "bridge",
    name: str | None = None,
    port: int = 30000,
    runtime: str = "docker",
) -> SimContainer:
    """``docker run -d`` the simulator; with bridge networking its port is published on a free host port."""
    name = name or f"cwsim-{uuid.uuid4().hex[:8]}"
    d.mkdir(parents=True, exist_ok=True)
    d.chmod(0o777)
    (d / "scenario").write_text(scenario)
    args = ["run", "-d", "--name", name, "-v", f"{SRC}:/opt/cw:ro", "-v", f"{d}:/sim", "-e", "PYTHONPATH=/opt/cw", "--network", network]
    if network == "bridge":
        args += ["-p", f"127.0.0.1::{port}"]
    if restart:
        args += ["--restart", restart]
    if runtime == "podman":
        args += PODMAN_LIMITS
    cmd = ["python3", "-u", "-m", "coldwatch.sim", "--dir", "/sim", "--port", str(port), "--bind", "0.0.0.0", "--stdout"]
    cmd += ["--scenario-file", "/sim/scenario", "--speed", str(speed), "--linger", "600", *extra]
    docker(*args, image, *cmd, runtime=runtime)
    host_port = None
    if network == "bridge":
        out = docker("port", name, f"{port}/tcp", runtime=runtime).stdout.strip().splitlines()
        host_port = int(out[0].rsplit(":", 1)[1]) if out else None
    return SimContainer(name, d, port, host_port, runtime)


def remove(name: str, runtime: str = "docker") -> None:
    docker("rm", "-f", name, check=False, runtime=runtime)
