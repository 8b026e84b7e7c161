"""--report FILE.html: one offline page per start (and history --report), checked in a real headless Chromium."""

from __future__ import annotations

import base64
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from chromium import Browser, Page
from conftest import SHARED_LOGS, coldwatch, json_lines
from test_bandwidth import loopfs, watch_load  # noqa: F401 - loopfs is a fixture

from coldwatch.report import Collector, render
from coldwatch.sim import spawn

READY_LOG = SHARED_LOGS / "001-sglang-laguna-int4-dflash-dgx-spark-ready.log"
FAILED_LOG = SHARED_LOGS / "007-vllm-laguna-int4-kv-cache-too-small.log"
SCREENSHOT = os.environ.get("COLDWATCH_REPORT_SCREENSHOT")
"""Where test_wait_report_in_chromium saves its screenshot (docs/report.png is made this way)."""


class _Markup(HTMLParser):
    """Every element and attribute of a page, as a browser's parser sees them (text is not markup)."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.refs: list[str] = []
        self.style = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        for name, value in attrs:
            if name in ("src", "href", "xlink:href", "srcset", "action", "background") or name.startswith("on"):
                self.refs.append(f"<{tag} {name}={value}>")
            if value and re.search(r"url\(|javascript:", value, re.IGNORECASE):
                self.refs.append(f"<{tag} {name}={value}>")

    def handle_data(self, data: str) -> None:
        if self.lasttag == "style":
            self.style += data


def external(text: str) -> list[str]:
    """What in a page could fetch or run something: script-like elements, references, CSS imports."""
    m = _Markup()
    m.feed(text)
    bad = sorted(m.tags & {"script", "link", "img", "iframe", "object", "embed", "image", "use", "foreignobject", "a", "base", "form"})
    if re.search(r"url\(|@import", m.style, re.IGNORECASE):
        bad.append("css reference")
    return bad + m.refs


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    b = Browser(tmp_path_factory.mktemp("chromium"))
    yield b
    b.close()


def _result(*args: str) -> dict[str, Any]:
    r = coldwatch(*args, "-o", "json")
    return json_lines(r.stdout)[-1]


def _spans_geometry(page: Page, label: str, selector: str) -> dict[str, Any]:
    """Each shape's rendered box, and the SVG's own scale (CSS px per SVG unit)."""
    return dict(
        page.eval(
            f"""(() => {{
      const svg = document.querySelector('svg[aria-label="{label}"]');
      const box = svg.getBoundingClientRect();
      const k = box.width / svg.viewBox.baseVal.width;
      return {{k, left: box.left, pxs: +svg.dataset.pxPerS, x0: +svg.dataset.x0,
        shapes: [...svg.querySelectorAll('{selector}')].map(r => {{ const b = r.getBoundingClientRect();
          return {{phase: r.dataset.phase, start: +r.dataset.start, end: +r.dataset.end, seconds: +r.dataset.seconds, t: +r.dataset.t,
                  x: b.left, w: b.width, cls: r.getAttribute('class')}}; }})}};
    }})()"""
        )
    )


def _assert_offline(page: Page, url: str) -> None:
    assert page.requests() == [url], page.requests()
    assert page.problems() == []


def test_replay_report_page_renders_offline_and_bars_match_the_phases(tmp_path: Path, browser: Browser) -> None:
    """replay --report on a shared fixture: an inline SVG timeline, no external reference; in Chromium
    the page loads with no request but its own and no console error, and each phase's bar starts and
    spans where the result's phases say (to a pixel)."""
    out = tmp_path / "start.html"
    r = coldwatch("replay", str(READY_LOG), "--report", str(out))
    assert r.returncode == 0, r.stderr.decode()
    res = _result("replay", str(READY_LOG))
    text = out.read_text()
    assert "<svg" in text and 'aria-label="phase timeline"' in text and not external(text)
    assert "Content-Security-Policy" in text and "default-src 'none'" in text
    url = out.as_uri()
    page = browser.open(url)
    _assert_offline(page, url)
    g = _spans_geometry(page, "phase timeline", "rect.span")
    bars = {s["phase"]: s for s in g["shapes"]}
    expected = [p for p in res["phases"] if p["phase"] != "ready"]
    assert sorted(bars) == sorted(p["phase"] for p in expected)
    for p in expected:
        bar = bars[p["phase"]]
        end = p["end"] if p["end"] is not None else res["t"]
        assert bar["start"] == pytest.approx(p["start"]) and bar["end"] == pytest.approx(end)
        assert bar["x"] == pytest.approx(g["left"] + (g["x0"] + p["start"] * g["pxs"]) * g["k"], abs=1.0), p
        if (end - p["start"]) * g["pxs"] >= 1:
            assert bar["w"] == pytest.approx((end - p["start"]) * g["pxs"] * g["k"], abs=1.0), p
    # the longest phase is the widest bar, on screen
    longest = max(expected, key=lambda p: (p["end"] or res["t"]) - p["start"])
    assert max(g["shapes"], key=lambda s: s["w"])["phase"] == longest["phase"]
    html = page.eval("document.body.innerText")
    assert "READY" in html and "Log excerpts" in html and "weight_load begins" in html
    pdf = page.call("Page.printToPDF", {"printBackground": True})["data"]
    assert base64.b64decode(pdf).startswith(b"%PDF")  # it prints


