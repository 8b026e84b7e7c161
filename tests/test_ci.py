"""CI-native output: GitHub Actions workflow commands and step summary, JUnit XML, the verdict
line on stderr in JSON mode, and a result line as the last stdout line for exits 2 and 4 too."""

from __future__ import annotations

import io
import json
import os
import signal
import socket
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from conftest import coldwatch, json_lines

from coldwatch.render import ci_sinks
from coldwatch.render.ci import GithubSink, JunitSink, gh_data, gh_property

FLEET_RESULT: dict[str, Any] = {
    "event": "result",
    "t": 42.5,
    "ts": "2026-01-01T00:00:42.500Z",
    "outcome": "failed",
    "exit_code": 3,
    "phase": "graph_capture",
    "failure_kind": "oom",
    "reason": "a: CUDA out of memory",
    "phases": [],
    "schema": 1,
    "targets": [
        {
            "target": "a",
            "outcome": "failed",
            "exit_code": 3,
            "phase": "graph_capture",
            "failure_kind": "oom",
            "reason": "CUDA out of memory",
        },
        {"target": "b", "outcome": "ready", "exit_code": 0, "phase": "ready", "failure_kind": None, "reason": "ready"},
        {"target": "c", "outcome": "unreachable", "exit_code": 4, "phase": None, "failure_kind": None, "reason": "connection refused"},
    ],
}


def _junit(path: Path) -> ET.Element:
    return ET.parse(path).getroot()


def test_demo_under_github_actions_with_json_and_junit(tmp_path: Path) -> None:
    """An OOM under GitHub Actions with --output json: NDJSON ends in the result, stderr has the
    verdict and one ::error, the step summary has the phase table, JUnit has the failure."""
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    junit = tmp_path / "report.xml"
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary), "CI": "true"}
    r = coldwatch("demo", "--scenario", "oom", "--speed", "0.3", "--output", "json", "--junit", str(junit), env=env)
    assert r.returncode == 3
    evs = json_lines(r.stdout)
    assert evs[-1]["event"] == "result" and evs[-1]["failure_kind"] == "oom"
    err = r.stderr.decode()
    assert "coldwatch: FAILED [oom] in graph_capture (exit 3): torch.OutOfMemoryError" in err
    errors = [ln for ln in err.splitlines() if ln.startswith("::error")]
    assert len(errors) == 1 and errors[0].startswith("::error title=coldwatch%3A FAILED [oom] in graph_capture::torch.OutOfMemoryError")
    text = summary.read_text()
    assert text.startswith("earlier step\n")  # appended, never replaced
    assert "FAILED \\[oom\\] in graph\\_capture (exit 3)" in text and "Cause: torch.OutOfMemoryError" in text
    assert "| `weight_load` |" in text and "| `graph_capture` |" in text and "(failed here)" in text
    case = _junit(junit).find("./testsuite/testcase")
    assert case is not None
    failure = case.find("failure")
    assert failure is not None and failure.get("type") == "oom" and "CUDA out of memory" in (failure.text or "")
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["outcome"] == "failed" and props["failure_kind"] == "oom" and float(props["phase.weight_load.seconds"] or 0) > 0
    assert not list(tmp_path.glob(".report.xml.*"))  # the temporary file of the atomic write is gone


def test_ready_demo_json_mode_keeps_verdict_on_stderr(tmp_path: Path) -> None:
    """--output json outside GitHub: stdout is pure NDJSON, stderr still says READY; no workflow commands."""
    r = coldwatch("demo", "--speed", "0.3", "--output", "json", env={"CI": "true"})
    assert r.returncode == 0
    assert all(line.startswith("{") for line in r.stdout.decode().splitlines())
    assert r.stderr.decode().strip().splitlines()[-1] == "coldwatch: READY (exit 0)"
    assert "::" not in r.stderr.decode()


def test_workflow_command_escaping() -> None:
    """GitHub's escaping: %, CR, LF in data; also ':' and ',' in properties; hostile text cannot start a command."""
    assert gh_data("50%\r\n::stop-commands::x") == "50%25%0D%0A::stop-commands::x"
    assert gh_property("a: b, c%\n") == "a%3A b%2C c%25%0A"
    out = io.StringIO()
    sink = GithubSink("host", None, out)
    sink.emit({"event": "warning", "message": "line1\n::error::forged\x1b[31m\x1b]0;t\u202e"})
    sink.emit({"event": "result", "outcome": "stalled", "exit_code": 5, "phase": "weight_load", "failure_kind": None, "reason": "r\nx"})
    lines = out.getvalue().splitlines()
    assert lines == [
        "::warning title=coldwatch::line1%0A::error::forged\\x1b]0;t\\u202e",
        "::error title=coldwatch%3A STALLED in weight_load::r%0Ax",
    ]


