"""--metrics FILE and --pushgateway URL: the start's figures in Prometheus, checked with Debian's
promtool, a real Pushgateway and a real Prometheus started on loopback."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import SHARED_LOGS, coldwatch, json_lines

from coldwatch.metrics import exposition
from coldwatch.sim import free_port, spawn

READY_LOG = SHARED_LOGS / "001-sglang-laguna-int4-dflash-dgx-spark-ready.log"
FAILED_LOG = SHARED_LOGS / "007-vllm-laguna-int4-kv-cache-too-small.log"


def _tool(name: str) -> str:
    found = shutil.which(name) or (f"/usr/bin/{name}" if Path(f"/usr/bin/{name}").exists() else None)
    if found is None:
        pytest.skip(f"{name} is not installed (scripts/test installs Debian's prometheus and prometheus-pushgateway)")
    return found


def promtool(text: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([_tool("promtool"), "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)


def samples(text: str) -> dict[str, float]:
    """Each sample line: ``name{labels}`` -> value."""
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, value = line.rsplit(" ", 1)
            out[key] = float(value)
    return out


def _durations(res: dict[str, Any]) -> dict[str, float]:
    return {p["phase"]: (p["end"] if p["end"] is not None else res["t"]) - p["start"] for p in res["phases"] if p["phase"] != "ready"}


@pytest.mark.parametrize("log", [READY_LOG, FAILED_LOG], ids=["ready", "failed"])
def test_replay_metrics_pass_promtool_and_name_each_phase(log: Path, tmp_path: Path) -> None:
    """replay --metrics: promtool accepts the file; one phase series per phase of the result with its
    seconds, the duration under the outcome, the start time and the exit code."""
    out = tmp_path / "coldwatch.prom"
    r = coldwatch("replay", str(log), "--metrics", str(out), "--target", "gpu-a/sglang")
    res = json_lines(coldwatch("replay", str(log), "-o", "json").stdout)[-1]
    assert r.returncode == res["exit_code"]
    text = out.read_text()
    check = promtool(text)
    assert check.returncode == 0, check.stdout + check.stderr
    got = samples(text)
    for phase, secs in _durations(res).items():
        assert got[f'coldwatch_start_phase_seconds{{target="gpu-a/sglang",phase="{phase}"}}'] == pytest.approx(secs, abs=0.001)
    ready = next((p["start"] for p in res["phases"] if p["phase"] == "ready"), None)
    total = ready if res["outcome"] == "ready" else res["t"]
    assert got[f'coldwatch_start_duration_seconds{{target="gpu-a/sglang",outcome="{res["outcome"]}"}}'] == pytest.approx(total)
    assert got['coldwatch_start_exit_code{target="gpu-a/sglang"}'] == res["exit_code"]
    assert got['coldwatch_start_ready{target="gpu-a/sglang"}'] == (1 if res["outcome"] == "ready" else 0)
    assert ('coldwatch_start_timestamp_seconds{target="gpu-a/sglang"}' in got) == (res["ts"] is not None)


def test_metrics_file_is_replaced_whole(tmp_path: Path) -> None:
    """A second run replaces the file (a new inode, readable by the collector's user, mode 0644) and
    leaves no temporary file for the textfile collector to read."""
    out = tmp_path / "coldwatch.prom"
    coldwatch("replay", str(READY_LOG), "--metrics", str(out))
    first = out.stat().st_ino
    coldwatch("replay", str(FAILED_LOG), "--metrics", str(out), "--target", READY_LOG.name)
    assert out.stat().st_ino != first and oct(out.stat().st_mode & 0o777) == "0o644"
    assert [p.name for p in tmp_path.iterdir()] == ["coldwatch.prom"]
    assert 'outcome="failed"' in out.read_text() and 'outcome="ready"' not in out.read_text()


def test_label_values_are_escaped() -> None:
    """A target named with a quote, a backslash and a newline still gives valid exposition text."""
    res = json_lines(coldwatch("replay", str(READY_LOG), "-o", "json").stdout)[-1]
    text = exposition({'we"ird\\name\nx': res})
    check = promtool(text)
    assert check.returncode == 0, check.stdout + check.stderr
    assert 'target="we\\"ird\\\\name\\nx"' in text


def test_wait_metrics_name_each_phase(tmp_path: Path) -> None:
    """wait --metrics on the simulated start: promtool accepts it and every phase the start went
    through has its series."""
    d = tmp_path / "sim"
    d.mkdir()
    proc, port = spawn(d, "ready", 0.15)
    out = tmp_path / "wait.prom"
    try:
        r = coldwatch(*_wait_args(d, port), "--metrics", str(out), "-o", "json")
    finally:
        proc.kill()
        proc.wait()
    assert r.returncode == 0, r.stderr.decode()
    res = json_lines(r.stdout)[-1]
    text = out.read_text()
    assert promtool(text).returncode == 0
    phases = {k.split('phase="')[1].rstrip('"}') for k in samples(text) if k.startswith("coldwatch_start_phase_seconds")}
    assert phases == set(_durations(res)) and {"weight_load", "graph_capture", "warmup"} <= phases


def _wait_args(d: Path, port: int) -> list[str]:
    return [
        *("wait", "--log-cmd", f"tail -n +1 -F {d}/server.log", "--gpu-cmd", f"cat {d}/gpu.csv"),
        *("--url", f"http://127.0.0.1:{port}", "--interval", "0.5", "--target", "gpu-a/sglang"),
    ]


class Daemon:
    def __init__(self, argv: list[str], log: Path, ready_url: str) -> None:
        self.log = log.open("wb")
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(ready_url, timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail(f"{argv[0]} did not start: {log.read_text()[-2000:]}")
            time.sleep(0.2)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


@pytest.fixture
def prometheus(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A real Pushgateway and a real Prometheus scraping it every second, on free loopback ports:
    (pushgateway URL, Prometheus URL)."""
    gw_bin, prom_bin = _tool("prometheus-pushgateway"), _tool("prometheus")
    gw_port, prom_port = free_port(), free_port()
    gw_url, prom_url = f"http://127.0.0.1:{gw_port}", f"http://127.0.0.1:{prom_port}"
    gw = Daemon([gw_bin, f"--web.listen-address=127.0.0.1:{gw_port}"], tmp_path / "pushgateway.log", f"{gw_url}/-/ready")
    conf = tmp_path / "prometheus.yml"
    conf.write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        "scrape_configs:\n"
        "  - job_name: pushgateway\n"
        "    honor_labels: true\n"
        f"    static_configs: [{{targets: ['127.0.0.1:{gw_port}']}}]\n"
    )
    try:
        prom = Daemon(
            [
                prom_bin,
                f"--config.file={conf}",
                f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{prom_port}",
            ],
            tmp_path / "prometheus.log",
            f"{prom_url}/-/ready",
        )
    except BaseException:
        gw.stop()
        raise
    yield gw_url, prom_url
    prom.stop()
    gw.stop()


