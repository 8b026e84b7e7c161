"""The first hour of a new operator: the mistakes a fresh user makes (an unset $HOST, a typo in a
number, a wrong port, a re-run deploy) get a clear answer, never a traceback or a wrong baseline."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hostfix import GpuHost

import datetime as dt
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import coldwatch, json_lines

from coldwatch.probes.node import EARLIER_BURST
from coldwatch.sim import spawn


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["wait", ""], "HOST: is empty (an unset variable?)"),
        (["status", ""], "HOST: is empty (an unset variable?)"),
        (["wait", "", "gpu-b"], "HOST: is empty (an unset variable?)"),
        (["wait", "--interval", "nan"], "--interval: expected a duration"),
        (["wait", "--interval", "inf"], "--interval: expected a duration"),
        (["wait", "--interval", "1e308"], "--interval: at most"),
        (["wait", "--interval", "7200"], "--interval: must be at most 3600s"),
        (["wait", "--timeout", "1e308"], "--timeout: expected a duration"),
        (["wait", "--timeout", "99999h"], "--timeout: at most 366 days"),
        (["wait", "a.invalid", "b.invalid", "--min-ready", "0"], "--min-ready: 0 targets ready"),
        (["wait", "a.invalid", "b.invalid", "--min-ready", "0%"], "--min-ready: 0 targets ready"),
        (["wait", "a.invalid", "b.invalid", "--min-ready", "5"], "--min-ready: 5 targets ready needed, but the fleet has only 2"),
        (["replay", "-", "--stall-after", "nan"], "--stall-after: expected a duration"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], needle: str) -> None:
    """Each of these is exit 2 with one line naming the mistake: never a watch of this machine (an
    unset $HOST), a busy loop (nan), an OverflowError, or a fleet that passes with 0 ready."""
    r = coldwatch(*args, input=b"", timeout=30)
    err = r.stderr.decode()
    assert r.returncode == 2, (r.returncode, err)
    assert needle in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def _previous_oom_run(d: Path, hours_ago: float = 1.0) -> None:
    """The simulator's OOM start written on a virtual clock into DIR/server.log, its stamps moved back:
    the failed run an hour before that the log (``nohup … >> server.log``) still holds."""
    subprocess.run(
        [sys.executable, "-m", "coldwatch.sim", "--dir", str(d), "--port", "1", "--scenario", "oom", "--virtual", "--gpus", "2"],
        check=False,  # the OOM start ends as the real one does (137)
        timeout=60,
    )
    log = d / "server.log"

    def back(m: re.Match[str]) -> str:
        t = dt.datetime.fromisoformat(m.group(1)) - dt.timedelta(hours=hours_ago)
        return "[" + t.strftime("%Y-%m-%d %H:%M:%S")

    log.write_text(re.sub(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)", back, log.read_text(), flags=re.M))
    (d / "unit.state").unlink(missing_ok=True)
    (d / "gpu.csv").unlink(missing_ok=True)


@pytest.mark.parametrize("follow", ["tail -F", "tail -n +1 -F"])
def test_tail_of_an_appended_log_does_not_fail_on_the_previous_runs_oom(tmp_path: Path, follow: str) -> None:
    """The --help's own `tail -F FILE` of a log the server appends to, after a restart that follows an
    OOM an hour before: the old lines are an earlier run's (shown, said once), never the verdict; the new
    start is watched to READY. Without the rule this was FAILED [oom] at second 0."""
    d = tmp_path / "sim"
    d.mkdir()
    _previous_oom_run(d)
    assert "CUDA out of memory" in (d / "server.log").read_text()
    proc, port = spawn(d, "ready", 0.15, "--delay", "4")  # the watch begins on the old lines
    try:
        r = coldwatch(
            "wait",
            "--log-cmd",
            f"{follow} {d}/server.log",
            "--gpu-cmd",
            f"cat {d}/gpu.csv",
            "--url",
            f"http://127.0.0.1:{port}",
            "--pid",
            str(proc.pid),
            "--interval",
            "0.5",
            "--timeout",
            "90",
            "-o",
            "json",
            timeout=150,
        )
    finally:
        proc.kill()
        proc.wait()
    evs = json_lines(r.stdout)
    res = evs[-1]
    assert r.returncode == 0, (res, r.stderr.decode()[-500:])
    assert res["outcome"] == "ready" and res["failure_kind"] is None
    warns = [e["message"] for e in evs if e["event"] == "warning"]
    assert any("earlier run" in w for w in warns), warns
    assert not [e for e in evs if e["event"] == "phase" and e["phase"] == "failed"]


def test_replay_stall_after_catches_a_silent_hour(tmp_path: Path) -> None:
    """`replay --stall-after 10m` of a log with a 60-minute silent gap mid-load: STALLED (exit 5), the
    gap named; without --stall-after the same log is READY."""
    log = tmp_path / "gap.log"
    log.write_text(
        "[2026-12-01 09:00:00] server_args=ServerArgs(model_path='m', tp_size=1)\n"
        "[2026-12-01 09:00:01 TP0] Load weight begin. avail mem=94.71 GB\n"
        "[2026-12-01 10:00:01 TP0] Load weight end. type=X, avail mem=40.00 GB\n"
        "[2026-12-01 10:00:02] INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)\n"
        "[2026-12-01 10:00:03] The server is fired up and ready to roll!\n"
    )
    r = coldwatch("replay", str(log), "--stall-after", "10m", "-o", "json")
    res = json_lines(r.stdout)[-1]
    assert r.returncode == 5, res
    assert res["outcome"] == "stalled" and res["phase"] == "weight_load" and "no liveness evidence for 3600s" in res["reason"]
    ok = coldwatch("replay", str(log), "-o", "json")
    assert ok.returncode == 0, ok.stderr.decode()


def test_rewatching_an_up_server_is_an_attach_not_a_zero_second_start(tmp_path: Path) -> None:
    """An idempotent deploy re-run: the first watch records the real start; three more watches of the
    server, already up, say `already up` and add nothing, so the baseline stays the real start's."""
    d = tmp_path / "sim"
    d.mkdir()
    proc, port = spawn(d, "ready", 0.15, linger=300)
    home = {"COLDWATCH_HOME": str(tmp_path / "home")}
    args = ["wait", "--log-cmd", f"tail -n +1 -F {d}/server.log", "--gpu-cmd", f"cat {d}/gpu.csv"]
    args += ["--url", f"http://127.0.0.1:{port}", "--pid", str(proc.pid), "--interval", "0.5", "--timeout", "90", "-o", "json"]
    try:
        first = coldwatch(*args, env=home, timeout=150)
        assert first.returncode == 0, first.stderr.decode()[-400:]
        assert not json_lines(first.stdout)[-1].get("attached")
        for _ in range(3):
            again = coldwatch(*args, env=home, timeout=150)
            assert again.returncode == 0, again.stderr.decode()[-400:]
            evs = json_lines(again.stdout)
            res = evs[-1]
            assert res["outcome"] == "ready" and res["attached"] is True and res["reason"].startswith("already up")
            assert any(e["event"] == "warning" and e["message"].startswith("already up") for e in evs)
    finally:
        proc.kill()
        proc.wait()
    hist = json_lines(coldwatch("history", "-o", "json", env=home).stdout)
    assert len(hist) == 1 and hist[0]["total"] > 1.0, hist


