"""A user's rules file (``--rules``), as its author meets it (phases/rules.py): every mistake is one
line naming the file and what is wrong, every valid table takes effect. Each test pins a behaviour a
surviving mutant of rules.py changed (scripts/mutate.py rules)."""

from __future__ import annotations

from pathlib import Path

import pytest

from coldwatch.errors import ConfigError
from coldwatch.normalise import normalise
from coldwatch.phases import Classifier, load_rules


def rules_file(tmp_path: Path, text: str) -> Path:
    f = tmp_path / "mine.toml"
    f.write_text(text)
    return f


def feed(c: Classifier, text: str) -> None:
    for line in normalise([text.encode()]):
        c.feed(line)


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("[[phases]]\nid='x'\n", "unknown table 'phases'"),
        ("[[phase]]\nid='x'\npattern='a'\nend=5\n", "expected a list of phases, got 5"),
        ("[[phase]]\nid='x'\npattern='a'\nend=['lunch']\n", "unknown phase 'lunch'"),
        ("[[phase]]\nid='x'\npattern=5\n", "key 'pattern' must be a string, got 5"),
        ("[[phase]]\nid='x'\n", "missing key 'pattern'"),
        ("[[phase]]\nid='x'\npattern='a'\nearly=true\n", "'early' needs 'enter'"),
        ("[[bar]]\nid='x'\ndesc='a'\nphase='lunch'\n", "unknown phase 'lunch'"),
        ("[[bar]]\nid='x'\ndesc='a'\nphase='weight_load'\ncomplete_enter='lunch'\n", "unknown phase 'lunch'"),
        ("[[failure]]\nid='x'\npattern='a'\nrole='maybe'\n", "role must be fatal, candidate or consequence, got 'maybe'"),
        ("[[failure]]\nid='x'\npattern='a'\nkind='sad'\n", "unknown failure kind 'sad'"),
        ("[[kind]]\nkind='sad'\npattern='a'\n", "unknown failure kind 'sad'"),
        ("[[kind]]\nkind='oom'\npattern='a'\nphase='lunch'\n", "unknown phase 'lunch'"),
        ("[[frame]]\nkind='sad'\npattern='a'\n", "unknown failure kind 'sad'"),
        ("[[frame]]\nphase='lunch'\npattern='a'\n", "unknown phase 'lunch'"),
        ("[[cause]]\nkind='sad'\npattern='a'\n", "unknown failure kind 'sad'"),
        ("[[warning]]\npattern='a'\n", "missing key 'message'"),
        ("[[timing]]\nkey='load'\npattern='took ([0-9.]+) s'\n", "needs a group named s"),
        ("[[timing]]\npattern='took (?P<s>[0-9.]+) s'\n", "missing key 'key'"),
        ("[[start]]\nid='x'\npattern='('\n", "invalid regex"),
    ],
)
def test_each_mistake_in_a_rules_file_is_named_with_the_file(tmp_path: Path, content: str, needle: str) -> None:
    f = rules_file(tmp_path, content)
    with pytest.raises(ConfigError) as exc:
        load_rules([f])
    assert needle in str(exc.value) and str(f) in str(exc.value), str(exc.value)


