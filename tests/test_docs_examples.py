"""Docs stay true: README exit codes equal the code, docs/cli.md equals --help, examples run."""

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

import pytest
from conftest import OWN_LOGS, ROOT, coldwatch

from coldwatch.exitcodes import MEANING


def test_readme_exit_code_table_matches_code() -> None:
    """Every row of the README's exit-code table is the code's own table."""
    text = (ROOT / "README.md").read_text()
    rows = dict(re.findall(r"^\| (\d+) \| (.+?) \|$", text, re.M))
    assert {int(k): v for k, v in rows.items()} == {int(k): v for k, v in MEANING.items()}


def test_readme_first_screen_has_two_commands() -> None:
    """The first screen: exactly two shell blocks, demo and the test script."""
    blocks = re.findall(r"```sh\n(.+?)\n```", (ROOT / "README.md").read_text().split("\n## ")[0], re.S)
    assert len(blocks) == 2 and "coldwatch demo" in blocks[0] and "scripts/test" in blocks[1]


def test_ci_runs_the_readme_test_command() -> None:
    """.ci/run calls the README's test command."""
    assert "./scripts/test" in (ROOT / ".ci" / "run").read_text()


def test_cli_docs_are_current() -> None:
    """docs/cli.md is what --help prints today (regenerate with scripts/gen_docs.py)."""
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_docs.py"), "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_library_example_runs() -> None:
    """examples/library prints a verdict per log and exits with the worst code."""
    r = subprocess.run(
        [sys.executable, str(ROOT / "examples/library/library_use.py"), *sorted(str(p) for p in OWN_LOGS.glob("*.log"))],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 3 and r.stdout.count("(exit") == 3 and "ready (exit 0)" in r.stdout


def test_replay_example_matches_its_readme() -> None:
    """examples/replay: the verdict its README promises."""
    r = coldwatch("replay", str(ROOT / "examples/replay/capture-oom.log"))
    assert r.returncode == 3 and "FAILED [oom] in graph_capture (exit 3)" in r.stderr.decode()


def test_ci_examples_are_valid_yaml_shape() -> None:
    """The CI examples call coldwatch wait and gate on its exit code."""
    for f in ("examples/github-actions/deploy.yml", "examples/gitlab-ci/.gitlab-ci.yml"):
        assert "coldwatch wait" in (ROOT / f).read_text()


@pytest.mark.ssh
def test_deploy_script_against_ssh_host(gpu_host: GpuHost) -> None:
    """examples/deploy/deploy.sh waits through the loopback SSH server and exits 0."""
    sim = gpu_host.start_sim("ready")
    env = {**os.environ, **gpu_host.env, "RESTART": "0", "PATH": f"{ROOT}/.venv/bin:{os.environ['PATH']}"}
    r = subprocess.run(
        [
            "bash",
            str(ROOT / "examples/deploy/deploy.sh"),
            "gpu1",
            "sglang",
            "--log-cmd",
            f"tail -n +1 -F {sim.dir}/server.log",
            "--url",
            sim.url,
            "--output",
            "plain",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=90,
    )
    assert r.returncode == 0, r.stderr
    assert "is ready" in r.stdout


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux not installed")
def test_demo_panel_in_a_real_terminal(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """demo in a pseudo-terminal: the live panel shows the phases in order and ends ready."""
    sock = str(tmp_path / "tmux.sock")
    out = tmp_path / "exit"
    cmd = f"{sys.executable} -m coldwatch demo --speed 0.3; echo $? > {out}; sleep 30"
    env = {**os.environ, "TERM": "xterm-256color"}
    env.pop("CI", None)
    subprocess.run(["tmux", "-S", sock, "new-session", "-d", "-x", "120", "-y", "50", cmd], check=True, env=env)
    try:
        seen: list[str] = []
        screen = ""
        for _ in range(200):
            screen = subprocess.run(["tmux", "-S", sock, "capture-pane", "-p"], capture_output=True, text=True).stdout
            for m in re.findall(r"[▶✓] (\w+)", screen):
                if m not in seen:
                    seen.append(m)
            if out.exists():
                break
            time.sleep(0.1)
        assert out.read_text().strip() == "0"
        assert "READY (exit 0)" in screen
        order = ["dist_init", "weight_load", "marlin_repack", "draft_init", "kv_alloc", "jit_compile", "graph_capture", "warmup", "ready"]
        assert [p for p in order if p in seen] == order
    finally:
        subprocess.run(["tmux", "-S", sock, "kill-server"], capture_output=True)


def test_readme_names_every_environment_variable() -> None:
    """The README's variable table: every setting's COLDWATCH_* variable, and no variable the code does not read."""
    from dataclasses import fields

    from coldwatch.settings import _INTERNAL, Settings, env_name

    text = (ROOT / "README.md").read_text()
    named = set(re.findall(r"`(COLDWATCH_[A-Z_]+)`", text))
    settings = {env_name(f.name) for f in fields(Settings) if f.name != "host" and f.name not in _INTERNAL}
    assert settings <= named, settings - named
    others = {"COLDWATCH_CONFIG", "COLDWATCH_PROFILE", "COLDWATCH_HOME", "COLDWATCH_ENGINES"}
    assert named <= settings | others, named - settings - others
    code = "".join(p.read_text() for p in (ROOT / "src").rglob("*.py")) + (ROOT / "scripts" / "engines.py").read_text()
    assert all(v in code for v in others)


def test_readme_install_section_fits_one_screen() -> None:
    """The install section comes right after the first screen and fits in one more (pipx, uv, a wheel; the host's needs)."""
    sections = (ROOT / "README.md").read_text().split("\n## ")
    install = sections[1]
    assert install.startswith("Install\n") and len(install.splitlines()) <= 50
    for needle in ("pipx install", "uv tool install", "pip install dist/coldwatch-", "systemd-journal", "nvidia-smi", "python3"):
        assert needle in install, needle
