"""The classifier's principles on small logs in real engines' wording: markers behind any wrapper,
kind from the cause (never the consequence), cut tracebacks placed by their frames, signals and
supervisors, every JIT family. Each case is a shape seen in public start-up logs."""

from __future__ import annotations

import pytest

from coldwatch.normalise import normalise, service_of
from coldwatch.phases.classifier import parse_bar
from coldwatch.replay import replay


def verdict(text: str) -> tuple[str, str | None, str | None]:
    _, v = replay([text.encode()])
    return v.outcome, v.phase, v.failure_kind


def one(raw: str) -> tuple[str, str]:
    lines = list(normalise([raw.encode()]))
    assert len(lines) == 1, lines
    return lines[0].text, lines[0].rank


@pytest.mark.parametrize(
    ("raw", "text", "rank"),
    [
        # a host program re-logging the engine's lines through Python logging (olmocr)
        (
            "2025-03-08 02:04:48,693 - __main__ - INFO - [2025-03-08 02:04:48 TP0] Scheduler hit an exception: x",
            "Scheduler hit an exception: x",
            "TP0",
        ),
        # a wrapper's own prefix and a torch rank tag ('[vllm]: [rank0]: ')
        ("[vllm]: [rank0]: RuntimeError: NCCL error: unhandled system error", "RuntimeError: NCCL error: unhandled system error", "rank0"),
        # a desktop app's logger: stamp, level, process name, then vLLM's process prefix and stamp
        (
            "2026-05-08 11:47:02.257 [Error] (Process) (EngineCore pid=2651) ERROR 05-08 11:47:02 [core.py:1136] torch.OutOfMemoryError: HIP",
            "torch.OutOfMemoryError: HIP",
            "",
        ),
        # a pod name before every line (kubectl logs --prefix, stern)
        ("kserve-container INFO 09-02 06:44:03 [__init__.py:245] No platform detected", "No platform detected", ""),
        # a second timestamp and a pipe (docker compose with timestamps)
        (
            "2026-05-01 23:13:20.749 | (EngineCore pid=187) INFO 05-01 21:13:20 [monitor.py:53] torch.compile took 45.15 s",
            "torch.compile took 45.15 s",
            "",
        ),
        # journald in a non-English locale
        ("авг 18 14:15:04 llm python3[27876]: (APIServer pid=27876) INFO 08-18 14:15:04 [x.py:1] hello", "hello", ""),
        # CloudWatch Logs exported as CSV: epoch ms, quoted message with doubled quotes, ESC as '#033'
        (
            '1756144013378,"#033[1;36m(APIServer pid=1)#033[0;0m   File ""/v/engine/utils.py"", line 759, in wait"',
            'File "/v/engine/utils.py", line 759, in wait',
            "",
        ),
        # SGLang before v0.3: '[gpu_id=N]' and no timestamp
        (
            "[gpu_id=1] Capture cuda graph begin. This can take up to several minutes.",
            "Capture cuda graph begin. This can take up to several minutes.",
            "gpu1",
        ),
    ],
)
def test_markers_are_found_behind_any_wrapper(raw: str, text: str, rank: str) -> None:
    """An engine prefix behind a wrapper no rule names is found, and the wrapper dropped."""
    assert one(raw) == (text, rank)


def test_error_line_with_the_cause_counts_when_not_a_tracebacks_last_line() -> None:
    """An ERROR line carrying 'HIP out of memory' ends the start as oom, though the log's last line is a warning."""
    log = (
        "(EngineCore pid=2) INFO 05-08 11:46:00 [gpu_model_runner.py:1] Starting to load model m...\n"
        "(EngineCore pid=2) ERROR 05-08 11:47:02 [core.py:1] torch.OutOfMemoryError: HIP out of memory. Tried to allocate 12.95 GiB.\n"
        "[rank0]:[W508 11:47:03.157708266 ProcessGroupNCCL.cpp:1554] Warning: WARNING: destroy_process_group() was not called\n"
    )
    assert verdict(log) == ("failed", "weight_load", "oom")


def test_kind_comes_from_the_cause_not_the_consequence() -> None:
    """'EngineCore failed to start' is a consequence: the ValueError under it decides the kind."""
    log = (
        "(EngineCore_DP0 pid=9) ERROR 09-30 18:29:03 [core.py:718] EngineCore failed to start.\n"
        "(EngineCore_DP0 pid=9) ERROR 09-30 18:29:03 [core.py:718] Traceback (most recent call last):\n"
        '(EngineCore_DP0 pid=9) ERROR 09-30 18:29:03 [core.py:718]   File "/v/worker/gpu_worker.py", line 1, in init_device\n'
        "(EngineCore_DP0 pid=9) ERROR 09-30 18:29:03 [core.py:718] ValueError: Free memory on device (13.58/15.99 GiB) on startup "
        "is less than desired GPU memory utilization (0.85, 13.59 GiB).\n"
    )
    assert verdict(log)[2] == "oom"


def test_a_cause_logged_before_a_harness_timeout_gives_the_kind() -> None:
    """A test harness's timeout names no cause; Gloo's 'NOT connected' line before it does (nccl)."""
    log = (
        "[2025-12-25 13:00:00] Init torch distributed begin.\n"
        "[Gloo] Rank 8 is NOT connected to: [1]\n"
        "Traceback (most recent call last):\n"
        '  File "/sglang/test/test_utils.py", line 687, in popen_launch_server\n'
        "TimeoutError: Server failed to start within the timeout period.\n"
    )
    assert verdict(log) == ("failed", "dist_init", "nccl")


def test_cut_traceback_is_a_failure_placed_and_kinded_by_its_frames() -> None:
    """A paste cut inside a traceback: failed, in dist_init, nccl (ncclCommInitRank in the frames)."""
    log = (
        "INFO 08-23 08:25:00 [x.py:1] Initializing an LLM engine (v0.5.4) with config: model='m'\n"
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "/v/distributed/parallel_state.py", line 889, in initialize_model_parallel\n'
        '[rank0]:   File "/v/distributed/device_communicators/pynccl_wrapper.py", line 244, in ncclCommInitRank\n'
        '[rank0]:     self.NCCL_CHECK(self._funcs["ncclCommI'
    )
    assert verdict(log) == ("failed", "dist_init", "nccl")


def test_cut_traceback_without_telling_frames_is_other() -> None:
    """A traceback cut before its exception line whose frames name no cause: failed, kind other."""
    log = (
        "kserve-container INFO 09-02 06:44:03 [__init__.py:245] No platform detected\n"
        "kserve-container Traceback (most recent call last):\n"
        'kserve-container   File "/srv/__main__.py", line 164, in <module>\n'
        "kserve-container     parser = AsyncEngineA"
    )
    assert verdict(log) == ("failed", "starting", "other")


def test_consequence_alone_whole_log_is_killed_cut_log_is_other() -> None:
    """'See root cause above' with nothing above: killed in a whole log, other in an excerpt that
    begins mid-traceback (the cause may be in the part not pasted)."""
    tail = "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}\n"
    whole = (
        "(APIServer pid=1) INFO 08-25 10:46:29 [api_server.py:1] vLLM API server version 0.10.1\nTraceback (most recent call last):\n"
        + ('  File "/v/engine/utils.py", line 759, in wait_for_engine_startup\n' + tail)
    )
    cut = '  File "/v/engine/utils.py", line 759, in wait_for_engine_startup\n' + tail
    assert verdict(whole)[2] == "killed"
    assert verdict(cut)[2] == "other"


@pytest.mark.parametrize(
    ("last", "kind"),
    [
        ("Killed", "killed"),
        ("KeyboardInterrupt: terminated", "killed"),
        ("Jan 28 10:40:08 host systemd[1]: vllm.service: Main process exited, code=killed, status=9/KILL", "killed"),
        ("Jan 28 10:40:08 host systemd[1]: vllm.service: Main process exited, code=exited, status=1/FAILURE", "exited"),
    ],
)
def test_signals_and_supervisors(last: str, kind: str) -> None:
    """SIGKILL reported by a shell, SIGTERM turned KeyboardInterrupt, systemd's code=killed: killed;
    systemd's code=exited, status=N: exited."""
    log = "INFO 11-20 10:45:57 [gpu_executor.py:102] # GPU blocks: 12453, # CPU blocks: 2730\n"
    if last.startswith("KeyboardInterrupt"):
        log += 'Traceback (most recent call last):\n  File "/v/api_server.py", line 1307, in signal_handler\n'
    assert verdict(log + last + "\n") == ("failed", "kv_alloc", kind)


def test_nccl_error_before_any_phase_is_in_dist_init_only_when_it_names_the_set_up() -> None:
    """An NCCL error and nothing else known: any collective of the start can raise it, so it failed in
    `starting` (no phase evidence); one whose words name the communicators' set-up (the init call, the
    store that hands out the unique id) failed in dist_init."""
    log = (
        "(VllmWorkerProcess pid=1253) ERROR 12-25 01:10:28 multiproc_worker_utils.py:229] RuntimeError: NCCL error: unhandled system error\n"
        "ERROR 12-25 01:10:28 engine.py:366] NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)\n"
    )
    assert verdict(log) == ("failed", "starting", "nccl")
    init = "RuntimeError: NCCL error in ncclCommInitRank: unhandled system error (run with NCCL_DEBUG=INFO for details)\n"
    assert verdict(init) == ("failed", "dist_init", "nccl")
    store = "RuntimeError: [1] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: Connection reset by peer\n"
    assert verdict(store) == ("failed", "dist_init", "nccl")


def test_error_in_the_serving_loop_is_warmup_whatever_else_the_frames_show() -> None:
    """A scheduler exception raised from its event loop (a warm-up request) is in warmup, even when
    the speculative worker's frames are on the way."""
    log = (
        "[2025-12-25 13:10:00] INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)\n"
        "[2025-12-25 13:14:14 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/sglang/srt/managers/scheduler.py", line 2875, in run_scheduler_process\n'
        '  File "/sglang/srt/disaggregation/prefill.py", line 354, in event_loop_normal_disagg_prefill\n'
        '  File "/sglang/srt/speculative/eagle_worker.py", line 281, in forward_batch_generation\n'
        "RuntimeError: call aclnnCamMoeCombineNormal failed\n"
    )
    assert verdict(log) == ("failed", "warmup", "exception")


@pytest.mark.parametrize(
    "line",
    [
        "[aiter] waiting for baton release at /sgl-workspace/aiter/aiter/jit/build/lock_module_rmsnorm",
        "[aiter] start build [module_moe_asm] under /sgl-workspace/aiter/aiter/jit/build/module_moe_asm",
        "2025-06-25 11:25:58,633 - INFO - flashinfer.jit: Loading JIT ops: batch_prefill",
        "2026-06-26 14:02:19.000337:  177  [INFO]: Using a cached neff at /var/tmp/neuron-compile-cache/MODULE_1/model.neff",
    ],
)
def test_every_jit_family_is_jit_compile(line: str) -> None:
    """ROCm aiter builds and lock waits, FlashInfer, Neuron compiles: jit_compile."""
    log = "[2026-01-01 00:00:00 TP0] Load weight end. avail mem=10 GB\n" + line + "\n"
    assert verdict(log) == ("incomplete", "jit_compile", None)


def test_old_vllm_capture_wording_and_gpu_id_prefix() -> None:
    """V0's 'Capturing the model for CUDA graphs' and SGLang v0.2's '[gpu_id=0] Capture cuda graph begin'."""
    v0 = "INFO 08-07 10:50:46 distributed_gpu_executor.py:56] # GPU blocks: 31360, # CPU blocks: 4161\n" + (
        "INFO 08-07 10:50:50 model_runner.py:980] Capturing the model for CUDA graphs. This may lead to unexpected consequences\n"
    )
    old = "[gpu_id=0] Memory pool end. avail mem=5.1 GB\n[gpu_id=0] Capture cuda graph begin. This can take up to several minutes.\n"
    assert verdict(v0)[1] == "graph_capture"
    assert verdict(old)[1] == "graph_capture"


def test_nccl_setup_chatter_is_dist_init_only_early() -> None:
    """NCCL INFO lines before any phase mean dist_init; the same lines during capture do not move the start back."""
    early = "(RayWorkerWrapper pid=584, ip=10.0.0.1) k8s17:584:2512 [3] NCCL INFO NET/IB: IbDev 0 Port 1 qpn 7743\n"
    late = "[2026-01-01 00:00:00 TP0] Capture cuda graph begin. This can take up to several minutes.\n" + early.replace(
        "(RayWorkerWrapper pid=584, ip=10.0.0.1) ", ""
    )
    assert verdict(early)[1] == "dist_init"
    assert verdict(late)[1] == "graph_capture"


def test_served_completion_is_ready_without_uvicorn_lines() -> None:
    """A vLLM log with the server's start lines missing: a served completion is readiness."""
    log = (
        "INFO 06-15 14:54:00 [x.py:1] Starting to load model m...\n"
        'INFO:     127.0.0.1:56000 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
    )
    assert verdict(log)[0] == "ready"


def test_newest_first_paste_is_read_oldest_first() -> None:
    """A cloud log viewer's newest-first export (Google Cloud Logging's 'ERROR <time>Z ' prefix) is
    turned round: the NCCL error under the scheduler's exception is the cause, the shell's Killed a consequence."""
    oldest_first = [
        "[2025-04-05 00:01:10 TP0] Init torch distributed begin.",
        "[2025-04-05 00:01:12 TP0] Init torch distributed begin.",
        "[2025-04-05 00:01:15 TP1] Init torch distributed begin.",
        "[2025-04-05 00:01:19 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        'File "/sglang/srt/managers/scheduler.py", line 1809, in run_scheduler_process',
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:317, unhandled system error",
        "[2025-04-05 00:01:19] Received sigquit from a child process. It usually means the child failed.",
        "./entrypoint.sh: line 48: 28 Killed python3 -m sglang.launch_server --host 0.0.0.0",
    ]
    stamps = ["00:01:10", "00:01:12", "00:01:15", "00:01:19", "00:01:19", "00:01:19", "00:01:19", "00:01:20"]
    lines = [f"ERROR 2025-04-05T{s}.2{i:02d}Z {text}" for i, (s, text) in enumerate(zip(stamps, oldest_first, strict=True))]
    assert verdict("\n".join(reversed(lines)) + "\n") == ("failed", "dist_init", "nccl")


def test_crash_while_creating_a_communicator_is_nccl() -> None:
    """A faulthandler dump (no exception line) whose stack is in ncclCommInitRank: nccl, though the
    process's own words are only 'Fatal Python error: Aborted'; a later traceback of the parent does not change it."""
    log = (
        "(RayWorkerWrapper pid=336, ip=10.0.0.2) INFO 03-27 22:19:00 [pynccl.py:69] vLLM is using nccl==2.25.1\n"
        "(RayWorkerWrapper pid=336, ip=10.0.0.2) Fatal Python error: Aborted\n"
        "(RayWorkerWrapper pid=336, ip=10.0.0.2) Stack (most recent call first):\n"
        '(RayWorkerWrapper pid=336, ip=10.0.0.2)   File "/v/device_communicators/pynccl_wrapper.py", line 277 in ncclCommInitRank\n'
        '(RayWorkerWrapper pid=336, ip=10.0.0.2)   File "/v/device_communicators/pynccl.py", line 99 in __init__\n'
        "ERROR 03-27 22:19:40 [core.py:367] EngineCore hit an exception: Traceback (most recent call last):\n"
        'ERROR 03-27 22:19:40 [core.py:367]   File "/v/v1/engine/core.py", line 355, in run_engine_core\n'
        "ERROR 03-27 22:19:40 [core.py:367] ray.exceptions.ActorDiedError: The actor died unexpectedly\n"
    )
    assert verdict(log) == ("failed", "dist_init", "nccl")


def test_jit_inside_capture_returns_to_capture() -> None:
    """FlashInfer's JIT load inside capture ends with 'Finished loading JIT ops': the start is back in capture."""
    log = (
        "[2025-04-02 15:25:19 DP1 TP8] Capture cuda graph begin. This can take up to several minutes.\n"
        "2025-04-02 15:25:20,704 - INFO - flashinfer.jit: Loading JIT ops: batch_mla_attention\n"
        "2025-04-02 15:25:50,477 - INFO - flashinfer.jit: Finished loading JIT ops: batch_mla_attention\n"
        "[2025-04-02 15:26:05 DP1 TP8] Using configuration from /sglang/srt/layers/moe/fused_moe_triton/configs/E=256.json\n"
    )
    assert verdict(log) == ("incomplete", "graph_capture", None)


# ---- issue 23, third blind corpus: shapes its first score missed -------------------------------------


def test_an_unraisable_exception_report_is_no_failure_and_the_real_one_after_it_is_placed() -> None:
    """Python prints an error in a destructor ('Exception ignored in: <function X.__del__>') and goes on;
    the worker's own failure after it is the start's (vLLM 0.4 on Ray, blind32 e033)."""
    log = (
        "(RayWorkerVllm pid=1) Exception ignored in: <function NCCLCommunicator.__del__ at 0x7f4d8c3212d0>\n"
        "(RayWorkerVllm pid=1) Traceback (most recent call last):\n"
        '(RayWorkerVllm pid=1)   File "/x/vllm/model_executor/parallel_utils/pynccl.py", line 264, in __del__\n'
        "(RayWorkerVllm pid=1)     _c_ncclCommDestroy(self.comm)\n"
        "(RayWorkerVllm pid=1) AttributeError: 'NCCLCommunicator' object has no attribute 'comm'\n"
    )
    assert verdict(log)[0] == "incomplete"  # the report alone: nothing failed
    cut = log + (
        "(RayWorkerVllm pid=1) ERROR 04-17 09:00:33 ray_utils.py:44] Error executing method init_device. This might cause deadlock.\n"
        "(RayWorkerVllm pid=1) ERROR 04-17 09:00:33 ray_utils.py:44] Traceback (most recent call last):\n"
        '(RayWorkerVllm pid=1) ERROR 04-17 09:00:33 ray_utils.py:44]   File "/x/vllm/engine/ray_utils.py", line 37, in execute_method\n'
    )
    assert verdict(cut) == ("failed", "dist_init", "other")  # the method names the phase; the type is cut off
    # an ordinary traceback is still a failure
    assert verdict('Traceback (most recent call last):\n  File "/x/a.py", line 1, in f\nAttributeError: no\n')[0] == "failed"


@pytest.mark.parametrize(
    ("log", "want"),
    [
        # SGLang's runner wraps any capture error (blind32 e020)
        (
            "[2026-04-02 10:00:00 TP0] Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 2.00 GiB\n",
            ("failed", "graph_capture", "oom"),
        ),
        # the kernel's own OOM first, the runner's re-raise later: the later words place it (blind32 e022)
        (
            'w-1  |   File "/x/site-packages/deep_gemm/__init__.py", line 221, in fp8_paged_mqa_logits\n'
            "w-1  | tvm.error.InternalError: CUDA out of memory. Tried to allocate 1.50 GiB.\n"
            'w-1  |   File "/x/sglang/srt/model_executor/cuda_graph_runner.py", line 628, in __init__\n'
            "w-1  | Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 1.50 GiB.\n",
            ("failed", "graph_capture", "oom"),
        ),
        # vLLM's sampler warm-up, in its own words (blind31 c032, blind32 e050)
        (
            "(VllmWorker rank=1 pid=2) ERROR 05-10 16:00:15 [multiproc_executor.py:470] WorkerProc hit an exception.\n"
            "(VllmWorker rank=1 pid=2) ERROR 05-10 16:00:15 [multiproc_executor.py:470] Traceback (most recent call last):\n"
            '(VllmWorker rank=1 pid=2) ERROR 05-10 16:00:15 [multiproc_executor.py:470]   File "/x/vllm/v1/worker/gpu_model_runner.py", line 1548, in _dummy_sampler_run\n'
            "(VllmWorker rank=1 pid=2) ERROR 05-10 16:00:15 [multiproc_executor.py:470] RuntimeError: CUDA out of memory occurred when warming up sampler with 256 dummy requests.\n",
            ("failed", "warmup", "oom"),
        ),
        # runpy's one line for `python -m vllm...` without vllm (blind32 e017)
        (
            "/venv/bin/python: Error while finding module specification for 'vllm.entrypoints.openai.api_server' "
            "(ModuleNotFoundError: No module named 'vllm')\n",
            ("failed", "starting", "exception"),
        ),
    ],
)
def test_a_failure_s_own_words_place_it(log: str, want: tuple[str, str, str]) -> None:
    assert verdict(log) == want