def test_a_wrong_url_port_names_the_logged_port(tmp_path: Path) -> None:
    """--url with the wrong port: the log's `Uvicorn running on http://127.0.0.1:PORT` is named at once
    (a warning when the line comes) and in the timeout's reason, instead of `port not bound yet` alone."""
    from coldwatch.sim import free_port

    d = tmp_path / "sim"
    d.mkdir()
    proc, port = spawn(d, "ready", 0.15, linger=120)
    wrong = free_port()
    try:
        r = coldwatch(
            "wait",
            "--log-cmd",
            f"tail -n +1 -F {d}/server.log",
            "--gpu-cmd",
            f"cat {d}/gpu.csv",
            "--url",
            f"http://127.0.0.1:{wrong}",
            "--pid",
            str(proc.pid),
            "--interval",
            "0.5",
            "--timeout",
            "20",
            "-o",
            "json",
            timeout=90,
        )
    finally:
        proc.kill()
        proc.wait()
    evs = json_lines(r.stdout)
    res = evs[-1]
    assert r.returncode == 124, res
    assert f"listens on port {port}" in res["reason"] and f"port {wrong} is probed" in res["reason"], res["reason"]
    said = [e for e in evs if e["event"] == "warning" and f"listens on port {port}" in e["message"]]
    uvicorn = next(e for e in evs if e["event"] == "phase" and e["phase"] == "warmup")
    assert said and said[0]["t"] <= uvicorn["t"] + 1.0, (said, uvicorn)


MISSING_UNIT = """ActiveState=inactive
SubState=dead
Result=success
NRestarts=0
MainPID=0
ExecMainStatus=0
InvocationID=
LoadState=not-found
ActiveEnterTimestamp=
"""
"""What systemd 252's `systemctl show -p …` prints for a unit that does not exist (exit status 0)."""