def test_failed_start_is_marked_where_it_failed_with_its_cause(tmp_path: Path, browser: Browser) -> None:
    """A failed start: the mark stands at the verdict's time on the timeline, the header gives the cause,
    and the last lines before the failure are quoted."""
    out = tmp_path / "failed.html"
    r = coldwatch("replay", str(FAILED_LOG), "--report", str(out))
    res = _result("replay", str(FAILED_LOG))
    assert r.returncode == res["exit_code"] == 3
    page = browser.open(out.as_uri())
    _assert_offline(page, out.as_uri())
    mark = _spans_geometry(page, "phase timeline", "line.mark")
    (m,) = mark["shapes"]
    assert m["t"] == pytest.approx(res["t"])
    assert m["x"] == pytest.approx(mark["left"] + (mark["x0"] + res["t"] * mark["pxs"]) * mark["k"], abs=1.5)
    text = page.eval("document.body.innerText")
    assert "FAILED" in text and res["reason"][:60] in text and f"the last lines before {res['outcome']}" in text


def test_hostile_log_text_is_inert_in_the_page(tmp_path: Path, browser: Browser) -> None:
    """Markup, a script and terminal escapes in log lines arrive as visible text: no element, no script,
    no request, no raw control character in the page."""
    log = tmp_path / "evil.log"
    evil = [
        "[2026-05-30 10:00:00] server_args=ServerArgs(model_path='</td><script>alert(1)</script>', tp_size=2)",
        "[2026-05-30 10:00:01 TP0] Load weight begin. avail mem=70.00 GB <img src=http://127.0.0.1:9/x onerror=alert(2)>",
        "[2026-05-30 10:00:05 TP0] \x1b]0;owned\x07 <style>body{display:none}</style> \u202egnp.exe",
        "[2026-05-30 10:00:06 TP0] Traceback (most recent call last):",
        '[2026-05-30 10:00:06 TP0] RuntimeError: "><svg onload=alert(3)> CUDA out of memory. Tried to allocate 2.00 GiB',
    ]
    log.write_text("\n".join(evil) + "\n")
    out = tmp_path / "evil.html"
    coldwatch("replay", str(log), "--report", str(out))
    text = out.read_text()
    assert external(text) == [] and "<style>body" not in text
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text and "\\u202egnp.exe" in text
    page = browser.open(out.as_uri())
    _assert_offline(page, out.as_uri())
    assert page.eval("document.querySelectorAll('script, img, style:not(head style), svg[onload]').length") == 0
    assert "<script>alert(1)</script>" in page.eval("document.body.innerText")


