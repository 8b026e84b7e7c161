"""Verdicts from the engines' own structure and 2026's wording: the phase contract ('starting', never
null, for a start with lines), traceback frames placed by the generated structure map (outermost
engine frame that belongs to a phase), vLLM's logger tags, and the 2026 vocabulary."""

from __future__ import annotations

from coldwatch.phases.state import Signal, State
from coldwatch.replay import replay


def verdict(text: str) -> tuple[str, str | None, str | None]:
    _, v = replay([text.encode()])
    return v.outcome, v.phase, v.failure_kind


def test_a_failure_before_any_phase_is_in_starting() -> None:
    """DESIGN: a start is in 'starting' from its first line; a failure there reports 'starting', not null."""
    log = (
        "[2026-08-01 10:00:00] server_args=ServerArgs(model_path='m')\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.12/runpy.py", line 198, in _run_module_as_main\n'
        "ValueError: unknown model type 'qwen9'\n"
    )
    assert verdict(log) == ("failed", "starting", "exception")


def test_a_log_cut_before_any_phase_is_in_starting() -> None:
    _, v = replay([b"INFO 08-01 10:00:00 [utils.py:1] non-default args: {'model': 'm'}\n"])
    assert (v.outcome, v.phase) == ("incomplete", "starting")
    assert "before any start-up phase" in v.reason


def test_an_empty_log_has_no_phase() -> None:
    """Null only when the log has no line of the start."""
    _, v = replay([b""])
    assert v.phase is None


def _tb(*frames: str, exc: str = "RuntimeError: boom") -> str:
    body = "".join(
        f'  File "/usr/local/lib/python3.12/dist-packages/{f.split(" in ")[0]}", line 1, in {f.split(" in ")[1]}\n' for f in frames
    )
    return "Traceback (most recent call last):\n" + body + exc + "\n"


def test_frames_no_hand_rule_names_are_placed_by_the_engine_structure() -> None:
    """A module of SGLang's KV pool runtime and of vLLM's MRV2 graph utilities: no frame rule names
    them, the structure map generated from the engines' source does."""
    head = "[2026-08-01 10:00:00 TP0] Load weight end. elapsed=3.1 s, type=Llama, avail mem=70 GB\n"
    log = head + _tb(
        "sglang/srt/managers/scheduler.py in __init__",
        "sglang/srt/model_executor/model_runner_components/kv_pool_runtime.py in build_pools",
    )
    assert verdict(log)[1] == "kv_alloc"
    vlog = "INFO 08-01 10:00:00 [default_loader.py:397] Loading weights took 3.10 seconds\n" + _tb(
        "vllm/v1/engine/core.py in __init__", "vllm/v1/worker/gpu/cudagraph_utils.py in capture_graph"
    )
    assert verdict(vlog)[1] == "graph_capture"


def test_a_jit_kernel_failing_during_capture_is_in_capture() -> None:
    """The phase is where the engine was (capture); the JIT-built kernel is only the cause."""
    log = "[2026-08-01 10:00:00 TP0] Memory pool end. avail mem=20 GB\n" + _tb(
        "sglang/srt/model_executor/model_runner.py in init_device_graphs",
        "sglang/srt/model_executor/cuda_graph_runner.py in capture",
        "flashinfer/jit/core.py in build_and_load",
        exc="RuntimeError: Ninja build failed",
    )
    assert verdict(log) == ("failed", "graph_capture", "exception")


