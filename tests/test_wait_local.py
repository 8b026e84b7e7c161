"""coldwatch wait on this machine (no HOST) against the simulator: one test per exit code and output mode."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import coldwatch, json_lines

from coldwatch.sim import free_port, spawn


class Sim:
    def __init__(self, d: Path, scenario: str, speed: float, *extra: str) -> None:
        self.dir = d
        d.mkdir()
        self.proc, self.port = spawn(d, scenario, speed, *extra)

    def args(self, *more: str) -> list[str]:
        return [
            "wait",
            "--log-cmd",
            f"tail -n +1 -F {self.dir}/server.log",
            "--gpu-cmd",
            f"cat {self.dir}/gpu.csv",
            "--url",
            f"http://127.0.0.1:{self.port}",
            "--pid",
            str(self.proc.pid),
            "--interval",
            "0.5",
            *more,
        ]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[object]:
    made: list[Sim] = []

    def start(scenario: str = "ready", speed: float = 0.15, *extra: str) -> Sim:
        s = Sim(tmp_path / f"sim{len(made)}", scenario, speed, *extra)
        made.append(s)
        return s

    yield start
    for s in made:
        s.stop()


def test_exit_0_ready_plain_output(sim) -> None:  # type: ignore[no-untyped-def]
    """Ready: exit 0; plain mode prints one line per phase change and the verdict, nothing on stdout."""
    s = sim()
    r = coldwatch(*s.args("--output", "plain"))
    assert r.returncode == 0, r.stderr.decode()
    err = r.stderr.decode()
    assert r.stdout == b""
    assert err.count("phase weight_load") == 1 and "phase graph_capture" in err and err.strip().endswith("READY (exit 0)")


def test_exit_0_json_only_contract_events(sim) -> None:  # type: ignore[no-untyped-def]
    """--output json: only contract events on stdout, each with event/t/ts; result last."""
    s = sim()
    r = coldwatch(*s.args("-o", "json"))
    evs = json_lines(r.stdout)
    assert r.returncode == 0
    assert {e["event"] for e in evs} <= {"phase", "progress", "gpu", "http", "stall", "warning", "result", "check"}
    assert all(isinstance(e["t"], float | int) and e["ts"].endswith("Z") for e in evs)
    assert evs[-1]["event"] == "result" and evs[-1]["schema"] == 1


def test_exit_2_bad_duration() -> None:
    """A bad flag value: one line naming the flag, exit 2."""
    r = coldwatch("wait", "--timeout", "soon")
    assert r.returncode == 2 and "--timeout" in r.stderr.decode() and "Traceback" not in r.stderr.decode()


def test_exit_3_oom(sim) -> None:  # type: ignore[no-untyped-def]
    """OOM in capture: exit 3 within a second of the fatal line (the simulator's exit is later)."""
    s = sim("oom")
    r = coldwatch(*s.args("-o", "json"))
    res = json_lines(r.stdout)[-1]
    assert r.returncode == 3 and res["failure_kind"] == "oom"


def test_exit_3_from_the_log_alone_while_the_process_lives(sim) -> None:  # type: ignore[no-untyped-def]
    """The fatal line and its OOM are in the log but the process stays alive (a hung main process):
    failed [oom] from the log alone, not a timeout and not a stall."""
    s = sim("oom", 0.15, "--stay-alive")
    r = coldwatch(*s.args("-o", "json", "--timeout", "60s"))
    res = json_lines(r.stdout)[-1]
    assert s.proc.poll() is None, "the simulated server must still be running"
    assert (r.returncode, res["failure_kind"], res["phase"]) == (3, "oom", "graph_capture"), res["reason"]


def test_exit_4_unreachable_host() -> None:
    """No SSH server on the port: exit 4."""
    r = coldwatch("wait", f"nobody@127.0.0.1:{free_port()}", "--timeout", "5")
    assert r.returncode == 4 and "cannot connect" in r.stderr.decode()


def test_exit_5_stalled(sim) -> None:  # type: ignore[no-untyped-def]
    """Everything silent (log, GPU, CPU): stalled within --stall-after plus one interval, exit 5."""
    s = sim("hang")
    t0 = time.monotonic()
    r = coldwatch(*s.args("-o", "json", "--stall-after", "3s"))
    evs = json_lines(r.stdout)
    assert r.returncode == 5
    stall = [e for e in evs if e["event"] == "stall"]
    assert stall and stall[0]["evidence"] and evs[-1]["phase"] == "graph_capture"
    assert time.monotonic() - t0 < 20


def test_exit_124_deadline(sim) -> None:  # type: ignore[no-untyped-def]
    """Not ready by --timeout: exit 124 with the last phase."""
    s = sim("ready", 1.0)
    r = coldwatch(*s.args("-o", "json", "--timeout", "3"))
    res = json_lines(r.stdout)[-1]
    assert r.returncode == 124 and res["outcome"] == "timeout" and res["phase"] in ("weight_load", "dist_init")


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_exit_130_143_interrupt(sim, sig: int, code: int) -> None:  # type: ignore[no-untyped-def]
    """Ctrl-C exits 130, SIGTERM 143; the result line and the history record are written."""
    s = sim("ready", 1.0)
    env = {**os.environ}
    p = subprocess.Popen(
        [sys.executable, "-m", "coldwatch", *s.args("-o", "json")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        preexec_fn=_foreground,
    )
    time.sleep(2.5)
    p.send_signal(sig)
    out, _ = p.communicate(timeout=20)
    assert p.returncode == code
    res = json_lines(out)[-1]
    assert res["outcome"] == "interrupted" and res["exit_code"] == code
    hist = Path(os.environ["COLDWATCH_HOME"]) / "history.jsonl"
    assert '"outcome": "interrupted"' in hist.read_text()


def test_checks_pass_and_fail(sim) -> None:  # type: ignore[no-untyped-def]
    """--check reasoning/tools pass on a well-configured server and fail (exit 3) with what came back."""
    s = sim()
    r = coldwatch(*s.args("-o", "json", "--check", "reasoning", "--check", "tools"))
    evs = json_lines(r.stdout)
    assert r.returncode == 0 and [e["passed"] for e in evs if e["event"] == "check"] == [True, True]
    bad = sim("ready", 0.15, "--fail-checks")
    r = coldwatch(*bad.args("-o", "json", "--check", "tools"))
    res = json_lines(r.stdout)[-1]
    assert r.returncode == 3 and "no tool_calls" in res["reason"]


def _foreground() -> None:
    """As from a terminal: SIGINT is not ignored (a background job, e.g. CI under nohup, inherits SIG_IGN)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _answers(port: int) -> bool:
    import httpx

    try:
        r = httpx.post(f"http://127.0.0.1:{port}/v1/completions", json={"model": "m", "prompt": "x", "max_tokens": 1}, timeout=2)
        return r.status_code == 200
    except httpx.HTTPError:
        return False


def test_stale_server_on_the_port_is_not_ready(sim) -> None:  # type: ignore[no-untyped-def]
    """An old server still holds the probed port and answers completions while the new one loads:
    coldwatch names it early and never calls the new start READY on its answers."""
    stale = sim("ready", 0.01)
    for _ in range(100):
        if _answers(stale.port):
            break
        time.sleep(0.1)
    assert _answers(stale.port), "the stale server never answered"
    new = sim("ready", 0.15)
    args = new.args("--timeout", "8s", "-o", "json")
    args[args.index("--url") + 1] = f"http://127.0.0.1:{stale.port}"
    r = coldwatch(*args)
    evs = json_lines(r.stdout)
    warnings = [e["message"] for e in evs if e["event"] == "warning"]
    assert r.returncode == 124, evs[-1]
    assert any("held by python" in w and f"pid {stale.proc.pid}" in w and "not by the server" in w for w in warnings), warnings
    assert evs[-1]["outcome"] == "timeout"


def test_listener_started_after_the_server_counts(sim) -> None:  # type: ignore[no-untyped-def]
    """The port's holder is outside the server's tree but started after it (a container that this start
    launched, `docker run --network host`): its answers count; coldwatch notes whom it probes."""
    root = sim("slow", 0.15)
    time.sleep(0.2)
    served = sim("ready", 0.01)
    for _ in range(100):
        if _answers(served.port):
            break
        time.sleep(0.1)
    args = root.args("--timeout", "20s", "-o", "json")
    args[args.index("--url") + 1] = f"http://127.0.0.1:{served.port}"
    r = coldwatch(*args)
    evs = json_lines(r.stdout)
    assert r.returncode == 0, evs[-1]
    assert any("served by python" in e["message"] for e in evs if e["event"] == "warning"), evs


def test_server_owning_its_port_is_ready_at_once(sim) -> None:  # type: ignore[no-untyped-def]
    """coldwatch started after the server is already up: ready as soon as the port's owner is checked."""
    s = sim("ready", 0.01)
    for _ in range(100):
        if _answers(s.port):
            break
        time.sleep(0.1)
    started = time.time()
    r = coldwatch(*s.args("-o", "json"))
    assert r.returncode == 0, json_lines(r.stdout)[-1]
    assert not [e for e in json_lines(r.stdout) if e["event"] == "warning" and "port" in e["message"]]
    assert time.time() - started < 5