def test_vllm_s_kv_cache_set_up_that_captures_the_graphs_fails_in_capture() -> None:
    """V0 worker.initialize_cache allocates the cache, then _warm_up_model captures the graphs: the
    inner step is the phase (blind32 e052); the cache's own failure stays kv_alloc."""
    head = (
        "(VllmWorkerProcess pid=7) ERROR 08-01 10:00:00 multiproc_worker_utils.py:226] Exception in worker VllmWorkerProcess "
        "while processing method initialize_cache: NCCL error: invalid usage, Traceback (most recent call last):\n"
        '  File "/x/vllm/worker/worker.py", line 266, in initialize_cache\n'
    )
    capture = head + '  File "/x/vllm/worker/worker.py", line 283, in _warm_up_model\n'
    assert verdict(capture) == ("failed", "graph_capture", "nccl")
    alloc = head + '  File "/x/vllm/worker/worker.py", line 270, in _init_cache_engine\n'
    assert verdict(alloc) == ("failed", "kv_alloc", "nccl")


def test_a_sampler_failure_after_capture_is_warm_up_and_before_it_is_not() -> None:
    """_dummy_sampler_run runs in the memory profile and again after capture (blind32 e049)."""
    tb = (
        "ERROR 03-14 02:45:06 [core.py:337] EngineCore hit an exception: Traceback (most recent call last):\n"
        'ERROR 03-14 02:45:06 [core.py:337]   File "/x/vllm/v1/worker/gpu_model_runner.py", line 1292, in _dummy_sampler_run\n'
    )
    after = "INFO 03-14 02:45:01 [gpu_model_runner.py:1562] Graph capturing finished in 22 secs, took 0.40 GiB\n" + tb
    assert verdict(after) == ("failed", "warmup", "other")
    assert verdict(tb)[1] != "warmup"


def test_ray_reserving_gpus_is_still_starting_and_is_said() -> None:
    """The placement-group wait comes before any worker runs (blind32 e006): no dist_init, a warning."""
    line = "INFO 05-01 10:00:00 ray_utils.py:227] Waiting for creating a placement group of specs for 10 seconds. specs=[{'GPU': 1.0}]\n"
    tb = (
        'Traceback (most recent call last):\n  File "/x/vllm/executor/ray_utils.py", line 227, in _wait_until_pg_ready\nKeyboardInterrupt\n'
    )
    events: list[dict[str, object]] = []
    _, v = replay([line.encode(), tb.encode()], on_event=events.append)
    assert (v.outcome, v.phase) == ("failed", "starting")
    assert any("placement group" in str(e.get("message", "")) for e in events if e.get("event") == "warning")


# ---- issue 23, fourth blind corpus (blind33) ------------------------------------------------------------


def test_the_kv_pool_refusing_to_start_is_a_failure_in_kv_alloc_even_without_its_traceback() -> None:
    """SGLang's bare 'ValueError: Loaded weights leave no GPU memory for the KV cache' (blind33 g031)."""
    log = (
        "[2026-07-01 10:00:00 TP0] Load weight end. quant=fp8, fmt=e4m3, avail mem=12.25 GB, mem usage=125.65 GB.\n"
        "ValueError: Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.88.\n"
    )
    assert verdict(log) == ("failed", "kv_alloc", "oom")


def test_a_fatal_site_s_flattened_traceback_takes_its_exception_line_as_the_cause() -> None:
    """A log viewer's export lost the indentation of vLLM's ERROR lines: the first one is a source line,
    the exception line two lines later is the cause (blind33 g030)."""
    tag = "(EngineCore_DP0 pid=270) ERROR 11-19 12:16:36 [v1/engine/core.py:842] "
    log = (
        f"{tag}logits_sort, logits_idx = logits.sort(dim=-1, descending=False)\n"
        f"{tag}^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        f"{tag}torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.47 GiB.\n"
    )
    assert verdict(log)[2] == "oom"


def test_the_drafter_loaded_inside_the_target_s_load_is_draft_init() -> None:
    """vLLM's gpu_model_runner load_model loads the drafter after the target (blind33 g028)."""
    log = (
        "ERROR 08-01 10:00:00 [core.py:700] EngineCore failed to start.\n"
        "ERROR 08-01 10:00:00 [core.py:700] Traceback (most recent call last):\n"
        'ERROR 08-01 10:00:00 [core.py:700]   File "/x/vllm/v1/worker/gpu_model_runner.py", line 2500, in load_model\n'
        'ERROR 08-01 10:00:00 [core.py:700]   File "/x/vllm/v1/spec_decode/eagle.py", line 900, in load_model\n'
    )
    assert verdict(log)[1] == "draft_init"


def test_an_exception_beats_the_scheduler_s_exit_and_a_diffusion_warm_up_is_warm_up() -> None:
    """SGLang's 'Initialization failed. warmup error' with an AssertionError is an exception (blind33
    g033); the diffusion server's warm-up frames are warm-up (g035)."""
    warm = (
        "[2026-01-10 13:23:27] Initialization failed. warmup error: Traceback (most recent call last):\n"
        '  File "/x/sglang/srt/entrypoints/http_server.py", line 1434, in _execute_server_warmup\n'
        "AssertionError: res=<Response [502]>, res.text=''\n"
    )
    assert verdict(warm) == ("failed", "warmup", "exception")
    diffusion = (
        "[06-17 13:46:56] Server warmup failed; aborting startup: HTTP server did not become ready\n"
        "Traceback (most recent call last):\n"
        '  File "/x/sglang/multimodal_gen/runtime/entrypoints/http_server.py", line 105, in _run_server_warmup_after_http_ready\n'
        "RuntimeError: HTTP server did not become ready at http://[::1]:10762/health\n"
    )
    assert verdict(diffusion) == ("failed", "warmup", "exception")


def test_a_log_cut_in_a_traceback_s_first_word_is_a_cut_excerpt() -> None:
    """'EngineCore failed to start.' then 'Trac': the cause is in the part cut off (blind33 g024), not a
    death without a word."""
    tag = "(EngineCore pid=1) ERROR 06-16 20:55:14 [core.py:1224] "
    assert verdict(f"{tag}EngineCore failed to start.\n{tag}Trac\n")[2] == "other"
    assert verdict(f"{tag}EngineCore failed to start.\n{tag}Tra\n")[2] == "other"
    assert verdict(f"{tag}EngineCore failed to start.\n")[2] == "killed"


# ---- issue 23, fifth blind corpus (blind34) ------------------------------------------------------------


@pytest.mark.parametrize(
    ("log", "want"),
    [
        # vLLM's KV budget check on one line, its own spelling 'models's' (blind34 h059) ...
        (
            "(EngineCore_DP0 pid=1094) ValueError: To serve at least one request with the models's max seq len (262144), "
            "(24.0 GiB KV cache is needed, which is larger than the available KV cache memory (3.18 GiB).\n",
            ("failed", "kv_alloc", "oom"),
        ),
        # ... and wrapped by its reporter (h057)
        (
            "ValueError: To serve at least one request with the model's max seq len (1048576),\n"
            "22.5 GiB KV cache is needed, which is larger than the available KV cache memory (17.39 GiB).\n",
            ("failed", "kv_alloc", "oom"),
        ),
        # ROCm's page fault aborts the process (h021)
        ("Memory access fault by GPU node-2 (Agent handle: 0x55d0) on address 0x7f00. Reason: Unknown.\n", ("failed", "starting", "other")),
        # host memory exhausted (h060)
        (
            'Traceback (most recent call last):\n  File "/x/sglang/launch_server.py", line 1, in <module>\nOSError: [Errno 12] Cannot allocate memory\n',
            ("failed", "starting", "oom"),
        ),
        # a layer's weights allocated as the model is built (h038)
        (
            "ERROR 11-01 10:00:00 [core.py:700] RuntimeError: Failed to create unquantized linear weights: CUDA out of memory. "
            "Tried to allocate 896.00 MiB.\n",
            ("failed", "weight_load", "oom"),
        ),
    ],
)
def test_more_failures_in_their_own_words(log: str, want: tuple[str, str, str]) -> None:
    assert verdict(log) == want


def test_nccl_s_ras_listener_failing_to_bind_is_no_failure() -> None:
    """'ras/client_support.cc:160 NCCL WARN Call to bind failed: Address already in use': NCCL goes on
    without its RAS listener (blind34 h017); a server's own bind failure still fails."""
    ras = "host:2528103:2528103 [0] ras/client_support.cc:160 NCCL WARN Call to bind failed: Address already in use\n"
    assert verdict("NCCL version 2.26.2+cuda12.2\n" + ras) == ("incomplete", "dist_init", None)
    assert (
        verdict("ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): address already in use\n")[0] == "failed"
    )


def test_a_method_the_frame_called_on_itself_places_a_traceback_cut_in_a_wrapper() -> None:
    """EngineCore.__init__ called self._initialize_kv_caches, through a tracing decorator whose frame is the
    last one the excerpt holds (blind34 h024): kv_alloc. A compile inside that step is still JIT."""
    log = (
        "ERROR 04-02 07:38:17 [core.py:1099] Traceback (most recent call last):\n"
        'ERROR 04-02 07:38:17 [core.py:1099]   File "/x/vllm/v1/engine/core.py", line 122, in __init__\n'
        "ERROR 04-02 07:38:17 [core.py:1099]     num_gpu_blocks, num_cpu_blocks, kv_cache_config = self._initialize_kv_caches(\n"
        'ERROR 04-02 07:38:17 [core.py:1099]   File "/x/vllm/tracing/otel.py", line 178, in sync_wrapper\n'
        "ERROR 04-02 07:38:17 [core.py:1099]     return func(*args, **kwargs)\n"
    )
    assert verdict(log)[1] == "kv_alloc"
    compile_ = (
        "Traceback (most recent call last):\n"
        '  File "/x/vllm/v1/engine/core.py", line 122, in _initialize_kv_caches\n'
        '  File "/x/vllm/v1/worker/gpu_model_runner.py", line 4474, in profile_run\n'
        '  File "/x/vllm/compilation/backends.py", line 600, in __call__\n'
        '  File "/x/torch/_inductor/select_algorithm.py", line 2000, in autotune\n'
        "torch._inductor.exc.InductorError: RuntimeError: Failed to run autotuning code block: CUDA out of memory.\n"
    )
    assert verdict(compile_) == ("failed", "jit_compile", "oom")


def test_a_call_cut_mid_name_is_completed_from_the_engine_s_own_functions_when_its_start_says_which() -> None:
    """'kv_cache_config = self._initialize_kv_' at the excerpt's end, in vLLM's core.py (a Windows path):
    _initialize_kv_caches, kv_alloc (blind34 h023). 'self.init_cu' in SGLang's model_runner could be
    init_cuda_graphs or init_cublas: not guessed (blind31 c001)."""
    vllm = (
        '[rank0]:   File "C:\\TheRock\\vllm\\vllm\\v1\\engine\\core.py", line 124, in __init__\n'
        "[rank0]:     kv_cache_config = self._initialize_kv_\n"
    )
    assert verdict(vllm) == ("failed", "kv_alloc", "other")
    sglang = (
        "Traceback (most recent call last):\n"
        '  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/model_runner.py", line 207, in initialize\n'
        "    self.init_cu\n"
    )
    assert verdict(sglang) == ("failed", "starting", "other")


# ---- issue 23, sixth blind corpus (blind35) ------------------------------------------------------------


def test_ray_s_dead_worker_and_a_notebook_s_traceback_header_are_failures() -> None:
    """Ray's 'A worker died or was killed while executing a task' (blind35 i022), unless the start goes on;
    IPython's 'OutOfMemoryError   Traceback (most recent call last)' cut mid-word (i021)."""
    died = "2023-12-26 07:10:19,486\tWARNING worker.py:2074 -- A worker died or was killed while executing a task by an unexpected system error.\n"
    assert verdict(died) == ("failed", "starting", "killed")
    notebook = "-" * 75 + "\nOutOfMemoryError                          Tracebac\n"
    assert verdict(notebook) == ("failed", "starting", "oom")


def test_a_capture_s_buffer_registration_and_a_weights_download_bar_name_their_phases() -> None:
    """custom all-reduce's register_graph_buffers runs right after a capture (blind35 i005); the hub's
    'Downloading model.safetensors' bar is the weights' load beginning (i023)."""
    frame = (
        "Traceback (most recent call last):\n"
        '  File "/x/sglang/srt/distributed/device_communicators/custom_all_reduce.py", line 307, in register_graph_buffers\n'
    )
    assert verdict(frame)[1] == "graph_capture"
    bar = "Downloading model.safetensors:   0%|          | 0.00/548M [00:00<?, ?B/s]\n"
    assert verdict(bar) == ("incomplete", "weight_load", None)


def test_a_launcher_that_could_not_start_the_engine_is_a_failure() -> None:
    """nohup's one line when the engine's command is not installed (blind36 j009); a shell's 'command not
    found' is a failure unless the start goes on after it (a start script's helper may be missing)."""
    assert verdict("nohup: failed to run command 'vllm': No such file or directory\n") == ("failed", "starting", "other")
    assert verdict("bash: vllm: command not found\n") == ("failed", "starting", "other")
    helper = "/bin/sh: 1: nvidia-smi: not found\nINFO 07-07 00:40:01 [__init__.py:244] Automatically detected platform cuda.\n"
    helper += "INFO 07-07 00:41:01 [gpu_model_runner.py:1595] Starting to load model /m...\n"
    assert verdict(helper) == ("incomplete", "weight_load", None)


def test_a_module_level_frame_makes_a_traceback_of_an_excerpt_without_its_header() -> None:
    """An excerpt that starts at a traceback's import frame ('in <module>', blind36 j024): its exception
    line is the failure."""
    text = (
        '  File "/ws/sglang/python/sglang/srt/mem_cache/memory_pool_host.py", line 16, in <module>\n'
        "    from sgl_kernel.kvcacheio import (\n"
        "ImportError: cannot import name 'transfer_kv_all_layer_lf_pf' from 'sgl_kernel.kvcacheio'\n"
    )
    assert verdict(text) == ("failed", "starting", "exception")


def test_sglang_s_decode_batch_lines_of_late_2025_are_client_traffic() -> None:
    """'Decode batch, #running-req: N' and 'Decode batch [ITER], #running-req: N' (metrics_reporter.py,
    blind36 j010) as 'Decode batch. #running-req: N' before them."""
    for line in ("Decode batch, #running-req: 17, #token: 9000", "Decode batch [512], #running-req: 3, #token: 100"):
        assert verdict(f"[2026-01-10 10:00:00 DP0 TP0] {line}\n")[0] == "ready", line
    assert verdict("[2026-01-10 10:00:00 DP0 TP0] Decode batch, #running-req: 0, #token: 0\n")[0] == "incomplete"


def test_a_fatal_site_s_message_that_names_no_exception_is_other() -> None:
    """vLLM's EngineCore ERROR record cut to 'Ru' (blind36 j021): failed, but the text gives no type; with
    the exception line after it, it is the exception."""
    cut = "(EngineCore_DP0 pid=33719) ERROR 11-08 21:54:55 [core.py:825] Ru\n"
    assert verdict(cut) == ("failed", "starting", "other")
    whole = (
        cut.replace("Ru", "EngineCore failed to start.")
        + "(EngineCore_DP0 pid=33719) ERROR 11-08 21:54:55 [core.py:825] Traceback (most recent call last):\n"
    )
    whole += (
        '(EngineCore_DP0 pid=33719) ERROR 11-08 21:54:55 [core.py:825]   File "/v/vllm/v1/engine/core.py", line 816, in run_engine_core\n'
    )
    whole += "(EngineCore_DP0 pid=33719) ERROR 11-08 21:54:55 [core.py:825] RuntimeError: Device string must not be empty\n"
    assert verdict(whole) == ("failed", "starting", "exception")


def test_vllm_records_flattened_onto_one_line_are_read_one_each() -> None:
    """A worker's traceback whose records a web page joined with spaces (blind34 h007): its frames and its
    exception line are found, so the NPU's OOM is the kind."""
    p = "(VllmWorkerProcess pid=270962) ERROR 07-03 19:33:28 [multiproc_worker_utils.py:238]"
    flat = " ".join(
        [
            f"{p} Exception in worker VllmWorkerProcess while processing method determine_num_available_blocks.",
            f"{p} Traceback (most recent call last):",
            f'{p} File "/x/vllm/model_executor/models/qwen2_5_vl.py", line 213, in all_gather_interleave',
            f"{p} result_tensor = torch.cat(ordered_tensors, dim=-1)",
            f"{p} RuntimeError: NPU out of memory.",
        ]
    )
    assert verdict(flat + "\n")[2] == "oom"
    lines = [ln.text for ln in normalise([(flat + "\n").encode()])]
    assert lines[-1] == "RuntimeError: NPU out of memory." and len(lines) == 5, lines


def test_a_traceback_cut_inside_the_model_s_constructors_is_the_load() -> None:
    """vLLM's make_layers and a model's layer constructors run only inside the loader (blind35 i012); vLLM's
    kernel warm-up naming its FlashInfer autotune cache starts the autotune."""
    p = "(VllmWorkerProcess pid=20487) ERROR 03-05 07:15:39 multiproc_worker_utils.py:240] "
    text = (
        f'{p}  File "/v/vllm/model_executor/models/utils.py", line 556, in <listcomp>\n'
        f'{p}    maybe_offload_to_cpu(layer_fn(prefix=f"{{prefix}}.{{idx}}"))\n'
        f'{p}  File "/v/vllm/model_executor/models/llama.py", line 234, in __init__\n'
        f"{p}    self.self_attn = LlamaAttention(\n"
    )
    assert verdict(text) == ("failed", "weight_load", "other")
    kv = "(EngineCore pid=1) INFO 07-10 18:58:11 [kv_cache_utils.py:2169] Maximum concurrency for 262,144 tokens per request: 84.88x\n"
    kv = "(EngineCore pid=1) INFO 07-10 18:58:10 [gpu_worker.py:436] Available KV cache memory: 40.1 GiB\n" + kv
    tune = "(EngineCore pid=1) INFO 07-10 18:58:11 [kernel_warmup.py:146] Using FlashInfer autotune cache file: /c/autotune_configs.json\n"
    assert verdict(kv) == ("incomplete", "kv_alloc", None)
    assert verdict(kv + tune) == ("incomplete", "jit_compile", None)


def test_aiter_s_build_at_import_is_not_a_start_before_the_server_s_and_its_import_no_compile() -> None:
    """AMD aiter builds a module as the server's first import, before SGLang reads its arguments (blind37
    k032): the arguments line starts this start, it is no restart; '[aiter] import [module_X] under
    .../X.so' loads a module built before (k029, k030, blind35 i032): no compile."""
    build = (
        "[aiter] start build [module_aiter_enum] under /w/aiter/aiter/jit/build/module_aiter_enum\n"
        "[aiter] finish build [module_aiter_enum], cost 7.2s\n"
        "[2026-02-26 06:24:35] server_args=ServerArgs(model_path='zai-org/GLM-5-FP8', tp_size=8)\n"
        "[2026-02-26 06:24:50 TP0] Load weight begin. avail mem=180.00 GB\n"
        "[2026-02-26 06:25:10 TP0] RuntimeError: HIP out of memory. Tried to allocate 2.00 GiB\n"
    )
    assert verdict(build) == ("failed", "weight_load", "oom")
    imported = "[aiter] import [module_aiter_enum] under /w/aiter/aiter/jit/module_aiter_enum.so\n"
    assert verdict(imported + "[2026-02-26 05:19:58] server_args=ServerArgs(model_path='m')\n") == ("incomplete", "starting", None)


def test_vllm_serving_shows_in_its_stats_and_its_api_server_s_answers() -> None:
    """vLLM's stat logger with requests in flight (V1 'Engine 000: ... Running: 18 reqs', V0 metrics.py
    '... Running: 1 reqs, Swapped'), a 200 on /health or /v1/models and the request logger's 'Received
    request chat-' are a serving server (blind37 k011, k033, k041, k042, k043); idle stats too (the API
    server logs them once it is up: see test_vllms_stats_line_is_the_api_server_up_idle_or_not)."""
    v1 = "(APIServer pid=3646) INFO 05-19 10:13:31 [loggers.py:271] Engine 000: Avg prompt throughput: 12068.8 tokens/s, Avg generation throughput: 734.9 tokens/s, Running: 18 reqs, Waiting: 33 reqs\n"
    v0 = "INFO 01-22 18:27:35 metrics.py:449] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 41.8 tokens/s, Running: 1 reqs, Swapped: 0 reqs\n"
    idle = v1.replace("Running: 18", "Running: 0").replace("734.9", "0.0")
    health = '(APIServer pid=1) INFO 06-12 05:47:27 [api_server.py:1] Starting vLLM API server\n(APIServer pid=1) INFO:     127.0.0.1:39484 - "GET /health HTTP/1.1" 200 OK\n'
    request = "INFO 11-09 10:30:12 logger.py:37] Received request chat-288661688ea8: prompt: 'x'\n"
    for text in (v1, v0, health, request, idle):
        assert verdict(text)[0] == "ready", text


