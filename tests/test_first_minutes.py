"""What a new user meets first: the package as installed (dependencies, LICENSE, py.typed), readable
--help, the demo's own defaults, the simulator's progress bars, ~/.ssh/config Include and Match."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hostfix import GpuHost

import ast
import re
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT, coldwatch

from coldwatch.hosts.ssh import _lookup
from coldwatch.sim import SCENARIOS, spawn, tqdm_times

COMMANDS = ["wait", "replay", "status", "history", "demo"]


def _third_party_imports() -> set[str]:
    names: set[str] = set()
    for f in (ROOT / "src" / "coldwatch").rglob("*.py"):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Import):
                names.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return {n for n in names if n not in sys.stdlib_module_names and n != "coldwatch"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(ROOT)], check=True, timeout=300)
    (path,) = out.glob("coldwatch-*.whl")
    return zipfile.ZipFile(path)


def test_wheel_declares_every_import_and_ships_license_and_types(wheel: zipfile.ZipFile) -> None:
    """The built wheel: every third-party module the code imports is a declared dependency (httpcore
    too), the Apache-2.0 LICENSE travels in it, and py.typed marks it typed for library users."""
    names = wheel.namelist()
    meta = wheel.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    declared = {
        re.split(r"[<>=!~;\[ ]", line.split(":", 1)[1].strip())[0].lower()
        for line in meta.splitlines()
        if line.startswith("Requires-Dist:") and "extra ==" not in line
    }
    assert _third_party_imports() <= declared, _third_party_imports() - declared
    assert "httpcore" in declared
    assert "coldwatch/py.typed" in names and "coldwatch/phases/rules/sglang.toml" in names
    lic = next(n for n in names if n.endswith("/LICENSE"))
    assert "Apache License" in wheel.read(lic).decode() and "Version 2.0, January 2004" in wheel.read(lic).decode()
    assert "License-File: LICENSE" in meta


@pytest.mark.parametrize("command", COMMANDS)
def test_help_has_readable_metavars(command: str) -> None:
    """No Python type names as metavars (<list[str]>, <list[Path]>, <float>) in any option's help."""
    r = coldwatch(command, "--help", env={"COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"})
    text = r.stdout.decode()
    assert r.returncode == 0
    options = [ln for ln in text.splitlines() if ln.strip().startswith("-")]
    assert options and not [ln for ln in options if re.search(r"<[\w\[\], ]+>", ln)]


def test_demo_help_shows_its_own_defaults_and_every_scenario() -> None:
    """demo --help: the demo's 3m deadline and 20s/10m stall budget (not wait's 30m), and all scenarios."""
    text = " ".join(coldwatch("demo", "--help", env={"COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"}).stdout.decode().split())
    assert "[default: 3m]" in text and "[default: 20s for the hang scenarios, 10m otherwise]" in text and "30m" not in text
    for name in SCENARIOS:
        assert re.search(rf"\b{name}\b", text), name


def test_simulator_bars_have_real_clock_fields(tmp_path: Path) -> None:
    """The simulator's tqdm bars: elapsed and remaining as MM:SS that count, never [00:64<00:00."""
    assert tqdm_times(64, 64, 10.0) == "[00:10<00:00, 6.40it/s]"
    assert tqdm_times(5, 36, 200.0) == "[00:28<02:52, 5.56s/it]"
    proc, _port = spawn(tmp_path, "ready", 0.05, linger=1)
    try:
        deadline = time.monotonic() + 60
        while "fired up" not in (tmp_path / "server.log").read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        proc.terminate()
        proc.wait(5)
    stamps = re.findall(r"\[(\d\d):(\d\d)<(\d\d):(\d\d),", (tmp_path / "server.log").read_text())
    assert len(stamps) > 60
    assert all(int(s) < 60 for _m1, s, _m2, s2 in stamps for s in (s, s2))


def test_ssh_config_include_and_match(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """~/.ssh/config: Include (glob, relative to ~/.ssh, nested) is followed; lines after an Include
    stay in their block; Match host sets HostName-based User/Port/IdentityFile."""
    monkeypatch.setenv("HOME", str(tmp_path))
    ssh = tmp_path / ".ssh"
    (ssh / "conf.d").mkdir(parents=True)
    (ssh / "config").write_text(
        "Include conf.d/*.conf missing/*.conf\n"
        "Host gpu-b\n  Include extra\n  User after-include\n"
        "Match host 10.9.8.7\n  User matched\n  Port 2222\n  IdentityFile ~/.ssh/id_match\n"
    )
    (ssh / "conf.d" / "10-a.conf").write_text("Host gpu-a\n  HostName 10.9.8.7\nInclude ~/.ssh/nested\n")
    (ssh / "nested").write_text("Host gpu-c\n  HostName 10.0.0.3\n  Port 2203\n")
    (ssh / "extra").write_text("  HostName 10.9.8.8\n  Port 2200\n")
    a = _lookup("gpu-a", None)
    assert (a["hostname"], a["user"], a["port"], a["identityfile"]) == ("10.9.8.7", "matched", "2222", [str(ssh / "id_match")])
    b = _lookup("gpu-b", None)
    assert (b["hostname"], b["port"], b["user"]) == ("10.9.8.8", "2200", "after-include")
    c = _lookup("gpu-c", None)
    assert (c["hostname"], c["port"]) == ("10.0.0.3", "2203")


def test_ssh_config_include_loop_is_a_usage_error(tmp_path: Path) -> None:
    """A config that includes itself: exit 2 with one line, not a recursion traceback."""
    (tmp_path / ".ssh").mkdir()
    (tmp_path / ".ssh" / "config").write_text("Include config\n")
    r = coldwatch("wait", "somehost", env={"HOME": str(tmp_path)})
    assert r.returncode == 2 and "Include nested more than 16 deep" in r.stderr.decode()


@pytest.mark.ssh
def test_wait_through_an_alias_from_an_included_file(gpu_host: GpuHost, tmp_path: Path) -> None:
    """An alias defined only in an Included file, its port and user from a Match block: wait connects and is ready."""
    cfg = (gpu_host.home / ".ssh" / "config").read_text()
    fields = dict(re.findall(r"^\s+(\w+) (.+)$", cfg, re.M))
    home = tmp_path / "home"
    (home / ".ssh" / "config.d").mkdir(parents=True)
    (home / ".ssh" / "config").write_text(
        f"Include config.d/*\nMatch host {fields['HostName']}\n  Port {fields['Port']}\n  User {fields['User']}\n"
        f"  IdentityFile {fields['IdentityFile']}\n  UserKnownHostsFile {fields['UserKnownHostsFile']}\n"
    )
    (home / ".ssh" / "config.d" / "gpu").write_text(f"Host via-include\n  HostName {fields['HostName']}\n")
    sim = gpu_host.start_sim("ready")
    r = coldwatch(
        "wait", "via-include", "--log-cmd", f"tail -n +1 -F {sim.dir}/server.log", "--url", sim.url, "--output", "plain",
        env={"HOME": str(home), "COLDWATCH_HOME": str(tmp_path / "cw")}, timeout=90,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr.decode()
    assert "READY (exit 0)" in r.stderr.decode()
