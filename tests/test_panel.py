"""The live panel's layout at fixed terminal sizes: what shows first, what folds, what never wraps."""

from __future__ import annotations

import io
from typing import Any

import pytest
from rich.console import Console

from coldwatch.judge import Judge, Policy
from coldwatch.normalise import LogLine
from coldwatch.render.panel import PanelState, http_text, render_panel, render_rows

OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 5 has a total capacity of 95.58 GiB of which 412.00 MiB is free."


def gpus(used: list[int], util: int = 90) -> dict[str, Any]:
    return {"event": "gpu", "gpus": [{"index": i, "used_mib": u, "total_mib": 97871, "util": util} for i, u in enumerate(used)]}


def mid_run(n_gpus: int = 8, differ: bool = False) -> PanelState:
    """A TP8 start in graph capture, 14 s in: what the demo's panel sees at that point."""
    s = PanelState(target="gpu-host/sglang", deadline=600.0)
    evs: list[dict[str, Any]] = [
        {
            "event": "_info",
            "t": 0.0,
            "target": "gpu-host/sglang",
            "unit": "sglang",
            "engine": "sglang",
            "version": "0.5.23",
            "deadline": 600.0,
        },
        {
            "event": "_log",
            "t": 0.1,
            "rank": "",
            "text": "server_args=ServerArgs(model_path='moonshotai/Kimi-K2.6', tp_size=8, quantization='compressed-tensors')",
        },
        {"event": "_launch", "t": 0.1, "engine": "sglang", "model": "moonshotai/Kimi-K2.6", "tp": 8, "version": None},
        {
            "event": "http",
            "t": 0.5,
            "state": "refused",
            "status": None,
            "detail": "connection refused (port not bound yet)",
            "changed": True,
        },
        {"event": "phase", "t": 1.0, "phase": "dist_init", "evidence": "Init torch distributed begin."},
        {"event": "phase", "t": 2.0, "phase": "weight_load", "evidence": "Load weight begin. avail mem=94.71 GB"},
        *({"event": "progress", "t": 2.0 + i * 0.1, "phase": "weight_load", "done": i, "total": 64} for i in range(65)),
        {"event": "phase", "t": 9.0, "phase": "kv_alloc", "evidence": "KV Cache is allocated."},
        {
            "event": "phase",
            "t": 11.0,
            "phase": "graph_capture",
            "evidence": "Capture target verify CUDA graph begin. backend=full, num_tokens_per_req=4, bs=[1, 2, 4, 8, 16, 32, 48, 64], avail mem=9.60 GB",
        },
        *(
            {
                "event": "_log",
                "t": 11.0,
                "rank": f"TP{r}",
                "text": "Capture target verify CUDA graph begin. backend=full, num_tokens_per_req=4",
            }
            for r in range(8)
        ),
        {"event": "progress", "t": 11.0, "phase": "graph_capture", "done": 0, "total": 36},
        {"event": "progress", "t": 14.0, "phase": "graph_capture", "done": 12, "total": 36},
        gpus([87000 + (40000 if differ and i == 5 else 0) - (30000 if differ and i == 5 else 0) * 2 for i in range(n_gpus)]),
    ]
    for ev in evs:
        s.apply(ev)
    return s


def show(s: PanelState, w: int, h: int) -> list[str]:
    con = Console(file=io.StringIO(), width=w, height=h, record=True, color_system=None, legacy_windows=False)
    con.print(render_panel(s, w, h))
    return con.export_text().rstrip("\n").split("\n")


def oom(s: PanelState) -> PanelState:
    s.apply(
        {
            "event": "result",
            "t": 15.0,
            "outcome": "failed",
            "exit_code": 3,
            "phase": "graph_capture",
            "failure_kind": "oom",
            "reason": OOM,
            "phases": [],
        }
    )
    return s


