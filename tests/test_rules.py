"""Rules are data: shipped files load, users override by id, bad files give one clear line."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import coldwatch

from coldwatch.errors import ConfigError
from coldwatch.normalise import normalise
from coldwatch.phases import PHASES, Classifier, load_rules


def feed_all(c: Classifier, text: str) -> None:
    for line in normalise([text.encode()]):
        c.feed(line)


def test_builtin_rules_use_only_the_vocabulary() -> None:
    """Every shipped rule names a phase of the fixed vocabulary."""
    rules = load_rules()
    assert rules.phase and rules.bar and rules.failure
    for r in rules.phase:
        assert (r.enter is None or r.enter in PHASES) and all(p in PHASES for p in r.end)


def test_user_rule_adds_a_marker(tmp_path: Path) -> None:
    """A user file can teach a new ready line without touching the package."""
    f = tmp_path / "mine.toml"
    f.write_text('[[phase]]\nid = "site.ready"\npattern = "MYSERVER READY"\nenter = "ready"\nglobal = true\n')
    c = Classifier(load_rules([f]))
    feed_all(c, "[2026-01-01 00:00:00] Load weight begin. avail mem=1 GB\n[2026-01-01 00:00:05] MYSERVER READY\n")
    assert c.state.outcome == "ready"


def test_user_rule_replaces_by_id(tmp_path: Path) -> None:
    """A rule with a shipped id replaces it: here the ready line is disabled."""
    f = tmp_path / "o.toml"
    f.write_text('[[phase]]\nid = "sglang.ready"\npattern = "NEVER MATCHES THIS"\nenter = "ready"\nglobal = true\n')
    c = Classifier(load_rules([f]))
    feed_all(c, "[2026-01-01 00:00:00] The server is fired up and ready to roll!\n")
    assert c.state.outcome == "pending"


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("[[phase]]\nid='x'\npattern='('\nenter='ready'\n", "invalid regex"),
        ("[[phase]]\nid='x'\npattern='a'\nenter='lunch'\n", "unknown phase 'lunch'"),
        ("[[failure]]\nid='x'\npattern='a'\nkind='sad'\n", "unknown failure kind"),
        ("[[phase]]\npattern='a'\n", "missing key 'id'"),
        ("this is = = not toml", "not valid TOML"),
    ],
)
def test_bad_rules_file_is_a_config_error(tmp_path: Path, content: str, needle: str) -> None:
    """Each mistake in a rules file is named with the file."""
    f = tmp_path / "bad.toml"
    f.write_text(content)
    with pytest.raises(ConfigError) as exc:
        load_rules([f])
    assert needle in str(exc.value) and str(f) in str(exc.value)


def test_bad_rules_file_exits_2_from_cli(tmp_path: Path) -> None:
    """From the CLI the same mistake is one line and exit 2."""
    f = tmp_path / "bad.toml"
    f.write_text("[[phase]]\nid='x'\npattern='('\nenter='ready'\n")
    log = tmp_path / "l.log"
    log.write_text("x\n")
    r = coldwatch("replay", str(log), "--rules", str(f))
    assert r.returncode == 2 and "invalid regex" in r.stderr.decode() and "Traceback" not in r.stderr.decode()


def test_traceback_followed_by_progress_is_not_a_failure() -> None:
    """A logged traceback after which the start goes on (a warning) does not fail the start."""
    c = Classifier()
    feed_all(
        c,
        "[2026-01-01 00:00:00] Load weight begin. avail mem=1 GB\nTraceback (most recent call last):\n"
        '  File "x.py", line 1, in f\nImportError: optional thing missing\n'
        "[2026-01-01 00:00:09] Load weight end. elapsed=9 s\n[2026-01-01 00:00:10] KV Cache is allocated.\n",
    )
    assert c.state.outcome == "pending" and c.state.phase == "kv_alloc"
    assert c.finish() == [] and c.state.outcome == "pending"


def test_application_startup_is_ready_for_vllm_but_warmup_for_sglang() -> None:
    """The same uvicorn line means ready for vLLM but only HTTP-up for SGLang (warmup follows)."""
    v = Classifier()
    feed_all(
        v,
        "(APIServer pid=1) INFO 01-01 00:00:00 [a.py:1] vLLM API server version 0.11\n(APIServer pid=1) INFO:     Application startup complete.\n",
    )
    s = Classifier()
    feed_all(
        s,
        "[2026-01-01 00:00:00] server_args=ServerArgs(x)\n[2026-01-01 00:00:01] INFO:     Application startup complete.\n",
    )
    assert v.state.outcome == "ready" and s.state.outcome == "pending" and s.state.phase == "warmup"
