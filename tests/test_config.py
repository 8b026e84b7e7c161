"""Config files load and validate; precedence is flags > env > file > profile > defaults."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ROOT, coldwatch

from coldwatch.errors import ConfigError
from coldwatch.settings import parse_duration, resolve


@pytest.mark.parametrize("name", ["sglang.toml", "kimi-k26-ddtree.toml", "vllm.toml"])
def test_shipped_configs_load(name: str) -> None:
    """Every example config in configs/ loads and validates."""
    s = resolve({}, ROOT / "configs" / name)
    assert s.unit and s.url.startswith("http://")


def test_reference_deployment_values() -> None:
    """The reference deployment: its unit, port 30001, 20 minutes, both checks."""
    s = resolve({}, ROOT / "configs" / "kimi-k26-ddtree.toml")
    assert (s.unit, s.url, s.timeout, s.check) == ("sglang-k26-ddtree", "http://127.0.0.1:30001", 1200.0, ["reasoning", "tools"])
    assert s.model == "/root/models/Kimi-K2.6"


def test_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """flags > COLDWATCH_* > file > profile > defaults."""
    f = tmp_path / "c.toml"
    f.write_text('timeout = "5m"\nunit = "from-file"\n[profiles.p]\nunit = "from-profile"\ninterval = 7\nstall-after = "1m"\n')
    s = resolve({}, f, "p")
    assert (s.unit, s.interval, s.timeout, s.stall_after) == ("from-file", 7.0, 300.0, 60.0)
    assert resolve({}).timeout == 1800.0
    monkeypatch.setenv("COLDWATCH_TIMEOUT", "1h")
    assert resolve({}, f, "p").timeout == 3600.0
    assert resolve({"timeout": "90s"}, f, "p").timeout == 90.0


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ('timeout = "soon"', "timeout"),
        ('colour = "blue"', "unknown key 'colour'"),
        ('check = ["vibes"]', "unknown check"),
        ('unit = "a;rm -rf /"', "not a valid systemd unit name"),
        ('url = "ftp://x"', "--url"),
        ("timeout = = 3", "not valid TOML"),
    ],
)
def test_invalid_config_names_file_and_key(tmp_path: Path, content: str, needle: str) -> None:
    """A bad config: one line naming the file (or key) and the problem; exit 2 from the CLI."""
    f = tmp_path / "bad.toml"
    f.write_text(content + "\n")
    with pytest.raises(ConfigError) as exc:
        resolve({}, f)
    assert needle in str(exc.value)
    r = coldwatch("wait", "--config", str(f))
    assert r.returncode == 2 and "Traceback" not in r.stderr.decode() and len(r.stderr.decode().strip().splitlines()) == 1


def test_unreadable_config_and_missing_profile(tmp_path: Path) -> None:
    """A missing file and a missing profile are both usage errors."""
    r = coldwatch("wait", "--config", str(tmp_path / "nope.toml"))
    assert r.returncode == 2 and "nope.toml" in r.stderr.decode()
    f = tmp_path / "c.toml"
    f.write_text('unit = "x"\n')
    r = coldwatch("wait", "--config", str(f), "--profile", "prod")
    assert r.returncode == 2 and "profile 'prod' not found" in r.stderr.decode()


@pytest.mark.parametrize(("text", "secs"), [("90", 90.0), ("90s", 90.0), ("15m", 900.0), ("1h", 3600.0), ("0", 0.0)])
def test_durations(text: str, secs: float) -> None:
    """The duration forms of the contract."""
    assert parse_duration(text, "x") == secs


@pytest.mark.parametrize("bad", ["unit$(reboot)", "a b", "x;y", "q'uote", "new\nline"])
def test_hostile_unit_names_refused(bad: str) -> None:
    """A unit name with shell syntax never reaches a shell: exit 2."""
    r = coldwatch("wait", "--unit", bad, "--timeout", "1")
    assert r.returncode == 2 and "systemd unit name" in r.stderr.decode()
