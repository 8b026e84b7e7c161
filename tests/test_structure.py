"""Verdicts from the engines' own structure and 2026's wording: the phase contract ('starting', never
null, for a start with lines), traceback frames placed by the generated structure map (outermost
engine frame that belongs to a phase), vLLM's logger tags, and the 2026 vocabulary."""

from __future__ import annotations

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