def query(prom_url: str, q: str) -> list[dict[str, Any]]:
    with urllib.request.urlopen(f"{prom_url}/api/v1/query?query={urllib.parse.quote(q)}", timeout=10) as r:
        body = json.load(r)
    assert body["status"] == "success"
    return list(body["data"]["result"])


def test_wait_pushgateway_lands_in_prometheus(tmp_path: Path, prometheus: tuple[str, str]) -> None:
    """wait --pushgateway: coldwatch pushes, Prometheus scrapes the Pushgateway, and its HTTP API
    answers coldwatch_start_phase_seconds for each phase, with the target and phase labels and the
    seconds of the result; a second start replaces the first one's series."""
    gw_url, prom_url = prometheus
    d = tmp_path / "sim"
    d.mkdir()
    proc, port = spawn(d, "ready", 0.15)
    try:
        r = coldwatch(*_wait_args(d, port), "--pushgateway", gw_url, "-o", "json")
    finally:
        proc.kill()
        proc.wait()
    assert r.returncode == 0, r.stderr.decode()
    assert "not pushed" not in r.stderr.decode()
    res = json_lines(r.stdout)[-1]
    want = _durations(res)
    deadline = time.monotonic() + 60
    got: dict[str, float] = {}
    while time.monotonic() < deadline:
        series = query(prom_url, 'coldwatch_start_phase_seconds{target="gpu-a/sglang"}')
        got = {s["metric"]["phase"]: float(s["value"][1]) for s in series}
        if set(got) == set(want):
            break
        time.sleep(0.5)
    assert set(got) == set(want), got
    for phase, secs in want.items():
        assert got[phase] == pytest.approx(secs, abs=0.001)
    (total,) = query(prom_url, 'coldwatch_start_duration_seconds{target="gpu-a/sglang"}')
    assert total["metric"]["outcome"] == "ready" and total["metric"]["job"] == "coldwatch"
    (began,) = query(prom_url, 'coldwatch_start_timestamp_seconds{target="gpu-a/sglang"}')
    assert abs(float(began["value"][1]) - time.time()) < 300
    # a failed start replaces the group: its outcome, no leftover series under "ready"
    assert coldwatch("replay", str(FAILED_LOG), "--pushgateway", gw_url, "--target", "gpu-a/sglang").returncode == 3
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        outcomes = {s["metric"]["outcome"] for s in query(prom_url, 'coldwatch_start_duration_seconds{target="gpu-a/sglang"}')}
        if outcomes == {"failed"}:
            break
        time.sleep(0.5)
    assert outcomes == {"failed"}