def test_a_collective_s_set_up_and_its_rendezvous_name_dist_init() -> None:
    """torch's 'is setting up HCCL communicator and retrieving hcclUniqueId ... got error' (blind37 k022) is
    the collective's failure; c10d's 'TCP client failed to connect/validate ... retrying' (k036) is the
    ranks meeting; Ray's 'RayTaskError(ValueError): ...' is an exception line (k016)."""
    p = "(VllmWorkerProcess pid=53843) ERROR 12-17 09:32:03 [multiproc_worker_utils.py:239] "
    hccl = (
        f'{p}  File "/t/torch/distributed/distributed_c10d.py", line 2501, in all_reduce\n{p}    work = group.allreduce([tensor], opts)\n'
    )
    hccl += f"{p}RuntimeError: [1] is setting up HCCL communicator and retrieving hcclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: failed to recv\n"
    assert verdict(hccl) == ("failed", "dist_init", "nccl")
    c10d = "[W1226 15:44:31.548330712 TCPStore.cpp:358] [c10d] TCP client failed to connect/validate to host h05:8000 - retrying (try=0, timeout=600000ms)\n"
    assert verdict(c10d) == ("incomplete", "dist_init", None)
    ray = (
        "Traceback (most recent call last):\n"
        '  File "/v/vllm/v1/executor/ray_executor.py", line 500, in collective_rpc\n'
        "    return ray.get(refs)\n"
        "ray.exceptions.RayTaskError(ValueError): ray::RayWorkerWrapper.execute_method() (pid=7106)\n"
    )
    assert verdict(ray)[2] == "exception"


def test_vllm_s_renderer_warm_up_is_warmup_and_vllm_ascend_s_models_are_built_in_the_load() -> None:
    """The API server's 'Multi-modal warmup completed in 4.795s' (vllm/renderers/base.py, blind37 k012,
    k028); vllm-ascend's own models/*.py constructors (k021)."""
    mm = "(APIServer pid=1) INFO 05-06 06:48:54 [base.py:233] Multi-modal warmup completed in 4.795s\n"
    assert verdict(mm) == ("incomplete", "warmup", None)
    ascend = (
        "Traceback (most recent call last):\n"
        '  File "/v/vllm_ascend/models/deepseek_v2.py", line 600, in __init__\n'
        "    self.mlp = CustomDeepseekV2MoE(\n"
    )
    assert verdict(ascend) == ("failed", "weight_load", "other")


def test_v0_s_kv_budget_error_ascend_s_collective_error_and_omni_s_api_server() -> None:
    """vLLM V0's "The model's max seq len (N) is larger than the maximum number of tokens that can be stored
    in KV cache (M)", with or without its ValueError (blind38 m032, m033); torch_npu's 'HCCL function error:
    hcclCommInitRootInfoConfig' on a worker's ERROR line with no traceback header (m041, m042); vLLM-Omni's
    'Starting vLLM Diffusion API server on' (m039)."""
    v0 = "The model's max seq len (29000) is larger than the maximum number of tokens that can be stored in KV cache (23648). Try increasing `gpu_memory_utilization`\n"
    assert verdict(v0) == ("failed", "kv_alloc", "oom")
    assert verdict("ValueError: " + v0) == ("failed", "kv_alloc", "oom")
    p = "(VllmWorker rank=1 pid=7226) ERROR 09-03 03:02:37 [multiproc_executor.py:522] "
    hccl = f"{p}    pg.recv([tensor], group_src_rank, tag).wait()\n"
    hccl += f"{p}RuntimeError: create_config:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:148 HCCL function error: hcclCommInitRootInfoConfig(numRanks, &rootInfo), error code is 1\n"
    assert verdict(hccl) == ("failed", "dist_init", "nccl")
    omni = "(APIServer pid=1) INFO 12-01 10:00:00 [api_server.py:200] Starting vLLM Diffusion API server on http://0.0.0.0:8091\n"
    loaded = "(Worker pid=2) INFO 12-01 09:59:00 [gpu_worker.py:90] Starting to load model Qwen/Qwen-Image...\n"
    assert verdict(loaded + omni) == ("incomplete", "warmup", None)


def test_blind39_s_shapes_serving_behind_a_logger_an_api_server_s_tasks_and_v0_s_load() -> None:
    """SGLang-Omni's decode batches behind a Python logger's name and its served speech requests (blind39
    n031); vLLM's '(ApiServer_0 pid=)' tag and its 'Supported tasks' as the API server's set-up (n022); V0's
    'Initializing an LLM engine (v0.5.0)' and 'Loading model weights took 13.4966 GB' (n047)."""
    omni = "2026-06-07 10:59:33,057 [INFO] sglang.srt.managers.scheduler_metrics_mixin: Decode batch, #running-req: 1, #token: 40\n"
    assert verdict(omni)[0] == "ready"
    speech = 'INFO:     127.0.0.1:5000 - "POST /v1/audio/speech HTTP/1.1" 200 OK\n'
    assert verdict(speech)[0] == "ready"
    tasks = "(ApiServer_0 pid=81) INFO 06-10 11:11:20 [api_server.py:1] Supported tasks: ['generate']\n"
    assert verdict(tasks) == ("incomplete", "warmup", None)
    v0 = "INFO 06-15 12:17:55 llm_engine.py:161] Initializing an LLM engine (v0.5.0.post1) with config: model='m'\n"
    v0 += "INFO 06-15 12:17:57 model_runner.py:160] Loading model weights took 13.4966 GB\n"
    assert verdict(v0) == ("incomplete", "weight_load", None)


def test_a_line_that_differs_only_in_a_number_s_value_is_read_again() -> None:
    """A line remembered as matching nothing must not hide one after it that differs only in a number
    the rules look at ('#running-req: 0', then '#running-req: 1': blind40 p042 found it with vLLM's
    'Running: 0 reqs'): the rules look at the number's value, not its place."""
    p = "[2026-01-10 10:0{}:00 TP0] Decode batch, #running-req: {}, #token: 128, token usage: 0.00, gen throughput (token/s): 2.1\n"
    head = "[2026-01-10 10:00:00 TP0] Load weight begin. avail mem=70.00 GB\n"
    assert verdict(head + p.format(1, 0) + p.format(2, 1))[0] == "ready"
    assert verdict(head + p.format(1, 0) + p.format(2, 0))[0] == "incomplete"


def test_vllms_stats_line_is_the_api_server_up_idle_or_not() -> None:
    """The API server's lifespan logs the stats every 10 s once it is up (api_server '_force_log'), so an
    idle line is a server that serves (blind60 b025, 'Running: 0 reqs', all throughputs 0.0)."""
    idle = "(APIServer pid=1) INFO 04-10 12:00:00 [loggers.py:111] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%\n"
    assert verdict(idle) == ("ready", "ready", None)


def test_blind40_s_shapes_a_c_plus_plus_report_v2_and_v0_loads_npu_capture_and_ipython_frames() -> None:
    """Ray's C++ 'Unhandled exception: St13runtime_error. what(): NCCL Error 5' (blind40 p025); vLLM V2's
    'Loading model from scratch...' (p019) and V0's 'Using model weights format [...]' (p044); torch_npu's
    graphs.py capture (p040); IPython's 'File ~/x.py:49, in Class.method(' frames (p048)."""
    ray = "[2023-07-11 15:20:41,680 E 42067 42067] logging.cc:97: Unhandled exception: St13runtime_error. what(): NCCL Error 5: invalid usage\n"
    assert verdict(ray) == ("failed", "starting", "nccl")  # no phase evidence: any collective can raise it
    v2 = "(EngineCore pid=1) INFO 04-01 10:00:00 [model_runner.py:273] Loading model from scratch...\n"
    assert verdict(v2) == ("incomplete", "weight_load", None)
    v0 = "DEBUG 03-01 10:00:00 weight_utils.py:200] Using model weights format ['*.safetensors']\n"
    assert verdict(v0) == ("incomplete", "weight_load", None)
    npu = (
        'Traceback (most recent call last):\n  File "/u/torch_npu/npu/graphs.py", line 200, in capture_begin\n    super().capture_begin(\n'
    )
    assert verdict(npu)[1] == "graph_capture"
    ipy = (
        "File [~/env/lib/python3.11/site-packages/vllm/worker/cache_engine.py:49](http://h/lab/tree/cache_engine.py#line=48), in CacheEngine.__init__(self, cache_config)\n"
        "     48 # Initialize the cache.\n"
        "OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
    )
    assert verdict(ipy) == ("failed", "kv_alloc", "oom")


def test_blind42_s_shapes_older_vllm_wordings_any_answered_request_ray_actors_and_bare_kv_messages() -> None:
    """vLLM 2023's 'Initializing an LLM engine with config:' names the engine, so its 'Application startup
    complete.' is ready (blind42 d036); V0's stats line names it too, and uvicorn's access line for a
    request it answered (a 404 as well) is a serving server (d022), where an SGLang server's own warm-up
    request is not; Ray's 'Exception raised in creation task: The actor died ...' ends the start (d018);
    V1's KV check pasted without its 'ValueError: ' is the KV pool's OOM (d024); a model's constructor
    frame whose dunders a markdown paste ate ('in init') is the load (d005)."""
    v2023 = (
        "INFO 08-22 15:27:08 llm_engine.py:70] Initializing an LLM engine with config: model='m', tokenizer='m'\n"
        "INFO 08-22 15:27:25 llm_engine.py:196] # GPU blocks: 865, # CPU blocks: 327\n"
        "INFO:     Started server process [9264]\nINFO:     Application startup complete.\n"
    )
    assert verdict(v2023) == ("ready", "ready", None)
    engine = "INFO 07-07 20:12:40 llm_engine.py:70] Initializing an LLM engine with config: model='m', tokenizer='m'\n"
    access = 'INFO:     127.0.0.1:59820 - "GET /generate HTTP/1.1" 404 Not Found\n'
    assert verdict(engine + access)[0] == "ready"
    assert verdict(engine + access.replace("404 Not Found", "500 Internal Server Error"))[0] == "incomplete"
    sglang = "[2026-05-30 20:00:00] Load weight begin. avail mem=94.71 GB\n" + access.replace("GET /generate", "POST /generate").replace(
        "404 Not Found", "200 OK"
    )
    assert verdict(sglang)[0] == "incomplete"
    ray = "(DPEngineCoreActor pid=3551736) Exception raised in creation task: The actor died because of an error raised in its creation task, ray::DPEngineCoreActor.init() (pid=3551736)\n"
    assert verdict(ray) == ("failed", "starting", "other")
    kv = "To serve at least one request with the models's max seq len (32768), (4.50 GiB KV cache is needed, which is larger than the available KV cache memory (3.58 GiB)\n"
    assert verdict(kv) == ("failed", "kv_alloc", "oom")
    p = "(VllmWorkerProcess pid=195296) ERROR 03-02 19:49:43 [multiproc_worker_utils.py:242] "
    cut = f'{p}Traceback (most recent call last):\n{p}File "/h/vllm/vllm/model_executor/models/llama.py", line 237, in init\n{p}self.self_attn = LlamaAttention(\n{p}'
    assert verdict(cut)[1] == "weight_load"


def test_blind41_s_shapes_kernel_loads_inside_a_phase_kv_plug_ins_and_aiter_s_call_wrapper() -> None:
    """FlashInfer's 'Loading JIT ops' during capture is the capture (public t013) unless FlashInfer said it has no
    prebuilt kernels (then each load is a build, shared 029); kvcached's allocator (blind41 s005, blind30 c057) and
    HiCache's Mooncake store (s010) are the KV pool; SGLang's init_cache_with_memory_pool frame (s011) is too;
    aiter's kernel-call wrapper alone in a faulthandler dump is no build (s007)."""
    capture = "[2025-02-21 21:53:15 TP0] Capture cuda graph begin. This can take up to several minutes.\n"
    load = "2025-02-21 21:53:17,313 - INFO - flashinfer.jit: Loading JIT ops: batch_prefill_with_kv_cache_dtype_q_bf16\n"
    assert verdict(capture + load) == ("incomplete", "graph_capture", None)
    backend = "2025-02-21 21:53:16,000 - INFO - flashinfer.jit: Prebuilt kernels not found, using JIT backend\n"
    assert verdict(capture + backend + load) == ("incomplete", "jit_compile", None)
    kvcached = (
        "[kvcached][INFO][2025-09-07 04:15:26][page_allocator.py:149] Init kvcached KV cache allocator: num_layers=40, page_size=2MB\n"
    )
    loaded = "[2025-09-07 04:15:26] Load weight end. type=LlamaForCausalLM, dtype=torch.float16, avail mem=114.90 GB, mem usage=24.30 GB.\n"
    assert verdict(loaded + kvcached)[1] == "kv_alloc"
    assert verdict("[2026-01-16 07:02:59 TP4] Mooncake store setup successfully.\n")[1] == "kv_alloc"
    tb = (
        "[2026-01-09 21:41:36] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/d/sglang/python/sglang/srt/managers/scheduler.py", line 339, in __init__\n'
        '  File "/d/sglang/python/sglang/srt/managers/scheduler.py", line 677, in init_cache_with_memory_pool\n'
        '  File "/d/sglang/python/sglang/srt/managers/cache_controller.py",\n'
    )
    assert verdict(tb) == ("failed", "kv_alloc", "other")
    dump = (
        "Current thread 0x00007f3f83e9f740 (most recent call first):\n"
        '  File "/usr/local/aiter/aiter/jit/core.py", line 368 in wrapper\n'
        '  File "/usr/local/sglang/python/sglang/srt/layers/layernorm.py", line 73 in forward_cuda\n'
    )
    assert verdict(dump) == ("failed", "starting", "other")
    build = dump.replace("first):\n", 'first):\n  File "/usr/local/aiter/aiter/jit/core.py", line 300 in build_module\n')
    assert verdict(build)[1] == "jit_compile"


def test_sglang_s_kernel_warm_up_is_flashinfer_s_autotune() -> None:
    """SGLang's ModelRunner.kernel_warmup -> _flashinfer_autotune (blind40 p034) is the autotune the log's own
    'Running FlashInfer autotune' line calls jit_compile, not the server's warm-up request."""
    f = '  File "/w/sglang/python/sglang/srt/model_executor/model_runner.py", line {}, in {}\n    self.{}()\n'
    tb = "[2025-11-18 13:28:40 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
    tb += f.format(507, "initialize", "kernel_warmup") + f.format(2033, "kernel_warmup", "_flashinfer_autotune")
    tb += f.format(2061, "_flashinfer_autotune", "_dummy_run") + '  File "/w/sglang/'
    assert verdict(tb) == ("failed", "jit_compile", "other")


def test_sglang_jax_s_kv_buffers_are_the_kv_pool() -> None:
    """SGLang-JAX on a TPU sizes and makes its KV cache with its own lines (blind40 p049): 'TPU Memory profiling:',
    'Creating fused KV buffers for 32 layers', 'Total fused KV cache memory per layer: ...'."""
    log = "[2025-09-15 15:35:31] Qwen weights loaded successfully!\n"
    log += "[2025-09-15 15:35:31] TPU Memory profiling: available_device_memory=16.6GB, available_kv_cache=10.4GB, max_tokens=21227\n"
    log += "[2025-09-15 15:35:31] Creating fused KV buffers for 32 layers\n"
    assert verdict(log) == ("incomplete", "kv_alloc", None)


def test_a_chain_s_first_message_places_it_when_its_exception_line_is_cut() -> None:
    """An excerpt that starts inside the first exception's message ('Search for `cudaErrorStreamCaptureUnsupported'
    ...', blind40 p014) and goes on to 'During handling of the above exception': that message is the root's, and a
    capture-only CUDA error is the capture, though no frame or exception line says so."""
    p = "(Worker_TP1 pid=15193) ERROR 05-08 19:06:38 [multiproc_executor.py:962] "
    log = f"{p}Search for `cudaErrorStreamCaptureUnsupported' in https://docs.nvidia.com/cuda/ for more information.\n"
    log += f"{p}For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n{p}\n"
    log += f"{p}During handling of the above exception, another exception occurred:\n{p}\n{p}Traceback (most recent call last):\n"
    assert verdict(log) == ("failed", "graph_capture", "other")
    assert verdict(log.replace("cudaErrorStreamCaptureUnsupported", "cudaErrorLaunchFailure"))[1] == "starting"


def test_blind43_and_blind44_s_shapes() -> None:
    """torch's CUDA error line on its own ends the start (blind44 e020, e021); vLLM's stats with tokens generated
    or a drafter's tokens accepted (e041) and access lines whose prefix a paste stripped (e024) are a serving
    server; an executor's collective_rpc("load_model") is the load (e023); inductor's ptxas report is a compile
    (e018); Gaudi's '[Warmup][Decode][204/416]' buckets are warm-up (e017); a loguru-style host program's
    columns (blind43 s018), SGLang's PD mode in its prefix and HiCache's host pool (s007); Gloo's failed mesh
    explains a cut traceback as the collective's (s032); FastAPI's warning while it answers SGLang's warm-up
    request (s030)."""
    cuda = "RuntimeError: CUDA error: no kernel image is available for execution on the device\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
    assert verdict(cuda) == ("failed", "starting", "exception")
    stats = "(APIServer pid=1) INFO 05-30 07:49:21 [loggers.py:271] Engine 000: Avg prompt throughput: 1505.3 tokens/s, Avg generation throughput: {} tokens/s, Running: 0 reqs, Waiting: 0 reqs\n"
    assert verdict(stats.format("20.9"))[0] == "ready"
    assert verdict(stats.format("0.0") + stats.format("0.3"))[0] == "ready"
    spec = "(APIServer pid=1) INFO 05-30 07:49:21 [metrics.py:101] SpecDecoding metrics: Mean acceptance length: 3.07, Accepted: {} tokens, Drafted: 204 tokens\n"
    assert verdict(spec.format(141))[0] == "ready"
    assert verdict(spec.format(0).replace("Drafted: 204", "Drafted: 0"))[0] == "incomplete"
    stripped = 'Starting vLLM server on http://127.0.0.1:28131\nGET /health HTTP/1.1" 200 OK\n'
    assert verdict(stripped)[0] == "ready"
    p = "> [rank0]: "
    rpc = f'{p}Traceback (most recent call last):\n{p}  File "/e/vllm/executor/uniproc_executor.py", line 42, in _init_executor\n'
    rpc += f'{p}    self.collective_rpc("load_model")\n{p}  File "/data/ap'
    assert verdict(rpc)[1] == "weight_load"
    ptxas = "[rank0]:E0701 14:28:21.083000 911603 torch/_inductor/runtime/triton_heuristics.py:539] [0/0] ptxas fatal   : Ptx assembly aborted due to errors\n"
    assert verdict(ptxas)[1] == "jit_compile"
    hpu = "INFO 05-02 12:09:01 hpu_model_runner.py:1730] [Warmup][Decode][203/416] batch_size:96 num_blocks:896 free_mem:14.93 GiB\n"
    assert verdict(hpu)[1] == "warmup"
    tl = "2025-07-02 16:41:30 | ERROR | stderr | Loading safetensors checkpoint shards:   0% Completed | 0/2 [00:00<?, ?it/s]\n"
    assert verdict(tl)[1] == "weight_load"
    host = "[2025-12-02 07:04:51 DisaggregationMode.IGPUDECODE TP1] Allocating 40.00 GB host memory for hierarchical KV cache.\n"
    assert verdict(host)[1] == "kv_alloc"
    gloo = "[rank10]:[E130 18:11:34.707542570 ProcessGroupGloo.cpp:143] Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error\n"
    gloo += '[2025-01-30 18:11:35 TP10] Scheduler hit an exception: Traceback (most recent call last):\n  File "/s/sglang/srt/managers/scheduler.py", line 1, in run_scheduler_process\n'
    assert verdict(gloo)[2] == "nccl"
    fastapi = "[2026-04-05 16:49:44] Capture cuda graph end. Time elapsed: 7.23 s.\n"
    fastapi += "/usr/local/lib/python3.10/dist-packages/fastapi/routing.py:120: FastAPIDeprecationWarning: ORJSONResponse is deprecated\n"
    assert verdict(fastapi)[1] == "warmup"


