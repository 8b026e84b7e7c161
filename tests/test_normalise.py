"""Line normalisation: wrappers, stamps, ranks, carriage returns, junk and huge lines."""

from __future__ import annotations

import resource
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coldwatch.normalise import MAX_RECORD, Normaliser, normalise, split_records, unwrap
from coldwatch.replay import replay


def one(raw: str) -> tuple[str, str, float | None]:
    lines = list(normalise([raw.encode()]))
    assert len(lines) == 1, lines
    return lines[0].text, lines[0].rank, lines[0].t


@pytest.mark.parametrize(
    ("raw", "text", "rank"),
    [
        ("[2025-03-08 12:29:11 TP3] Init torch distributed begin.", "Init torch distributed begin.", "TP3"),
        (
            "[2026-01-21 19:39:12 DP0 TP0 EP0] Load weight begin. avail mem=1.00 GB",
            "Load weight begin. avail mem=1.00 GB",
            "DP0 TP0 EP0",
        ),
        ("[23:17:01 TP4] Memory pool end. avail mem=18.61 GB", "Memory pool end. avail mem=18.61 GB", "TP4"),
        ("[2026-03-27 09:31:16] WARNING model_config.py:1178: Casting torch.bfloat16", "Casting torch.bfloat16", ""),
        ("May 30 20:27:13 gpu1 python[1988]: [2026-05-30 20:27:13 TP1] Load weight end.", "Load weight end.", "TP1"),
        (
            "2026-05-30T20:27:13+0000 gpu1 sglang[1988]: The server is fired up and ready to roll!",
            "The server is fired up and ready to roll!",
            "",
        ),
        ("deepseek-v32-exp  | [2025-10-01 10:00:00 TP2] KV Cache is allocated.", "KV Cache is allocated.", "TP2"),
        (
            "(SGLangEngine pid=23902) [2026-01-04 01:42:55 TP1] Scheduler hit an exception: Traceback (most recent call last): [repeated 2x across cluster]",
            "Scheduler hit an exception: Traceback (most recent call last):",
            "TP1",
        ),
        ("2025-10-09T04:13:06.6371779Z [rank0]: RuntimeError: NCCL error", "RuntimeError: NCCL error", "rank0"),
        (
            "(EngineCore_DP0 pid=602) INFO 05-30 20:27:07 [gpu_model_runner.py:2602] Starting to load model x...",
            "Starting to load model x...",
            "",
        ),
        (
            "(VllmWorker rank=3 pid=9) ERROR 08-01 17:36:24 [multiproc_executor.py:470] WorkerProc failed to start.",
            "WorkerProc failed to start.",
            "worker3",
        ),
        ("\x1b[1;36m(VllmWorker rank=1 pid=2)\x1b[0m INFO 08-01 17:36:24 [x.py:1] hello", "hello", "worker1"),
        ("[1;36m(VllmWorker rank=2 pid=2)[0m INFO 08-01 17:36:24 [x.py:1] hello", "hello", "worker2"),
        (
            "2025-06-25 11:25:58,633 - INFO - flashinfer.jit: Prebuilt kernels not found",
            "flashinfer.jit: Prebuilt kernels not found",
            "",
        ),
    ],
)
def test_wrappers_and_prefixes_are_removed(raw: str, text: str, rank: str) -> None:
    """Each wrapper seen in real logs is stripped, keeping the message and the rank."""
    got_text, got_rank, _ = one(raw)
    assert (got_text, got_rank) == (text, rank)


def test_carriage_returns_split_bar_updates_and_glued_lines() -> None:
    """tqdm updates joined by CR become separate lines; a log line glued to a bar is split off."""
    raw = (
        b"Loading safetensors checkpoint shards:   0% Completed | 0/8 [00:00<?, ?it/s]\r"
        b"Loading safetensors checkpoint shards: 100% Completed | 8/8 [00:05<00:00,  1.51it/s]"
        b"[2026-02-09 14:38:28 TP1] Capture cuda graph begin.\n"
    )
    lines = list(normalise([raw]))
    assert [ln.text for ln in lines] == [
        "Loading safetensors checkpoint shards:   0% Completed | 0/8 [00:00<?, ?it/s]",
        "Loading safetensors checkpoint shards: 100% Completed | 8/8 [00:05<00:00,  1.51it/s]",
        "Capture cuda graph begin.",
    ]
    assert lines[2].rank == "TP1"


def test_clock_rolls_over_midnight_and_aligns_second_style() -> None:
    """Time-only stamps roll over at midnight; a second stamp style is aligned, not mixed."""
    n = Normaliser()
    t = [n.lines(r)[0].t for r in (b"[23:59:58 TP0] a", b"[00:00:03 TP0] b", b"INFO 03-07 12:00:00 [x.py:1] c", b"[00:00:04 TP0] d")]
    assert t == [0.0, 5.0, 5.0, 6.0]


