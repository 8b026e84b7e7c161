"""coldwatch wait against a real OpenSSH server on loopback, with the simulator as the server."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hostfix import GpuHost

import time
from pathlib import Path

import pytest
from conftest import coldwatch, json_lines

pytestmark = pytest.mark.ssh

ORDER = ["dist_init", "weight_load", "marlin_repack", "draft_init", "kv_alloc", "jit_compile", "graph_capture", "warmup", "ready"]


def _own_known_hosts(gpu_host: GpuHost, home: Path) -> str:
    """The fixture's ssh config, but with known_hosts in ``home``."""
    cfg = (gpu_host.home / ".ssh" / "config").read_text()
    return str(cfg.replace(str(gpu_host.home / ".ssh" / "known_hosts"), str(home / ".ssh" / "known_hosts")))


def wait(gpu_host, *args: str, timeout: float = 90):  # type: ignore[no-untyped-def]
    return coldwatch("wait", *args, "--output", "json", env=gpu_host.env, timeout=timeout)


def test_ready_through_ssh_one_handshake(gpu_host: GpuHost) -> None:
    """Ready over SSH: exit 0, every phase in order, GPU samples, and exactly one SSH handshake."""
    sim = gpu_host.start_sim("ready")
    before = gpu_host.handshakes()
    r = wait(gpu_host, "gpu1", "--log-cmd", f"tail -n +1 -F {sim.dir}/server.log", "--url", sim.url, "--interval", "0.5")
    assert r.returncode == 0, r.stderr.decode()
    evs = json_lines(r.stdout)
    res = evs[-1]
    assert res["event"] == "result" and res["outcome"] == "ready" and res["model"] == "moonshotai/Kimi-K2.6"
    phases = [e["phase"] for e in evs if e["event"] == "phase"]
    assert phases == ORDER
    gpus = [e for e in evs if e["event"] == "gpu"]
    assert gpus and len(gpus[-1]["gpus"]) == 8 and gpus[-1]["gpus"][0]["total_mib"] == 97871
    http = [e["state"] for e in evs if e["event"] == "http"]
    assert http[0] == "refused" and http[-1] == "ready"
    time.sleep(0.3)
    assert gpu_host.handshakes() - before == 1
    assert res["ssh_bytes"]["sent"] > 0 and res["ssh_bytes"]["received"] > 0


def test_journald_default_path(gpu_host: GpuHost) -> None:
    """The default journalctl -u UNIT -f -a path over SSH: real journald, CR-joined bars, scoped by --since."""
    if gpu_host.cgroup is None:
        pytest.skip("no cgroup2 hierarchy for a journald unit")
    sim = gpu_host.start_sim("ready", 0.15, True)
    r = wait(gpu_host, "gpu1", "--unit", gpu_host.unit, "--url", sim.url, "--interval", "0.5")
    assert r.returncode == 0, r.stderr.decode()
    evs = json_lines(r.stdout)
    phases = [e["phase"] for e in evs if e["event"] == "phase"]
    assert "weight_load" in phases and "graph_capture" in phases and phases[-1] == "ready"
    assert any(e["event"] == "progress" and e["phase"] == "weight_load" and e["done"] == 64 for e in evs)


def test_oom_in_capture_exits_3_with_cause(gpu_host: GpuHost) -> None:
    """An OOM during graph capture: exit 3, kind oom, the allocator's line as the cause."""
    sim = gpu_host.start_sim("oom")
    r = wait(gpu_host, "gpu1", "--log-cmd", f"tail -n +1 -F {sim.dir}/server.log", "--url", sim.url)
    assert r.returncode == 3
    res = json_lines(r.stdout)[-1]
    assert (res["outcome"], res["failure_kind"], res["phase"]) == ("failed", "oom", "graph_capture")
    assert "CUDA out of memory" in res["reason"]