def test_every_valid_table_of_a_users_file_takes_effect(tmp_path: Path) -> None:
    """One file with each table: each lands in the rules, with the values it gave and the defaults it did not."""
    f = rules_file(
        tmp_path,
        "[[phase]]\nid='site.mark'\npattern='SITE MARK'\nenter='kv_alloc'\nend=['weight_load']\n"
        "[[bar]]\nid='site.bar'\ndesc='Site loading'\nphase='weight_load'\ncomplete_enter='kv_alloc'\n"
        "[[failure]]\nid='site.fail'\npattern='SITE BROKE'\n"
        "[[start]]\nid='site.start'\npattern='SITE START'\n"
        "[[kind]]\nkind='oom'\npattern='site memory gone'\nphase='kv_alloc'\n"
        "[[frame]]\npattern='site_loader'\nphase='weight_load'\n"
        "[[frame]]\npattern='site_comm'\nkind='nccl'\n"
        "[[cause]]\nkind='oom'\npattern='site pool empty'\n"
        "[[warning]]\nmessage='site cache cold'\npattern='SITE COLD'\n"
        "[[timing]]\nkey='site_load'\npattern='site took (?P<s>[0-9.]+) s'\n",
    )
    r = load_rules([f])
    mark = next(p for p in r.phase if p.id == "site.mark")
    assert (mark.enter, mark.end, mark.is_global, mark.early, mark.resume, mark.engine) == (
        "kv_alloc",
        ("weight_load",),
        False,
        False,
        False,
        "*",
    )
    bar = next(b for b in r.bar if b.id == "site.bar")
    assert (bar.phase, bar.complete_enter, bar.complete_requires) == ("weight_load", "kv_alloc", None)
    fail = next(x for x in r.failure if x.id == "site.fail")
    assert (fail.kind, fail.role) == ("exception", "fatal")
    assert any(s.id == "site.start" for s in r.start)
    assert r.kind[-1].label == "oom" and r.kind_phase[-1].phase == "kv_alloc"
    assert r.frame[-1].label == "weight_load" and r.frame_kind[-1].label == "nccl"
    assert r.cause[-1].label == "oom" and r.warning[-1].label == "site cache cold" and r.timing[-1].label == "site_load"
    patterns = {
        "bar": bar.regex,
        "start": next(s.regex for s in r.start if s.id == "site.start"),
        "kind": r.kind[-1].regex,
        "frame": r.frame[-1].regex,
        "frame kind": r.frame_kind[-1].regex,
        "cause": r.cause[-1].regex,
        "warning": r.warning[-1].regex,
        "timing": r.timing[-1].regex,
        "failure": fail.regex,
        "phase": mark.regex,
    }
    wanted = {
        "bar": "Site loading",
        "start": "SITE START",
        "kind": "site memory gone",
        "frame": "site_loader",
        "frame kind": "site_comm",
        "cause": "site pool empty",
        "warning": "SITE COLD",
        "timing": "site took 3.5 s",
        "failure": "SITE BROKE",
        "phase": "SITE MARK",
    }
    assert {k: bool(rx.search(wanted[k])) for k, rx in patterns.items()} == dict.fromkeys(wanted, True)
    assert {k: bool(rx.search("an unrelated line")) for k, rx in patterns.items()} == dict.fromkeys(wanted, False)


def test_the_shipped_rules_keep_their_engines_and_flags() -> None:
    """SGLang's and vLLM's rules are theirs, the common ones every engine's; only rules that say so are global."""
    r = load_rules()
    engines = {p.engine for p in r.phase} | {f.engine for f in r.failure}
    assert {"sglang", "vllm", "*"} <= engines
    assert next(f for f in r.failure if f.id == "common.traceback").engine == "*"
    assert any(p.is_global for p in r.phase) and not all(p.is_global for p in r.phase)
    assert not all(p.early for p in r.phase) and not all(p.resume for p in r.phase)
    assert r.detect["sglang"].search("server_args=ServerArgs(") and r.detect["vllm"].search("vLLM API server version 0.11")


def test_a_users_ready_line_is_the_servers_ready_only_when_global(tmp_path: Path) -> None:
    """A ready rule without ``global`` moves only its rank; with ``global = true`` the server is ready."""
    for glob, want in (("", "pending"), ("global=true\n", "ready")):
        f = rules_file(tmp_path, f"[[phase]]\nid='site.ready'\npattern='SITE READY'\nenter='ready'\n{glob}")
        c = Classifier(load_rules([f]))
        feed(c, "[2026-01-01 00:00:00] Load weight begin. avail mem=1 GB\n[2026-01-01 00:00:05] SITE READY\n")
        assert c.state.outcome == want, glob