@pytest.mark.parametrize(("w", "h"), [(80, 24), (100, 30), (200, 50), (60, 16), (40, 12)])
def test_panel_fits_the_terminal_and_keeps_what_matters(w: int, h: int) -> None:
    """At every size: never taller or wider than the terminal, boxed, and the current phase with its
    progress, elapsed time and ETA are on screen."""
    rows = show(mid_run(), w, h)
    assert len(rows) <= h
    assert all(len(r) == w for r in rows), [r for r in rows if len(r) != w]
    assert rows[0].startswith("╭") and rows[-1].startswith("╰")
    text = "\n".join(rows)
    assert "▶ graph_capture" in text and "12/36" in text
    assert "elapsed 14s / 10m00s" in text or w < 60  # a 40-column panel still says elapsed, cut
    assert "elapsed" in text
    if w >= 60:
        assert "ETA" in text


def test_short_terminal_folds_gpus_and_log_before_phases() -> None:
    """80x24: eight equal GPUs become one row, the log tail shrinks; 200x50: everything in full."""
    small = "\n".join(show(mid_run(), 80, 24))
    assert "8 GPUs" in small and "GPU7" not in small and "each" in small
    assert "· ready" in small  # the phase list is still whole
    big = "\n".join(show(mid_run(), 200, 50))
    assert all(f"GPU{i} " in big for i in range(8))
    tiny = "\n".join(show(mid_run(), 80, 12))
    assert "done" in tiny and "▶ graph_capture" in tiny  # finished phases folded into one row


def test_gpus_that_differ_keep_one_cell_each() -> None:
    """When one GPU reads differently, a short panel keeps a grid (one cell per GPU), not one summary."""
    text = "\n".join(show(mid_run(differ=True), 80, 24))
    assert "5:" in text and "7:" in text and "each" not in text


def test_identical_lines_from_ranks_collapse() -> None:
    """The same line from 8 ranks is one log row marked ×8 ranks."""
    text = "\n".join(show(mid_run(), 120, 40))
    assert text.count("Capture target verify CUDA graph begin. backend=full, num_tokens_per_req=4 ×8 ranks") == 1


def test_long_evidence_ends_in_ellipsis_and_never_wraps() -> None:
    """Evidence longer than the row is cut with an ellipsis; the next row is the next block."""
    rows = show(mid_run(), 80, 24)
    ev = [i for i, r in enumerate(rows) if "evidence:" in r]
    assert len(ev) == 1
    assert rows[ev[0]].rstrip(" │").endswith("…")
    assert "elapsed" in rows[ev[0] + 1]


@pytest.mark.parametrize(
    ("ev", "once"),
    [
        ({"state": "refused", "detail": "connection refused (port not bound yet)"}, ["port not bound yet", "connection refused"]),
        ({"state": "ready", "status": 200, "detail": "completion returned"}, ["completion returned", "200"]),
        ({"state": "status", "status": 503, "detail": "/v1/completions answered 503"}, ["503"]),
    ],
)
def test_http_rung_is_said_once(ev: dict[str, Any], once: list[str]) -> None:
    """The HTTP line says each thing once (it used to read 'completion returned 200  completion returned')."""
    text = http_text(ev)
    for word in once:
        assert text.count(word) == 1, text


def test_failed_phase_is_marked_with_its_cause_and_no_running_marker() -> None:
    """After an oom verdict the phase is ✗ with the cause under it; nothing is marked running; the
    verdict leads the panel."""
    for w, h in ((80, 24), (100, 30), (200, 50)):
        rows = show(oom(mid_run()), w, h)
        text = "\n".join(rows)
        assert "▶" not in text
        assert "✗ FAILED [oom] in graph_capture (exit 3)" in rows[2]
        assert "412.00 MiB is free" in text  # the whole cause, wrapped, at the top
        row = next(i for i, r in enumerate(rows) if "✗ graph_capture" in r)
        assert "└ torch.OutOfMemoryError" in rows[row + 1]


def test_ready_verdict_leads_and_marks_every_phase_done() -> None:
    """A ready result: READY at the top, ready ticked, no running marker, no ETA left."""
    s = mid_run()
    s.apply(
        {
            "event": "result",
            "t": 30.0,
            "outcome": "ready",
            "exit_code": 0,
            "phase": "ready",
            "failure_kind": None,
            "reason": "",
            "phases": [],
        }
    )
    text = "\n".join(show(s, 80, 24))
    assert "✓ READY (exit 0) after 30s" in text and "✓ ready" in text
    assert "▶" not in text and "ETA" not in text