def test_blind45_and_blind46_s_shapes() -> None:
    """A TVM-FFI kernel's CUDA driver error (blind45 s021) and UCX's 'Caught signal 7 (Bus error ...)' (s024) end
    a start; Ray Serve's 'Application 'default' is ready at' (blind46 f040) and a drafter's drafted tokens (f045)
    are serving; the engine's input dump on a failed step is a failure (f014); 2026's 'Profiling CUDA graph
    memory' is the KV budget (f001); a cut 'world_size=1 rank=0 local_rank=0 distributed_init_me' line is the
    collective's set-up (f007); tpu-inference's precompile is a compile (f017); the V2 runner's EAGLE/MTP
    speculator frames are the drafter's (f013)."""
    tvm = "tvm.error.InternalError: CUDA driver error (jit_kernels/impls/smxx_layout.hpp:72): 719 (CUDA_ERROR_LAUNCH_FAILED)\n"
    assert verdict(tvm) == ("failed", "starting", "exception")
    ucx = "[2025-08-06 13:08:53 TP0] sglang is using nccl==2.21.5\n[VM-32-28-tencentos:10362:0:10362] Caught signal 7 (Bus error: object-specific hardware error)\n"
    assert verdict(ucx)[:2] == ("failed", "dist_init")
    serve = "INFO 2025-08-29 18:02:42,869 serve 519120 -- Application 'default' is ready at http://127.0.0.1:8000/.\n"
    assert verdict(serve)[0] == "ready"
    spec = "(APIServer pid=1) INFO 05-30 07:49:21 [metrics.py:101] SpecDecoding metrics: Mean acceptance length: 1.00, Accepted: 0 tokens, Drafted: {} tokens\n"
    assert verdict(spec.format(495))[0] == "ready"
    assert verdict(spec.format(0))[0] == "incomplete"
    dump = "ERROR 12-15 10:55:02 [dump_input.py:69] Dumping input data for V1 LLM engine (v0.9.2) with config: model='m'\n"
    assert verdict(dump)[0] == "failed"
    prof = "(EngineCore pid=91294) INFO 04-14 23:39:44 [gpu_model_runner.py:5876] Profiling CUDA graph memory: PIECEWISE=51 (largest=512), FULL=35 (largest=256)\n"
    assert verdict(prof)[1] == "kv_alloc"
    dist = "(EngineCore pid=10919) INFO 03-14 17:09:58 [parallel_state.py:1395] world_size=1 rank=0 local_rank=0 distributed_init_me\n"
    assert verdict(dist)[1] == "dist_init"
    tpu = "(EngineCore_DP0 pid=86218) INFO 02-14 02:31:11 [compilation_manager.py:75] Precompile worker0 sample --> {'num_reqs': 16}\n"
    assert verdict(tpu)[1] == "jit_compile"
    f = '(EngineCore pid=1) ERROR 04-01 10:00:00 [core.py:1] File ".../vllm/v1/worker/gpu/{}", line 1, in {}\n'
    mtp = "(EngineCore pid=1) ERROR 04-01 10:00:00 [core.py:1] EngineCore failed to start.\n(EngineCore pid=1) ERROR 04-01 10:00:00 [core.py:1] Traceback (most recent call last):\n"
    mtp += f.format("model_runner.py", "load_model") + f.format("spec_decode/eagle/utils.py", "load_eagle_model")
    mtp += "(EngineCore pid=1) ERROR 04-01 10:00:00 [core.py:1] ValueError: no draft\n"
    assert verdict(mtp)[1] == "draft_init"


def test_a_log_cut_inside_a_record_s_header_is_an_excerpt() -> None:
    """A consequence alone in a whole log is a process that died without a word (killed); when the log's last
    line stops inside a record's header ('... ERROR 09-17 06:49:42 [core.py', blind44 e003) the excerpt was cut
    there, and the cause is unknown (other)."""
    p = "(EngineCore_DP0 pid=3649085) ERROR 09-17 06:49:42 [core.py:718] "
    whole = "Loading drafter model...\n" + p + "EngineCore failed to start.\n"
    assert verdict(whole) == ("failed", "draft_init", "killed")
    assert verdict(whole + "(EngineCore_DP0 pid=3649085) ERROR 09-17 06:49:42 [core.py\n") == ("failed", "draft_init", "other")


def test_a_serverless_worker_s_newest_first_export_and_its_uncaught_exception() -> None:
    """RunPod's console lists a worker's lines newest first behind its id and level ('j6zswihe185nfq[info]'),
    the worker's own logger with the file first ('engine.py :116  2025-03-24 18:13:28,839 ...') beside vLLM's
    stamps (public x010): read each style against itself, the export is turned round, and the handler's
    'Uncaught exception | <class 'ValueError'>; ...' is the failure, in the load it ended."""
    w = "j6zswihe185nfq"
    log = f"{w}[info]worker exited with exit code 1\n"
    log += f"{w}[info]engine.py           :116  2025-03-24 18:13:28,839 Error initializing vLLM engine: no vLLM implementation\n"
    log += f"{w}[error]Uncaught exception | <class 'ValueError'>; Qwen2_5_VLModel has no vLLM implementation; <traceback object at 0x7f>\n"
    log += f"{w}[info]INFO 03-24 18:13:28 model_runner.py:1110] Starting to load model m...\n"
    log += f"{w}[info]INFO 03-24 18:13:28 cuda.py:229] Using Flash Attention backend.\n"
    log += f"{w}[info]INFO 03-24 18:13:27 config.py:549] This model supports multiple tasks.\n"
    log += f"{w}[info]engine.py           :27   2025-03-24 18:13:18,801 Engine args: AsyncEngineArgs(model='m')\n"
    log += f"{w}[info]INFO 03-24 18:13:17 __init__.py:207] Automatically detected platform cuda.\n"
    assert verdict(log) == ("failed", "weight_load", "exception")


def test_blind47_and_blind48_s_shapes() -> None:
    """SGLang-JAX's precompile (blind47 u015), uvicorn's line without its 'INFO:' (u022) and NVSHMEM's failed
    set-up (u025: since blind92 b13, a communication library's set-up, nccl in dist_init); LMCache registering the KV caches (blind48 g010), an access line trimmed to 'INFO:   POST
    /v1/... 200' (g024), frames whose path a terminal wrapped with no traceback header (g029), CANN's HCCL
    error codes (g034) and the API server's timeout waiting for its engines, a consequence and not an
    exception of its own (g037)."""
    jax = "[2025-09-03 04:38:57] [EXTEND] begin to precompile\n[2025-09-03 04:38:57] [EXTEND] precompile (bs=128, num_tokens=128)\n"
    assert verdict(jax)[1] == "jit_compile"
    uv = "[2026-05-01 10:00:00] KV Cache is allocated. #tokens: 1000\nUvicorn running on http://127.0.0.1:30000\n"
    assert verdict(uv)[1] == "warmup"
    nvshmem = "/sgl-workspace/nvshmem/src/host/init/init.cu:1007: non-zero status: 7 nvshmem setup connections failed\n"
    assert verdict(nvshmem) == ("failed", "dist_init", "nccl")
    boot = "init.cu:1188: non-zero status: 7 nvshmem_bootstrap failed\n[2026-05-13 22:48:20] Received sigquit from a child process. It usually means the child failed.\nEOFError\n"
    assert verdict(boot) == ("failed", "dist_init", "nccl")
    lmc = "(Worker pid=1) [2026-02-10 10:49:08,038] LMCache INFO: Registering KV caches (cache_engine.py:120)\n"
    assert verdict(lmc)[1] == "kv_alloc"
    trimmed = '[kv_cache_utils.py:1] GPU KV cache size: 100 tokens\nINFO:                POST /v1/chat/completions HTTP/1.1" 200 OK\n'
    assert verdict(trimmed)[0] == "ready"
    p = "(Worker_TP2_EP2 pid=405) ERROR 11-25 08:05:06 [multiproc_executor.py:815] "
    wrapped = (
        f'{p}  File "/usr/local/lib/python3.12/dist-packages/vllm/model_exe\ncutor/warmup/deep_gemm_warmup.py", line 262, in _warmup\n'
    )
    wrapped += f"{p}    out = torch.empty((MAX_M, n), device=device, dtype=torch.b\nfloat16)\n{p}          ^^^^^^^^^^^^^^^^^^^^\n"
    assert verdict(wrapped) == ("failed", "jit_compile", "other")
    hccl = "[PID: 749] 2025-12-29-03:16:15.787.356 Get_Socket_Timeout(EI0006): Getting socket times out. Reason: 1. The remote does not initiate a connect request.\n"
    assert verdict(hccl) == ("failed", "dist_init", "nccl")
    timeout = "(APIServer pid=1) ERROR 11-01 10:00:00 [core_client.py:1] TimeoutError: Timed out waiting for engines to sendinitial message on input socket.\n"
    assert verdict(timeout)[2] == "killed"  # a consequence, never the cause: alone in a whole log, a silent death


def test_a_harness_s_exit_line_takes_the_exception_printed_before_it_as_its_cause() -> None:
    """SGLang's test harness on a server process that exited ('Exception: Server process exited with code -9.
    Check server logs for errors.', blind49 v017) is a consequence; the exception line printed before it with
    no traceback ('ValueError: ... not divisible by weight quantization block_n = 128.') is its cause."""
    log = "[2026-04-01 10:00:00 TP0] Init torch distributed ends. mem usage=0.00 GB\n"
    log += "ValueError: Weight output_partition_size = 8 is not divisible by weight quantization block_n = 128.\n"
    log += "ERROR: setUpClass (__main__.TestFlashinferTrtllmGenMoeBackendFP8)\n"
    log += "Exception: Server process exited with code -9. Check server logs for errors.\n"
    _, v = replay([log.encode()])
    assert (v.outcome, v.failure_kind) == ("failed", "exception")
    assert "block_n = 128" in v.reason
    alone = log.replace("ValueError: Weight output_partition_size = 8 is not divisible by weight quantization block_n = 128.\n", "")
    assert verdict(alone)[2] == "killed"


def test_blind51_and_blind52_s_shapes() -> None:
    """A markdown quote's '> ' before each line of a pasted log (blind51 x026); SGLang's diffusion runtime loading
    its pipeline (x023); vLLM's 'Add 3 padding layers, may waste ...' is the KV budget (blind52 i013); Gloo's
    'Application timeout caused pair closure' is the collective's (i020); a Marlin model repacks between
    'Loading weights took' and 'Model loading took' (i017, i015)."""
    quoted = "> Initialization failed. router_init_state: Traceback (most recent call last):\n"
    quoted += '>   File "/s/sglang/srt/models/gemma.py", line 327, in load_weights\n'
    quoted += ">     param = params_dict[name]\n> KeyError: 'lm_head.weight'\n"
    assert verdict(quoted) == ("failed", "weight_load", "exception")
    diffusion = "Loading diffusers pipeline with dtype=torch.bfloat16, device_map=cuda\nNotImplementedError: Using `device_map` requires the `accelerate` library.\n"
    assert verdict(diffusion)[1] == "weight_load"
    pad = "(Worker_TP1 pid=106) INFO 07-06 10:46:10 [backends.py:1] Dynamo bytecode transform time: 9.1 s\n"
    pad += "(Worker_TP1 pid=106) WARNING 07-06 10:46:19 [kv_cache_utils.py:1208] Add 3 padding layers, may waste at most 6.25% KV cache memory\n"
    assert verdict(pad)[1] == "kv_alloc"
    gloo = 'ERROR 02-27 20:44:06 engine.py:400] Traceback (most recent call last):\nERROR 02-27 20:44:06 engine.py:400]   File "/t/torch/distributed/distributed_c10d.py", line 4164, in barrier\n'
    gloo += "ERROR 02-27 20:44:06 engine.py:400]     work.wait()\nERROR 02-27 20:44:06 engine.py:400] RuntimeError: Application timeout caused pair closure\n"
    assert verdict(gloo)[2] == "nccl"
    p = "(EngineCore_DP0 pid=5253) INFO 09-24 05:01:{} "
    marlin = p.format(38) + "[compressed_tensors_moe.py:130] Using CompressedTensorsWNA16MarlinMoEMethod\n"
    marlin += p.format(46) + "[default_loader.py:267] Loading weights took 2.40 seconds\n"
    assert verdict(marlin)[1] == "marlin_repack"
    plain = p.format(46) + "[default_loader.py:267] Loading weights took 2.40 seconds\n"
    assert verdict(plain + p.format(47) + "[int_wna16.py:409] Using MarlinExperts\n")[1] == "marlin_repack"
    assert verdict(plain)[1] == "weight_load"


def test_blind53_and_blind54_s_shapes() -> None:
    """The engine's own words after its scheduler's report place the failure ('Exception: Capture cuda graph
    failed:', blind53 y016); a header cut at 'Traceback (most recent call' is a cut traceback (y002); vLLM's 2026
    'Torch profiler disabled for CUDA graph capture' opens the capture (blind54 j004); a consequence followed by
    the exception line without its traceback takes that line as its cause (j020)."""
    s = "[01:39:47] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 1131687\n[01:39:49] Scheduler hit an exception ...\n"
    assert (
        verdict(s + "Exception: Capture cuda graph failed:\n  ROCm shim: sgl_kernel.rotary_embedding was really called\n")[1]
        == "graph_capture"
    )
    cut = "[2026-06-01 10:00:00] Load weight end. elapsed=1.0 s\n[2026-06-01 10:00:05 TP0] Scheduler hit an exception: Traceback (most recent call\n"
    assert verdict(cut)[2] == "other"
    p = "(EngineCore pid=461159) INFO 08-23 08:10:28 "
    prof = (
        p
        + "[kv_cache_utils.py:1] GPU KV cache size: 1000 tokens\n"
        + p
        + "[gpu_model_runner.py:6867] Rank 0: Torch profiler disabled for CUDA graph capture\n"
    )
    assert verdict(prof)[1] == "graph_capture"
    e = "(EngineCore_0 pid=72) ERROR 08-25 09:42:24 [core.py:700] "
    nvml = (
        e
        + "EngineCore failed to start.\n"
        + e
        + 'RuntimeError: NVML_SUCCESS == r INTERNAL ASSERT FAILED at "/pytorch/c10/cuda/CUDACachingAllocator.cpp":1016\n'
    )
    assert verdict(nvml)[2] == "exception"
    assert verdict(e + "EngineCore failed to start.\n")[2] == "killed"


def test_the_weight_offloader_and_a_lazy_capture_say_where_the_start_is() -> None:
    """vLLM's weight offloader speaks while the model is built (an XPU build's 'UVA offloading is not
    supported ... Falling back to standard CPU offloading', once per parameter: blind52 i018); a lazy
    capture's 'Graph capturing for N input tokens' is the capture (blind37 k007)."""
    p = "(EngineCore_DP0 pid=1050618) WARNING 11-19 08:03:29 [_logger.py:68] "
    uva = p + "UVA offloading is not supported on Intel XPU. Falling back to standard CPU offloading.\n"
    assert verdict(uva * 3) == ("incomplete", "weight_load", None)
    q = "(EngineCore_0 pid=309588) INFO 08-19 07:06:37 [gpu_model_runner.py:2721] "
    lazy = (
        q
        + "GPU KV cache size: 1000 tokens\n"
        + q
        + "Graph capturing for 112 input tokens\n"
        + q
        + "   finished in 0.048 secs, took 6.00 MiB\n"
    )
    assert verdict(lazy)[1] == "graph_capture"


def test_a_logger_tag_moves_a_placed_start_on_to_a_later_step_never_back() -> None:
    """After the KV cache's lines, '[kernel_warmup.py:170]' is the autotune even though its own line is
    cut ('Using Flas', blind35 i019); a tag never moves a start back, nor into a repack (a quantized
    model's kv_cache.py scales log in its load: blind48 g030)."""
    p = "(EngineCore pid=1941447) INFO 07-10 18:58:11 "
    kv = p + "[kv_cache_utils.py:2169] Maximum concurrency for 262,144 tokens per request: 84.88x\n"
    assert verdict(kv + p + "[kernel_warmup.py:170] Using Flas\n")[1] == "jit_compile"
    back = kv + p + "[kernel_warmup.py:170] Using Flas\n" + p + "[kv_cache_utils.py:900] block_size 16\n"
    assert verdict(back)[1] == "jit_compile"
    load = p + "[default_loader.py:384] Loading weights took 27.32 seconds\n"
    scale = p + "[kv_cache.py:109] Checkpoint does not provide a q scaling factor. Setting it to k_scale.\n"
    assert verdict(load + scale)[1] != "marlin_repack"


def test_vllms_profiling_report_and_uvicorns_bind_error() -> None:
    """V0's profiling report opens the KV cache's sizing (blind56 v026), but Ray's late summary of it
    ('[repeated 30x across cluster]') does not move a capture back (blind30 c047); uvicorn's '[Errno 99]
    error while attempting to bind on address' ends the start, in the phase it was in (blind56 v035)."""
    w = "(WorkerDict pid=55573) INFO 03-06 15:24:55 worker.py:267] "
    load = "(WorkerDict pid=55573) INFO 03-06 15:24:54 model_runner.py:1115] Loading model weights took 0.9277 GB\n"
    prof = load + w + "Memory profiling takes 0.39 seconds\n" + w + "model weights take 0.93GiB\n"
    assert verdict(prof)[1] == "kv_alloc"
    r = "(RayWorkerWrapper pid=1463574, ip=192.168.10.60) INFO 03-27 10:29:01 [worker.py:267] "
    cap = "(RayWorkerWrapper pid=1861983) INFO 03-27 10:29:03 [model_runner.py:1442] Capturing cudagraphs for decoding.\n"
    assert verdict(cap + r + "Memory profiling takes 4.26 seconds [repeated 30x across cluster]\n")[1] == "graph_capture"
    bind = (
        "INFO:     Application startup complete.\n"
        "ERROR:    [Errno 99] error while attempting to bind on address ('::1', 8000, 0, 0): cannot assign requested address\n"
        "INFO:     Waiting for application shutdown.\nINFO:     Application shutdown complete.\n"
    )
    assert verdict(load + bind)[0] == "failed"


def test_a_root_printed_bare_then_under_its_traceback_is_placed_by_its_frames() -> None:
    """SGLang's draft worker: the KeyError printed bare, the launcher's sigquit, then the scheduler's
    traceback through EAGLEWorker.__init__ ending on the same KeyError: the draft's init (blind58 k002);
    a wrapped free-memory ValueError is an OOM (k020, k021)."""
    sp = '  File "/env/lib/python3.10/site-packages/sglang/srt/'
    log = (
        "KeyError: 'layers.0.self_attn.qkv_proj.weight'\n"
        "[2025-01-20 19:10:07] Received sigquit from a child proces. It usually means the child failed.\n"
        "[2025-01-20 19:10:07 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        + sp
        + 'managers/scheduler.py", line 221, in __init__\n    self.draft_worker = EAGLEWorker(\n'
        + sp
        + 'speculative/eagle_worker.py", line 33, in __init__\n    super().__init__(\n'
        + sp
        + 'model_executor/model_runner.py", line 281, in load_model\n    self.model = get_model(\n'
        "KeyError: 'layers.0.self_attn.qkv_proj.weight'\n"
    )
    assert verdict(log) == ("failed", "draft_init", "exception")
    wrapped = "ValueError: Free memory on device xpu:0 (18.79/28.57 GiB) on startup\nis less than desired GPU memory utilization (0.7, 20.0 GiB).\n"
    assert verdict(wrapped) == ("failed", "starting", "oom")


def test_blind57s_wordings_from_tpu_gaudi_ascend_and_rocm() -> None:
    """TPU's runner compiling its input shapes is the compile (blind57 v003), tpu-inference's 'Loading model
    with MODEL_IMPL_TYPE=' the load (v025), Gaudi's 'Starting sampler warmup...' the warm-up (v018), V1's
    'Skipping memory profiling for multimodal encoder' the KV sizing (v031), and the worker's memory
    recommendation as the capture returns the capture (v007), unless it says nothing was captured
    (an eager start's '0.0 GiB for CUDAGraph memory': blind35 i031)."""
    p = "(EngineCore_DP0 pid=1) INFO 11-07 06:32:56 "
    assert verdict("INFO 12-12 11:19:16 tpu_model_runner.py:274] Compiling the model with different input shapes...\n")[1] == "jit_compile"
    assert verdict(p + "[model_loader.py:318] Loading model with MODEL_IMPL_TYPE=vllm\n")[1] == "weight_load"
    assert verdict(p + "[hpu_model_runner.py:4675] Starting sampler warmup...\n")[1] == "warmup"
    skip = p + "[gpu_model_runner.py:5180] Skipping memory profiling for multimodal encoder and encoder cache.\n"
    assert verdict(p + "[default_loader.py:1] Loading weights took 3.0 seconds\n" + skip)[1] == "kv_alloc"
    rec = p + "[worker.py:575] Free memory on device (60.86/61.27 GiB) on startup. Desired GPU memory utilization is (0.9, 55.14 GiB). "
    assert verdict(rec + "Actual usage: 1.14 GiB for weights\n")[1] == "graph_capture"
    kv = "INFO 10-06 00:39:49 [executor_base.py:114] # rocm blocks: 5221, # CPU blocks: 1638\n"
    eager = "INFO 10-06 00:39:50 [worker.py:467] Free memory on device (31.94/31.98 GiB) on startup. Desired GPU memory utilization is (0.5, 15.99 GiB). Actual usage is 1.19 GiB for weight, and 0.0 GiB for CUDAGraph memory.\n"
    assert verdict(kv + eager)[1] == "kv_alloc"


def test_a_bar_cut_after_its_bar_and_dynamos_tracing_prefix() -> None:
    """A bar cut before its counts still says its phase by its percent (SpecForge's EAGLE3 capture,
    blind55 y006); text after the bar that is not drawn with blocks is no bar. NVIDIA Dynamo's
    'LEVEL module.function: ' after its RFC 3339 time is a wrapper (blind55 y011)."""
    assert parse_bar("Capturing batches (bs=2 avail_mem=14.40 GB):   0%|") == ("Capturing batches (bs=2 avail_mem=14.40 GB)", 0, 100)
    assert parse_bar("Loading:  45%|████▌     ") == ("Loading", 45, 100)
    assert parse_bar("accuracy 50%| of the runs") is None
    assert (
        verdict("[2025-09-01 10:00:00] Load weight end. elapsed=1.0 s\nCapturing batches (bs=2 avail_mem=14.40 GB):   0%|\n")[1]
        == "graph_capture"
    )
    dyn = "2025-11-05T01:56:54.281615Z  INFO model_runner.init_device_graphs: Capture cuda graph end. Time elapsed: 12.80 s. mem usage=4.69 GB. avail mem=20.31 GB.\n"
    (line,) = normalise([dyn.encode()])
    assert line.text.startswith("Capture cuda graph end.") and line.stamp_style == "iso"