def test_unreachable_pushgateway_is_a_warning_not_a_verdict() -> None:
    """A Pushgateway that refuses: one line on stderr, the start's own exit code."""
    r = coldwatch("replay", str(READY_LOG), "--pushgateway", f"http://127.0.0.1:{free_port()}")
    assert r.returncode == 0
    assert "the figures were not pushed" in r.stderr.decode()


@pytest.mark.parametrize("url", ["ftp://gw:9091", "http://gw:9091/?x=1", "gw:9091", "http://user:secret@gw x"])
def test_bad_pushgateway_url_is_a_usage_error(url: str) -> None:
    """A URL that is not http(s)://HOST[:PORT][/PATH] is exit 2, one line, without its password."""
    r = coldwatch("replay", str(READY_LOG), "--pushgateway", url)
    err = r.stderr.decode()
    assert r.returncode == 2 and "--pushgateway" in err and "secret" not in err and len(err.strip().splitlines()) == 1


def test_pushgateway_from_the_environment(tmp_path: Path) -> None:
    """COLDWATCH_PUSHGATEWAY and COLDWATCH_METRICS set the options of wait like every other."""
    env = {**os.environ, "COLDWATCH_METRICS": str(tmp_path / "nope" / "x.prom")}
    r = coldwatch("wait", "--log-cmd", "true", "--timeout", "1", env=env)
    assert r.returncode == 2 and "--metrics: folder" in r.stderr.decode()


def test_fleet_gives_one_set_of_series_per_target(tmp_path: Path) -> None:
    """A fleet's run: each target's ``target_result`` is its own set of series in one file."""
    from coldwatch.metrics import MetricsSink

    ready = json_lines(coldwatch("replay", str(READY_LOG), "-o", "json").stdout)[-1]
    failed = json_lines(coldwatch("replay", str(FAILED_LOG), "-o", "json").stdout)[-1]
    out = tmp_path / "fleet.prom"
    sink = MetricsSink("fleet of 2", out, None)
    sink.emit({**ready, "event": "target_result", "target": "gpu-a"})
    sink.emit({**failed, "event": "target_result", "target": "gpu-b"})
    sink.emit({"event": "result", "t": 1.0, "ts": None, "outcome": "failed", "exit_code": 3, "phases": [], "targets": [{}, {}]})
    text = out.read_text()
    assert promtool(text).returncode == 0
    got = samples(text)
    assert got['coldwatch_start_ready{target="gpu-a"}'] == 1 and got['coldwatch_start_ready{target="gpu-b"}'] == 0
    assert 'target="fleet of 2"' not in text


def test_unreachable_host_still_leaves_its_figures_and_report(tmp_path: Path) -> None:
    """wait on a host that refuses SSH (exit 4): the metrics file says not ready with exit code 4 and
    outcome unreachable, and the report says UNREACHABLE with the reason."""
    prom, page = tmp_path / "u.prom", tmp_path / "u.html"
    r = coldwatch("wait", f"127.0.0.1:{free_port()}", "--metrics", str(prom), "--report", str(page), "--target", "gpu-x")
    assert r.returncode == 4
    got = samples(prom.read_text())
    assert got['coldwatch_start_ready{target="gpu-x"}'] == 0 and got['coldwatch_start_exit_code{target="gpu-x"}'] == 4
    assert any(k.startswith('coldwatch_start_duration_seconds{target="gpu-x",outcome="unreachable"}') for k in got)
    assert promtool(prom.read_text()).returncode == 0
    assert "UNREACHABLE" in page.read_text() and "cannot connect" in page.read_text()