def test_header_names_the_server() -> None:
    """The header says engine, version, model and TP size; the model and TP come from what the judge
    read of the start's own banner when not given; the title names the target."""
    rows = show(mid_run(), 100, 30)
    assert "coldwatch · gpu-host/sglang" in rows[0]
    assert "sglang 0.5.23 · moonshotai/Kimi-K2.6 · TP8" in rows[1]


def test_header_from_a_vllm_banner() -> None:
    """vLLM's own lines give the engine, its version, the model and the TP size: the judge reads the
    banner, the panel shows what it read."""
    j = Judge(Policy(launch=True, tail=True, stall_after=0.0))
    s = PanelState(target="t")
    for text in (
        "vLLM API server version 0.11.0",
        "Initializing a V1 LLM engine (v0.11.0) with config: model='/models/org/name', tensor_parallel_size=2",
    ):
        j.observe(LogLine(text, None, "", text), 0.0)
        for ev in j.drain():
            s.apply(ev)
    assert (s.engine, s.version, s.model, s.tp) == ("vllm", "0.11.0", "/models/org/name", 2)
    assert "vllm 0.11.0 · org/name · TP2" in "\n".join(show(s, 80, 24))


def test_info_keys_are_all_optional_and_a_later_info_updates() -> None:
    """A bare _info is fine; a second one (model known later) updates the header."""
    s = PanelState(target="t")
    s.apply({"event": "_info", "t": 0.0})
    s.apply({"event": "_info", "t": 3.0, "model": "org/model", "tp": 4, "nodes": ["a", "b"], "baseline": {"weight_load": 60, "total": 100}})
    text = "\n".join(show(s, 80, 24))
    assert "org/model · 2 nodes · TP4" in text
    assert "ETA ~1m37s (usual 1m40s)" in text


def test_slower_than_usual_is_what_the_judge_found() -> None:
    """The panel marks a phase slower than usual when the judge says so (its rule: 1.5x the median and
    30 s more, in test_judge), in the phase list and on the current phase; other phases stay unmarked."""
    j = Judge(Policy(baseline={"weight_load": 60.0, "kv_alloc": 10.0}, stall_after=0.0, tail=True))
    s = PanelState(target="t", baseline={"weight_load": 60.0, "kv_alloc": 10.0})
    j.observe(LogLine("KV Cache is allocated. #tokens: 1000, K size: 1 GB", None, "", ""), 0.0)
    j.tick(20.0)  # kv_alloc 20 s: 2x but only 10 s more
    j.observe(LogLine("Load weight begin. avail mem=75.00 GB", None, "", ""), 20.0)
    j.tick(120.0)  # weight_load 100 s: 1.67x and 40 s more
    for ev in j.drain():
        s.apply(ev)
    s.apply({"event": "_tick", "t": 120.0})
    rows = show(s, 100, 30)
    assert "slower than usual" in next(r for r in rows if "▶ weight_load  " in r)  # the phase list
    assert "slower than usual" in next(r for r in rows if "▶ weight_load 1m40s" in r)  # the current phase
    assert "slower" not in next(r for r in rows if "✓ kv_alloc" in r)


def test_remote_text_cannot_reach_the_terminal_as_control_sequences() -> None:
    """Escape and control characters in a log line, a model id or an HTTP detail are shown inert."""
    s = PanelState(target="t")
    s.apply({"event": "_log", "t": 0, "text": "boom \x1b[2J\x1b]0;owned\x07 done"})
    s.apply({"event": "_info", "t": 0, "model": "m\x1b[31mred"})
    s.apply({"event": "http", "t": 0, "state": "status", "status": 500, "detail": "err\r\x1b[Kbody"})
    con = Console(file=io.StringIO(), width=80, height=24, force_terminal=True, color_system=None)
    con.print(render_panel(s, 80, 24))
    out = con.file.getvalue()  # type: ignore[attr-defined]
    assert "\x1b[2J" not in out and "\x1b]0" not in out and "\r" not in out and "\x07" not in out


