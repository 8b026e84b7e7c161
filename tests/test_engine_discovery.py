"""Engines discovered from the rules: every ``rules/*.toml`` with an ``[engine]`` table is an engine
(its name, how its log is recognised, its default serving port); nothing lists them by hand."""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path

import pytest
from conftest import coldwatch

from coldwatch.errors import ConfigError
from coldwatch.phases import Classifier
from coldwatch.phases.rules import ENGINES, builtin_rules, engine_choices, serving_ports
from coldwatch.settings import resolve
from coldwatch.supervisors import Container


def shipped_engine_tables() -> dict[str, dict[str, object]]:
    base = resources.files("coldwatch.phases") / "rules"
    tables = {}
    for p in base.iterdir():
        if p.name.endswith(".toml"):
            data = tomllib.loads(p.read_text(encoding="utf-8"))
            if "engine" in data:
                tables[p.name[: -len(".toml")]] = data["engine"]
    return tables


def test_the_engines_are_the_rules_files_with_an_engine_table() -> None:
    tables = shipped_engine_tables()
    assert tuple(sorted(tables)) == ENGINES and {"sglang", "vllm"} <= set(ENGINES)
    for name, table in tables.items():
        assert table["name"] == name and table["detect"] and isinstance(table["port"], int), name
    assert set(builtin_rules().detect) == set(ENGINES)
    assert serving_ports() == {name: t["port"] for name, t in tables.items()}


def test_each_engine_is_recognised_by_its_own_detect_patterns() -> None:
    lines = {
        "sglang": "[2026-08-01 10:00:00] server_args=ServerArgs(model_path='m')",
        "vllm": "INFO 08-01 10:00:00 [core.py:1] Initializing a V1 LLM engine (v0.11.0) with config: model='m'",
    }
    from coldwatch.normalise import LogLine

    for engine, text in lines.items():
        c = Classifier()
        c.feed(LogLine(text, 0.0, "", text))
        assert c.state.engine == engine


def test_engine_options_accept_the_discovered_engines_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert engine_choices() == "auto, " + ", ".join(ENGINES[:-1]) + " or " + ENGINES[-1]
    monkeypatch.delenv("COLDWATCH_ENGINE", raising=False)
    empty = tmp_path / "config.toml"
    empty.write_text("")
    for engine in ("auto", *ENGINES):
        assert resolve({"engine": engine}, config=empty).engine == engine
    with pytest.raises(ConfigError, match=f"expected {engine_choices()}, got 'no-such-engine'"):
        resolve({"engine": "no-such-engine"}, config=empty)
    r = coldwatch("replay", "/dev/null", "--engine", "no-such-engine")
    assert r.returncode == 2 and r.stderr.decode().strip() == f"coldwatch: --engine: expected {engine_choices()}, got 'no-such-engine'"


def test_a_containers_default_port_is_its_engines() -> None:
    c = Container("srv", "docker")
    assert c.serving_port("vllm") == serving_ports()["vllm"] == 8000
    assert c.serving_port("sglang") == 30000
    c.image = "vllm/vllm-openai:v0.11.0"
    assert c.serving_port("auto") == 8000  # by its image's name
    c.bindings = {"30000/tcp": [{"HostPort": ""}]}
    assert c.serving_port("auto") == 30000  # by the default it publishes