def test_blind59s_memory_wordings_and_the_ray_executors_dead_worker() -> None:
    """gpu_model_runner.load_model's 'Failed to load model - not enough GPU memory.' is the load's OOM
    (blind59 p003); the KV budget error wrapped after 'the maximum number of' is still the KV cache's
    OOM (p009); the Ray executor's 'RayWorkerProc rank=[3] died unexpectedly' is a consequence whose
    cause, Gloo's timed-out receive on the same flattened line, is the collective's (p012)."""
    assert verdict("ERROR: Failed to load model - not enough GPU memory.\nGPU 0 has a total capacity of 22.03 GiB\n") == (
        "failed",
        "weight_load",
        "oom",
    )
    wrapped = (
        "ValueError: The model's max seq len (32768) is larger than the maximum number of\ntokens that can be stored in KV cache (2048).\n"
    )
    assert verdict(wrapped) == ("failed", "kv_alloc", "oom")
    flat = (
        "INFO ... [core.py:1] RuntimeError: ... [/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out"
        " waiting 1800000ms for recv operation to complete ERROR ... RayWorkerProc rank=[3] died unexpectedly, shutting down executor.\n"
    )
    assert verdict(flat)[0::2] == ("failed", "nccl")


def test_blind61s_data_parallel_world_and_the_diffusion_engines_warm_up() -> None:
    """vLLM's data-parallel 'Adjusting world_size=16 rank=3 distributed_init_method=... for DP' is the
    distributed set-up (blind61 f027); vLLM-Omni's diffusion engine's 'dummy run to warm up the model' is
    the warm-up, also cut mid-word (f032, f039)."""
    dp = "(VllmWorker rank=3 pid=4189103) INFO 08-06 21:53:06 [parallel_state.py:935] Adjusting world_size=16 rank=3 distributed_init_\n"
    assert verdict(dp)[1] == "dist_init"
    s = "[Stage-0] INFO 03-12 13:32:52 "
    loaded = s + "[diffusion_worker.py:148] Worker 0: Process-scoped GPU memory after model loading: 19.56 GiB.\n"
    assert verdict(loaded + s + "[diffusion_engine.py:389] dummy run to warm up the mod\n")[1] == "warmup"


def test_the_graphs_memory_profile_sizes_the_kv_cache() -> None:
    """vLLM's profile_cudagraph_memory captures graphs to measure them for the KV budget (its log line,
    'Profiling CUDA graph memory: ...', is kv_alloc): an OOM under it, even inside parallel_state's
    graph_capture context, is the KV cache's sizing (blind62 o01; the structure map, regenerated)."""
    e = "(EngineCore pid=207) "
    f = e + '  File "/usr/local/lib/python3.12/dist-packages/vllm/'
    tb = (
        e
        + "Traceback (most recent call last):\n"
        + f
        + 'v1/engine/core.py", line 249, in _initialize_kv_caches\n'
        + f
        + 'v1/worker/gpu_worker.py", line 381, in determine_available_memory\n'
        + f
        + 'v1/worker/gpu_model_runner.py", line 5933, in profile_cudagraph_memory\n'
        + f
        + 'distributed/parallel_state.py", line 1299, in graph_capture\n'
        + e
        + "torch.AcceleratorError: CUDA error: out of memory\n"
    )
    assert verdict(tb) == ("failed", "kv_alloc", "oom")


def test_an_exception_line_followed_by_canns_error_report_ended_the_start() -> None:
    """Ascend's CANN prints its report after torch_npu's exception line ('ERR00100 PTA call acl api
    failed', 'EZ9999: Inner Error!' and its details): the log still ends on that exception (blind61 f002,
    blind57 v015)."""
    log = (
        "RuntimeError: arange_out_op_api:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:36 NPU function error: call aclnnArange failed, error code is 561103\n"
        "[ERROR] 2025-09-19-14:34:08 (PID:5625, Device:0, RankID:-1) ERR00100 PTA call acl api failed.\n"
        "EZ9999: Inner Error!\n"
        "EZ9999: [PID: 5625] 2025-09-19-14:34:08.166.059 Parse dynamic kernel config fail.\n"
        "        TraceBack (most recent call last):\n"
        "       AclOpKernelInit failed opType\n"
        "       ArangeAiCore ADD_TO_LAUNCHER_LIST_AICORE failed.\n"
    )
    assert verdict(log) == ("failed", "starting", "exception")


def test_blind63_and_blind65_s_oneccl_triton_and_a_bare_rank_tag() -> None:
    """Intel oneCCL's 'CCL_ERROR| ...' is the collective's error (blind63 c07); Triton's 'Triton Error [CUDA]:
    out of memory' an OOM on its own (blind65 g04); SGLang's rank tag without its time ('[TP1] Capture target
    verify CUDA graph end.') a prefix, so the line behind it is read (g08)."""
    ccl = "CCL_ERROR| ze_fd_manager.cpp:144 init_device_fds: condition dir failed\nRuntimeError: Engine core initialization failed. See root cause above.\n"
    assert verdict(ccl)[0::2] == ("failed", "nccl")
    assert verdict("Triton Error [CUDA]: out of memory\n")[0::2] == ("failed", "oom")
    tag = "[TP1] FlashInfer autotune completed.\n[TP1] Capture target verify CUDA graph end. elapsed=64.96 s\n[TP1] Init Unified Radix Cache.\n"
    assert verdict(tag)[1] == "graph_capture"


def test_a_start_marker_stamped_before_lines_already_read_is_no_restart() -> None:
    """A rig report pastes the KV pool's lines first and the engine's config after them: its 'non-default
    args' marker, stamped two minutes earlier, is the same start's text out of order, not a restart (blind64
    i04, i05, i11, i13, i14); the same marker stamped later, after the start got somewhere, is one."""
    p = "(APIServer pid=1) INFO 07-09 {} [{}] "
    kv = p.format("02:58:11", "kv_cache_utils.py:1") + "GPU KV cache size: 120,000 tokens\n"
    args = p.format("02:56:25", "utils.py:1") + "non-default args: {'model': 'm', 'tensor_parallel_size': 2}\n"
    assert verdict(kv + args) == ("incomplete", "kv_alloc", None)
    later = args.replace("02:56:25", "03:05:00")
    assert verdict(kv + later)[0] == "failed"  # a restart, and --max-restarts 0


def test_the_drivers_out_of_memory_and_vllm_omnis_dead_scheduler() -> None:
    """The NVIDIA kernel driver's 'NVRM: ... Out of memory [NV_ERR_NO_MEMORY]' explains the engine's error
    after it as an OOM (blind64 o02); vLLM-Omni's 'Rank 3 scheduler is dead' is a consequence (f04)."""
    drafter = "18:03:00  (Worker_TP0) INFO [gpu_model_runner.py:5332] Loading drafter model...\n"
    nvrm = "18:03:03  kernel: NVRM: nvCheckOkFailedNoLog: Check failed: Out of memory [NV_ERR_NO_MEMORY]\n"
    core = "(EngineCore pid=1) ERROR 08-01 18:03:38 [core.py:1349] EngineCore failed to start.\n"
    assert verdict(drafter + nvrm + core) == ("failed", "draft_init", "oom")
    dead = "(APIServer pid=154) ERROR 08-05 18:24:49 [multiproc_executor.py:298] Rank 3 scheduler is dead. Please check if there are\n"
    assert verdict(dead)[0] == "failed"


def test_blind66_to_68_s_offline_bar_cut_kv_line_named_header_diffusion_launcher_and_srun() -> None:
    """vLLM's offline 'Processed prompts' bar is the engine answering its prompts (blind67 v018, blind68
    d23); V0's KV line cut at '# GPU block' is the KV pool (v002); IPython's header naming Ray's wrapped
    exception keeps its type when the frames are cut (v023); SGLang's diffusion launcher's '[12-16 14:27:08]'
    stamp, its 'Rank 0 scheduler is dead' and 'Exit code: -9' are a consequence naming a kill (blind66 a16);
    Slurm's task label '0: ' is a wrapper (a28)."""
    kv = "INFO 10-05 10:00:00 llm_engine.py:1] # GPU blocks: 865, # CPU blocks: 327\n"
    assert verdict(kv + "Processed prompts: 100%|██████████| 20/20 [00:13<00:00,  1.53it/s]\n") == ("ready", "ready", None)
    assert verdict("INFO 10-05 10:00:00 llm_engine.py:1] Initializing an LLM engine with config: model='m'\n# GPU block\n")[1] == "kv_alloc"
    ipy = "RayTaskError(KeyError)                    Traceback (most recent call last)\nCell In[2], line 1\n----> 1 llm = LLM(model='m')\n"
    assert verdict(ipy)[0::2] == ("failed", "exception")
    dead = "[12-16 14:27:08] Rank 0 scheduler is dead. Please check if there are relevant logs.\n[12-16 14:27:10] Exit code: -9\n"
    assert verdict(dead)[0::2] == ("failed", "killed")
    srun = "0: [2025-03-05 03:55:35 TP0] Load weight begin. avail mem=70.00 GB\n0: torch.distributed.DistBackendError: NCCL error in: x.cpp:1, unhandled system error\n"
    assert verdict(srun)[0::2] == ("failed", "nccl")


def test_canns_own_error_report_is_a_failure_unless_an_exception_line_came_first() -> None:
    """Ascend CANN's report alone ('... init failed![FUNC:ReportInnerError][FILE:log_inner.cpp][LINE:145]')
    ends the start (blind66 a05); after torch_npu's exception line it is that exception's detail, the kind
    stays exception (blind61 f002)."""
    cann = "[Set][Options]OpCompileProcessor init failed![FUNC:ReportInnerError][FILE:log_inner.cpp][LINE:145]\n"
    assert verdict("[2025-08-01 10:00:00] server_args=ServerArgs(model_path='m')\n" + cann) == ("failed", "starting", "other")
    exc = (
        "RuntimeError: arange_out_op_api:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:36 NPU function error: call aclnnArange failed\n"
    )
    assert verdict(exc + "EZ9999: Inner Error!\n" + cann)[0::2] == ("failed", "exception")


def test_lmcaches_layout_lines_and_torchs_oom_body_without_its_head() -> None:
    """LMCache's gpu_connector reading the KV caches' layout is the KV pool (blind69 e01); torch's OOM
    message quoted without its head line ('Tried to allocate 136.00 MiB. GPU 0 has a total capacity of ...')
    is still an OOM (blind71 r15)."""
    lm = "(Worker_TP0_EP0 pid=987) [2026-05-20 03:47:16,997] LMCache INFO: GPU KV Cache Dimensions: [158][4372, 64, 132] (utils.py:527:lmcache.v1.gpu_connector.utils)\n"
    assert verdict("(EngineCore pid=1) INFO 05-20 03:47:10 [default_loader.py:1] Loading weights took 9.0 seconds\n" + lm)[1] == "kv_alloc"
    body = "    Tried to allocate 136.00 MiB. GPU 0 has a total capacity of 22.36 GiB of\n    which 120.88 MiB is free. ... If this problem persists, try setting\n"
    assert verdict(body)[0::2] == ("failed", "oom")


def test_the_piecewise_runners_failed_capture_places_a_traceback_cut_above_its_frames() -> None:
    """SGLang 2026's 'Piecewise CUDA Graph failed with error: ...' before a scheduler traceback cut above
    any frame the map names: the capture was under way (blind70 g05)."""
    log = (
        "[2026-06-10 13:08:30 TP7] Load weight end. elapsed=10.0 s\n"
        "[2026-06-10 13:08:34 TP7] Piecewise CUDA Graph failed with error: 'TcPiecewiseForwardContext' object has no attribute 'num_tokens'\n"
        "[2026-06-10 13:08:34 TP7] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/sgl/python/sglang/srt/managers/scheduler.py", line 3000, in run_scheduler_process\n'
    )
    assert verdict(log)[0:2] == ("failed", "graph_capture")


def test_blind72_s_shapes_tilelang_compiles_and_a_csrc_cudacheck_before_the_workers_death() -> None:
    """TileLang's JIT ('TileLang begins to compile kernel', blind72 t07) is jit_compile; vLLM csrc's CUDACHECK
    ("Failed: Cuda error FILE:LINE '...'", then exit) is the cause, the executor's 'died unexpectedly' its
    consequence (t02)."""
    p = "(Worker_TP0_EP0 pid=1020) 2026-09-02 14:02:51  [TileLang:tilelang.jit.kernel:INFO] (kernel.py:129): "
    assert verdict(p + "TileLang begins to compile kernel `hc_prenorm_gemm_tilelang` with `out_idx=None`\n") == (
        "incomplete",
        "jit_compile",
        None,
    )
    log = (
        "Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:1735 'an illegal memory access was encountered'\n"
        "(EngineCore pid=684) ERROR 09-07 03:15:57 [multiproc_executor.py:284] Worker proc VllmWorker-7 died unexpectedly, shutting down executor.\n"
    )
    assert verdict(log) == ("failed", "starting", "other")


def test_xlas_resource_exhausted_about_memory_is_oom() -> None:
    """vLLM on TPU: XLA's 'RESOURCE_EXHAUSTED: Error loading program: Attempting to reserve 1.04G at the bottom
    of memory' inside a RuntimeError is the TPU's OOM (blind73 w02); a RESOURCE_EXHAUSTED about anything else
    keeps the exception's kind."""
    line = "RuntimeError: Bad StatusOr access: RESOURCE_EXHAUSTED: Error loading program: Attempting to reserve 1.04G at the bottom of memory. That was not possible.\n"
    assert verdict(line) == ("failed", "starting", "oom")
    other = "RuntimeError: Bad StatusOr access: RESOURCE_EXHAUSTED: too many open streams\n"
    assert verdict(other) == ("failed", "starting", "exception")


def test_a_kernel_build_that_failed_is_jit_compile_only_where_nothing_else_places_it() -> None:
    """FlashInfer's 'Ninja build failed' with no marker before it: the JIT phase (blind55 y018); the same
    failure after SGLang's capture began is the capture's (the kernel is the cause, not the phase)."""
    fail = "RuntimeError: Ninja build failed. Ninja output:\nninja: Entering directory `/root/.cache/flashinfer/100/cached_ops'\n"
    assert verdict(fail) == ("failed", "jit_compile", "exception")
    capture = "[2025-07-01 10:00:00 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=10.00 GB\n"
    assert verdict(capture + fail) == ("failed", "graph_capture", "exception")


def test_a_bare_cuda_error_message_fails_the_start() -> None:
    """'CUDA error: invalid device ordinal' on its own line (a launcher logging str(e), blind59 p015): the
    device refused, failed in starting, kind other (no exception type in the text); its OOM is oom."""
    assert verdict("CUDA error: invalid device ordinal\n") == ("failed", "starting", "other")
    assert verdict("CUDA error: out of memory\n") == ("failed", "starting", "oom")


def test_blind76_s_shapes_gloo_connect_a_v0_worker_killed_the_rendezvous_store() -> None:
    """Gloo's 'connectFullMesh failed' alone behind a Ray worker's prefix (blind76 k02): nccl, in dist_init (its
    connect); V0's 'Worker VllmWorkerProcess pid 320 died, exit code: -9' (k03): killed; a traceback through
    torch's rendezvous store (k01): dist_init."""
    gloo = "(RayWorkerWrapper pid=933, ip=10.0.0.2) [rank1]:[E528 08:52:46.164295950 ProcessGroupGloo.cpp:145] Gloo connectFullMesh failed with [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:144] no error\n"
    assert verdict(gloo) == ("failed", "dist_init", "nccl")
    died = "ERROR 03-19 13:02:05 [multiproc_worker_utils.py:124] Worker VllmWorkerProcess pid 320 died, exit code: -9\nINFO 03-19 13:02:05 [multiproc_worker_utils.py:128] Killing local vLLM worker processes\n"
    assert verdict(died) == ("failed", "starting", "killed")
    p = "ERROR 10-25 12:21:14 worker_base.py:145] "
    store = (
        f'{p}  File "/env/lib/python3.10/site-packages/torch/distributed/rendezvous.py", line 174, in _create_c10d_store\n'
        f"{p}    return TCPStore(\n"
        f"{p}torch.distributed.DistStoreError: Timed out after 601 seconds waiting for clients. 1/2 clients joined.\n"
    )
    assert verdict(store)[:2] == ("failed", "dist_init")


def test_a_cause_logged_after_its_consequence_is_the_cause() -> None:
    """Ranks interleave: one worker's death ('died, exit code: -6') is logged before rank 0's NCCL watchdog
    timeout; the timeout is the cause (nccl), the death its consequence (blind42 d033)."""
    log = (
        "ERROR 07-01 13:54:43 multiproc_worker_utils.py:120] Worker VllmWorkerProcess pid 1159 died, exit code: -6\n"
        "[rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2, OpType=ALLREDUCE) ran for 600059 milliseconds before timing out.\n"
    )
    assert verdict(log) == ("failed", "starting", "nccl")


def test_blind75_s_shapes_a_source_line_names_the_set_up_tenstorrent_and_kunlun() -> None:
    """The frame's source line before the error names the communicator's init ('self._funcs["ncclCommInitRank"]',
    blind75 q01): dist_init; Tenstorrent's allocator ('Out of Memory: Not enough space to allocate ... DRAM buffer')
    under its KV bar (q03): oom in kv_alloc; Kunlun's XCCL init failing (q13): nccl in dist_init."""
    w = "(VllmWorker rank=3 pid=4665) ERROR 08-05 14:13:44 [multiproc_executor.py:487] "
    nccl = (
        f'{w}    self.NCCL_CHECK(self._funcs["ncclCommInitRank"](ctypes.byref(comm),\n'
        f'{w}  File "/usr/lib/python3/dist-packages/vllm/distributed/device_communicators/pynccl_wrapper.py", line 257, in NCCL_CHECK\n'
        f'{w}    raise RuntimeError(f"NCCL error: {{error_str}}")\n'
        f"{w}RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)\n"
    )
    assert verdict(nccl) == ("failed", "dist_init", "nccl")
    tt = (
        "Allocating TT kv caches for each layer (submesh 1):  69%|######   | 22/32 [00:01<00:00, 11.60it/s]\n"
        "Out of Memory: Not enough space to allocate 71999488 B DRAM buffer across 12 banks, where each bank needs to store 6000320 B\n"
    )
    assert verdict(tt) == ("failed", "kv_alloc", "oom")
    xccl = (
        "[XCCL][init.cpp:1227] host 10.0.0.1 addr_window check failed\n"
        "ValueError: [INVALID PARAMETER]: error code= 1(at .../torch_xmlir/csrc/new_xccl/XCCLUtils.hpp:53)\n"
    )
    assert verdict(xccl) == ("failed", "dist_init", "nccl")


def test_blind77_and_blind79_s_shapes() -> None:
    """A kernel library's CUDA check ('CUDA error (csrc/smxx/get_mla_metadata.cu:93): no kernel image ...', blind77
    g04) fails the start during its capture; Gloo's monitoredBarrier errors explain a later cut traceback as nccl
    (g09); vLLM V0's 'Writing input of failed execution to ...' is a failure in progress (blind79 m16)."""
    capture = "[2025-12-01 10:00:00 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=10.00 GB\n"
    flashmla = (
        "CUDA error (_deps/repo-flashmla-src/csrc/smxx/get_mla_metadata.cu:93): no kernel image is available for execution on the device\n"
    )
    assert verdict(capture + flashmla) == ("failed", "graph_capture", "other")
    gloo = (
        "[rank3]:[E421 04:13:43.426633564 ProcessGroupGloo.cpp:143] Rank 3 successfully reached monitoredBarrier, but received errors while waiting for send/recv from rank 0.\n"
        "[2025-04-21 04:13:43 TP3] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/sgl/python/sglang/srt/managers/scheduler.py", line 2000, in run_scheduler_process\n'
    )
    assert verdict(gloo)[2] == "nccl"
    dump = "(VllmWorkerProcess pid=23680) INFO 10-20 10:00:00 model_runner_base.py:120] Writing input of failed execution to /tmp/err_execute_model_input_20241020-100000.pkl...\n"
    assert verdict(dump) == ("failed", "starting", "other")