def test_node_rows_render_and_fold() -> None:
    """One row per node: name, phase, progress, GPU memory, liveness age, verdict; folded to a count."""
    rows: list[dict[str, Any]] = [
        {"name": "node-a", "phase": "weight_load", "progress": (30, 64), "gpu_mem": (40000, 97871), "age": 1.0, "verdict": None},
        {"name": "node-b", "phase": "kv_alloc", "progress": None, "gpu_mem": (80000, 97871), "age": 12.0, "verdict": None},
        {"name": "node-c", "phase": "graph_capture", "gpu_mem": (85000, 97871), "verdict": "failed"},
    ]
    out = [t.plain for t in render_rows(rows, 80)]
    assert len(out) == 3 and all(len(r) <= 80 for r in out)
    assert out[0].startswith("▶ node-a weight_load") and "30/64" in out[0] and "39/96 GB" in out[0] and "alive 1s ago" in out[0]
    assert "alive 12s ago" in out[1]
    assert out[2].startswith("✗ node-c") and "FAILED" in out[2]
    assert [t.plain for t in render_rows(rows, 80, "summary")] == ["3 nodes: 1 weight_load, 1 kv_alloc, 1 failed"]
    s = mid_run()
    s.rows = rows
    assert "node-c" in "\n".join(show(s, 100, 40)) and "3 nodes:" in "\n".join(show(s, 80, 14))


def test_tiny_terminal_still_renders() -> None:
    """Below a usable size the panel drops its box and still never exceeds the terminal."""
    rows = show(mid_run(), 18, 3)
    assert len(rows) <= 3 and all(len(r) <= 18 for r in rows)


def test_a_stall_is_said_by_the_verdict_not_again_as_a_warning() -> None:
    """The stall event's message is the verdict's reason: it is not repeated as a warning."""
    s = mid_run()
    msg = "no liveness evidence for 600s (budget 600s) in graph_capture; last: log 600s ago"
    s.apply({"event": "stall", "t": 614.0, "message": msg})
    s.apply({"event": "result", "t": 614.0, "outcome": "stalled", "exit_code": 5, "phase": "graph_capture", "reason": msg, "phases": []})
    text = "\n".join(show(s, 100, 30))
    assert "⚠" not in text and "✗ STALLED in graph_capture (exit 5)" in text and "✗ graph_capture" in text


def test_per_phase_eta_counts_down_between_events_and_names_its_basis() -> None:
    """An eta event: the status row counts down from it, says how it was made, and keeps the usual total."""
    s = mid_run()
    s.apply({"event": "_info", "t": 0.0, "baseline": {"total": 60.0}})
    s.apply({"event": "eta", "t": 12.0, "remaining_s": 40.0, "phase": "graph_capture", "basis": "history", "history": "model", "starts": 2})
    text = "\n".join(show(s, 100, 30))
    assert "ETA ~38s (per phase, same model elsewhere; usual 1m00s)" in text
    s.apply({"event": "eta", "t": 14.0, "remaining_s": 10.0, "phase": "weight_load", "basis": "progress", "history": "target"})
    assert "ETA ~10s (at this load's rate; usual 1m00s)" in "\n".join(show(s, 100, 30))


def test_load_verdict_shows_under_the_weight_load() -> None:
    """The load's bandwidth line (remote text inside: sanitised) shows while the weights load."""
    s = PanelState(target="h/sglang")
    s.apply({"event": "phase", "t": 1.0, "phase": "weight_load", "evidence": "Load weight begin."})
    s.apply({"event": "_load", "t": 3.0, "line": "reading 3.1 GB/s from nvme0n1\x1b[31m at 98% busy: disk-bound", "verdict": "disk-bound"})
    text = "\n".join(show(s, 100, 20))
    assert "load: reading 3.1 GB/s from nvme0n1" in text and "98% busy: disk-bound" in text and "\x1b" not in text