def test_wait_report_in_chromium(tmp_path: Path, browser: Browser) -> None:
    """wait --report on the simulated 8-GPU start: the header names the model and TP, the timeline has
    a lane per rank, GPU memory is drawn per GPU with the phases as bands; the page renders offline."""
    d = tmp_path / "sim"
    d.mkdir()
    proc, port = spawn(d, "ready", 0.5)
    out = tmp_path / "wait.html"
    try:
        r = coldwatch(
            *("wait", "--log-cmd", f"tail -n +1 -F {d}/server.log", "--gpu-cmd", f"cat {d}/gpu.csv"),
            *("--url", f"http://127.0.0.1:{port}", "--pid", str(proc.pid), "--interval", "0.5", "-o", "json"),
            *("--report", str(out), "--target", "gpu-a/sglang"),
        )
    finally:
        proc.kill()
        proc.wait()
    assert r.returncode == 0, r.stderr.decode()
    res = json_lines(r.stdout)[-1]
    page = browser.open(out.as_uri())
    _assert_offline(page, out.as_uri())
    text = page.eval("document.body.innerText")
    assert "gpu-a/sglang" in text and "moonshotai/Kimi-K2.6" in text and "TP8" in text and "sglang" in text
    lanes = page.eval("[...document.querySelectorAll('svg[aria-label=\"phase timeline\"] text')].map(t => t.textContent)")
    assert {f"TP{i}" for i in range(8)} <= set(lanes)
    gpu = page.eval(
        "(() => { const s = document.querySelector('svg[aria-label^=\"GPU memory\"]');"
        " return {lines: s.querySelectorAll('polyline.series').length, bands: [...s.querySelectorAll('rect.band')].map(b => b.dataset.phase)}; })()"
    )
    assert gpu["lines"] >= 1 and "weight_load" in gpu["bands"] and "graph_capture" in gpu["bands"]
    g = _spans_geometry(page, "phase timeline", "rect.span")
    for s in g["shapes"]:
        p = next(p for p in res["phases"] if p["phase"] == s["phase"])
        assert s["x"] == pytest.approx(g["left"] + (g["x0"] + p["start"] * g["pxs"]) * g["k"], abs=1.0)
    if SCREENSHOT:
        page.screenshot(Path(SCREENSHOT))


def test_history_report_stacks_each_start_by_phase(tmp_path: Path, browser: Browser) -> None:
    """history --report: one stacked bar per recorded start, its segments as long as its phases, grouped
    by model and TP (two models: two groups), a group of ready starts led by its median start."""
    for log in (READY_LOG, READY_LOG, SHARED_LOGS / "027-sglang-docs-llama31-8b-quickstart-ready.log"):
        assert coldwatch("replay", str(log), "--record", "--target", "gpu-a").returncode == 0
    out = tmp_path / "history.html"
    r = coldwatch("history", "gpu-a", "--report", str(out))
    assert r.returncode == 0, r.stderr.decode()
    recs = json_lines(coldwatch("history", "gpu-a", "-o", "json").stdout)
    page = browser.open(out.as_uri())
    _assert_offline(page, out.as_uri())
    groups = page.eval("[...document.querySelectorAll('h2')].map(h => h.textContent)")
    assert len(groups) == 2 and all(g.startswith("gpu-a") for g in groups)
    assert "median of 2" in page.eval("document.body.innerText")  # the group with two ready starts leads with its median
    svgs = page.eval("[...document.querySelectorAll('svg[aria-label=\"starts of gpu-a\"]')].length")
    assert svgs == 2
    g = _spans_geometry(page, "starts of gpu-a", "rect.seg")
    first = recs[0]
    segs = [s for s in g["shapes"]][: len([s for s in g["shapes"]])]
    total = sum(s["seconds"] for s in segs[: _count_first_bar(segs)])
    assert total == pytest.approx(first["total"], abs=0.01)
    for s in segs:
        if s["seconds"] * g["pxs"] >= 1:
            assert s["w"] == pytest.approx(s["seconds"] * g["pxs"] * g["k"], abs=1.0)


def _count_first_bar(segs: list[dict[str, Any]]) -> int:
    """Segments of the first bar: until x jumps back to the left edge."""
    for i in range(1, len(segs)):
        if segs[i]["x"] < segs[i - 1]["x"]:
            return i
    return len(segs)


