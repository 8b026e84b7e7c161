"""The CI examples run as written: their install line installs a built wheel into a fresh
environment, their wait line watches the simulator through the loopback SSH server, and the
artifacts they keep (NDJSON, JUnit, the GitHub step summary) exist and tell the verdict.

Lines that need the deployment's own secrets or a sudo-capable systemd host (the SSH key step,
the restart, the runner's apt-get) are the ones not run; each is named in SKIPPED."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]  # PyYAML ships no type hints; types-PyYAML is not a test extra
from conftest import ROOT

pytestmark = [pytest.mark.ssh, pytest.mark.slow]

SKIPPED = ("apt-get ", "install -m 600", "GPU_HOST_KNOWN_HOSTS", "~/.ssh", "systemctl restart")
"""Example lines that are the deployment's own business, not coldwatch's."""


def _skipped(line: str) -> bool:
    return any(s in line for s in SKIPPED)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A wheel built from this tree and a fresh environment in which the examples' install line runs."""
    base = tmp_path_factory.mktemp("install")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(base / "dist"), str(ROOT)], check=True, timeout=300)
    (wheel,) = (base / "dist").glob("coldwatch-*.whl")
    subprocess.run([sys.executable, "-m", "venv", str(base / "runner")], check=True, timeout=120)
    return {"INSTALL_COLDWATCH": str(wheel), "PATH": f"{base / 'runner' / 'bin'}:{os.environ['PATH']}", "VIRTUAL_ENV": str(base / "runner")}


def _run_lines(lines: list[str], env: dict[str, str], cwd: Path) -> list[tuple[str, int]]:
    codes = []
    for line in lines:
        if _skipped(line):
            continue
        r = subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
        codes.append((line, r.returncode))
        with (cwd / "log.txt").open("a") as f:
            f.write(f"$ {line}\n{r.stdout[-2000:]}{r.stderr}\n")
    return codes


def _env(gpu_host, installed: dict[str, str], sim, workdir: Path, extra: dict[str, str]) -> dict[str, str]:  # type: ignore[no-untyped-def]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COLDWATCH_", "GITHUB_", "VIRTUAL_ENV"))}
    env.update(gpu_host.env)
    env.update(installed)
    env.update(
        CI="true",
        GPU_HOST="gpu1",
        COLDWATCH_LOG_CMD=f"tail -n +1 -F {sim.dir}/server.log",
        COLDWATCH_URL=sim.url,
        COLDWATCH_INTERVAL="0.5",
        HOME=str(gpu_host.home),
    )
    env.update(extra)
    return env


def _check_artifacts(workdir: Path, ndjson: str, junit: str) -> dict[str, Any]:
    events = [json.loads(x) for x in (workdir / ndjson).read_text().splitlines() if x.strip()]
    res: dict[str, Any] = events[-1]
    assert res["event"] == "result" and res["outcome"] == "ready" and res["exit_code"] == 0
    suite = ET.parse(workdir / junit).getroot()
    case = suite.find("./testsuite/testcase")
    assert case is not None and case.find("failure") is None and case.find("error") is None
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["outcome"] == "ready" and "phase.weight_load.seconds" in props
    return res


def test_github_actions_example_runs(gpu_host, installed, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """examples/github-actions: install, wait; the uploaded artifacts and the job summary exist and say READY."""
    wf = yaml.safe_load((ROOT / "examples/github-actions/deploy.yml").read_text())
    (job,) = wf["jobs"].values()
    shutil.copytree(ROOT / "configs", tmp_path / "configs")  # the example reads the repository's config
    sim = gpu_host.start_sim("ready")
    summary = tmp_path / "summary.md"
    env = _env(
        gpu_host, installed, sim, tmp_path, {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary), "UNIT": wf["env"]["UNIT"]}
    )
    lines = []
    for step in job["steps"]:
        if "run" in step:
            for k, v in (step.get("env") or {}).items():
                if "${{" not in str(v):
                    env[k] = str(v)
            lines += [x for x in step["run"].splitlines() if x.strip()]
    codes = _run_lines(lines, env, tmp_path)
    assert [c for _, c in codes] == [0] * len(codes), (codes, (tmp_path / "log.txt").read_text())
    assert any("pip install" in line for line, _ in codes) and any("coldwatch wait" in line for line, _ in codes)
    upload = next(s for s in job["steps"] if "upload-artifact" in str(s.get("uses")))
    kept = upload["with"]["path"].split()
    assert kept == ["coldwatch.ndjson", "coldwatch.xml"]
    _check_artifacts(tmp_path, *kept)
    text = summary.read_text()
    assert "READY (exit 0)" in text and "| `weight_load` |" in text


def test_gitlab_example_runs(gpu_host, installed, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """examples/gitlab-ci: before_script and script lines run; every artifact path and the JUnit report exist."""
    ci = yaml.safe_load((ROOT / "examples/gitlab-ci/.gitlab-ci.yml").read_text())
    job = ci["restart-and-wait"]
    sim = gpu_host.start_sim("ready")
    env = _env(gpu_host, installed, sim, tmp_path, {"UNIT": ci["variables"]["UNIT"]})
    codes = _run_lines(job["before_script"] + job["script"], env, tmp_path)
    assert [c for _, c in codes] == [0] * len(codes), (codes, (tmp_path / "log.txt").read_text())
    assert any("pip install" in line for line, _ in codes) and any("coldwatch wait" in line for line, _ in codes)
    paths = job["artifacts"]["paths"]
    assert job["artifacts"]["reports"]["junit"] in paths
    _check_artifacts(tmp_path, "coldwatch.ndjson", job["artifacts"]["reports"]["junit"])
    assert "READY (exit 0)" in (tmp_path / "log.txt").read_text()  # the verdict stays in the job log


def test_deploy_script_keeps_events_and_names_the_failure(gpu_host, installed, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """examples/deploy: with EVENTS the NDJSON is kept; a failed start exits 3 with the reason in the log."""
    sim = gpu_host.start_sim("oom")
    env = _env(gpu_host, installed, sim, tmp_path, {"RESTART": "0", "EVENTS": str(tmp_path / "events.ndjson")})
    r = subprocess.run(
        ["bash", str(ROOT / "examples/deploy/deploy.sh"), "gpu1", "sglang"], env=env, capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 3, r.stderr
    assert "FAILED [oom] in graph_capture (exit 3)" in r.stderr and "failed to start" in r.stderr
    res = json.loads((tmp_path / "events.ndjson").read_text().splitlines()[-1])
    assert res["outcome"] == "failed" and res["failure_kind"] == "oom"


def test_deploy_script_says_how_to_install(tmp_path: Path) -> None:
    """deploy.sh without coldwatch on PATH: exit 2 and the install line, not 'command not found'."""
    env = {"PATH": str(tmp_path), "HOME": str(tmp_path), "RESTART": "0"}
    r = subprocess.run(
        [shutil.which("bash") or "bash", str(ROOT / "examples/deploy/deploy.sh"), "h", "u"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert r.returncode == 2 and "pipx install" in r.stderr