def test_github_summary_and_junit_for_a_fleet(tmp_path: Path) -> None:
    """A result with a targets list: one ::error per target not ready, one JUnit test case per target
    (failure for failed, error for unreachable), per-target phase durations from the phase events."""
    summary = tmp_path / "s.md"
    out = io.StringIO()
    gh = GithubSink("fleet", summary, out)
    junit = JunitSink(tmp_path / "j.xml", "fleet")
    for ev in (
        {"event": "phase", "t": 1.0, "phase": "weight_load", "target": "a"},
        {"event": "phase", "t": 31.0, "phase": "graph_capture", "target": "a"},
        {"event": "phase", "t": 2.0, "phase": "weight_load", "target": "b"},
        {"event": "warning", "t": 3.0, "message": "b is slow | <b>", "target": "b"},
        FLEET_RESULT,
    ):
        gh.emit(ev)
        junit.emit(ev)
    errors = [ln for ln in out.getvalue().splitlines() if ln.startswith("::error")]
    assert errors == [
        "::error title=coldwatch%3A a%3A FAILED [oom] in graph_capture::CUDA out of memory",
        "::error title=coldwatch%3A c%3A UNREACHABLE::connection refused",
    ]
    text = summary.read_text()
    assert "| a | failed | 3 | `graph_capture` | CUDA out of memory |" in text and "b is slow \\| \\<b\\>" in text
    root = _junit(tmp_path / "j.xml")
    suite = root.find("testsuite")
    assert suite is not None and (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("3", "1", "1")
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert set(cases) == {"a", "b", "c"}
    assert cases["a"].find("failure") is not None and cases["c"].find("error") is not None
    assert cases["b"].find("failure") is None and "b is slow" in (cases["b"].findtext("system-out") or "")
    props_a = {p.get("name"): p.get("value") for p in cases["a"].iter("property")}
    assert props_a["phase.weight_load.seconds"] == "30.000" and props_a["phase.graph_capture.seconds"] == "11.500"


def test_junit_carries_per_target_phases_and_strips_control_characters(tmp_path: Path) -> None:
    """A target entry with its own ``phases`` wins; remote text with control bytes still makes valid XML."""
    res = {
        **FLEET_RESULT,
        "targets": [
            {
                **FLEET_RESULT["targets"][0],
                "reason": "bad\x00\x1b[2Jbyte\uffff\ud800\u202e",
                "phases": [{"phase": "dist_init", "start": 0.0, "end": 2.5}],
            }
        ],
    }
    sink = JunitSink(tmp_path / "j.xml", "x")
    sink.emit(res)
    case = _junit(tmp_path / "j.xml").find("./testsuite/testcase")
    assert case is not None
    assert case.findtext("failure") == "bad\\x00\\x1b[2Jbyte\\uffff\\ud800\\u202e"  # U+FFFF and a lone surrogate: valid XML still
    assert {p.get("name"): p.get("value") for p in case.iter("property")}["phase.dist_init.seconds"] == "2.500"


def test_ci_sinks_choice(tmp_path: Path) -> None:
    """ci_sinks: the verdict sink only in JSON mode, GitHub only when GITHUB_ACTIONS=true, JUnit only with a path."""

    def names(sinks: list[Any]) -> list[str]:
        return sorted(type(s).__name__ for s in sinks)

    assert names(ci_sinks(None, {}, "plain")) == []
    assert names(ci_sinks(None, {"GITHUB_ACTIONS": "false"}, "json")) == ["VerdictSink"]
    assert names(ci_sinks(tmp_path / "j.xml", {"GITHUB_ACTIONS": "true"}, "live")) == ["GithubSink", "JunitSink"]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(
    ("args", "env", "code", "outcome"),
    [
        (["wait", "--timeout", "soon", "--output", "json"], {}, 2, "usage"),
        (["wait", "--no-such-flag", "-o", "json"], {}, 2, "usage"),
        (["wait", "--unit", "a;b"], {"COLDWATCH_OUTPUT": "json"}, 2, "usage"),
        (["status", "--interval", "1"], {"COLDWATCH_OUTPUT": "json"}, 2, "usage"),
        (["replay", "/no/such.log", "--output=json"], {}, 2, "usage"),
        (["wait", "127.0.0.1:{port}", "--output", "json"], {}, 4, "unreachable"),
        (["status", "127.0.0.1:{port}"], {"COLDWATCH_OUTPUT": "json"}, 4, "unreachable"),
    ],
)
def test_result_line_last_for_usage_and_unreachable(args: list[str], env: dict[str, str], code: int, outcome: str, tmp_path: Path) -> None:
    """JSON mode asked by flag or environment: exit 2 and 4 still end stdout with the result line."""
    args = [a.replace("{port}", str(_closed_port())) for a in args]
    r = coldwatch(*args, env={"HOME": str(tmp_path), **env})
    assert r.returncode == code, r.stderr
    lines = r.stdout.decode().splitlines()
    assert lines, r.stderr
    res = json.loads(lines[-1])
    assert (res["event"], res["outcome"], res["exit_code"], res["schema"]) == ("result", outcome, code, 1)
    assert res["reason"] and res["ts"] and res["phases"] == []
    assert "Traceback" not in r.stderr.decode()


def test_json_mode_from_the_config_file_and_junit_on_unreachable(tmp_path: Path) -> None:
    """Output and --junit from the config's profile: an unreachable host still writes the result line
    and a JUnit <error>, and a GitHub ::error."""
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'timeout = "5s"\n[profiles.ci]\noutput = "json"\njunit = "{tmp_path / "j.xml"}"\n')
    env = {"HOME": str(tmp_path), "GITHUB_ACTIONS": "true"}
    r = coldwatch("wait", f"127.0.0.1:{_closed_port()}", "--config", str(cfg), "--profile", "ci", env=env)
    assert r.returncode == 4
    assert json.loads(r.stdout.decode().splitlines()[-1])["outcome"] == "unreachable"
    assert "::error title=coldwatch%3A UNREACHABLE::" in r.stderr.decode()
    case = _junit(tmp_path / "j.xml").find("./testsuite/testcase")
    assert case is not None and case.find("error") is not None and case.get("name", "").startswith("127.0.0.1:")
    # a config that is itself broken: the mode is still read from what can be read
    cfg.write_text('output = "json"\ntimeout = "soon"\n')
    r = coldwatch("wait", "--config", str(cfg), env={"HOME": str(tmp_path)})
    assert r.returncode == 2 and json.loads(r.stdout.decode().splitlines()[-1])["outcome"] == "usage"


