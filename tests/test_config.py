"""Config files load and validate; precedence is flags > env > profile > file top level > defaults."""

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
    """flags > COLDWATCH_* > [profiles.NAME] > the file's top level > defaults."""
    f = tmp_path / "c.toml"
    f.write_text('timeout = "5m"\nunit = "from-file"\n[profiles.p]\nunit = "from-profile"\ninterval = 7\nstall-after = "1m"\n')
    s = resolve({}, f, "p")
    assert (s.unit, s.interval, s.timeout, s.stall_after) == ("from-profile", 7.0, 300.0, 60.0)
    assert resolve({}, f).unit == "from-file"
    assert resolve({}).timeout == 1800.0
    monkeypatch.setenv("COLDWATCH_TIMEOUT", "1h")
    monkeypatch.setenv("COLDWATCH_UNIT", "from-env")
    assert (resolve({}, f, "p").timeout, resolve({}, f, "p").unit) == (3600.0, "from-env")
    assert resolve({"timeout": "90s", "unit": "from-flag"}, f, "p").timeout == 90.0
    assert resolve({"unit": "from-flag"}, f, "p").unit == "from-flag"


def test_shipped_profile_overrides_the_top_level() -> None:
    """configs/sglang.toml: --profile fast really shortens the deadline and the stall budget."""
    base = resolve({}, ROOT / "configs" / "sglang.toml")
    fast = resolve({}, ROOT / "configs" / "sglang.toml", "fast")
    assert (base.timeout, base.stall_after) == (1800.0, 600.0)
    assert (fast.timeout, fast.stall_after) == (300.0, 120.0)


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["--timeout", "soon"], {}, "coldwatch: --timeout: expected a duration such as 90, 90s, 15m or 1h, got 'soon'"),
        (["--interval", "0"], {}, "coldwatch: --interval: must be more than 0, got 0"),
        (["--max-restarts", "-1"], {}, "coldwatch: --max-restarts: expected 0 or more, got -1"),
        (["--pid", "0"], {}, "coldwatch: --pid: expected a positive process id, got 0"),
        (
            [],
            {"COLDWATCH_UNIT": "a;b"},
            "coldwatch: COLDWATCH_UNIT: 'a;b' is not a valid systemd unit name (letters, digits, ':-_.\\', one '@', a type suffix)",
        ),
        (
            [],
            {"COLDWATCH_STALL_AFTER": "later"},
            "coldwatch: COLDWATCH_STALL_AFTER: expected a duration such as 90, 90s, 15m or 1h, got 'later'",
        ),
        ([], {"COLDWATCH_INTERVAL": "0"}, "coldwatch: COLDWATCH_INTERVAL: must be more than 0, got 0"),
        ([], {"COLDWATCH_OUTPUT": "fancy"}, "coldwatch: COLDWATCH_OUTPUT: expected one of auto, live, plain, json, got 'fancy'"),
        ([], {"COLDWATCH_URL": "ftp://x"}, "coldwatch: COLDWATCH_URL: expected http(s)://HOST[:PORT], got 'ftp://x'"),
    ],
)
def test_messages_name_the_source_once(args: list[str], env: dict[str, str], message: str) -> None:
    """A bad value is one line naming where it came from (the flag or the variable), never doubled."""
    r = coldwatch("wait", *args, env=env)
    assert r.returncode == 2
    assert r.stderr.decode().strip() == message


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ('timeout = "soon"', "timeout"),
        ('colour = "blue"', "unknown key 'colour'"),
        ('check = ["vibes"]', "unknown check"),
        ('unit = "a;rm -rf /"', "not a valid systemd unit name"),
        ('url = "ftp://x"', "bad.toml: url: expected http(s)://HOST[:PORT]"),
        ("[profiles.p]\nmax-restarts = -2", "[profiles.p]: max-restarts: expected 0 or more, got -2"),
        ("timeout = = 3", "not valid TOML"),
        ("max-restarts = inf", "bad.toml: max-restarts: expected a whole number, got inf"),
        ("port = nan", "bad.toml: port: expected a whole number, got nan"),
    ],
)
def test_invalid_config_names_file_and_key(tmp_path: Path, content: str, needle: str) -> None:
    """A bad config: one line naming the file (or key) and the problem; exit 2 from the CLI."""
    f = tmp_path / "bad.toml"
    f.write_text(content + "\n")
    profile = ["--profile", "p"] if "[profiles.p]" in content else []
    with pytest.raises(ConfigError) as exc:
        resolve({}, f, profile[-1] if profile else None)
    assert needle in str(exc.value)
    r = coldwatch("wait", "--config", str(f), *profile)
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