def test_status_report_is_a_snapshot(tmp_path: Path) -> None:
    """status --report: the page says where the start stands now (phase, GPUs, last line), offline."""
    d = tmp_path / "sim"
    d.mkdir()
    proc, port = spawn(d, "ready", 0.5)
    out = tmp_path / "status.html"
    try:
        subprocess.run([sys.executable, "-c", "import time; time.sleep(4)"], check=True)
        r = coldwatch(
            *("status", "--log-cmd", f"cat {d}/server.log", "--gpu-cmd", f"cat {d}/gpu.csv"),
            *("--url", f"http://127.0.0.1:{port}", "--report", str(out), "-o", "json"),
        )
    finally:
        proc.kill()
        proc.wait()
    snap = json_lines(r.stdout)[-1]
    text = out.read_text()
    assert "<h2>Now</h2>" in text and f"<td>{snap['phase']}</td>" in text and not external(text)
    assert "GPU0" in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--report", "/nonexistent-dir/x.html"), "--report: folder /nonexistent-dir does not exist"),
        (("--metrics", "/nonexistent-dir/x.prom"), "--metrics: folder /nonexistent-dir does not exist"),
        (("--report", "/tmp"), "--report: /tmp is a directory"),
    ],
)
def test_unwritable_output_is_a_usage_error(args: tuple[str, ...], message: str) -> None:
    """An output file that cannot be written is one line and exit 2, before anything is read."""
    r = coldwatch("replay", str(READY_LOG), *args)
    assert r.returncode == 2 and message in r.stderr.decode()
    assert len(r.stderr.decode().strip().splitlines()) == 1


def test_report_does_not_change_the_verdict_or_the_stream(tmp_path: Path) -> None:
    """With --report the NDJSON stream and the exit code are what they are without it."""
    plain = coldwatch("replay", str(FAILED_LOG), "-o", "json")
    r = coldwatch("replay", str(FAILED_LOG), "-o", "json", "--report", str(tmp_path / "x.html"))
    assert r.returncode == plain.returncode == 3
    assert json_lines(r.stdout) == json_lines(plain.stdout) and (tmp_path / "x.html").stat().st_size > 0


def test_load_chart_from_a_real_load_on_a_loop_device(loopfs: tuple[Path, str], tmp_path: Path, browser: Browser) -> None:  # noqa: F811
    """A real load (the stand-in loader on a loop device, read by the real streaming sampler, judged by
    the judge): the report draws the server's read rate and what the device delivered, and states the
    load's verdict line (the ``load`` event's when there was one)."""
    model, _ = loopfs
    events = watch_load(model, "cpu", "cold")
    said = [e for e in events if e["event"] == "load" and e["verdict"]]
    line = said[-1]["line"] if said else next(e["line"] for e in reversed(events) if e["event"] == "_load")
    c = Collector("loop", "wait")
    for ev in events:
        c.emit(ev)
    c.emit(
        {
            "event": "result",
            "t": events[-1]["t"],
            "ts": None,
            "outcome": "incomplete",
            "phases": [{"phase": "weight_load", "start": 0.0, "end": None}],
        }
    )
    rep = c.report({}, 0)
    assert rep.load_rate.points and rep.disk_rate.points and rep.load_verdict == (said[-1]["verdict"] if said else None)
    out = tmp_path / "load.html"
    out.write_text(render(rep))
    page = browser.open(out.as_uri())
    _assert_offline(page, out.as_uri())
    names = page.eval("[...document.querySelectorAll('svg[aria-label=\"load bandwidth\"] polyline.series')].map(p => p.dataset.name)")
    assert names == ["server read rate", "disk delivered"]
    assert line[:60] in page.eval("document.body.innerText")