def test_silent_death_exits_3(gpu_host: GpuHost) -> None:
    """The process dies with nothing in the log: the unit state decides, exit 3."""
    sim = gpu_host.start_sim("silent_death")
    r = wait(gpu_host, "gpu1", "--log-cmd", f"tail -n +1 -F {sim.dir}/server.log", "--url", sim.url, "--interval", "0.5")
    assert r.returncode == 3
    res = json_lines(r.stdout)[-1]
    assert res["failure_kind"] == "killed" and res["phase"] == "weight_load"


def test_error_body_with_choices_is_never_ready(gpu_host: GpuHost) -> None:
    """HTTP 200 whose body is an error mentioning 'choices': not ready; the deadline passes (124)."""
    sim = gpu_host.start_sim("error_body")
    r = wait(gpu_host, "gpu1", "--log-cmd", f"tail -n +1 -F {sim.dir}/server.log", "--url", sim.url, "--timeout", "8s", "--interval", "0.5")
    assert r.returncode == 124
    res = json_lines(r.stdout)[-1]
    assert res["outcome"] == "timeout" and "200 but no choices" in res["reason"]


def test_no_remote_process_left_behind(gpu_host: GpuHost) -> None:
    """After a run, the remote tail/journalctl and samplers are gone."""
    sim = gpu_host.start_sim("oom")
    wait(gpu_host, "gpu1", "--log-cmd", f"tail -n +1 -F {sim.dir}/server.log", "--url", sim.url)
    for _ in range(30):
        if not gpu_host.user_processes():
            break
        time.sleep(0.1)
    assert gpu_host.user_processes() == []


def test_unknown_host_key_refused_then_accepted(gpu_host: GpuHost, tmp_path: Path) -> None:
    """An unknown key: exit 4 naming its fingerprint; --accept-new-host-key records it and connects."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "config").write_text(_own_known_hosts(gpu_host, home))
    env = {"HOME": str(home)}
    sim = gpu_host.start_sim("ready")
    args = ["wait", "gpu1", "--log-cmd", f"tail -n +1 -F {sim.dir}/server.log", "--url", sim.url, "-o", "plain"]
    r = coldwatch(*args, env=env)
    err = r.stderr.decode()
    assert r.returncode == 4 and "not in" in err and "SHA256:" in err and "Traceback" not in err
    r = coldwatch(*args, "--accept-new-host-key", env=env)
    assert r.returncode == 0, r.stderr.decode()
    assert f"[127.0.0.1]:{gpu_host.port} ssh-ed25519" in (home / ".ssh" / "known_hosts").read_text()


def test_changed_host_key_always_refused(gpu_host: GpuHost, tmp_path: Path) -> None:
    """A changed key is refused even with --accept-new-host-key, naming both fingerprints."""
    import subprocess

    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "config").write_text(_own_known_hosts(gpu_host, home))
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "other")], check=True)
    other = (tmp_path / "other.pub").read_text().split()
    (home / ".ssh" / "known_hosts").write_text(f"[127.0.0.1]:{gpu_host.port} {other[0]} {other[1]}\n")
    r = coldwatch("wait", "gpu1", "--accept-new-host-key", "--timeout", "5", env={"HOME": str(home)})
    err = r.stderr.decode()
    assert r.returncode == 4 and "CHANGED" in err and err.count("SHA256:") == 2


def test_wrong_port_is_unreachable(gpu_host: GpuHost) -> None:
    """Nothing listens: one line, exit 4."""
    from coldwatch.sim import free_port

    r = coldwatch("wait", f"cwtest@127.0.0.1:{free_port()}", "--timeout", "5", env=gpu_host.env)
    err = r.stderr.decode()
    assert r.returncode == 4 and "refused" in err.lower() and len(err.strip().splitlines()) == 1


def test_api_key_never_printed(gpu_host: GpuHost) -> None:
    """The API key appears in no output (JSON, plain) and not in the history file."""
    sim = gpu_host.start_sim("ready")
    secret = "sk-SECRET-0123456789"
    r = wait(gpu_host, "gpu1", "--log-cmd", f"tail -n +1 -F {sim.dir}/server.log", "--url", sim.url, "--api-key", secret)
    assert r.returncode == 0
    hist = gpu_host.home / "cw" / "history.jsonl"
    assert secret.encode() not in r.stdout + r.stderr
    assert secret not in hist.read_text() and (hist.stat().st_mode & 0o777) == 0o600


def test_proxyjump_from_ssh_config(gpu_host: GpuHost, tmp_path: Path) -> None:
    """A ~/.ssh/config alias with ProxyJump: connected through the jump host (two handshakes), then ready."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    cfg = (gpu_host.home / ".ssh" / "config").read_text()
    (home / ".ssh" / "config").write_text(
        cfg + cfg.replace("Host gpu1", "Host inner").replace("HostName 127.0.0.1", "HostName 127.0.0.1\n  ProxyJump gpu1")
    )
    sim = gpu_host.start_sim("ready")
    hs = gpu_host.handshakes()
    r = coldwatch(
        "wait",
        "inner",
        "--log-cmd",
        f"tail -n +1 -F {sim.dir}/server.log",
        "--url",
        sim.url,
        "-o",
        "json",
        env={"HOME": str(home), "COLDWATCH_HOME": str(tmp_path / "cw")},
    )
    assert r.returncode == 0, r.stderr.decode()
    time.sleep(0.3)
    assert gpu_host.handshakes() - hs == 2