def test_blind78_s_shapes_back_ends_wordings() -> None:
    """vLLM's back-ends: a bare XLA 'RESOURCE_EXHAUSTED: ... reserve 6.14G ... memory' line is an OOM (TPU, blind78
    p21); the Gaudi fork's 'Pre-loading model weights on hpu:0 took' is the load (p10); 'world_size=2 rank=0
    local_rank=0 backend=xccl' is dist_init (XPU, p11); the Neuron compiler's wrapper frame is jit_compile (p18)."""
    tpu = "RESOURCE_EXHAUSTED: Error loading program 'jit__multi_slice': Attempting to reserve 6.14G at the bottom of memory. That was not possible.\n"
    assert verdict(tpu) == ("failed", "starting", "oom")
    hpu = "INFO 08-20 10:00:00 hpu_model_runner.py:600] Pre-loading model weights on hpu:0 took 14.97 GiB of device memory (14.97 GiB/94.62 GiB used)\n"
    assert verdict(hpu) == ("incomplete", "weight_load", None)
    xpu = "(Worker pid=532) INFO 07-17 12:28:59 [parallel_state.py:1615] world_size=2 rank=0 local_rank=0 backend=xccl\n"
    assert verdict(xpu) == ("incomplete", "dist_init", None)
    neuron = (
        "Traceback (most recent call last):\n"
        '  File "/env/lib/python3.12/site-packages/libneuronxla/neuron_cc_wrapper.py", line 80, in neuron_xla_compile\n'
    )
    assert verdict(neuron)[:2] == ("failed", "jit_compile")


def test_vllms_init_device_is_dist_init_but_not_its_free_memory_check() -> None:
    """A traceback that ends in the executor's call of the workers' init_device (blind40 p051, blind76 k07) failed
    while the device and torch.distributed's groups were set up: dist_init. The free-memory check in the same
    function fails before any group is built: starting (public v005)."""
    p = "ERROR 03-23 21:43:38 [engine.py:448] "
    cut = (
        f"{p}Traceback (most recent call last):\n"
        f'{p}  File "/venv/lib/python3.12/site-packages/vllm/executor/mp_distributed_executor.py", line 185, in _run_workers\n'
        f'{p}    driver_worker_output = run_method(self.driver_worker, "init_device", args, kwargs)\n'
        f'{p}  File "/venv/lib/python3.12/site-packages/vllm/worker/worker_base.py", line 612, in init_device\n'
    )
    assert verdict(cut)[:2] == ("failed", "dist_init")
    free = (
        cut
        + f"{p}ValueError: Free memory on device (3.5/23.6 GiB) on startup is less than desired GPU memory utilization (0.9, 21.2 GiB).\n"
    )
    assert verdict(free) == ("failed", "starting", "oom")


def test_blind80_s_shapes_nvcc_after_the_error_site_and_the_capture_builder() -> None:
    """vLLM's engine core logs its fatal site, then the FlashInfer build's nvcc output ('mma_sm90.hpp(6108): error:
    static assertion failed'): a JIT build, jit_compile (blind80 e07); a traceback cut in the attention builder's
    build_for_cudagraph_capture is the capture's (e08)."""
    p = "(EngineCore_DP0 pid=2247011) ERROR 01-06 23:16:01 [core.py:900] "
    nvcc = f'{p}            instantiation of "cudaError_t flashinfer::BatchPrefillWithRaggedKVCacheDispatched<HEAD_DIM_QK>"\n{p}\n{p}/venv/lib/python3.12/site-packages/flashinfer/data/cutlass/include/cute/arch/mma_sm90.hpp(6108): error: static assertion failed\n'
    assert verdict(nvcc)[:2] == ("failed", "jit_compile")
    w = "(Worker_TP0 pid=2847636) ERROR 11-12 16:25:35 [multiproc_executor.py:711] "
    cut = (
        f"{w}Traceback (most recent call last):\n"
        f'{w}  File "/vllm/vllm/v1/attention/backends/utils.py", line 321, in build_for_cudagraph_capture\n'
        f"{w}    return self.build(\n"
    )
    assert verdict(cut)[:2] == ("failed", "graph_capture")


def test_blind83_and_blind84_s_shapes_an_old_serving_loop_and_a_jit_module_built_by_a_capture() -> None:
    """SGLang 0.3's tp_worker exposed_step / forward_prefill_batch is its serving loop: a failure there came from
    the warm-up request (blind83 o09); a FlashInfer JIT module built from an attention backend's capture metadata
    fails in the capture, not in jit_compile (blind84 n03: the step's frame decides, the kernel is the cause)."""
    old = (
        "Traceback (most recent call last):\n"
        '  File "/env/lib/python3.10/site-packages/sglang/srt/managers/tp_worker.py", line 230, in exposed_step\n'
        '  File "/env/lib/python3.10/site-packages/sglang/srt/managers/tp_worker.py", line 400, in forward_prefill_batch\n'
    )
    assert verdict(old)[:2] == ("failed", "warmup")
    jit = (
        "Traceback (most recent call last):\n"
        '  File "/src/sglang/python/sglang/srt/layers/attention/minicpm_backend.py", line 90, in init_forward_metadata_capture_cuda_graph\n'
        '  File "/env/lib/python3.10/site-packages/flashinfer/jit/attention/modules.py", line 500, in gen_batch_prefill_module\n'
        "AssertionError: fp8 tensor core is not supported in fa2 backend\n"
    )
    assert verdict(jit) == ("failed", "graph_capture", "exception")


def test_blind86_to_90_s_shapes_exits_after_their_cause_and_rendered_pastes() -> None:
    """A subcommand's argparse error ('vllm serve: error: ...') ends the start (blind88 b07); docker compose's
    'X exited with code 2' is a failure (b08); an exception line before systemd's exit status is the cause,
    even when the paste split its dotted name (b09); Dynamo's tracer frames are torch.compile compiling (b04)."""
    assert verdict(
        "usage: vllm serve [model_tag] [options]\nvllm serve: error: argument --tool-call-parser: invalid choice: 'glm45'\n"
    ) == (
        "failed",
        "starting",
        "exception",
    )
    assert verdict("INFO 07-29 01:38:56 [__init__.py:244] Automatically detected platform rocm.\nvllm_glm45air exited with code 2\n") == (
        "failed",
        "starting",
        "exited",
    )
    j = "Nov 13 01:50:23 gpu1 vllm[62501]: (APIServer pid=62501) "
    exited = f"{j}pydantic_core._pydantic_core. ValidationError: 1 validation error for ModelConfig\nNov 13 01:50:25 gpu1 systemd[1]: vllm.service: Main process exited, code=exited, status=1/FAILURE\n"
    assert verdict(exited) == ("failed", "starting", "exception")
    alone = "Nov 13 01:50:25 gpu1 systemd[1]: vllm.service: Main process exited, code=exited, status=1/FAILURE\n"
    assert verdict(alone) == ("failed", "starting", "exited")
    e = "ERROR 05-23 09:14:03 [core.py:396] "
    dynamo = (
        f'{e}  File "/venv/lib/python3.10/site-packages/torch/_dynamo/symbolic_convert.py", line 1052, in run\n{e}    while self.step():\n'
    )
    assert verdict(dynamo)[:2] == ("failed", "jit_compile")


def test_links_a_renderer_added_and_a_bar_cut_after_its_percent() -> None:
    """A notebook or issue page renders parts of a pasted log as links ('0[/6](https://host/6)'): the text is
    the link's (blind86 b14, b15); a bar cut right after its percent is still a bar ('shards: 100%')."""
    bar = "Loading safetensors checkpoint shards:  17% Completed | 1[/6](https://c1.modal.host/6) [00:02<00:11,  2.36s[/it](https://c1.modal.host/it)]"
    assert one(bar)[0] == "Loading safetensors checkpoint shards:  17% Completed | 1/6 [00:02<00:11,  2.36s/it]"
    assert parse_bar("Loading safetensors checkpoint shards: 100%") == ("Loading safetensors checkpoint shards", 100, 100)
    assert parse_bar("took 100%") is None  # a percent in prose is no bar
    assert verdict("Loading safetensors checkpoint shards: 100%\n") == ("incomplete", "weight_load", None)
    served = (
        "INFO:     Application startup complete.\n"
        'INFO:     [127.0.0.1:39726](http://127.0.0.1:39726/) - "GET /health/ HTTP/1.1" 200 OK\n'
        "(VllmWorker rank=1 pid=4888) INFO 07-08 10:09:09 [pynccl.py:70] vLLM is using nccl==2.26.2\n"
    )
    assert verdict(served)[0] == "ready"


def test_the_sampler_warm_up_after_a_capture_the_memory_advice_reopened() -> None:
    """vLLM's memory advice ('Free memory on device ... on startup. Desired ...') re-enters graph_capture as the
    capture returns; the sampler's warm-up after 'Graph capturing finished' is still warmup (blind86 b01)."""
    w = "INFO 11-01 23:47:29 "
    log = (
        f"{w}[gpu_model_runner.py:3118] Graph capturing finished in 23 secs, took 2.28 GiB\n"
        f"{w}[gpu_worker.py:391] Free memory on device (22.52/23.51 GiB) on startup. Desired GPU memory utilization is (0.86, 20.32 GiB). Actual usage is 3.61 GiB for weight\n"
        "OutOfMemoryError                          Traceback (most recent call last)\n"
        "File ~/env/lib/python3.10/site-packages/vllm/v1/worker/gpu_model_runner.py:2874, in GPUModelRunner._dummy_sampler_run(self, hidden_states)\n"
    )
    assert verdict(log) == ("failed", "warmup", "oom")


def test_sglangs_own_messages_place_a_start_its_markers_do_not_know() -> None:
    """SGLang's lines name no module, so the structure map holds the messages its phases' code logs
    (scripts/structure_map.py): the ModelOpt loader's 'Model is already quantized, loading directly...' is
    the weight load (blind90 b01); a message that says a step will not run places nothing."""
    p = "[2025-10-20 08:01:02 TP0] "
    log = f"{p}ModelOptModelLoader: Loading base model...\n{p}Model is already quantized, loading directly...\n"
    assert verdict(log) == ("incomplete", "weight_load", None)
    off = f"{p}Disable prefill CUDA graph because cuda_graph_config resolved prefill.backend='disabled'\n"
    assert verdict(off) == ("incomplete", "starting", None)


def test_an_exception_the_engine_logged_itself_before_its_cut_traceback() -> None:
    """V0's MQ engine logs what it caught (logger.exception(e), read from its source by the structure map):
    its ERROR line is the exception's message, in either logger format (blind89 b03, blind87 b01), so a
    traceback cut after it is that exception, and the reason names it. Another module's ERROR line is not."""
    e = "ERROR 12-11 21:46:49 engine.py:366] "
    tb = (
        f"{e}Traceback (most recent call last):\n"
        f'{e}  File "/env/lib/python3.10/site-packages/vllm/engine/multiprocessing/engine.py", line 357, in run_mp_engine\n'
        f"{e}    engine = MQLLMEngine.from_engine_args(engine_args=engine_args,\n"
    )
    msg = "Failed to find a kernel that can implement the WNA16 linear layer. Reasons: "
    _, v = replay([(f"{e}{msg}\n{tb}").encode()])
    assert (v.outcome, v.phase, v.failure_kind) == ("failed", "starting", "exception")
    assert msg.strip() in v.reason
    new = "ERROR 05-26 00:17:47 [engine.py:448] "
    assert verdict(f"{new}'ColumnParallelLinear' object has no attribute 'input_scale'\n{tb.replace(e, new)}")[2] == "exception"
    other = "ERROR 12-11 21:46:49 [api_server.py:12] "
    assert verdict(f"{other}something went wrong\n{tb.replace(e, other)}")[2] == "other"


def test_a_jit_runtime_assertion_and_vllm_0_2_s_init_model() -> None:
    """DeepGEMM's JIT runtime asserting its compiler's exit code, with no marker before it, is jit_compile
    (blind87 b07); vLLM 0.2's worker init_model is what init_device became: dist_init (b10)."""
    p = "(APIServer pid=1) (EngineCore_DP0 pid=439) "
    jit = f"{p}RuntimeError: Assertion error (csrc/apis/../jit_kernels/impls/../../jit/kernel_runtime.hpp:45): exit_code == 0\n"
    assert verdict(jit) == ("failed", "jit_compile", "exception")
    old = (
        "Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.10/dist-packages/vllm/engine/llm_engine.py", line 700, in _run_workers\n'
        '  File "/usr/local/lib/python3.10/dist-packages/vllm/worker/worker.py", line 60, in init_model\n'
    )
    assert verdict(old)[:2] == ("failed", "dist_init")


def test_the_api_servers_set_up_in_newer_wordings() -> None:
    """vLLM's API server lists its tasks as a set ('Supported tasks: {'generate'}') and warms the chat
    template up before it serves: warmup (blind92 b08)."""
    p = "(APIServer pid=327235) INFO 02-27 08:54:31 "
    log = f"{p}[api_server.py:477] Supported tasks: {{'generate'}}\n{p}[serving.py:188] Warming up chat template processing...\n"
    assert verdict(log) == ("incomplete", "warmup", None)


def test_a_kv_capacity_message_a_host_program_printed_explains_a_cut_traceback() -> None:
    """A host program printing the engine's KV-capacity error on its own ('Error loading model: The model's max
    seq len ...'), then a traceback cut before its exception line: the message is the cause, oom (blind96 b01)."""
    log = (
        "INFO 03-10 12:00:00 llm_engine.py:1] # GPU blocks: 0, # CPU blocks: 2048\n"
        "Error loading model: The model's max seq len (8192) is larger than the maximum number of tokens that can be stored in KV cache (0).\n"
        "Traceback (most recent call last):\n"
        '  File "/app/server.py", line 40, in load\n'
    )
    assert verdict(log)[2] == "oom"


def test_the_memory_profile_s_dummy_run_and_a_compiled_graph_it_calls() -> None:
    """vLLM's profile_run (the dummy forward that sizes the KV cache) is kv_alloc (blind95 b13); a compiled graph
    it calls through vLLM's piecewise backend (its __call__) is run, not built: still kv_alloc (blind33 g015); a
    compile under it shows its compiler's frames and is jit_compile."""
    head = (
        "Traceback (most recent call last):\n"
        '  File "/venv/lib/python3.12/site-packages/vllm/v1/worker/gpu_model_runner.py", line 2001, in profile_run\n'
        '  File "/venv/lib/python3.12/site-packages/vllm/model_executor/models/qwen2_5_vl.py", line 1037, in get_multimodal_embeddings\n'
    )
    assert verdict(head)[:2] == ("failed", "kv_alloc")
    run = (
        head
        + '  File "/venv/lib/python3.12/site-packages/vllm/compilation/piecewise_backend.py", line 380, in __call__\n'
        + "RuntimeError: cat failed\n"
    )
    assert verdict(run) == ("failed", "kv_alloc", "exception")
    build = (
        head
        + '  File "/venv/lib/python3.12/site-packages/vllm/compilation/compiler_interface.py", line 200, in compile\n'
        + "RuntimeError: inductor failed\n"
    )
    assert verdict(build)[:2] == ("failed", "jit_compile")


def test_sglang_0_1_s_load_lines() -> None:
    """SGLang 0.1's model_rpc says 'Rank 0: load weight begin.' (blind95 b19)."""
    assert verdict("Rank 0: load weight begin.\n")[:2] == ("incomplete", "weight_load")


def test_blind98_to_102_s_shapes_wrapped_messages_formatted_tracebacks_and_triton() -> None:
    """V0's worker wrapper that carries the exception's message is an exception even cut (blind101 b05); Ray Serve
    re-raising a formatted traceback ('RuntimeError: Traceback (most recent call last):') has the real error last
    (blind100 b06); Triton's make_cubin is a kernel build (blind101 b10); vLLM 0.5's worker prefix names the
    engine, so uvicorn's start-up line is its ready line (blind99 b01)."""
    w = "(VllmWorkerProcess pid=143) ERROR 09-20 08:05:48 multiproc_worker_utils.py:226] "
    v0 = (
        f"{w}Exception in worker VllmWorkerProcess while processing method load_model: Torch SPDA does not support logits soft cap., Traceback (most recent call last):\n"
        f'{w}  File "/usr/local/lib/python3.10/dist-packages/vllm/worker/cpu_worker.py", line 217, in load_model\n'
    )
    assert verdict(v0) == ("failed", "weight_load", "exception")
    ray = (
        "RuntimeError: Traceback (most recent call last):\n"
        '  File "/env/lib/python3.9/site-packages/vllm/worker/worker.py", line 160, in init_device\n'
        "    torch.cuda.set_device(self.device)\n"
        "RuntimeError: No CUDA GPUs are available\n"
    )
    assert verdict(ray) == ("failed", "dist_init", "exception")
    e = "(EngineCore_DP0 pid=60) ERROR 01-12 01:09:14 [core.py:708] "
    triton = (
        f"{e}Traceback (most recent call last):\n"
        f'{e}  File "/usr/local/lib/python3.12/dist-packages/triton/backends/nvidia/compiler.py", line 424, in make_cubin\n'
        f"{e}subprocess.CalledProcessError: Command '['ptxas', '--gpu-name=sm_121a']' returned non-zero exit status 255.\n"
    )
    assert verdict(triton) == ("failed", "jit_compile", "exception")
    up = (
        "(VllmWorkerProcess pid=1863063) INFO 06-18 22:24:25 model_runner.py:160] Loading model weights took 4.4372 GB\n"
        "INFO:     Application startup complete.\n"
    )
    assert verdict(up)[0] == "ready"


def test_sglangs_diffusion_server_is_read_from_its_own_code() -> None:
    """SGLang's diffusion runtime (multimodal_gen): its parallel groups (maybe_init_distributed_environment...), its
    pipeline loading components (a message whose literal start is short, matched as its template: 'Loaded %s: %s
    (%s version). model size: ...'; the 'Loading required modules' bar), its warm-up requests (blind102)."""
    p = "[01-19 11:47:21] "
    assert verdict(f"{p}Initializing distributed environment with world_size=1, device=cuda:0\n")[1] == "dist_init"
    loaded = f"{p}Loaded text_encoder: FSDPUMT5EncoderModel (sgl-diffusion version). model size: 21.16 GB, consumed GPU mem: 1.00 GB, avail GPU mem: 78.51 GB\n"
    assert verdict(loaded)[1] == "weight_load"
    assert verdict("Loading required modules:  20%|█████▌      | 1/5 [00:34<02:17, 34.42s/it]\n")[1] == "weight_load"
    assert verdict(f"{p}Warmup req processed in 1.55 seconds\n")[1] == "warmup"
    assert verdict(f"{p}Loaded nothing of note here\n")[1] == "starting"  # a first word alone is no template


def test_a_worker_failure_passed_on_with_an_empty_message_is_a_consequence() -> None:
    """vLLM's executor passing on a worker's failure with an empty message ("Worker failed with error '', please
    check the stack trace above for the root cause") names no cause: other in a cut excerpt (blind103 b06); with
    a message it is that exception (b05)."""
    e = "(EngineCore_DP0 pid=1) ERROR 11-03 10:00:00 [core.py:708] "
    empty = f"{e}RuntimeError: Worker failed with error '', please check the stack trace above for the root cause\n"
    frame = f'{e}  File "/x/vllm/v1/executor/multiproc_executor.py", line 360, in collective_rpc\n'  # an excerpt cut above it
    assert verdict(frame + empty)[2] == "other"
    said = empty.replace("''", "'list index out of range'")
    assert verdict(frame + said)[2] == "exception"


def test_a_retried_network_error_and_a_bold_exception_line() -> None:
    """A chained traceback whose exception is named otherwise than '...Error' (httpx.ReadTimeout) ends there: the
    Hub lookup SGLang retried is no failure once the start goes on (blind104 b12, b18); a reporter's bold line
    ('**KeyError: ...**') is the traceback's exception line (blind106 b07)."""
    tb = (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.10/ssl.py", line 1161, in read\n'
        "TimeoutError: The read operation timed out\n"
        "\nThe above exception was the direct cause of the following exception:\n\n"
        "Traceback (most recent call last):\n"
        '  File "/env/lib/python3.10/site-packages/httpx/_transports/default.py", line 69, in map_httpcore_exceptions\n'
        "httpx.ReadTimeout: The read operation timed out\n"
        "retry() failed once (0th try, maximum 2 retries). Will delay 0.78s and retry. Error: The read operation timed out\n"
        "Loading safetensors checkpoint shards:  25% Completed | 1/4 [00:00<00:00,  7.20it/s]\n"
    )
    assert verdict(tb) == ("incomplete", "weight_load", None)
    bold = (
        "[2025-05-20 10:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/sgl/python/sglang/srt/model_loader/loader.py", line 400, in load_model\n'
        "**KeyError: 'model.layers.3.mlp.shared_experts.down_proj.weight_scale'**\n"
    )
    assert verdict(bold) == ("failed", "weight_load", "exception")