def test_a_missing_unit_is_a_usage_error_like_a_missing_container(gpu_host: GpuHost) -> None:
    """`--unit` naming no unit on the host (over the loopback sshd): exit 2 and one line naming it, the
    same answer as a container that does not exist, never `FAILED [exited]` (3). With --log-cmd the
    watch goes on without a supervisor instead."""
    d = gpu_host.sim_dir()
    (d / "unit.state").write_text(MISSING_UNIT)
    (d / "gpu.csv").write_text("0, 1000, 97871, 0\n")
    r = coldwatch("wait", "gpu1", "--unit", "sglang-typo", "--timeout", "20", "-o", "plain", env=gpu_host.env, timeout=60)
    err = r.stderr.decode().strip().splitlines()
    assert r.returncode == 2, err
    assert len(err) == 1 and "unit sglang-typo: no such unit on the host" in err[0], err
    s = coldwatch("status", "gpu1", "--unit", "sglang-typo", "-o", "plain", env=gpu_host.env, timeout=60)
    assert s.returncode == 2 and "no such unit" in s.stderr.decode(), s.stderr.decode()
    (d / "server.log").write_text("")
    w = coldwatch(
        "wait",
        "gpu1",
        "--unit",
        "sglang-typo",
        "--log-cmd",
        f"tail -F {d}/server.log",
        "--timeout",
        "3",
        "-o",
        "json",
        env=gpu_host.env,
        timeout=60,
    )
    assert w.returncode == 124, w.stderr.decode()


def _final_frame(stderr: bytes) -> str:
    """The live panel's last frame as printed when the watch ends (a box of rows)."""
    text = stderr.decode(errors="replace")
    top = text.rfind("╭")
    return text[top:] if top >= 0 else text


def test_a_fleets_final_frame_agrees_with_its_verdict(gpu_host: GpuHost, tmp_path: Path) -> None:
    """A fleet of three ready servers with the live panel: the last frame shows every row ready (no
    `▶ … warmup` drawn before the verdict) and no `starting 0s` phase list of a server of its own."""
    from test_fleet import _fleet

    names, cfg = _fleet(gpu_host, tmp_path, ["ready"] * 3)
    env = {**gpu_host.env, "COLUMNS": "100", "LINES": "30", "TERM": "xterm", "FORCE_COLOR": "0"}
    r = coldwatch("wait", *names, "--config", str(cfg), "-o", "live", env=env, timeout=180)
    assert r.returncode == 0, r.stderr.decode()[-600:]
    frame = _final_frame(r.stderr)
    rows = [ln for ln in frame.splitlines() if any(n in ln for n in names)]
    assert len(rows) >= 3, frame
    assert all("✓" in ln and "READY" in ln for ln in rows[:3]) and "▶" not in frame, frame
    assert "starting" not in frame, frame


def test_two_log_cmd_servers_on_one_host_have_their_own_baselines() -> None:
    """With --log-cmd the history target is the server on its port, so two servers on one host (a vLLM
    on 8000, an SGLang on 30000) never share one ETA baseline; --unit and --container name theirs."""
    from coldwatch.settings import resolve

    a = resolve({"host": "gpu1", "log_cmd": "tail -F /srv/a.log", "url": "http://127.0.0.1:8000"})
    b = resolve({"host": "gpu1", "log_cmd": "tail -F /srv/b.log", "url": "http://127.0.0.1:30000"})
    assert (a.target_name(), b.target_name()) == ("gpu1:8000", "gpu1:30000")
    assert resolve({"host": "gpu1", "unit": "vllm"}).target_name() == "gpu1/vllm"
    assert resolve({"host": "gpu1", "container": "sg"}).target_name() == "gpu1/container:sg"


def test_old_stamped_lines_written_during_the_watch_are_this_start(tmp_path: Path) -> None:
    """Stamps that look hours old but are written while the watch runs (a container logging UTC on a
    host in another zone) are this start's: its OOM fails the watch (exit 3), the log is never ignored."""
    d = tmp_path / "gen"
    d.mkdir()
    _previous_oom_run(d, hours_ago=3.0)
    lines = (d / "server.log").read_text()
    log = tmp_path / "live.log"
    log.write_text("")
    sleeper = subprocess.Popen(["sleep", "120"])
    args = ["--log-cmd", f"tail -F {log}", "--gpu-cmd", "true", "--url", "http://127.0.0.1:9", "--pid", str(sleeper.pid)]
    watch = subprocess.Popen(
        [sys.executable, "-m", "coldwatch", "wait", *args, "--interval", "0.5", "--timeout", "40", "-o", "json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={k: v for k, v in os.environ.items() if k != "CI"},
    )
    try:
        assert watch.stdout is not None
        first = watch.stdout.readline()  # the watch has begun (its first probe), however slow its start was
        time.sleep(EARLIER_BURST + 2)  # past the follower's first burst (an appended log's old lines)
        with log.open("a") as f:
            f.write(lines)
        out, _ = watch.communicate(timeout=90)
    finally:
        watch.kill()
        watch.wait()
        sleeper.kill()
        sleeper.wait()
    res = json_lines(first + out)[-1]
    assert "CUDA out of memory" in lines
    assert watch.returncode == 3 and res["failure_kind"] == "oom", res