def test_records_are_split_in_bounded_pieces() -> None:
    """A record longer than the cap is cut; the next record arrives intact."""
    big = b"x" * (MAX_RECORD * 3)
    recs = list(split_records([big[:1000], big[1000:], b"\nnext line\n"]))
    assert len(recs[0]) == MAX_RECORD and recs[1] == b"next line"


def test_fifty_megabyte_line_stays_in_bounded_memory() -> None:
    """A 50 MB line without newline, then a ready line: verdict ready, RSS growth far below 50 MB."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    chunk = b"\xff\x00garbage" * (1 << 17)  # 1.1 MB

    def chunks() -> Iterator[bytes]:
        for _ in range(48):
            yield chunk
        yield b"\n[2026-01-01 00:00:00] The server is fired up and ready to roll!\n"

    _, v = replay(chunks())
    grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert v.outcome == "ready"
    assert grown_kb < 20 * 1024


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=300), max_size=20))
def test_arbitrary_bytes_never_crash(chunks: list[bytes]) -> None:
    """Any bytes at all: a verdict, never an exception."""
    _, v = replay(chunks)
    assert v.outcome in ("ready", "failed", "incomplete")


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                b"\r",
                b"\n",
                b"\r\n",
                b"50%|##| 5/10",
                b"[2026-01-01 00:00:0",
                b"\xe2\x96",
                b"TP0] ",
                b"Load weight begin.",
            ]
        ),
        max_size=60,
    )
)
def test_cr_storms_and_truncated_utf8_never_crash(parts: list[bytes]) -> None:
    """Carriage-return storms, cut stamps and truncated UTF-8 are handled."""
    _, v = replay([b"".join(parts)])
    assert v.outcome in ("ready", "failed", "incomplete")


def test_a_consoles_bare_time_before_each_line_is_its_stamp_not_the_lines_text() -> None:
    """A web console's export, pasted indented into a quote: '2025-03-11 09:50:47.549<TAB>Loading ...'.
    The bar is the weight load (it read as text that opens with a date, so the start stayed in
    'starting'); the stamps are the clock; an engine prefix behind the time still names its rank;
    Python logging's own ' - name - ' columns are not taken for it."""
    log = b"".join(
        b">  \t \t2025-03-11 09:51:%02d.%03d\tLoading safetensors checkpoint shards: %d%% Completed | %d/163 [13:%02d<00:37, 5.32s/it]\t \n"
        % (s, 7 * s, 90 + i, 146 + i, s)
        for i, s in enumerate((47, 52, 59))
    )
    lines = list(normalise([log]))
    assert [ln.text[:37] for ln in lines] == ["Loading safetensors checkpoint shards"] * 3
    assert [ln.t for ln in lines] == [0.0, 5.0, 12.0]
    _, v = replay([log])
    assert (v.outcome, v.phase) == ("incomplete", "weight_load")
    (tagged,) = Normaliser().lines(b"2025-03-11 09:50:47.549 [2025-03-11 09:50:47 TP3] Load weight begin. avail mem=3 GB")
    assert (tagged.text, tagged.rank) == ("Load weight begin. avail mem=3 GB", "TP3")
    (pylog,) = Normaliser().lines(b"2025-03-11 09:50:47,123 - vllm.engine - INFO - init engine took 3 s")
    assert pylog.text == "init engine took 3 s"


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        # kubectl/oc logs --prefix
        (
            "[pod/vllm-6f7d8c-x2k9q/vllm] INFO 12-02 08:00:01 [core.py:1] Loading weights took 3.1 seconds",
            "Loading weights took 3.1 seconds",
        ),
        # moreutils' ts: its one space only, so a frame keeps its indent
        ('Dec 02 08:00:05   File "/x/model_runner.py", line 9, in load_model', 'File "/x/model_runner.py", line 9, in load_model'),
        # compose's column over journald's prefix: two layers removed
        ("vllm-1  | 2026-05-30T20:27:01+0000 gpu1 python[1988]: [2026-05-30 20:27:01 TP0] Load weight begin.", "Load weight begin."),
        # srun --label before a traceback frame
        ('0:   File "/torch/distributed/c10d.py", line 4, in barrier', 'File "/torch/distributed/c10d.py", line 4, in barrier'),
    ],
)
def test_collector_wrappers_in_layers_are_removed(raw: str, text: str) -> None:
    assert unwrap(raw)[0].strip() == text


def test_ts_time_before_an_error_is_not_read_as_journald_host_and_unit() -> None:
    # 'api_server.py: error: ...' after ts's stamp looked like journald's 'host unit: '
    assert (
        unwrap("Dec 02 08:00:05 api_server.py: error: unrecognized arguments: --x")[0]
        == "api_server.py: error: unrecognized arguments: --x"
    )