def test_plain_mode_prints_nothing_on_stdout_for_errors(tmp_path: Path) -> None:
    """Without JSON mode an error is one stderr line and stdout stays empty."""
    r = coldwatch("wait", "--timeout", "soon", env={"HOME": str(tmp_path)})
    assert r.returncode == 2 and r.stdout == b"" and len(r.stderr.decode().strip().splitlines()) == 1


def test_junit_into_a_missing_folder_is_a_usage_error(tmp_path: Path) -> None:
    """--junit into a folder that does not exist: exit 2 before watching, one line naming it."""
    r = coldwatch("demo", "--junit", str(tmp_path / "nope" / "j.xml"), "--output", "plain")
    assert r.returncode == 2 and "--junit: folder" in r.stderr.decode() and "Traceback" not in r.stderr.decode()


def test_sigterm_before_the_verdict_still_ends_with_a_result(tmp_path: Path) -> None:
    """SIGTERM while the SSH handshake hangs: exit 143 and, in JSON mode, the result line last."""
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)
        env = {**os.environ, "HOME": str(tmp_path), "COLDWATCH_HOME": str(tmp_path / "cw")}
        p = subprocess.Popen(
            [sys.executable, "-m", "coldwatch", "wait", f"127.0.0.1:{srv.getsockname()[1]}", "-o", "json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        conn, _ = srv.accept()  # connected; the server never sends its banner
        with conn:
            time.sleep(1.0)
            p.send_signal(signal.SIGTERM)
            out, _err = p.communicate(timeout=30)
    assert p.returncode == 143
    res = json.loads(out.decode().splitlines()[-1])
    assert (res["outcome"], res["exit_code"]) == ("interrupted", 143)