def test_a_log_that_ends_on_an_error_record_ended_with_that_error() -> None:
    """A start whose log's last record was logged at ERROR level, nothing after it, ended there: an
    error record cut before its message (blind79 m11: 'ERROR 04-28'), a worker's record cut in its tag
    (blind42 d031), a scheduler's C++ frames logged at ERROR (blind40 p032). Its cause is not in the
    text: kind other. An error the start went on from is no failure, and neither is a warning."""
    load = (
        "INFO 04-28 14:47:02 [loader.py:449] Loading weights took 5.62 seconds\n"
        "INFO 04-28 14:47:02 [gpu_model_runner.py:1292] Model loading took 16.7341 GiB and 5.959358 seconds\n"
    )
    assert verdict(load + "ERROR 04-28\n") == ("failed", "weight_load", "other")
    assert replay([(load + "ERROR 04-28\n").encode()])[1].reason == "log ended on an error record: ERROR 04-28"
    worker = "(Worker_TP7_EP7 pid=7475) ERROR 10-23 08:05:13 [multiproc_\n"
    assert verdict(load + worker)[:2] == ("failed", "weight_load")
    frames = "2025-08-28 21:19:34 ERROR 125765 [ DP10 TP10 EP10 scheduler.py:2655] frame #41: _PyFunction_Vectorcall + 0x6f\n"
    assert verdict(frames) == ("failed", "starting", "other")
    went_on = load + "ERROR 04-28 14:47:03 [utils.py:10] Failed to read optional file\nINFO 04-28 14:47:04 [core.py:1] Capturing\n"
    assert verdict(went_on)[0] == "incomplete"
    assert verdict(load + "WARNING 04-28 14:47:03 [utils.py:10] ERROR budget exceeded\n")[0] == "incomplete"
    # the last record cut inside its process tag: the one before it decides (blind107 b22)
    err = "(VllmWorker rank=1 pid=308436) ERROR 08-17 13:03:25 [multiproc_executor.py:546]         Transport init error.\n"
    assert verdict(load + err + "(VllmWorker rank=1\n")[0] == "failed"
    # a front end's request log at ERROR level (a liveness probe answered 503 while the engine starts, blind107 b12)
    probe = "2025-10-15T08:42:53.147358Z ERROR http-request: tower_http::trace::on_failure: response failed classificati\n"
    assert verdict(load + probe)[0] == "incomplete"
    assert verdict(load + probe.replace("classificati", "classification=Status code: 503 Service Unavailable uri=/live"))[0] == "incomplete"


def test_rays_reprint_of_deduplicated_lines_moves_no_rank_back() -> None:
    """Ray reprints lines it deduplicated ('[repeated 7x across cluster]') after later ones: the reprint of
    the workers' NCCL set-up after their weight load (the suffix cut by the excerpt's end too) does not move
    the start back to dist_init (blind107 b01)."""
    r = "(EngineCore_0 pid=532339) (RayWorkerWrapper pid=533576) INFO 08-07 04:48:"
    log = (
        r
        + "52 [default_loader.py:262] Loading weights took 15.79 seconds\n"
        + r
        + "35 [pynccl.py:70] vLLM is using nccl==2.26.2 [repeate\n"
    )
    assert verdict(log)[1] == "weight_load"
    assert verdict(log.replace("[repeate", "[repeated 7x across cluster]"))[1] == "weight_load"


def test_sglangs_first_prefill_batch_is_its_warm_up() -> None:
    """SGLang's scheduler logs a prefill batch only for a request it runs, once every graph is captured:
    before the ready line, its own warm-up request (blind57 v019; every labelled log with one agrees). A
    decode batch with running requests is client traffic (ready)."""
    pre = "[2026-06-02 10:00:00 DP0 TP0 EP0] Prefill batch, #new-seq: 1, #new-token: 128, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0\n"
    assert verdict("[2026-06-02 09:59:00 TP0] Init torch distributed begin.\n" + pre) == ("incomplete", "warmup", None)
    assert verdict(pre.replace("Prefill batch, #new-seq: 1", "Decode batch, #running-req: 1"))[0] == "ready"


def test_an_exception_line_before_a_traceback_that_ends_on_a_consequence_is_its_cause() -> None:
    """The engine process's ValueError printed bare (its own traceback cut away), then the API server's
    traceback ending on 'RuntimeError: Engine process failed to start.' (a consequence): the ValueError is
    the cause, kind exception, not a process killed without a word (blind113 b05)."""
    log = (
        "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla V100-SXM2-32GB GPU has compute capability 7.0.\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/openai/api_server.py", line 136, in build_async_engine_client\n'
        "    async with build_async_engine_client_from_engine_args(\n"
        "RuntimeError: Engine process failed to start. See stack trace for the root cause.\n"
    )
    _, v = replay([log.encode()])
    assert (v.outcome, v.phase, v.failure_kind) == ("failed", "starting", "exception")
    assert v.reason.startswith("ValueError: Bfloat16 is only supported")


def test_nvshmems_transport_status_lines_and_vllms_new_model_tree() -> None:
    """NVSHMEM's own status lines ('src/modules/transport/ibrc/ibrc.cpp:420: non-zero status: 22 ibv_modify_qp
    failed', NVSHMEMI_NZ_ERROR's format) are its set-up failing: a collective library's, dist_init (blind111
    b06). A model's constructor in vLLM's 2026-08 tree (vllm/models/deepseek_v4/nvidia/model.py __init__) runs
    inside the loader: weight_load (blind111 b03)."""
    nv = (
        "/sgl-workspace/nvshmem/src/modules/transport/ibrc/ibrc.cpp:420: non-zero status: 22 ibv_modify_qp failed\n"
        "/sgl-workspace/nvshmem/src/modules/transport/ibrc/ibrc.cpp:1511: non-zero status: 7 ep_connect failed\n"
    )
    assert verdict(nv) == ("failed", "dist_init", "nccl")
    tb = (
        "Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/models/deepseek_v4/nvidia/model.py", line 611, in __init__\n'
        "    self._init_mega_moe_experts()\n"
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/models/deepseek_v4/nvidia/model.py", line 631, in _init_mega_moe_experts\n'
        "    assert self.ep_size > 1\n"
        "AssertionError\n"
    )
    assert verdict(tb) == ("failed", "weight_load", "exception")


def test_a_traceback_flattened_onto_one_line_and_the_kv_capacity_message_cut_after_its_first_words() -> None:
    """A digest page that put a traceback on one line: its exception after the last frame is the cause
    (blind110 b03); vLLM's KV-capacity ValueError cut after 'To serve at least one' is still that check:
    oom, kv_alloc (blind110 b08)."""
    flat = (
        'File ".../vllm/v1/attention/ops/vit_attn_wrappers.py", line 51, in flash_attn_maxseqlen_wrapper output = f(...) '
        'File ".../vllm/vllm_flash_attn/flash_attn_interface.py", line 300, in flash_attn_varlen_func out = op(...) '
        "torch.AcceleratorError: CUDA error: the provided PTX was compiled with an unsupported toolchain.\n"
    )
    _, v = replay([flat.encode()])
    assert (v.outcome, v.failure_kind) == ("failed", "exception")
    assert v.reason.startswith("torch.AcceleratorError: CUDA error")
    assert verdict("(EngineCore pid=401) ERROR [core.py:1140] ValueError: To serve at least one\n") == ("failed", "kv_alloc", "oom")


def test_an_import_chain_and_a_frames_source_line_name_no_step() -> None:
    """SGLang dying at import (a chain of '<module>' frames through mem_cache/memory_pool.py, with the
    source line 'from sglang.srt.mem_cache.memory_pool import SWAKVPool'): a module's top level is its
    import and a source line is code, so neither places the failure: starting (blind108 b03)."""
    sp = '  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/'
    log = (
        "Traceback (most recent call last):\n" + sp + 'mem_cache/allocator.py", line 30, in <module>\n'
        "    from sglang.srt.mem_cache.memory_pool import SWAKVPool\n" + sp + 'mem_cache/memory_pool.py", line 16, in <module>\n'
        "    from sglang.srt.torch_memory_saver_adapter import TorchMemorySaverAdapter\n"
        "AttributeError: module 'torch_memory_saver' has no attribute 'torch_memory_saver'.\n"
    )
    assert verdict(log) == ("failed", "starting", "exception")
    assert verdict("[2025-08-01 10:00:00 TP0] SWAKVPool mem usage: 4.1 GB\n")[1] == "kv_alloc"  # a message still does


def test_an_exception_type_alone_on_its_line_is_read_with_its_message_on_the_next() -> None:
    """A note that wrapped its error after the type ('ValueError:' on one line, 'To serve at least one
    request ...' on the next; 'openai_harmony.HarmonyError:' then its message): one exception line, so the
    start failed, and its words give the kind (blind112 b08, b10)."""
    kv = "ValueError:\nTo serve at least one request with the model's max seq len (32768), (1.5 GiB KV cache is needed, which is larger than the available KV cache memory (0.9 GiB).\n"
    assert verdict(kv) == ("failed", "kv_alloc", "oom")
    harmony = "openai_harmony.HarmonyError:\nerror downloading or loading vocab file\n"
    _, v = replay([harmony.encode()])
    assert (v.outcome, v.failure_kind) == ("failed", "exception")
    assert v.reason == "openai_harmony.HarmonyError: error downloading or loading vocab file"


def test_gaudis_warm_up_summary_a_gloo_path_and_a_traceback_header_cut_at_the_end() -> None:
    """vLLM on Gaudi: its warm-up's summary lines ('Graph/Prompt captured:24 (100.0%)', 'Warmup finished in 32
    secs') and its defragmenter's warm-up are the warm-up (blind115 b13, b15); an exception whose message is
    cut inside Gloo's source path is a collective library's (b07); a log that ends inside a traceback's
    header ('[rank0]: Traceback (most recent call las') failed there, its cause cut away (b08)."""
    h = "INFO 09-24 17:32:13 habana_model_runner.py:1620] "
    assert verdict(h + "Warmup finished in 32 secs, allocated 92.77 MiB of device memory\n")[1] == "warmup"
    assert verdict("INFO 09-22 16:26:27 [hpu_model_runner.py:3452] Defragmenter warmup completed successfully\n")[1] == "warmup"
    gloo = "Traceback (most recent call last):\nRuntimeError: [/pytorch/third_party/gloo/glo\n"
    assert verdict(gloo)[2] == "nccl"
    load = "INFO 09-03 07:45:49 habana_model_runner.py:486] Loading model weights took in total 14.21 GiB of device memory\n"
    assert verdict(load + "[rank0]: Traceback (most recent call las\n") == ("failed", "weight_load", "other")


def test_vllm_2026_wordings_a_wrapper_cut_at_its_traceback_and_a_ready_before_the_engine_is_known() -> None:
    """vLLM v0.21+: the runner's 'Estimated CUDA graph memory' and the worker's note on CUDA-graph memory
    profiling are the KV sizing (blind119 b05); 'WorkerProc hit an exception.' only announces a traceback,
    so one cut at its first frame has an unknown cause (b08); uvicorn's 'Application startup complete.'
    before any line that names the engine, then vLLM's shutdown on SIGTERM: it was ready (b01), where the
    same start never ready stays failed; vLLM-Omni's stage that exited is a consequence (b07); torch's
    symmetric-memory rendezvous is the communicators' set-up (blind121 b09)."""
    w = "(Worker_TP0 pid=4615) INFO 08-14 08:08:04 [gpu_model_runner.py:6737] "
    assert verdict(w + "Estimated CUDA graph memory: 2.22 GiB total\n") == ("incomplete", "kv_alloc", None)
    note = "(Worker_TP1 pid=4616) INFO 08-14 08:08:05 [gpu_worker.py:575] CUDA graph memory profiling is enabled (default since v0.21.0).\n"
    assert verdict(note)[1] == "kv_alloc"
    e = "(Worker_TP0 pid=2390) ERROR 06-10 16:39:42 [multiproc_executor.py:962] "
    cut = e + "WorkerProc hit an exception.\n" + e + "Traceback (most recent call last):\n" + e + '  File "/usr/local/lib\n'
    assert verdict(cut)[2] == "other"
    whole = cut + e + "ValueError: bad shape\n"
    assert verdict(whole)[2] == "exception"
    shutdown = "[shutdown] EngineCore: trigger received signal=SIGTERM\n... EngineDeadError: EngineCore encountered an issue.\n"
    assert verdict("INFO:     Application startup complete.\n" + shutdown) == ("ready", "ready", None)
    assert verdict(shutdown)[0] == "failed"
    omni = "RuntimeError: StageEngineCoreProc died during READY (exit code 1)\nRuntimeError: Orchestrator initialization failed: StageEngineCoreProc died during READY (exit code 1)\n"
    assert verdict(omni) == ("failed", "starting", "killed")
    symm = (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.12/site-packages/torch/distributed/_symmetric_memory/__init__.py", line 1711, in rendezvous\n'
        "    return _SymmetricMemory.rendezvous(tensor, group_name)\n"
        "RuntimeError: CUDA driver error: system not yet initialized\n"
    )
    assert verdict(symm) == ("failed", "dist_init", "exception")


def test_a_bare_exception_name_before_another_ranks_cut_traceback_is_the_cause() -> None:
    """One rank's traceback ends 'AssertionError' (an assert with no message; its frames cut above the
    excerpt), then another rank's 'WorkerProc failed to start.' and a traceback cut before its exception
    line: the assertion is the root error, exception (blind122 b03); the rank's report alone is not known."""
    e = "(Worker_TP{} pid=45916{}) ERROR 04-29 07:06:44 [multiproc_executor.py:870] "
    rest = (
        e.format(2, 3)
        + "WorkerProc failed to start.\n"
        + e.format(2, 3)
        + "Traceback (most recent call last):\n"
        + e.format(2, 3)
        + '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/executor/multiproc_executor.py", line 837, in worker_main\n'
        + e.format(2, 3)
        + "    worker = WorkerProc(*args, **kwargs)\n"
    )
    assert verdict(e.format(1, 2) + "AssertionError   \n" + rest) == ("failed", "starting", "exception")
    assert verdict(rest)[2] != "exception"
    ray = "(EngineCore pid=15772) ERROR 05-27 23:12:23 [v1/engine/core.py:1165] "
    cut_type = ray + "    raise value.as_instanceof_cause()\n" + ray + "ray.exceptions.RayTaskError(Ty\n"
    tb = (
        ray
        + "Traceback (most recent call last):\n"
        + ray
        + '  File "/usr/lib/python3.12/site-packages/ray/_private/worker.py", line 1023, in get_objects\n'
    )
    assert verdict(tb + cut_type)[2] == "exception"  # Ray's exception line, cut inside the wrapped type (blind119 b04)
    assert verdict(tb)[2] == "other"


def test_rocm_starts_a_capture_at_debug_the_engines_timings_aiters_chip_lookup_and_gloo_groups() -> None:
    """vLLM's CUDAGraphWrapper at DEBUG ('Capturing a cudagraph on (FULL,...)') is a capture, but in the KV
    sizing (v0.21+ captures some graphs to measure them) it stays there (blind125 b01); SGLang's 'Engine
    startup timings' with its graphs' figures is past the capture (b06); aiter's chip look-up under
    jit/utils is no kernel build (b12); torch's Gloo group connected is the distributed set-up, but not in
    Ray's reprint of other processes' lines (b09, public w022)."""
    d = "(Worker_TP0 pid=3098) DEBUG 02-24 02:39:34 [compilation/cuda_graph.py:239] Capturing a cudagraph on (FULL,BatchDescriptor(num_tokens=32))\n"
    fault = "Memory access fault by GPU node-5 (Agent handle: 0x460e3a50) on address 0x7ec4dfe0e000. Reason: Write access to a read-only page.\n"
    assert verdict(d + fault)[:2] == ("failed", "graph_capture")
    prof = "(Worker_TP0 pid=3098) INFO 02-24 02:39:30 [gpu_model_runner.py:6568] Profiling CUDA graph memory: PIECEWISE=2 (largest=8), FULL=2 (largest=8)\n"
    assert verdict(prof + d)[1] == "kv_alloc"
    timings = "[2026-08-06 02:49:32] Engine startup timings (s): load_weight=16.00, kv_cache_allocation=0.48, cuda_graph={prefill=0.00, decode=3.96}\n"
    exc = "[2026-08-06 02:49:32] Scheduler hit an exception: Traceback (most recent call last):\nAttributeError: 'runtime_knobs' object has no attribute 'x'\n"
    assert verdict(timings + exc)[:2] == ("failed", "graph_capture")
    no_graphs = "[2026-08-06 02:49:32] Engine startup timings (s): load_weight=16.00, kv_cache_allocation=0.48\n"
    assert verdict(no_graphs + exc)[:2] == ("failed", "kv_alloc")
    none = "[2026-11-29 17:51:00] Engine startup timings (s): load_weight=0.04, kv_cache_allocation=20.87, cuda_graph={prefill=0.00, decode=0.00}\n"
    assert verdict(none + exc)[:2] == ("failed", "kv_alloc")  # no graph captured (a CPU start)
    p = '  File "/usr/local/lib/python3.12/dist-packages/'
    chip = (
        "Traceback (most recent call last):\n" + p + 'sglang/srt/server_args.py", line 4022, in prepare_server_args\n'
        "    return ServerArgs.from_cli_args(raw_args)\n" + p + 'aiter/jit/utils/chip_info.py", line 65, in get_gfx_custom_op_core\n'
        "    raise KeyError(\nKeyError: 'gfx1101'\n"
    )
    assert verdict(chip) == ("failed", "starting", "exception")
    build = chip.replace("utils/chip_info.py", "core.py").replace("get_gfx_custom_op_core", "build_module")
    assert verdict(build)[1] == "jit_compile"
    gloo = "[Gloo] Rank 0 is connected to 1 peer ranks. Expected number of connected peer ranks is : 1\n"
    assert verdict(gloo) == ("incomplete", "dist_init", None)
    ray = "(WorkerDict pid=23313) [Gloo] Rank 0 is connected to 0 peer ranks. Expected number of connected peer ranks is : 0 [repeated 23x across cluster]\n"
    assert verdict(ray) == ("incomplete", "starting", None)


def test_the_encoder_caches_budget_is_the_memory_profile() -> None:
    """vLLM's profile_run logs the encoder cache's budget before it profiles the encoder ('Encoder cache will
    be initialized with a budget of 16384 tokens, and profiled with 1 image items of the maximum feature
    size.'): a failure after it is in the KV sizing (blind129 b09, b10), the load's lines before it done."""
    e = "(EngineCore_DP0 pid=190) "
    log = (
        e
        + "INFO 01-14 09:41:46 [default_loader.py:268] Loading weights took 0.35 seconds\n"
        + e
        + "INFO 01-14 09:41:47 [gpu_model_runner.py:3000] Encoder cache will be initialized with a budget of 16384 tokens, and profiled with 668 image items of the maximum feature size.\n"
        + e
        + "ERROR 01-14 09:41:48 [core.py:718] Traceback (most recent call last):\n"
    )
    assert verdict(log) == ("failed", "kv_alloc", "other")


def test_nccls_error_path_then_its_communicator_built_and_a_schedulers_exit_on_a_second_node() -> None:
    """NCCL's error path while it probes a network plugin ('NCCL INFO plugin/net.cc:118 -> 2'), then the
    communicator built ('... - Init COMPLETE'): the start went on (blind127 b02); a second node's launcher
    logging its scheduler's exit code 255 after NVSHMEM's failed set-up: the set-up's failure, not the dummy
    health server's error after it (b05); an exit code 0 is no failure."""
    n = "host:203214:203214 [0] NCCL INFO "
    probe = n + "NET/OFI Invalid type of PCI bus returned 0\n" + n + "plugin/net.cc:118 -> 2\n"
    built = n + "ncclCommInitRank comm 0x55b0391bafa0 rank 8 nranks 16 cudaDev 0 nvmlDev 0 busId 18000 commId 0xf277 - Init COMPLETE\n"
    assert verdict("[2026-03-01 10:00:00 TP0] Init torch distributed begin.\n" + probe + built) == ("incomplete", "dist_init", None)
    assert verdict("[2026-03-01 10:00:00 TP0] Init torch distributed begin.\n" + probe)[0] == "failed"
    nvshmem = "/build/nvshmem/src/host/init/init.cu:1045: non-zero status: 7 nvshmem setup connections failed \n"
    died = "[2026-02-25 15:04:37] Scheduler or DataParallelController 848532 terminated with 255\n"
    lifespan = (
        "[2026-02-25 15:04:39] INFO:     Started server process [848143]\n"
        "[2026-02-25 15:04:39] ERROR:    Traceback (most recent call last):\n"
        "AttributeError: 'NoneType' object has no attribute 'server_args'\n"
    )
    assert verdict(nvshmem + died + lifespan) == ("failed", "dist_init", "nccl")
    assert verdict(died.replace("255", "0"))[0] == "incomplete"