def test_interrupt_leaves_no_remote_process(gpu_host: GpuHost) -> None:
    """Ctrl-C mid-wait over SSH: exit 130, and the remote follower and samplers are gone."""
    import os
    import signal
    import subprocess
    import sys

    sim = gpu_host.start_sim("ready", 1.0)
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "coldwatch",
            "wait",
            "gpu1",
            "--log-cmd",
            f"tail -n +1 -F {sim.dir}/server.log",
            "--url",
            sim.url,
            "-o",
            "json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **gpu_host.env},
        preexec_fn=_foreground,
    )
    time.sleep(3)
    assert any("tail" in ln for ln in gpu_host.user_processes())
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=20)
    assert p.returncode == 130 and json_lines(out)[-1]["outcome"] == "interrupted"
    for _ in range(40):
        if not gpu_host.user_processes():
            break
        time.sleep(0.1)
    assert gpu_host.user_processes() == []


def _foreground() -> None:
    """As from a terminal: SIGINT is not ignored (a background job, e.g. CI under nohup, inherits SIG_IGN)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_a_port_the_sampler_sees_free_is_not_probed_every_interval(gpu_host: GpuHost) -> None:
    """While the server loads and nothing listens on its port (the sampler says so every interval),
    the refused probe is sent every PROBE_REFRESH seconds, not every --interval: each one is a channel
    open on the host's sshd (at fleet scale most of the watcher's CPU). The watch still shows the
    refused port, and a ready start after it is still seen."""
    sim = gpu_host.start_sim("hang_load", 0.15)
    pid = (sim.dir / "sim.pid").read_text().strip()
    log = gpu_host.fix / "sshd.log"
    before = len(log.read_text(errors="replace"))
    r = wait(
        gpu_host, "gpu1", "--log-cmd", f"tail -n +1 -F {sim.dir}/server.log", "--url", sim.url, "--pid", pid,
        "--interval", "0.5", "--timeout", "12s", timeout=60,
    )  # fmt: skip
    assert r.returncode == 124, r.stderr.decode()
    probes = log.read_text(errors="replace")[before:].count(f"port {sim.port}: failed.")
    assert 1 <= probes <= 5, f"{probes} refused probes in 12 s at --interval 0.5 (every interval: 24)"
    http = [e for e in json_lines(r.stdout) if e["event"] == "http"]
    assert [e["state"] for e in http] == ["refused"]

    ready = gpu_host.start_sim("ready")
    r = wait(
        gpu_host, "gpu1", "--log-cmd", f"tail -n +1 -F {ready.dir}/server.log", "--url", ready.url,
        "--pid", (ready.dir / "sim.pid").read_text().strip(), "--interval", "0.5",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr.decode()
    states = [e["state"] for e in json_lines(r.stdout) if e["event"] == "http"]
    assert states[0] == "refused" and states[-1] == "ready"