def test_a_repack_inside_the_load_is_the_repack() -> None:
    log = "INFO 08-01 10:00:00 [gpu_model_runner.py:1] Starting to load model m...\n" + _tb(
        "vllm/v1/worker/gpu_model_runner.py in load_model",
        "vllm/model_executor/model_loader/base_loader.py in load_model",
        "vllm/model_executor/model_loader/utils.py in process_weights_after_loading",
        "vllm/model_executor/layers/quantization/gptq_marlin.py in process_weights_after_loading",
        exc="torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    )
    assert verdict(log) == ("failed", "marlin_repack", "oom")


def test_the_draft_workers_own_capture_is_draft_init() -> None:
    """The outermost engine frame decides: the draft worker's set-up captures the draft's graphs."""
    log = _tb(
        "sglang/srt/speculative/eagle_worker.py in __init__",
        "sglang/srt/speculative/eagle_worker.py in init_cuda_graphs",
        "sglang/srt/model_executor/cuda_graph_runner.py in capture",
        exc="IndexError: index 4 is out of bounds",
    )
    assert verdict(log)[1] == "draft_init"


def test_the_structure_map_covers_each_engines_phases() -> None:
    """The generated map names modules and functions of both engines for every phase it can say."""
    from coldwatch.phases.rules import PHASES
    from coldwatch.phases.structure import structure_map

    m = structure_map()
    phases = set(m.modules.values()) | set(m.functions.values()) | set(m.tags.values())
    assert phases <= set(PHASES)
    for phase in ("dist_init", "weight_load", "marlin_repack", "draft_init", "kv_alloc", "jit_compile", "graph_capture", "warmup"):
        assert phase in phases, phase
    assert m.frame_phase("/x/site-packages/sglang/srt/managers/scheduler.py", "maybe_init_draft_worker") == "draft_init"
    assert m.frame_phase("/x/site-packages/sglang/srt/managers/scheduler.py", "__init__") is None
    assert m.tag_phase("(EngineCore pid=1) INFO 08-01 10:00:00 [default_loader.py:397] x") == "weight_load"
    assert m.tag_phase("INFO 08-01 10:00:00 [gpu_model_runner.py:1] x") is None  # several phases log there


def signals(text: str) -> tuple[list[Signal], State]:
    from coldwatch.normalise import normalise
    from coldwatch.phases.classifier import Classifier

    c = Classifier()
    out: list[Signal] = []
    for line in normalise([text.encode()]):
        out += c.feed(line)
    return out, c.state


def test_a_vllm_line_from_a_phase_module_is_that_phase_before_any_marker() -> None:
    """A cut log whose first lines come from vLLM's loader: the logger tag names the module, so weight_load."""
    log = "(EngineCore pid=7) INFO 08-01 10:00:09 [default_loader.py:291] Using model weights format ['*.safetensors']\n"
    assert verdict(log) == ("incomplete", "weight_load", None)


def test_2026_sglang_vocabulary() -> None:
    """New capture wording (target/draft, breakable), the draft's second load, MoE shuffle, the tree cache line."""
    log = (
        "[2026-08-10 09:47:00 TP0] Load weight begin. avail mem=111.97 GB\n"
        "[2026-08-10 09:47:01 TP0] Shuffling MoE weights for FlashInfer MXFP4 moe kernel (layer: model.layers.0.mlp.experts), it might take a while...\n"
        "[2026-08-10 09:50:00 TP0] Load weight end. elapsed=787.55 s, type=Qwen4ExpForConditionalGeneration, quant=modelopt_fp4, avail mem=29.01 GB, mem usage=82.97 GB.\n"
        "[2026-08-10 09:50:01 TP0] Load weight begin. avail mem=29.01 GB\n"
        "[2026-08-10 09:51:35 TP0] Load weight end. elapsed=94.49 s, type=Qwen4ExpForCausalLMMTP, avail mem=27.0 GB, mem usage=2.0 GB.\n"
        "[2026-08-10 09:51:36 TP0] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 1933682, KV size: 12.45 GB\n"
        "[2026-08-10 09:51:37 TP0] Capture target prefill CUDA graph begin. backend=breakable, num_tokens=[8, 16], avail mem=14.0 GB\n"
        "[2026-08-10 09:51:50 TP0] Capture target prefill CUDA graph end. elapsed=13.00 s, mem usage=0.40 GB, avail mem=13.6 GB.\n"
        "[2026-08-10 09:51:50 TP0] Capture draft decode CUDA graph begin. backend=full, num_tokens_per_req=1, bs=[1, 2], avail mem=13.6 GB\n"
    )
    sig, st = signals(log)
    phases = [s.data["phase"] for s in sig if s.kind == "phase"]
    assert phases == ["weight_load", "marlin_repack", "draft_init", "kv_alloc", "graph_capture"]
    done = log + (
        "[2026-08-10 09:52:00 TP0] Capture draft decode CUDA graph end. elapsed=10.00 s, mem usage=0.1 GB, avail mem=13.5 GB.\n"
        "[2026-08-10 09:52:01 TP0] Tree cache initialized: source=default impl=RadixCache hybrid_swa=False\n"
        "[2026-08-10 09:52:02] Engine startup timings (s): load_weight=12.02, kv_cache_allocation=0.02, scheduler_e2e=52.09, "
        "cuda_graph={prefill=22.96, decode=12.26}, tokenizer_e2e=65.82\n"
    )
    _, st = signals(done)
    assert st.spans["graph_capture"].closed
    assert st.engine_timings == {
        "load_weight": 12.02,
        "kv_cache_allocation": 0.02,
        "scheduler_e2e": 52.09,
        "cuda_graph.prefill": 22.96,
        "cuda_graph.decode": 12.26,
        "tokenizer_e2e": 65.82,
    }


def test_2026_vllm_vocabulary() -> None:
    """Filesystem probe and prefetch, the InstantTensor bar, FlashInfer's autotuner and DeepGEMM bars of any width."""
    pre = "(EngineCore pid=7) INFO 08-01 10:00:00 [core.py:1] Initializing a V1 LLM engine (v0.29.0) with config: m\n"
    fs = (
        pre
        + "(EngineCore pid=7) INFO 08-01 10:00:01 [weight_utils.py:1] Filesystem type for checkpoints: EXT4. Checkpoint size: 23.32 GiB. Available RAM: 56.67 GiB.\n"
    )
    assert verdict(fs)[1] == "weight_load"
    pf = (
        pre
        + "(EngineCore pid=7) INFO 08-01 10:00:02 [weight_utils.py:1] Prefetching checkpoint files into page cache started (in background, num_threads=8)\n"
    )
    assert verdict(pf)[1] == "weight_load"
    wide = "█" * 150
    bars = [
        "Loading safetensors using InstantTensor loader:   6% Completed | 7320/120567 [00:03<00:49, 2300.1it/s]",
        f"[AutoTuner]: Tuning flashinfer::trtllm_fp4_block_scale_moe:  50%|{wide}| 11/22 [06:15<07:51, 42.84s/profile]",
        "[AutoTuner]: Tuning flashinfer::trtllm_fp4_block_scale_moe:  50% 11/22 [06:15<07:51, 42.84s/profile]",
        f"DeepGEMM warmup:  47%|{wide[:90]}     | 594/1261 [03:10<02:52, 3.1it/s]",
    ]
    want = ["weight_load", "jit_compile", "jit_compile", "jit_compile"]
    for bar, phase in zip(bars, want, strict=True):
        sig, _ = signals(pre + bar + "\n")
        prog = [s for s in sig if s.kind == "progress"]
        assert prog and prog[-1].data["phase"] == phase, bar[:40]
    tune = pre + "flashinfer.jit: [Autotuner]: Autotuning process starts ...\n"
    assert verdict(tune)[1] == "jit_compile"


def test_a_weight_cache_that_fell_back_to_disk_is_a_warning() -> None:
    """vLLM's ipc_cache loader falls back to disk silently: the start goes on, but the user hears why it is slow."""
    log = (
        "(EngineCore pid=7) INFO 08-01 10:00:00 [gpu_model_runner.py:1] Starting to load model m...\n"
        "(EngineCore pid=7) WARNING 08-01 10:00:05 [ipc_loader.py:139] Weight cache unusable (WeightCacheKey mismatch on fields: ['checkpoint']); falling back to disk loading\n"
    )
    sig, st = signals(log)
    warnings = [s.data["message"] for s in sig if s.kind == "warning"]
    assert len(warnings) == 1 and "loading from disk" in warnings[0]
    assert st.phase == "weight_load" and st.failure is None


def test_sglangs_own_timings_reach_the_result_and_the_replay_story(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """'Engine startup timings (s): ...' is shown beside coldwatch's phases and kept in the result (and so in history)."""
    import json
    import subprocess
    import sys

    from coldwatch.history import make_record

    log = (
        "[2026-08-10 09:47:00 TP0] Load weight begin. avail mem=111.97 GB\n"
        "[2026-08-10 09:47:12 TP0] Load weight end. elapsed=12.02 s, type=Qwen3ForCausalLM, avail mem=90.0 GB, mem usage=22.0 GB.\n"
        "[2026-08-10 09:47:27] Engine startup timings (s): load_weight=12.02, kv_cache_allocation=0.02, cuda_graph={decode=12.26}\n"
        "[2026-08-10 09:47:30] The server is fired up and ready to roll!\n"
    )
    path = tmp_path / "s.log"
    path.write_text(log)
    out = subprocess.run([sys.executable, "-m", "coldwatch", "replay", str(path), "--output", "json"], capture_output=True, text=True)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["engine_timings"] == {"load_weight": 12.02, "kv_cache_allocation": 0.02, "cuda_graph.decode": 12.26}
    assert make_record("t", res)["engine_timings"]["load_weight"] == 12.02
    story = subprocess.run([sys.executable, "-m", "coldwatch", "replay", str(path), "--output", "plain"], capture_output=True, text=True)
    assert "engine's own timings (s): load_weight=12.02" in story.stderr + story.stdout


def test_an_early_oom_is_the_cause_of_a_later_cut_traceback() -> None:
    """One rank reports the OOM and the others go on; the traceback that ends the start is cut before
    its exception line: the first root error in the log is the cause."""
    log = (
        "[2026-08-01 10:00:00 TP0] Load weight begin. avail mem=70 GB\n"
        "[2026-08-01 10:00:05 TP1] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 79 GiB\n"
        "[2026-08-01 10:00:06 TP0] Load weight end. elapsed=6.0 s, type=Llama, avail mem=10 GB, mem usage=60 GB.\n"
        "[2026-08-01 10:00:06 TP0] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 1000, KV size: 1.00 GB\n"
        "[2026-08-01 10:00:07 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/usr/lib/python3/dist-packages/sglang/srt/managers/scheduler.py", line 1, in __init__\n'
    )
    assert verdict(log)[2] == "oom"


def test_nccl_warnings_explain_a_cut_traceback() -> None:
    log = (
        "INFO 08-01 10:00:00 [parallel_state.py:1] world_size=2 rank=0 local_rank=0 distributed_init_method=tcp://h:1 backend=nccl\n"
        "h:12:40 [0] misc/socket.cc:50 NCCL WARN socketProgress: Connection closed by remote peer h<35422>\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3/dist-packages/vllm/v1/worker/gpu_worker.py", line 1, in load_model\n'
    )
    assert verdict(log)[2] == "nccl"


def test_a_cut_traceback_inside_model_parallel_init_is_nccl() -> None:
    log = "Traceback (most recent call last):\n" + "".join(
        f'  File "/usr/lib/python3/dist-packages/{p}", line 1, in {fn}\n'
        for p, fn in (
            ("vllm/v1/worker/gpu_worker.py", "init_worker_distributed_environment"),
            ("vllm/distributed/parallel_state.py", "initialize_model_parallel"),
        )
    )
    assert verdict(log) == ("failed", "dist_init", "nccl")


def test_a_signal_whose_crash_site_is_in_nccl_is_nccl() -> None:
    """The innermost error decides: the segfault's own PC is an NCCL internal, during capture."""
    log = (
        "*** SIGSEGV received at time=1746566409 on cpu 131 ***\n"
        "PC: @     0x7fcfcd849b8a  (unknown)  addProxyOpIfNeeded()\n"
        "Fatal Python error: Segmentation fault\n"
        "\n"
        "Stack (most recent call first):\n"
        '  File "/usr/lib/python3/dist-packages/vllm/distributed/device_communicators/pynccl_wrapper.py", line 290 in ncclAllReduce\n'
        '  File "/usr/lib/python3/dist-packages/vllm/v1/worker/gpu_model_runner.py", line 2 in capture_model\n'
    )
    assert verdict(log)[2] == "nccl"
    plain = log.replace("PC: @     0x7fcfcd849b8a  (unknown)  addProxyOpIfNeeded()\n", "")
    assert verdict(plain)[2] == "other"  # only where it surfaced: a crash, not a collective failure


def test_the_launchers_eof_error_is_a_consequence() -> None:
    """The launcher's pipe read fails because a scheduler died: EOFError is never the cause."""
    log = (
        "[2026-08-01 10:00:00 TP0] Load weight begin. avail mem=70 GB\n"
        "[2026-08-01 10:00:09] DataParallelController hit an exception: Traceback (most recent call last):\n"
        '  File "/usr/lib/python3/dist-packages/sglang/srt/managers/data_parallel_controller.py", line 1, in launch_tensor_parallel_group\n'
        "EOFError\n"
        "[2026-08-01 10:00:09] Received sigquit from a child process. It usually means the child failed.\n"
    )
    assert verdict(log)[2] != "exception"


def test_a_jit_build_failing_during_capture_without_frames_is_in_capture() -> None:
    """No traceback frames: the log entered JIT from capture, so the failure is in capture."""
    log = (
        "[2026-08-01 10:00:00 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=20 GB\n"
        "2026-08-01 10:00:01,000 - INFO - flashinfer.jit: Loading JIT ops: batch_prefill\n"
        "[2026-08-01 10:00:30 TP0] Scheduler hit an exception: RuntimeError: Ninja build failed.\n"
    )
    assert verdict(log)[:2] == ("failed", "graph_capture")


def test_a_frame_split_over_two_lines_still_places_the_failure() -> None:
    log = (
        "[2026-08-01 10:00:00 TP0] Init torch distributed ends. mem usage=0.1 GB\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3/dist-packages/sglang/srt/model_executor/model_runner_components/kv_pool_r\n'
        'untime.py", line 40, in build\n'
        "RuntimeError: boom\n"
    )
    assert verdict(log)[1] == "kv_alloc"


def test_a_traceback_cut_after_a_load_model_call_is_in_the_load() -> None:
    """The last complete frame's source line is 'self.load_model()': the traceback went into the load."""
    log = (
        "[2026-08-01 10:00:00 TP0] Init torch distributed ends. mem usage=0.1 GB\n"
        "[2026-08-01 10:00:01 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/usr/lib/python3/dist-packages/sglang/srt/model_executor/model_runner.py", line 200, in initialize\n'
        "    self.load_model()\n"
    )
    assert verdict(log)[:2] == ("failed", "weight_load")


def test_a_quantization_scheme_chosen_means_the_model_is_being_built() -> None:
    """A fragment that starts after 'Load weight begin': the scheme selection line is inside the load."""
    assert verdict("[2026-08-01 10:00:00 TP0] Using CompressedTensorsWNA16MarlinMoEMethod\n")[1] == "weight_load"
    assert verdict("INFO 08-01 10:00:00 [x.py:1] Using MacheteLinearKernel for GPTQMarlinLinearMethod\n")[1] == "weight_load"


def test_vllm_ascends_own_runner_is_in_the_map() -> None:
    """vLLM's Ascend plugin: its model runner's KV set-up places a failure in kv_alloc."""
    log = "INFO 08-01 10:00:00 [x.py:1] Loading weights took 3.10 seconds\n" + _tb(
        "vllm/v1/engine/core.py in _initialize_kv_caches",
        "vllm_ascend/worker/model_runner_v1.py in initialize_kv_cache",
        exc="RuntimeError: ACL_ERROR_RT_MEMORY_ALLOCATION",
    )
    assert verdict(log) == ("failed", "kv_alloc", "oom")


def test_vllms_tpu_plug_in_is_in_the_map() -> None:
    """vLLM's TPU plug-in (tpu-inference): its compilation manager's XLA precompile is jit_compile (blind91 b01);
    its MoE weights' padding lines, logged from process_weights/moe_weights.py, are the weight load (b04)."""
    log = _tb(
        "tpu_inference/runner/compilation_manager.py in _run_compilation",
        exc="jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space vmem.",
    )
    assert verdict(log) == ("failed", "jit_compile", "oom")
    pad = "(EngineCore pid=2234024) INFO 04-30 01:11:12 [moe_weights.py:194] w13_weight_w3 shape after padding: (128, 2816, 1024)\n"
    assert verdict(pad)[:2] == ("incomplete", "weight_load")


def test_a_worker_silent_for_a_minute_is_said_once() -> None:
    line = "(EngineCore pid=7) INFO 08-01 10:01:00 [shm_broadcast.py:801] No available shared memory broadcast block found in 60 seconds. This typically happens when some processes are hanging.\n"
    sig, st = signals("INFO 08-01 10:00:00 [x.py:1] Starting to load model m...\n" + line + line)
    assert [s.data["message"][:40] for s in sig if s.kind == "warning"] == ["a worker has not answered for a minute ("]
    assert st.failure is None


def test_vllms_own_step_figures_are_kept() -> None:
    log = (
        "(EngineCore pid=7) INFO 08-01 10:00:30 [default_loader.py:397] Loading weights took 26.93 seconds\n"
        "(EngineCore pid=7) INFO 08-01 10:00:31 [gpu_model_runner.py:1] Model loading took 12.66 GiB memory and 31.657031 seconds\n"
        "(EngineCore pid=7) INFO 08-01 10:01:00 [monitor.py:34] torch.compile takes 22.52 s in total\n"
        "(EngineCore pid=7) INFO 08-01 10:02:00 [gpu_model_runner.py:1] Graph capturing finished in 7 secs, took 0.95 GiB\n"
        "(EngineCore pid=7) INFO 08-01 10:02:01 [core.py:349] init engine (profile, create kv cache, warmup model) took 212.68 s (compilation: 13.01 s)\n"
    )
    _, st = signals(log)
    assert st.engine_timings == {
        "load_weights": 26.93,
        "model_loading": 31.657031,
        "torch_compile": 22.52,
        "graph_capture": 7.0,
        "init_engine": 212.68,
        "compilation": 13.01,
    }


def test_a_cut_traceback_takes_the_exception_another_rank_logged() -> None:
    """Two workers' tracebacks interleaved, the excerpt starting at one's exception line and cut inside
    the other's frames: the logged exception is the cause (kind exception), the frames place it."""
    p7 = "(Worker_TP7 pid=974) ERROR 06-12 08:47:03 [multiproc_executor.py:962] "
    p0 = "(Worker_TP0 pid=533) ERROR 06-12 08:47:03 [multiproc_executor.py:962] "
    log = (
        p7 + "RuntimeError: NPUModelRunner init failed, error is NPUModelRunner failed\n"
        + p0 + "Traceback (most recent call last):\n"
        + p0 + '  File "/ws/vllm/v1/worker/gpu_worker.py", line 1, in compile_or_warm_up_model\n'
        + p0 + "    self.model_runner.capture_model()\n"
        + p0 + '  File "/ws/vllm/v1/worker/gpu_model_runner.py", line 4365, in capture_model\n'
    )  # fmt: skip
    _, v = replay([log.encode()])
    assert (v.outcome, v.failure_kind) == ("failed", "exception")
    assert v.reason.startswith("RuntimeError: NPUModelRunner init failed")
    # without the other rank's line it stays a cut traceback whose type the text does not give
    _, alone = replay([log.split("\n", 1)[1].encode()])
    assert (alone.outcome, alone.failure_kind) == ("failed", "other")


def test_an_exception_line_the_start_moved_on_from_is_no_failure() -> None:
    """A logged exception line that no traceback follows decides nothing while the start goes on past it
    (a probe retried, then the weight load), nor when the log goes on for lines after it."""
    head = b"[2026-08-01 10:00:00] server_args=ServerArgs(model_path='m')\nValueError: a retried probe failed\n"
    _, v = replay([head + b"[2026-08-01 10:00:01 TP0] Load weight begin. avail mem=70.00 GB\n"])
    assert (v.outcome, v.phase) == ("incomplete", "weight_load")
    _, v = replay([head + b"".join(b"[2026-08-01 10:00:0%d] waiting for the peer\n" % i for i in range(9))])
    assert v.outcome == "incomplete"


def test_a_log_that_ends_on_an_exception_line_ended_with_that_exception() -> None:
    """The blind labels' reading, six corpora over: a log whose last word is a bare exception line (an
    import that failed, an architecture refused, its traceback never pasted) failed with it, in the phase
    it was in; a message's own lines after it (a build's output) do not change that."""
    _, v = replay([b"ImportError: /x/sgl_kernel/common_ops.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEa\n"])
    assert (v.outcome, v.phase, v.failure_kind) == ("failed", "starting", "exception")
    build = (
        b"RuntimeError: Ninja build failed. Ninja output:\nninja: Entering directory `/c/flashinfer/100/cached_ops'\n[1/4] nvcc -c a.cu\n"
    )
    _, v = replay([b"[2026-08-01 10:00:01 TP0] Load weight begin. avail mem=70.00 GB\n" + build])
    assert (v.outcome, v.phase, v.failure_kind) == ("failed", "weight_load", "exception")
    _, v = replay([b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"])
    assert (v.outcome, v.failure_kind) == ("failed", "oom")


def test_a_chained_tracebacks_outer_frames_place_the_inner_error() -> None:
    """'During handling of the above exception': the first traceback is the error (its kind), the second
    one's frames are where the engine was (SGLang capturing a graph around a fused MoE kernel)."""
    log = (
        '  File "/opt/conda/lib/python3.10/site-packages/sglang/srt/layers/moe/topk.py", line 322, in biased_grouped_topk_gpu\n'
        "    topk_weights, topk_ids = moe_fused_gate(\n"
        "RuntimeError: CUDA error: out of memory\n"
        "\n"
        "During handling of the above exception, another exception occurred:\n"
        "\n"
        "Traceback (most recent call last):\n"
        '  File "/opt/conda/lib/python3.10/site-packages/sglang/srt/model_executor/cuda_graph_runner.py", line 336, in __init__\n'
        "    self.capture()\n"
    )
    assert verdict(log) == ("failed", "graph_capture", "oom")


def test_an_error_cuda_raises_only_during_capture_is_in_capture() -> None:
    """CUDA refuses an operation 'when stream is capturing' only while a graph is being captured: the
    error's own text places it when no frame does."""
    log = (
        "[2026-08-01 10:00:00] server_args=ServerArgs(model_path='m')\n"
        "RuntimeError: CUDA error: operation not permitted when stream is capturing\n"
        "\n"
        "During handling of the above exception, another exception occurred:\n"
        "\n"
        "Traceback (most recent call last):\n"
        '  File "/x/sglang/srt/managers/scheduler.py", line 2255, in run_scheduler_process\n'
        "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, pp_rank, dp_rank)\n"
    )
    assert verdict(log) == ("failed", "graph_capture", "exception")
    # the same scheduler frames with another error stay where the log was
    other = log.replace("operation not permitted when stream is capturing", "invalid argument")
    assert verdict(other)[1] == "starting"


def test_torchs_graph_capture_below_a_compiled_graph_is_capture_not_jit() -> None:
    """vLLM's piecewise backend (a compilation module) captures CUDA graphs inside the compiled graph: an
    OOM in torch.cuda.graph's capture_end is in capture; the same backend frame alone stays JIT."""
    p = "(VllmWorker rank=3 pid=1090) ERROR 06-05 06:18:13 [multiproc_executor.py:470] "
    frames = [
        ("vllm/compilation/backends.py", "__call__"),
        ("torch/cuda/graphs.py", "__exit__"),
        ("torch/cuda/graphs.py", "capture_end"),
    ]
    log = "".join(f'{p}  File "/usr/local/lib/python3.10/site-packages/{f}", line 1, in {fn}\n' for f, fn in frames)
    log += p + "RuntimeError: CUDA error: out of memory\n"
    assert verdict(log) == ("failed", "graph_capture", "oom")
    only_jit = "".join(x + "\n" for x in log.splitlines() if "torch/cuda" not in x)
    assert verdict(only_jit) == ("failed", "jit_compile", "oom")


def test_an_nccl_error_carrying_a_cuda_oom_is_oom() -> None:
    """torch's NCCL error names the collective library's last error after 'Last error:'; when that is
    "Cuda failure 'out of memory'" the innermost error is the OOM (and teardown frames place nothing)."""
    w = "(VllmWorker rank=7 pid=240) "
    log = (
        w + '  File "/usr/local/lib/python3.12/dist-packages/vllm/distributed/parallel_state.py", line 1085, in destroy_model_parallel\n'
        + w + "    _TP.destroy()\n"
        + w + "torch.distributed.DistBackendError: NCCL error in: NCCLUtils.cpp:133, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n"
        + w + "ncclUnhandledCudaError: Call to CUDA function failed.\n"
        + w + "Last error:\n"
        + w + "Cuda failure 'out of memory'\n"
        + "ERROR 05-21 09:27:46 [multiproc_executor.py:123] Worker proc VllmWorker-6 died unexpectedly,\n"
    )  # fmt: skip
    assert verdict(log) == ("failed", "starting", "oom")
    assert verdict(log.replace("out of memory", "invalid argument")) == ("failed", "starting", "nccl")


def test_nccls_own_error_path_is_an_nccl_failure() -> None:
    """NCCL prints 'file.cc:LINE -> RES' (NCCLCHECK) and "Cuda failure '...'" (CUDACHECK) only on its error
    path: a log that ends there failed in the collectives; one where the start goes on did not."""
    head = "INFO 08-01 10:00:00 [parallel_state.py:1] world_size=2 rank=0 local_rank=0 distributed_init_method=tcp://h:1 backend=nccl\n"
    err = (
        "h:44712:44746 [2] transport/nvls.cc:246 NCCL WARN Cuda failure 3 'initialization error'\n"
        "h:44712:44746 [2] NCCL INFO init.cc:1010 -> 1\n"
        "h:44712:44746 [2] NCCL INFO group.cc:64 -> 1 [Async thread]\n"
    )
    assert verdict(head + err) == ("failed", "dist_init", "nccl")
    went_on = head + err + "INFO 08-01 10:00:09 [gpu_model_runner.py:1] Starting to load model m...\n"
    assert verdict(went_on)[0] == "incomplete"
    # success chatter is no failure ('-> 0' is not printed by NCCL; ncclInProgress is 7)
    assert verdict(head + "h:1:2 [0] NCCL INFO init.cc:1 -> 7\n")[0] == "incomplete"


def test_torchs_watchdog_failure_is_nccl() -> None:
    log = (
        "distributed-sglang-0:206:10697 [1] NCCL INFO Connected all trees\n"
        "[rank1]:[E909 08:45:30.126335825 ProcessGroupNCCL.cpp:2252] [PG ID 2 PG GUID 3 Rank 1]  failure detected by watchdog at work sequence id: 40231 PG status: last enqueued work: 40267, last completed work: 40230\n"
    )
    assert verdict(log) == ("failed", "dist_init", "nccl")


def test_vllm_error_lines_from_its_fatal_sites_fail_the_start() -> None:
    """Every ERROR site of vllm/v1/engine/core.py ends the engine or a call, and its multi-line messages
    carry the tag on each line; worker_base.py logs ERROR only before it re-raises. Other modules' ERROR
    lines (a probe that failed and was retried) decide nothing by themselves while the start goes on
    (a log that ends on one ended with it: test_generalise)."""
    e = "(EngineCore_DP0 pid=160843) ERROR 03-05 12:36:31 [core.py:1006] "
    assert verdict(e + "hip runtime failed to load.\n" + e + "Error: Please provide architecture.\n") == ("failed", "starting", "exception")
    cut = "(RayWorkerWrapper pid=206994, ip=192.168.10.25) ERROR 03-27 10:29:13 [worker_base.py:620] Error executing metho\n"
    assert verdict(cut)[0] == "failed"
    other = "(APIServer pid=1) ERROR 09-26 23:38:47 [config.py:130] Error retrieving safetensors: offline mode is enabled.\n"
    assert verdict(other + e.replace("ERROR", "INFO") + "Loading weights took 5.62 seconds\n")[0] == "incomplete"
    assert verdict(e.replace("ERROR", "INFO") + "Waiting for init message from front-end.\n")[0] == "incomplete"


def test_sglangs_communicators_being_built_are_dist_init() -> None:
    """SGLang's pynccl and custom all-reduce set-up lines (sglang/srt/distributed) when the 'Init torch
    distributed begin' line is not in the text."""
    log = (
        "sglang-1  | [2025-11-01 16:50:36 TP0] sglang is using nccl==2.27.3\n"
        "sglang-1  | [2025-11-01 16:50:36 TP1] Setup Custom allreduce failed with CUDART error: peer access is not supported between these two devices.\n"
    )
    assert verdict(log)[:2] == ("incomplete", "dist_init")


def test_a_cut_traceback_logged_at_a_fatal_site_is_still_a_cut_traceback() -> None:
    """The indented body of a traceback that vLLM's EngineCore logged (each line tagged [core.py:N]) is
    no message of its own: cut before its exception line, the type stays unknown, and the reason is
    not a source line."""
    e = "(EngineCore_DP0 pid=626) ERROR 12-05 07:51:00 [core.py:708] "
    log = (
        e + "    return func(*args, **kwargs)\n"
        + e + '  File "/vllm-workspace/vllm/vllm/worker/worker_base.py", line 248, in init_worker\n'
        + e + "    self.worker = worker_class(**kwargs)\n"
    )  # fmt: skip
    _, v = replay([log.encode()])
    assert (v.outcome, v.phase, v.failure_kind) == ("failed", "starting", "other")
    assert "return func" not in v.reason


def test_sglangs_decode_batch_lines_are_client_traffic() -> None:
    """SGLang logs 'Decode batch.' every --decode-log-interval (40) decode steps and its own warm-up asks
    for 8 new tokens: a log of decode batches is a server that serves, even without its start-up lines.
    A prefill batch alone (the warm-up's) is not."""
    serving = "".join(
        f"[04:40:5{i} TP0] Decode batch. #running-req: 2, #token: 40{i}8, token usage: 0.00, gen throughput (token/s): 447.31, #queue-req: 0\n"
        for i in range(3)
    )
    assert verdict(serving)[:2] == ("ready", "ready")
    warmup = (
        "[2026-08-01 10:00:00] server_args=ServerArgs(model_path='m')\n"
        "[2026-08-01 10:00:09 TP0] Prefill batch. #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0\n"
    )
    assert verdict(warmup)[0] == "incomplete"


def test_vllms_route_listing_names_the_engine() -> None:
    """vLLM's API server lists its routes (vllm/entrypoints/launcher.py) before uvicorn starts, once the
    engine is built: with only those lines and uvicorn's, 'Application startup complete' is vLLM's ready."""
    log = (
        "INFO 04-17 14:34:28 launcher.py:31] Route: /v1/completions, Methods: POST\n"
        "INFO 04-17 14:34:28 launcher.py:31] Route: /v1/chat/completions, Methods: POST\n"
        "INFO:     Started server process [1]\n"
        "INFO:     Waiting for application startup.\n"
        "INFO:     Application startup complete.\n"
        'INFO:     172.20.235.128:24240 - "GET /health HTTP/1.1" 200 OK\n'
    )
    assert verdict(log)[:2] == ("ready", "ready")


def test_a_template_is_its_literal_parts_in_order_found_without_a_regex() -> None:
    """The map's templates are matched part by part with str.find (a hostile line of repeated words costs one
    pass, where a regex of several lazy gaps would backtrack): the parts in order, something between each two."""
    from coldwatch.phases.structure import _fits, structure_map

    # the map's 'Loaded {}: {} ({} version). model size: {} GB, consumed GPU mem: {} GB, avail GPU mem: {} GB'
    parts = ("Loaded ", ": ", " (", " version). model size: ", " GB, consumed GPU mem: ", " GB, avail GPU mem: ", " GB")
    assert (parts, "weight_load") in structure_map().templates["Loaded"]
    line = "Loaded vae: AutoencoderKL (native version). model size: 0.25 GB, consumed GPU mem: 0.3 GB, avail GPU mem: 70.1 GB"
    assert _fits(line, parts)
    assert not _fits(line.replace(" (native version)", ""), parts)  # a part missing
    assert not _fits(line.replace("vae: AutoencoderKL", ": "), parts)  # nothing where a value goes
    assert not _fits("Capture " + "a " * 20000, ("Capture ", " ", " begin. backend=", ", bs=", ""))


def test_an_error_vllms_serving_code_logged_says_the_server_was_up() -> None:
    """vLLM's OpenAI-compatible serving modules log ERROR only in a request's handlers (the structure
    map's serving_sites, read from its source): such a line, or a line of its traceback, is a server
    answering requests, so the start was ready whatever the request's fate (blind69 e08); V0's engine's
    'Added request chatcmpl-...' is a request the server took (blind68 d15). The same modules' INFO
    lines are logged while the server sets up, and say nothing of the kind."""
    e = "(APIServer pid=433) ERROR 05-04 08:51:40 [entrypoints/.../chat_completion/serving.py:1267] "
    log = (
        e
        + '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/async_llm.py", line 655, in output_handler\n'
        + e
        + "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.\n"
    )
    assert verdict(log) == ("ready", "ready", None)
    bare = "ERROR 04-10 03:53:17 [serving_chat.py:135] Error with model object='error' message='The model does not exist.'\n"
    assert verdict(bare)[0] == "ready"
    setup = "INFO 04-10 03:53:10 [serving_chat.py:115] Using default chat sampling params from model: {'temperature': 0.6}\n"
    assert verdict(setup)[0] == "incomplete"
    v0 = "INFO 03-04 17:31:42 engine.py:270] Added request chatcmpl-4c7f96ae551448c4b63fbca6af3315dc.\n"
    assert verdict(v0 + "CRITICAL 03-04 17:31:43 launcher.py:99] MQLLMEngine is already dead, terminating server process\n")[0] == "ready"


def test_vllm_omnis_stages_are_placed_by_its_own_code() -> None:
    """vLLM-Omni joins the structure map as a plug-in: a traceback through its diffusion worker's
    load_model is the weight load, through its init_device the groups' set-up; its orchestrator's
    'Orchestrator ready with N stages' (every stage's engine up) opens the API server's set-up (blind102 b23, b24)."""
    tb = (
        "Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.12/dist-packages/vllm_omni/diffusion/worker/diffusion_worker.py", line 150, in load_model\n'
        "    self.model_runner.load_model(load_format=load_format)\n"
    )
    assert verdict(tb)[:2] == ("failed", "weight_load")
    assert verdict(tb.replace("line 150, in load_model", "line 100, in init_device"))[:2] == ("failed", "dist_init")
    up = "(APIServer pid=1) INFO 05-18 19:55:28 [async_omni_engine.py:358] [AsyncOmniEngine] Orchestrator ready with 1 stages\n"
    assert verdict(up) == ("incomplete", "warmup", None)


def test_an_exception_message_only_one_phases_code_raises_places_a_lone_failure() -> None:
    """A one-line note of an error, no frames and no marker: where the engines' code raises that message
    (the structure map's raises) places it, 'Cannot find any model weights' in the loader (blind112 b07), the
    memory profile's assertion in the KV cache's sizing, wrapped short of its head (b09). A marker the log
    placed stays where it was."""
    assert verdict("RuntimeError: Cannot find any model weights with `/models/x`\n") == ("failed", "weight_load", "exception")
    assert verdict("AssertionError:\nError in memory profiling.\n")[:2] == ("failed", "kv_alloc")
    assert verdict("ValueError: something no engine raises at all, in any of its phases\n")[1] == "starting"