def test_vllm_ascends_acl_graphs_sglang_0_1s_nccl_init_and_torchs_cpp_error_record() -> None:
    """vllm-ascend up to 2025-12 captures 'ACL graphs' ('Starting to capture ACL graphs for cases: [2], ...'
    and its bar 'Capturing ACL graphs (mixed prefill-decode, PIECEWISE)': blind132 b03); SGLang 0.1's '[gpu_id=0]
    Init nccl begin.' is the distributed set-up (blind131 b14); torch's C++ error record ('[E916 13:12:13.96
    compiler_depend.ts:429] Create context failed!', its C++ frames after it) at the log's end failed there
    (blind132 b01), and one the start went on after did not."""
    w = "(Worker_DP0_TP0_EP0 pid=286509) INFO 10-29 16:38:44 [model_runner_v1.py:3502] "
    assert verdict(w + "Starting to capture ACL graphs for cases: [2], mode: PIECEWISE, uniform_decode: False\n")[1] == "graph_capture"
    bar = "Capturing ACL graphs (mixed prefill-decode, PIECEWISE):  45%|████      | 10/22 [00:05<00:06,  1.90it/s]\n"
    assert verdict(bar)[1] == "graph_capture"
    assert verdict("[gpu_id=0] Init nccl begin.\n") == ("incomplete", "dist_init", None)
    c10 = (
        "[rank1]:[E916 13:12:13.967459575 compiler_depend.ts:429] Create context failed!\n"
        "Exception raised from operator() at build/op_plugin/compiler_depend.ts:42 (most recent call first):\n"
        "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0xd4 (0xffffa74d3ea4 in libc10.so)\n"
    )
    cap = "(Worker_PP0 pid=3113604) INFO 09-16 13:12:13 [model_runner_v1.py:2498] Graph capturing finished in 14 secs, took 0.36 GiB\n"
    assert verdict(cap + c10) == ("failed", "graph_capture", "exception")
    on = "(Worker_PP0 pid=3113604) INFO 09-16 13:12:14 [api_server.py:1] Starting vLLM API server 0 on http://0.0.0.0:8000\n"
    assert verdict(cap + c10 + on)[0] == "incomplete"


def test_a_traceback_cut_inside_its_next_frames_path_is_placed_by_that_module() -> None:
    """SGLang's scheduler building its draft worker ('self.draft_worker = EAGLEWorker('), the excerpt cut inside
    the next frame's path ('File ".../sglang/srt/speculative/eagle_worke'): the draft's set-up (blind135 b11);
    cut inside a path that names no step, the failure stays where the log was."""
    p = '  File "/opt/miniconda/envs/sglang/lib/python3.12/site-packages/sglang/srt/'
    head = (
        "[2025-08-11 12:58:54 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        + p
        + 'managers/scheduler.py", line 2534, in run_scheduler_process\n    scheduler = Scheduler(\n'
        + p
        + 'managers/scheduler.py", line 327, in __init__\n    self.draft_worker = EAGLEWorker(\n'
    )
    assert verdict(head + p + "speculative/eagle_worke\n") == ("failed", "draft_init", "other")
    assert verdict(head + p + "utils/comm\n")[1] == "starting"


def test_sglangs_deprecated_model_info_endpoint_answering_is_its_warm_up() -> None:
    """At --log-level warning the first sign of SGLang's warm-up can be its HTTP server answering the warm-up's
    '/get_model_info' with a deprecation warning (2025-11: 'Endpoint '/get_model_info' is deprecated and will be
    removed ...'): warmup, after the capture (blind133 b06)."""
    bar = "Capturing batches (bs=4 avail_mem=44.82 GB):  33%|███▎      | 1/3 [00:01<00:02,  1.10s/it]\n"
    dep = "[2025-11-29 20:25:37] Endpoint '/get_model_info' is deprecated and will be removed in a future version. Please use '/model_info' instead.\n"
    assert verdict(bar + dep) == ("incomplete", "warmup", None)


def test_another_compose_services_answered_request_is_not_the_engine_serving() -> None:
    """docker compose logs of two services: the gateway's uvicorn access line ('gateway-1  | INFO: ... "GET
    /api/health HTTP/1.1" 200 OK') while vLLM's service is still starting is not vLLM serving (blind134 b03);
    the engine's own service answering is."""
    v = "voxtral-1  | (APIServer pid=1) INFO 03-08 03:06:19 [api_server.py:1] "
    gw = 'gateway-1  | INFO:     172.18.0.1:60518 - "GET /api/health HTTP/1.1" 200 OK\n'
    assert verdict(v + "vLLM API server version 0.17.0\n" + gw) == ("incomplete", "starting", None)
    own = 'voxtral-1  | (APIServer pid=1) INFO:     172.18.0.1:60518 - "GET /health HTTP/1.1" 200 OK\n'
    assert verdict(v + "vLLM API server version 0.17.0\n" + own)[0] == "ready"


def test_a_log_ending_on_an_error_record_after_an_exception_the_engine_caught_ends_with_that_exception() -> None:
    """V0's engine logs the exception it caught (engine.py:366, an exception site: 'Consistency check failed: file
    should be of size ...'), then the excerpt ends on a record cut in its header: the start failed with that
    exception (blind138 b02); with no such line before it, the cut error record's cause stays unnamed."""
    load = "(VllmWorkerProcess pid=358) INFO 01-23 21:46:38 weight_utils.py:243] Using model weights format ['*.safetensors']\n"
    caught = "ERROR 01-23 21:59:31 engine.py:366] Consistency check failed: file should be of size 4966157056 but has size 4966842368.\n"
    _, v = replay([(load + caught + "ERROR 01-23 21:59:\n").encode()])
    assert (v.outcome, v.phase, v.failure_kind) == ("failed", "weight_load", "exception")
    assert v.reason.startswith("Consistency check failed")
    assert verdict(load + "ERROR 01-23 21:59:\n")[2] == "other"


def test_a_bars_unnamed_first_frame_is_the_next_bars_not_the_current_phases() -> None:
    """tqdm draws SGLang's capture bar once before the loop names it ('  0%| | 0/35 [...]' then
    'Capturing batches (bs=256 ...)', blind140 b07): that frame is the capture's, so the load keeps
    its own count (it showed 0/35); an unnamed bar with nothing after it is the current phase's."""
    load = "Load weight begin. avail mem=70.00 GB\nLoading safetensors checkpoint shards: 100% Completed | 1/1 [00:00<00:00,  7.01it/s]\n"
    capture = (
        "  0%|          | 0/35 [00:00<?, ?it/s]\rCapturing batches (bs=256 avail_mem=27.40 GB):   3%|▎   | 1/35 [00:17<10:03, 17.74s/it]\n"
    )
    j, _ = replay([(load + capture).encode()])
    spans = {s.phase: (s.done, s.total) for s in j.state.timeline()}
    assert spans["weight_load"] == (1, 1) and spans["graph_capture"] == (1, 35)
    j, _ = replay([(load + "  0%|          | 0/35 [00:00<?, ?it/s]\n").encode()])
    assert {s.phase: (s.done, s.total) for s in j.state.timeline()}["weight_load"] == (0, 35)
    j, _ = replay([(load + "  0%|          | 0/35 [00:00<?, ?it/s]\nSome other line\n").encode()])
    assert {s.phase: (s.done, s.total) for s in j.state.timeline()}["weight_load"] == (0, 35)


@pytest.mark.parametrize(
    "outer",
    ["0: ", "Mar 08 03:06:19 gpu1 docker[812]: ", "2026-03-08T03:06:19.123456789Z ", "[pod/vllm-0/app] ", "svc  | "],
)
def test_the_compose_service_is_read_under_any_wrapper_outside_it(outer: str) -> None:
    """The engine's compose service is told from another's under Slurm's task label, journald's or
    kubectl's time, kubectl's pod prefix or a second column (each hid it: the gateway's health check read
    as vLLM ready under five of the wrappers benchmark's eleven)."""
    v = outer + "voxtral-1  | (APIServer pid=1) INFO 03-08 03:06:19 [api_server.py:1] vLLM API server version 0.17.0\n"
    gw = outer + 'gateway-1  | INFO:     172.18.0.1:60518 - "GET /api/health HTTP/1.1" 200 OK\n'
    assert verdict(v + gw) == ("incomplete", "starting", None)
    assert service_of(gw) == "gateway-1"


def test_blind141_to_144_s_triton_stub_platform_timeout_model_new_v0_graph_note_and_a_clients_log() -> None:
    """Triton's Python stub failing to initialise the vLLM backend fails the start, its kind from the
    exception's words (blind141 b04, b08); Modal stopping a runner past its start-up limit is a kill (b01);
    a model class's ``__new__`` runs in the load (blind142 b04); V0's '1~3 GiB' note is its capture
    (blind143 b07); a client's httpx log of an answer from the engine on this host is the engine serving,
    one from the Hub or a remote API is not (blind144 b12, b14)."""
    stub = "I1115 02:58:49.477216 1 pb_stub.cc:325] Failed to initialize Python stub: TypeError: 'NoneType' object is not subscriptable\n"
    assert verdict(stub) == ("failed", "starting", "exception")
    oom = 'pb_stub.cc:366] "Failed to initialize Python stub: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n'
    assert verdict(oom)[2] == "oom"
    lifecycle = "E1115 02:58:51.162838 1 model_lifecycle.cc:621] failed to load 'vllm_model' version 1: Internal: TypeError: x\n"
    assert verdict(lifecycle)[0] == "failed"
    compile_ = "INFO 05-01 12:39:00 backends.py:587] Dynamo bytecode transform time: 41.22 s\n"
    assert verdict(compile_ + "Runner failed with exception: Runner has been initializing for too long: 300 seconds\n") == (
        "failed",
        "jit_compile",
        "killed",
    )
    new = (
        "Traceback (most recent call last):\n"
        '  File "/x/vllm/model_executor/models/minicpmv.py", line 1432, in __new__\n'
        '    raise ValueError(f"Currently, MiniCPMV only supports versions "\n'
        "ValueError: Currently, MiniCPMV only supports versions 2.0, 2.5, 2.6, 4.0. Got version: (4, 5)\n"
    )
    assert verdict(new) == ("failed", "weight_load", "exception")
    kv = "INFO 02-03 10:00:00 llm_engine.py:1] # GPU blocks: 2, # CPU blocks: 2048\n"
    note = "INFO 02-03 10:00:09 model_runner.py:1] CUDA graphs can take additional 1~3 GiB memory per GPU. If you are running out of memory, consider decreasing `gpu_memory_utilization` or enforcing eager mode.\n"
    assert verdict(kv + note) == ("incomplete", "graph_capture", None)
    load = "INFO 08-20 21:33:00 model_runner.py:1] Loading model weights took 5.38 GB\n"
    models = '[2025-08-20 21:33:58] INFO _client.py:1740: HTTP Request: GET http://0.0.0.0:8000/v1/models "HTTP/1.1 200 OK"\n'
    chat = '[2025-09-18 09:25:51] INFO _client.py:1740: HTTP Request: POST http://127.0.0.1:8000/v1/chat/completions "HTTP/1.1 200 OK"\n'
    assert verdict(load + models)[0] == "ready" and verdict(load + chat)[0] == "ready"
    hub = '[2025-08-20 21:33:58] INFO _client.py:1740: HTTP Request: HEAD https://huggingface.co/Qwen/Qwen3-8B/resolve/main/config.json "HTTP/1.1 200 OK"\n'
    remote = '[2025-08-20 21:33:58] INFO _client.py:1740: HTTP Request: POST https://api.openai.com/v1/chat/completions "HTTP/1.1 200 OK"\n'
    assert verdict(load + hub)[0] == "incomplete" and verdict(load + remote)[0] == "incomplete"


def test_blind154_s_watchdog_on_a_groups_first_one_element_all_reduce_is_its_set_up() -> None:
    """The first collective of a process group being a one-element all-reduce is the engines' own warm-up
    right after the group is made, so a watchdog timeout on it with no marker before is dist_init
    (blind154 b01); a later collective's timeout (SeqNum=2, 128M elements) stays where the log was."""
    first = (
        "(RayWorker pid=1080652) [E ProcessGroupNCCL.cpp:474] [Rank 1] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800265 milliseconds before timing out.\n"
    )
    assert verdict(first) == ("failed", "dist_init", "nccl")
    later = first.replace("SeqNum=1", "SeqNum=2").replace("NumelIn=1, NumelOut=1", "NumelIn=134217728, NumelOut=134217728")
    assert verdict(later) == ("failed", "starting", "nccl")


def test_blind153_s_frame_of_a_module_a_release_moved_takes_the_phase_its_file_and_function_have() -> None:
    """vLLM 0.11 keeps initialize_from_config in vllm/worker/worker_base.py, the map holds it under
    vllm/v1/worker/worker_base.py (kv_alloc): a worker's cut traceback through it is kv_alloc (blind153
    b02), not 'starting'; a frame of a function no engine module holds in a phase still decides nothing."""
    tag = "(Worker_TP0 pid=2174) ERROR 10-28 02:57:55 [multiproc_executor.py:671] "
    head = (
        f"{tag}WorkerProc hit an exception.\n"
        f"{tag}Traceback (most recent call last):\n"
        f'{tag}  File "/vllm-workspace/vllm/vllm/v1/executor/multiproc_executor.py", line 666, in worker_busy_loop\n'
        f"{tag}    output = func(*args, **kwargs)\n"
    )
    moved = f'{tag}  File "/vllm-workspace/vllm/vllm/worker/worker_base.py", line 254, in initialize_from_config\n'
    assert verdict(head + moved + f"{tag}RuntimeError: boom\n")[:2] == ("failed", "kv_alloc")
    other = moved.replace("initialize_from_config", "execute_method")
    assert verdict(head + other + f"{tag}RuntimeError: boom\n")[1] == "starting"


def test_blind153_s_v0_multi_modal_profile_run_is_the_memory_profile() -> None:
    """V0's enc_dec_model_runner.profile_run opens a multi-modal model's memory profile with 'Starting profile
    run for multi-modal models.': a traceback after it is kv_alloc (blind153 b06), one right after the
    weights' total still weight_load."""
    loaded = "INFO 09-27 11:18:22 model_runner.py:1025] Loading model weights took 19.9073 GB\n"
    profile = "INFO 09-27 11:18:35 enc_dec_model_runner.py:297] Starting profile run for multi-modal models.\n"
    cut = '[rank0]: Traceback (most recent call last):\n[rank0]:   File "/usr/lib/python3.10/runpy.py", line 196, in _run_module_as_main\n'
    assert verdict(loaded + profile + cut)[:2] == ("failed", "kv_alloc")
    assert verdict(loaded + cut)[:2] == ("failed", "weight_load")


def test_blind155_s_autotune_that_ended_leaves_the_start_in_the_compile_step_not_back_in_the_kv_cache() -> None:
    """vLLM's FlashInfer autotune runs in compile_or_warm_up_model, after the KV cache exists: once its
    'Autotuning process ends' the start is still compiling and warming up (blind155 c07), not back in kv_alloc."""
    p = "(EngineCore_DP0 pid=53397) "
    log = (
        f"{p}INFO 11-22 17:03:47 [nixl_connector.py:1154] Registering KV_Caches. use_mla: False, kv_buffer_device: cuda\n"
        f"{p}2025-11-22 17:03:49,039 - INFO - autotuner.py:256 - flashinfer.jit: [Autotuner]: Autotuning process starts ...\n"
    )
    assert verdict(log)[:2] == ("incomplete", "jit_compile")
    ended = f"{p}2025-11-22 17:03:49,054 - INFO - autotuner.py:262 - flashinfer.jit: [Autotuner]: Autotuning process ends\n"
    assert verdict(log + ended)[:2] == ("incomplete", "jit_compile")


def test_blind155_s_kv_cache_sized_by_kv_cache_memory_bytes_and_lmcache_mp_registration_are_the_kv_cache() -> None:
    """With --kv-cache-memory-bytes vLLM skips the profile and says so ('reserved 49.0 GiB memory for KV Cache
    as specified by kv_cache_memory_bytes'); LMCache's MP connector registers the caches ('Registering kv
    caches!'): a failure after either is in kv_alloc (blind155 c03, c02), not in the compile before it."""
    p = "(EngineCore pid=83) "
    compiled = f"{p}INFO 07-26 12:29:33 [monitor.py:53] torch.compile took 0.45 s in total\n"
    reserved = (
        f"{p}INFO 07-26 12:29:34 [gpu_worker.py:479] Initial free memory 93.88 GiB, reserved 49.0 GiB memory for KV Cache"
        " as specified by kv_cache_memory_bytes config and skipped memory profiling.\n"
    )
    failed = f"{p}ERROR 07-26 12:29:35 [core.py:1330] EngineCore failed to start.\n{p}ERROR 07-26 12:29:35 [core.py:1330] Traceback (most recent call last):\n"
    assert verdict(compiled + failed)[:2] == ("failed", "jit_compile")
    assert verdict(compiled + reserved + failed)[:2] == ("failed", "kv_alloc")
    w = "(Worker_TP0 pid=162243) "
    registering = f"{w}[2026-07-31 11:51:54,561] LMCache INFO: Registering kv caches! (lmcache_mp_connector.py:749:lmcache.integration.vllm.lmcache_mp_connector)\n"
    hit = f"{w}ERROR 07-31 11:51:54 [multiproc_executor.py:1007] WorkerProc hit an exception.\n"
    assert verdict(registering + hit)[:2] == ("failed", "kv_alloc")


def test_blind158_s_layer_allocating_its_parameters_is_the_model_being_built_for_its_weights() -> None:
    """A layer's create_weights (vLLM's and SGLang's quantization methods) runs as the model is built, inside
    the load: an OOM there is in weight_load (blind158 c07), whatever module the layer is in."""
    e = "(EngineCore pid=6849) ERROR 04-19 15:32:42 [core.py:1108] "
    frames = (
        f'{e}  File "/home/u/vllm/.venv/lib/python3.12/site-packages/vllm/model_executor/layers/linear.py", line 201, in create_weights\n'
        f"{e}    data=torch.empty(\n"
        f'{e}  File "/home/u/vllm/.venv/lib/python3.12/site-packages/torch/utils/_device.py", line 109, in __torch_function__\n'
        f"{e}torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 84.00 MiB. GPU 0 has a total capacity of 31.35 GiB\n"
    )
    assert verdict(frames) == ("failed", "weight_load", "oom")
    other = frames.replace("create_weights", "forward")
    assert verdict(other)[1] == "starting"


def test_blind158_s_moe_dispatcher_rdma_transport_assertion_is_the_fabric_while_the_model_is_built() -> None:
    """SGLang's EP MoE layer makes its token dispatcher as the model is built; AMD's mori connecting its
    RDMA queue pairs asserts and the process aborts (blind158 c08): nccl (the fabric), in weight_load,
    not 'other' in 'starting'."""
    log = (
        "cheduler_DP2_TP2_EP2: /sgl-workspace/mori/src/application/transport/rdma/providers/ionic/ionic.cpp:350: void"
        " mori::application::IonicQpContainer::ModifyInit2Rtr(const RdmaEndpointHandle &, const ibv_port_attr &, uint32_t):"
        " Assertion `err == 0' failed.\n"
        "Fatal Python error: Aborted\n\n"
        "Current thread 0x00007ffff7c52000 (most recent call first):\n"
        '  File "/sgl-workspace/mori/python/mori/shmem/api.py", line 26 in shmem_torch_process_group_init\n'
        '  File "/sgl-workspace/sglang/python/sglang/srt/layers/moe/token_dispatcher/mori.py", line 17 in init_mori_op\n'
        '  File "/sgl-workspace/sglang/python/sglang/srt/layers/moe/token_dispatcher/mori.py", line 57 in __init__\n'
        '  File "/sgl-workspace/sglang/python/sglang/srt/layers/moe/fused_moe_triton/layer.py", line 113 in create_moe_dispatcher\n'
        '  File "/sgl-workspace/sglang/python/sglang/srt/layers/moe/ep_moe/layer.py", line 547 in __init__\n'
    )
    assert verdict(log) == ("failed", "weight_load", "nccl")


def test_blind156_s_hicache_storage_backend_is_made_with_the_kv_cache() -> None:
    """SGLang's HiCache storage backend (hf3fs, Mooncake, file) is created with the hierarchical cache,
    after the memory pools: its lines are kv_alloc (blind156 c04), read from its modules' own messages."""
    log = (
        "[2025-12-25 09:59:20 TP0] Creating storage backend 'hf3fs' (sglang.srt.mem_cache.storage.hf3fs.storage_hf3fs.HiCacheHF3FS)\n"
        "[2025-12-25 09:59:20 TP0] Using global metadata client with server url: http://10.0.0.1:19090\n"
    )
    assert verdict(log)[:2] == ("incomplete", "kv_alloc")


def test_a_frame_named_like_another_engines_function_takes_no_phase_from_it() -> None:
    """The moved-module fallback looks a frame up by file and function within its own engine's code only:
    vLLM's executor/base.py __init__ is not SGLang's moe_runner/base.py __init__ (weight_load)."""
    log = (
        "Traceback (most recent call last):\n"
        '  File "/vllm-workspace/vllm/vllm/executor/base.py", line 53, in __init__\n'
        "    self._init_executor()\n"
        "Exception: WorkerProc initialization failed due to an exception in a background process. See stack trace for root cause.\n"
    )
    assert verdict(log)[1] == "starting"