def test_culprit_rank_is_marked_from_the_result_ranks(tmp_path: Path) -> None:
    """A stall whose result carries ``ranks``: every rank gets its lane with its state and innermost
    frame, the one the reason names is the culprit (red), and the mark stands at the stall."""
    c = Collector("gpu-a", "wait")
    c.emit({"event": "phase", "t": 1.0, "phase": "weight_load", "rank": "TP0", "evidence": "Load weight begin."})
    for r in range(4):
        c.emit({"event": "_log", "t": 2.0 + r, "text": "Load weight begin.", "rank": f"TP{r}"})
    c.emit({"event": "stall", "t": 40.0, "message": "no liveness"})
    ranks = [
        {"rank": r, "node": None, "pid": 100 + r, "state": "waiting", "frames": ["all_reduce (torch/distributed.py:10)"]} for r in range(4)
    ]
    ranks[2] = {"rank": 2, "node": None, "pid": 102, "state": "blocked", "frames": ["read (safetensors/<hostile>.py:3)", "load"]}
    c.emit(
        {
            "event": "result",
            "t": 40.0,
            "ts": "2026-05-30T10:00:40.000Z",
            "outcome": "stalled",
            "exit_code": 5,
            "phase": "weight_load",
            "failure_kind": None,
            "reason": "stalled in weight_load: TP2 blocked in read (safetensors/<hostile>.py:3), the others wait",
            "phases": [{"phase": "weight_load", "start": 1.0, "end": None}],
            "ranks": ranks,
        }
    )
    rep = c.report({}, 0)
    lanes = {ln.label: ln for ln in rep.lanes}
    assert set(lanes) == {"TP0", "TP1", "TP2", "TP3"} and [ln.label for ln in rep.lanes if ln.culprit] == ["TP2"]
    assert lanes["TP2"].state == "blocked" and lanes["TP2"].frame is not None and lanes["TP2"].frame.startswith("read (")
    assert rep.mark == (40.0, "STALLED")
    text = render(rep)
    assert 'class="culprit">TP2 · blocked' in text and "&lt;hostile&gt;" in text and "<hostile>" not in text
    assert "<h2>Where it is stuck</h2>" in text


def test_multinode_lanes_and_nodes_table() -> None:
    """Events tagged with their node: a lane per node and rank, GPUs named per node, and the result's
    ``nodes`` as a table naming the node at fault."""
    c = Collector("gpu-a", "wait")
    c.emit({"event": "phase", "t": 1.0, "phase": "weight_load", "rank": "TP0", "node": "gpu-a", "evidence": "Load weight begin."})
    c.emit({"event": "phase", "t": 3.0, "phase": "weight_load", "rank": "TP8", "node": "gpu-b", "evidence": "Load weight begin."})
    c.emit({"event": "gpu", "t": 2.0, "node": "gpu-b", "gpus": [{"index": 0, "used_mib": 2048, "total_mib": 81920, "util": 5}]})
    c.emit({"event": "gpu", "t": 4.0, "node": "gpu-b", "gpus": [{"index": 0, "used_mib": 40960, "total_mib": 81920, "util": 9}]})
    nodes = [
        {
            "node": "gpu-a",
            "head": True,
            "ranks": "TP0-TP7",
            "phase": "weight_load",
            "outcome": "pending",
            "failure_kind": None,
            "reason": "",
        },
        {
            "node": "gpu-b",
            "head": False,
            "ranks": "TP8-TP15",
            "phase": "weight_load",
            "outcome": "failed",
            "failure_kind": "nccl",
            "reason": "NCCL error: <unhandled system error>",
        },
    ]
    c.emit(
        {
            "event": "result",
            "t": 9.0,
            "ts": None,
            "outcome": "failed",
            "exit_code": 3,
            "failure_kind": "nccl",
            "reason": "gpu-b (TP8-TP15): NCCL error",
            "phases": [{"phase": "weight_load", "start": 1.0, "end": None}],
            "nodes": nodes,
        }
    )
    rep = c.report({}, 0)
    assert [ln.label for ln in rep.lanes] == ["gpu-a TP0", "gpu-b TP8"]
    assert [s.name for s in rep.gpu] == ["gpu-b GPU0"] and rep.gpu_capacity == 80.0
    text = render(rep)
    assert "<h2>Nodes</h2>" in text and "gpu-b</td><td>TP8-TP15" in text and "NCCL error: &lt;unhandled system error&gt;" in text
    assert rep.mark == (9.0, "FAILED [nccl]")


def test_report_of_a_fleet_is_a_usage_error(tmp_path: Path) -> None:
    """A report shows one server's start: with several HOSTs --report is exit 2, says so, writes nothing."""
    r = coldwatch("wait", "gpu-a", "gpu-b", "--report", str(tmp_path / "fleet.html"))
    assert r.returncode == 2 and "--report: a report shows one server's start" in r.stderr.decode()
    assert list(tmp_path.iterdir()) == []
