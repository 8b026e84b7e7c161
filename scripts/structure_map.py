"""Generate coldwatch's structure map: which start-up phase each module and function of SGLang's and
vLLM's source belongs to, read from the engines' own trees (git snapshots), for traceback frames and
vLLM's `[file.py:line]` logger tags.

    python scripts/structure_map.py --sglang GITDIR@COMMIT [...] --vllm GITDIR@COMMIT [...]
        [--vllm-ascend GITDIR@COMMIT] [--tpu-inference GITDIR@COMMIT] [--vllm-omni GITDIR@COMMIT] [--out FILE]

Give each engine one or more snapshots (a release each; the map is their union, so frames of an old
release still resolve). The output, src/coldwatch/phases/rules/structure.toml, is committed and
reviewed in the diff like any rule change; rerun this per engine release.

What is hand-written here is the SPEC: directories and modules that belong to one phase as a whole,
and, inside modules that orchestrate several phases (a model runner, a scheduler), function-name
patterns. What comes from the source: every module that exists under those directories, every
function that matches (so a new module or a renamed function shows in the diff), the modules whose ERROR
lines are the start failing with every ERROR message they hold (error_sites, error_calls), those whose ERROR
lines are a request being served (serving_sites), and the logger tags:
a module's tag names a phase only when every function of it that logs belongs to that phase, and a
bare file name (vLLM's INFO format, `[default_loader.py:397]`) only when no other module of the tree
has that name with another phase (a plug-in's, vllm-ascend's, tpu-inference's or vLLM-Omni's, only when no module of vLLM's
has it). SGLang's lines carry no module: the INFO and DEBUG messages its phases' code logs name the phase
instead (messages, kept where every place that logs one has the same phase). The modules that log the
exception they caught (``logger.exception(e)``) are exception sites: their ERROR line before a traceback is
that exception's message. A spec entry that matches nothing in any snapshot is reported (the engine
renamed it: review the spec).
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "coldwatch" / "phases" / "rules" / "structure.toml"

# jit_compile is a kernel being built or tuned: it decides only where no engine phase frame is found
# (see the classifier); the others nest by start-up order (a repack inside a load, a capture inside a
# draft worker's init: the later phase is the one the start was in).

# (module path prefix, phase): every module under it belongs to the phase as a whole
# (module path prefix, function-name regex, phase): functions of mixed modules
SPEC: dict[str, dict[str, list[tuple[str, ...]]]] = {
    "sglang": {
        "root": [("python/",)],
        "modules": [
            ("sglang/srt/model_loader/", "weight_load"),
            ("sglang/multimodal_gen/runtime/loader/", "weight_load"),  # the diffusion server's component loaders
            ("sglang/multimodal_gen/runtime/server_warmup.py", "warmup"),  # its warm-up requests
            ("sglang/srt/distributed/bootstrap.py", "dist_init"),
            ("sglang/srt/model_executor/model_runner_components/load_model_utils.py", "weight_load"),
            ("sglang/srt/model_executor/model_runner_components/remote_instance_weight_transporter.py", "weight_load"),
            ("sglang/srt/model_executor/model_runner_components/cuda_graph_setup.py", "graph_capture"),
            ("sglang/srt/model_executor/model_runner_components/kv_pool_runtime.py", "kv_alloc"),
            ("sglang/srt/model_executor/pool_configurator.py", "kv_alloc"),
            ("sglang/srt/model_executor/cuda_graph_runner.py", "graph_capture"),
            ("sglang/srt/model_executor/piecewise_cuda_graph_runner.py", "graph_capture"),
            ("sglang/srt/model_executor/cpu_graph_runner.py", "graph_capture"),
            ("sglang/srt/model_executor/npu_graph_runner.py", "graph_capture"),
            ("sglang/srt/model_executor/runner/base_cuda_graph_runner.py", "graph_capture"),
            ("sglang/srt/model_executor/runner/decode_cuda_graph_runner.py", "graph_capture"),
            ("sglang/srt/model_executor/runner/prefill_cuda_graph_runner.py", "graph_capture"),
            ("sglang/srt/model_executor/runner/flashinfer_autotune.py", "jit_compile"),
            ("sglang/srt/model_executor/runner_backend/", "graph_capture"),
            ("sglang/srt/mem_cache/kv_cache_configurator.py", "kv_alloc"),
            ("sglang/srt/mem_cache/kv_cache_builder.py", "kv_alloc"),
            ("sglang/srt/mem_cache/allocation_sizing.py", "kv_alloc"),
            ("sglang/srt/compilation/", "jit_compile"),
            ("sglang/srt/layers/deep_gemm_wrapper/compile_utils.py", "jit_compile"),
            ("sglang/jit_kernel/", "jit_compile"),
            # the draft model's own graph runners are part of setting the draft up
            ("sglang/srt/speculative/eagle_draft_cuda_graph_runner.py", "draft_init"),
            ("sglang/srt/speculative/eagle_draft_extend_cuda_graph_runner.py", "draft_init"),
            ("sglang/srt/speculative/frozen_kv_mtp_cuda_graph_runner.py", "draft_init"),
            ("sglang/srt/speculative/multi_layer_eagle_draft_extend_cuda_graph_runner.py", "draft_init"),
            ("sglang/srt/speculative/multi_layer_draft_forward_cg.py", "draft_init"),
            # other devices' graph runners (Ascend NPU, Intel XPU); the drafts' own are the draft's set-up
            ("sglang/srt/hardware_backend/npu/graph_runner/", "graph_capture"),
            ("sglang/srt/hardware_backend/npu/graph_runner/eagle_draft_extend_npu_graph_runner.py", "draft_init"),
            ("sglang/srt/hardware_backend/npu/graph_runner/eagle_draft_npu_graph_runner.py", "draft_init"),
            ("sglang/srt/hardware_backend/npu/graph_runner/multi_layer_eagle_draft_extend_npu_graph_runner.py", "draft_init"),
            ("sglang/srt/hardware_backend/xpu/graph_runner/", "graph_capture"),
        ],
        "functions": [
            # the diffusion server: its pipeline loads its components (text encoder, VAE, transformer) and
            # builds its own parallel groups
            (
                "sglang/multimodal_gen/runtime/pipelines_core/composed_pipeline_base.py",
                r"load_modules|_load_config|_resolve_component_path",
                "weight_load",
            ),
            ("sglang/multimodal_gen/runtime/distributed/parallel_state.py", r"(?:maybe_)?init_\w+|initialize_model_parallel", "dist_init"),
            ("sglang/srt/model_executor/model_runner.py", r"init_torch_distributed", "dist_init"),
            ("sglang/srt/model_executor/model_runner.py", r"load_model|init_lora_manager|load_lora_adapter\w*", "weight_load"),
            # the kernels' warm-up before the memory pools: FlashInfer's autotune ('Running FlashInfer autotune'),
            # which the log's own lines read as jit_compile too
            ("sglang/srt/model_executor/model_runner.py", r"kernel_warmup|_flashinfer_autotune", "jit_compile"),
            (
                "sglang/srt/model_executor/model_runner.py",
                r"init_memory_pool|alloc_memory_pool|profile_max_num_token|init_kv_cache_configurator|_init_post_memory_pool_components|configure_kv_cache_dtype",
                "kv_alloc",
            ),
            (
                "sglang/srt/model_executor/model_runner.py",
                r"init_cuda_graphs|init_device_graphs|init_decode_cuda_graph|init_prefill_cuda_graph|init_piecewise_cuda_graphs|post_capture_resize_kv_pool",
                "graph_capture",
            ),
            ("sglang/srt/managers/scheduler.py", r"maybe_init_draft_worker|init_draft_worker", "draft_init"),
            (
                "sglang/srt/managers/scheduler.py",
                r"init_memory_pools|init_target_memory_pool|init_memory_pool_and_cache|init_cache_with_memory_pool",
                "kv_alloc",
            ),
            # a disaggregated (PD) node registers its KV pool's buffers with the transfer engine (NIXL,
            # Mooncake, ...) as the KV manager is made: part of the KV cache's set-up
            ("sglang/srt/disaggregation/", r"_init_kv_manager|register_buffer_to_engine", "kv_alloc"),
            ("sglang/srt/managers/scheduler.py", r"init_all_cuda_graphs", "graph_capture"),
            ("sglang/srt/managers/scheduler.py", r"event_loop_\w+|run_batch", "warmup"),
            ("sglang/srt/managers/scheduler_pp_mixin.py", r"event_loop_\w+", "warmup"),
            ("sglang/srt/entrypoints/http_server.py", r"_wait_and_warmup|_execute_server_warmup|_warmup\w*", "warmup"),
            (
                "sglang/srt/distributed/parallel_state.py",
                r"init_distributed_environment|initialize_model_parallel|ensure_model_parallel_initialized|init_model_parallel_group|init_world_group|__init__",
                "dist_init",
            ),
            ("sglang/srt/distributed/device_communicators/", r"__init__", "dist_init"),
            ("sglang/srt/speculative/", r"__init__|_?init_\w*|load_\w+|_?load_draft\w*|capture\w*", "draft_init"),
            (
                "sglang/srt/layers/quantization/",
                r"process_weights_after_loading|\w*_for_marlin\w*|marlin_\w*permute\w*|\w*marlin\w*repack\w*|repack\w*|\w*shuffle\w*weight\w*",
                "marlin_repack",
            ),
            (
                "sglang/srt/layers/moe/",
                r"process_weights_after_loading|\w*_for_marlin\w*|\w*marlin\w*repack\w*|\w*shuffle\w*weight\w*",
                "marlin_repack",
            ),
            # the model is built before its weights are read: a layer allocates its parameters (a quantization
            # method's create_weights), an MoE layer makes its token dispatcher (DeepEP, mori: their buffers
            # and transport) as it is constructed
            ("sglang/srt/layers/", r"create_weights", "weight_load"),
            ("sglang/srt/layers/moe/", r"__init__|create_moe_dispatcher", "weight_load"),
            # a HiCache storage backend (hf3fs, Mooncake, file) is made with the hierarchical cache, after
            # the memory pools
            ("sglang/srt/mem_cache/storage/", r"__init__|create_backend|_create_\w*backend|from_env_config|create_\w+_client", "kv_alloc"),
        ],
    },
    "vllm": {
        "root": [("",)],
        "modules": [
            ("vllm/model_executor/model_loader/", "weight_load"),
            ("vllm/model_executor/warmup/", "jit_compile"),
            ("vllm/compilation/", "jit_compile"),
            # the graph wrappers and the compiled model's call run at every forward (profile, capture,
            # serving): no phase of their own, the caller's decides
            ("vllm/compilation/cuda_graph.py", ""),
            ("vllm/compilation/breakable_cudagraph.py", ""),
            ("vllm/compilation/base_static_graph.py", ""),
            ("vllm/compilation/decorators.py", ""),
            ("vllm/v1/core/kv_cache_utils.py", "kv_alloc"),
            ("vllm/v1/worker/gpu/cudagraph_utils.py", "graph_capture"),
            ("vllm/v1/worker/gpu/warmup.py", "warmup"),
            ("vllm/worker/cache_engine.py", "kv_alloc"),
        ],
        "functions": [
            (
                "vllm/distributed/parallel_state.py",
                r"init_distributed_environment|initialize_model_parallel|ensure_model_parallel_initialized|init_model_parallel_group|init_world_group|__init__",
                "dist_init",
            ),
            ("vllm/distributed/device_communicators/", r"__init__", "dist_init"),
            # (init_device sets the device and checks free memory before it: not dist_init as a whole)
            ("vllm/v1/worker/gpu_worker.py", r"init_worker_distributed_environment", "dist_init"),
            ("vllm/v1/worker/gpu_worker.py", r"load_model|reload_weights", "weight_load"),
            # (determine_available_memory profiles a dummy forward to size the KV cache: model_runner profile_run)
            ("vllm/v1/worker/gpu_worker.py", r"initialize_from_config|initialize_cache|determine_available_memory", "kv_alloc"),
            ("vllm/v1/worker/gpu_model_runner.py", r"load_model|reload_weights", "weight_load"),
            (
                "vllm/v1/worker/gpu_model_runner.py",
                r"initialize_kv_cache\w*|_allocate_kv_cache_tensors|_reshape_kv_cache_tensors|may_reinitialize_input_batch|initialize_attn_backend|get_attn_backends_for_group|initialize_metadata_builders|profile_run",
                "kv_alloc",
            ),
            (
                "vllm/v1/worker/gpu_model_runner.py",
                r"capture_model|_capture_cudagraphs|_warmup_and_capture",
                "graph_capture",
            ),
            ("vllm/v1/worker/gpu/model_runner.py", r"load_model|reload_weights", "weight_load"),
            ("vllm/v1/worker/gpu/model_runner.py", r"initialize_kv_cache\w*", "kv_alloc"),
            ("vllm/v1/worker/gpu/model_runner.py", r"capture_model", "graph_capture"),
            # the graphs' memory measured to size the KV cache (determine_available_memory, 2026: the log's
            # 'Profiling CUDA graph memory: PIECEWISE=51 ...', read as kv_alloc): part of the sizing
            ("vllm/v1/worker/gpu_model_runner.py", r"profile_cudagraph_memory", "kv_alloc"),
            ("vllm/v1/worker/gpu/model_runner.py", r"profile_cudagraph_memory", "kv_alloc"),
            ("vllm/v1/engine/core.py", r"run_busy_loop", "warmup"),
            # EngineCore sizes the KV cache and has the workers allocate it (then capture and warm up, inside)
            ("vllm/v1/engine/core.py", r"_initialize_kv_caches", "kv_alloc"),
            ("vllm/v1/worker/worker_base.py", r"initialize_from_config", "kv_alloc"),
            # Ray's cluster and placement group (vllm/executor/ray_utils.py initialize_ray_cluster,
            # _wait_until_pg_ready) are the workers' resources being reserved before any of them runs:
            # no phase of their own, so a failure there is in `starting` (not mapped on purpose)
            # KV connectors (offload, disaggregated prefill) register the allocated caches
            ("vllm/distributed/kv_transfer/", r"register_kv_caches|register_cross_layers_kv_cache", "kv_alloc"),
            ("vllm/v1/spec_decode/", r"load_model|_get_model|__init__|\w*capture\w*|initialize_cudagraph\w*", "draft_init"),
            # the V2 model runner's speculators (vllm/v1/worker/gpu/spec_decode/: MTP, EAGLE), loaded and
            # captured by the runner after the target
            (
                "vllm/v1/worker/gpu/spec_decode/",
                r"load_model|load_draft_model|load_eagle_model|_get_model|__init__|\w*capture\w*",
                "draft_init",
            ),
            # the model is built before its weights are read: a layer allocates its parameters (a quantization
            # method's create_weights)
            ("vllm/model_executor/layers/", r"create_weights", "weight_load"),
            ("vllm/model_executor/model_loader/utils.py", r"process_weights_after_loading", "marlin_repack"),
            (
                "vllm/model_executor/layers/quantization/",
                r"process_weights_after_loading|\w*_for_marlin\w*|marlin_\w*permute\w*|\w*marlin\w*repack\w*|\w*repack\w*|\w*shuffle\w*weight\w*",
                "marlin_repack",
            ),
            (
                "vllm/model_executor/layers/fused_moe/",
                r"process_weights_after_loading|\w*_for_marlin\w*|\w*marlin\w*repack\w*|\w*shuffle\w*weight\w*",
                "marlin_repack",
            ),
            # V0 (vLLM before 0.11)
            ("vllm/worker/worker.py", r"init_worker_distributed_environment", "dist_init"),
            ("vllm/worker/worker.py", r"load_model", "weight_load"),
            ("vllm/worker/worker.py", r"determine_num_available_blocks|initialize_cache|_init_cache_engine", "kv_alloc"),
            ("vllm/worker/worker.py", r"_warm_up_model", "graph_capture"),
            # every V0 platform worker sizes its KV cache the same way (xpu_worker, cpu_worker, hpu_worker ...)
            ("vllm/worker/", r"determine_num_available_blocks", "kv_alloc"),
            ("vllm/worker/model_runner.py", r"load_model", "weight_load"),
            ("vllm/worker/model_runner.py", r"capture_model", "graph_capture"),
            ("vllm/worker/model_runner.py", r"profile_run", "kv_alloc"),
            ("vllm/engine/llm_engine.py", r"_initialize_kv_caches", "kv_alloc"),
            ("vllm/spec_decode/", r"init_device|load_model|__init__", "draft_init"),
        ],
        # modules whose ERROR lines are the start failing (judged from their ERROR sites, which the map
        # lists for review): every ERROR-level call of vllm/v1/engine/core.py ends the engine or a call
        # (run_engine_core's 'EngineCore failed to start.', a failed utility call, a request's error;
        # before the server is up there are no requests); vllm/worker/worker_base.py logs ERROR only in
        # execute_method's except block, before it re-raises. A bare file name counts when every other
        # module of that name logs nothing at ERROR level.
        "error_sites": [("vllm/v1/engine/core.py",), ("vllm/worker/worker_base.py",)],
        # modules whose ERROR lines are a request being served (the map keeps those whose every
        # ERROR-level call is in a request's handler, never in __init__): the OpenAI-compatible servers'
        # serving modules ('Error in chat completion stream generator.', 'Error with model %s'). vLLM's
        # API server answers only once its engine is up, so such a line says the server was ready.
        "serving_sites": [(r"vllm/entrypoints/(?:\w+/)*serving(?:_\w+)?\.py",)],
    },
    # vLLM's Ascend plugin (NPU): its own runner and worker, logged in vLLM's format
    "vllm_ascend": {
        "root": [("",)],
        "modules": [
            ("vllm_ascend/model_loader/", "weight_load"),
            ("vllm_ascend/compilation/", "jit_compile"),
            ("vllm_ascend/compilation/acl_graph.py", ""),
            ("vllm_ascend/worker/v2/aclgraph_utils.py", "graph_capture"),
        ],
        "functions": [
            ("vllm_ascend/distributed/parallel_state.py", r"init_\w+|initialize_\w+|__init__", "dist_init"),
            ("vllm_ascend/distributed/device_communicators/", r"__init__", "dist_init"),
            ("vllm_ascend/worker/worker.py", r"_?init_worker_distributed_environment", "dist_init"),
            ("vllm_ascend/worker/worker.py", r"load_model|reload_weights", "weight_load"),
            ("vllm_ascend/worker/worker.py", r"initialize_from_config|initialize_cache", "kv_alloc"),
            ("vllm_ascend/worker/worker.py", r"_warm_up_atb", "warmup"),
            ("vllm_ascend/worker/model_runner_v1.py", r"load_model", "weight_load"),
            (
                "vllm_ascend/worker/model_runner_v1.py",
                r"initialize_kv_cache\w*|_allocate_kv_cache_tensors|_reshape_kv_cache_tensors|may_reinitialize_input_batch|initialize_attn_backend",
                "kv_alloc",
            ),
            ("vllm_ascend/worker/model_runner_v1.py", r"capture_model|_capture_\w+", "graph_capture"),
            ("vllm_ascend/worker/v2/model_runner.py", r"initialize_kv_cache\w*", "kv_alloc"),
            ("vllm_ascend/spec_decode/", r"load_model|_get_model|__init__|\w*capture\w*", "draft_init"),
            ("vllm_ascend/quantization/", r"process_weights_after_loading|\w*repack\w*|\w*shuffle\w*weight\w*", "marlin_repack"),
        ],
    },
    # vLLM's TPU plug-in (JAX): the runner's compilation manager precompiles every shape with XLA (the
    # TPU's JIT, run from capture_model: 'Precompile worker0 sample --> ...'); the weights are loaded and
    # padded for the TPU's layout by models/ and layers/common/process_weights/
    "tpu_inference": {
        "root": [("",)],
        "modules": [
            ("tpu_inference/runner/compilation_manager.py", "jit_compile"),
            ("tpu_inference/models/common/model_loader.py", "weight_load"),
            ("tpu_inference/models/jax/utils/weight_utils.py", "weight_load"),
            ("tpu_inference/layers/common/process_weights/", "weight_load"),
            ("tpu_inference/runner/kv_cache_manager.py", "kv_alloc"),
            ("tpu_inference/runner/kv_cache.py", "kv_alloc"),
        ],
        "functions": [
            ("tpu_inference/distributed/jax_parallel_state.py", r"init_\w+|initialize_\w+|__init__", "dist_init"),
            ("tpu_inference/worker/tpu_worker.py", r"init_device|_setup_dp_chip_isolation", "dist_init"),
            ("tpu_inference/worker/tpu_worker.py", r"load_model", "weight_load"),
            ("tpu_inference/worker/tpu_worker.py", r"initialize_from_config|initialize_cache|determine_available_memory", "kv_alloc"),
            ("tpu_inference/worker/tpu_worker.py", r"compile_or_warm_up_model", "jit_compile"),
            ("tpu_inference/runner/tpu_runner.py", r"load_model", "weight_load"),
            ("tpu_inference/runner/tpu_runner.py", r"_init_mesh|_create_\w*mesh", "dist_init"),
            ("tpu_inference/runner/tpu_runner.py", r"initialize_kv_cache", "kv_alloc"),
            ("tpu_inference/runner/tpu_runner.py", r"capture_model", "jit_compile"),
            ("tpu_inference/spec_decode/", r"load_model|__init__", "draft_init"),
        ],
    },
    # vLLM-Omni (multi-stage omni-modal and diffusion serving on vLLM, logged in vLLM's format): its
    # diffusion stage's worker and runner (device and groups, the pipeline's load, the transformer's
    # torch.compile, the engine's dummy run before serving), its diffusion loaders, and its LLM stages'
    # workers and runners over vLLM's (their init_device checks free memory as vLLM's does: no phase as a whole)
    "vllm_omni": {
        "root": [("",)],
        "modules": [
            ("vllm_omni/diffusion/model_loader/", "weight_load"),
            ("vllm_omni/model_executor/model_loader/", "weight_load"),
            ("vllm_omni/diffusion/compile.py", "jit_compile"),
        ],
        "functions": [
            ("vllm_omni/diffusion/distributed/parallel_state.py", r"init_\w+|initialize_\w+", "dist_init"),
            ("vllm_omni/diffusion/worker/", r"init_device", "dist_init"),
            ("vllm_omni/diffusion/worker/", r"load_model", "weight_load"),
            ("vllm_omni/diffusion/worker/diffusion_model_runner.py", r"_compile_transformer", "jit_compile"),
            ("vllm_omni/diffusion/diffusion_engine.py", r"_dummy_run", "warmup"),
            ("vllm_omni/worker/", r"load_model", "weight_load"),
            ("vllm_omni/worker/", r"determine_available_memory|profile", "kv_alloc"),
            ("vllm_omni/platforms/npu/worker/", r"load_model", "weight_load"),
        ],
    },
}

_DEF = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass
class Tree:
    """What one engine's snapshots hold: module path -> (function -> functions that log in it)."""

    modules: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    logging: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    errors: dict[str, dict[str, set[str]]] = field(default_factory=lambda: defaultdict(dict))
    """module -> function -> the messages it logs at ERROR level (logger.error/exception/critical)."""
    raises: dict[str, bool] = field(default_factory=dict)
    """module -> whether every logger.exception() call of it logs the caught exception itself
    (``logger.exception(e)``: its ERROR line is the exception's message, its traceback follows); absent
    when the module calls logger.exception() nowhere."""
    messages: dict[str, set[tuple[str, tuple[str, ...]]]] = field(default_factory=lambda: defaultdict(set))
    templates: dict[str, set[tuple[str, tuple[str, ...]]]] = field(default_factory=lambda: defaultdict(set))
    """A message with a short literal start, as its literal parts joined by '{}' -> where it is logged."""
    """A logged message's literal head -> where it is logged (module, enclosing defs outermost first)."""
    raised: dict[str, set[tuple[str, tuple[str, ...]]]] = field(default_factory=lambda: defaultdict(set))
    """An exception message's literal head -> where it is raised (module, enclosing defs outermost first)."""
    sources: list[str] = field(default_factory=list)


def _git(gitdir: str, *args: str, data: bytes | None = None) -> bytes:
    return subprocess.run(["git", "--git-dir", gitdir, *args], input=data, capture_output=True, check=True).stdout


def _logs(node: ast.AST) -> bool:
    """The function body calls a logger (logger.info(...), log_info_on_rank0(logger, ...), print_warning_once)."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            f = sub.func
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in ("logger", "log", "_logger"):
                return True
            if isinstance(f, ast.Name) and f.id.startswith(("log_info_on_rank0", "print_warning_once", "print_info_once")):
                return True
    return False


_ERROR_LEVEL = ("error", "exception", "critical")


def _errors(node: ast.AST) -> set[str]:
    """The messages (format strings) a function logs at ERROR level or above."""
    out: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            f = sub.func
            if (
                isinstance(f, ast.Attribute)
                and f.attr in _ERROR_LEVEL
                and isinstance(f.value, ast.Name)
                and f.value.id in ("logger", "log", "_logger")
            ):
                arg = sub.args[0] if sub.args else None
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    out.add(arg.value)
                elif isinstance(arg, ast.JoinedStr):
                    out.add("".join(v.value if isinstance(v, ast.Constant) else "{}" for v in arg.values))
                else:
                    out.add("<computed message>")
    return out


_LOG_FUNCS = {"log_info_on_rank0": 1, "print_info_once": 0}
"""The step's own words at INFO or DEBUG (a warning or an error can be logged from anywhere a step's code
is called: a config check, a fallback decided at start)."""
_NOT_DOING = re.compile(r"(?i)\b(?:disabl\w*|skip\w*|not|no)\b")
"""A message that says a step will not run ('Disable prefill CUDA graph because ...') does not place the start in it."""
MESSAGE_HEAD = 20
"""The shortest literal head a message map keeps: shorter ones ('Using {backend}', 'Init {}') say too little."""


_CONVERSION = re.compile(r"%[-#0 +]*(?:\d+|\*)?(?:\.\d+)?[sdifrxXeEgGc]")
_FIELD = re.compile(r"\{[^{}]*\}")


def _segments(arg: ast.AST | None) -> list[str]:
    """A logged message's literal parts, split where a value goes in (a %-conversion, an f-string's field, a
    str.format template's field), up to its first line's end; [] when its start is not literal."""
    if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute) and arg.func.attr == "format":
        fmt = arg.func.value
        parts = _FIELD.split(fmt.value) if isinstance(fmt, ast.Constant) and isinstance(fmt.value, str) else []
    elif isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        parts = [p.replace("%%", "%") for p in _CONVERSION.split(arg.value)]
    elif isinstance(arg, ast.JoinedStr):
        parts = [""]
        for v in arg.values:
            if isinstance(v, ast.Constant):
                parts[-1] += str(v.value)
            else:
                parts.append("")
        parts = [q for p in parts for q in _CONVERSION.split(p)]  # an f-string handing %-values to the logger too
    else:
        return []
    out: list[str] = []
    for part in parts:
        out.append(part.split("\n", 1)[0])
        if "\n" in part:
            break
    return out


def _head(arg: ast.AST | None) -> str:
    """A logged message's literal start (before its first value)."""
    parts = _segments(arg)
    return parts[0].strip() if parts else ""


def _logged(node: ast.AST) -> list[str]:
    """The literal parts of the message a logger call logs, or [] (not a logger call, no literal start, or a
    message that says a step will not run)."""
    if not isinstance(node, ast.Call):
        return []
    f = node.func
    if (
        isinstance(f, ast.Attribute)
        and f.attr in ("info", "debug")
        and isinstance(f.value, ast.Name)
        and f.value.id in ("logger", "log", "_logger")
    ):
        parts = _segments(node.args[0] if node.args else None)
    elif isinstance(f, ast.Name) and f.id in _LOG_FUNCS and len(node.args) > _LOG_FUNCS[f.id]:
        parts = _segments(node.args[_LOG_FUNCS[f.id]])
    else:
        return []
    return [] if not parts or not parts[0].strip() or _NOT_DOING.search(" ".join(parts)) else parts


def _logs_exception(source: bytes) -> bool | None:
    """Whether every ``logger.exception(...)`` of a module logs the exception its handler caught (``e``,
    ``repr(e)``, ``str(e)``); None when it has none."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    seen: list[bool] = []
    for handler in ast.walk(tree):
        if not isinstance(handler, ast.ExceptHandler):
            continue
        for sub in ast.walk(handler):
            f = sub.func if isinstance(sub, ast.Call) else None
            if not (
                isinstance(f, ast.Attribute)
                and f.attr == "exception"
                and isinstance(f.value, ast.Name)
                and f.value.id in ("logger", "log", "_logger")
            ):
                continue
            arg = sub.args[0] if sub.args else None  # type: ignore[union-attr]
            if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Name) and arg.func.id in ("repr", "str") and arg.args:
                arg = arg.args[0]
            seen.append(isinstance(arg, ast.Name) and handler.name is not None and arg.id == handler.name)
    return all(seen) if seen else None


def template(parts: list[str]) -> str:
    """A message whose literal start is short ('Loaded %s: %s (%s version). model size: %s GB'), as its
    literal parts with '{}' where a value goes, when they hold MESSAGE_HEAD characters; '' otherwise (and for
    a message whose own text holds '{}', which would read as a value)."""
    if len(parts) < 2 or sum(len(p.strip()) for p in parts) < MESSAGE_HEAD or " " not in parts[0].lstrip():
        return ""
    return "" if any("{}" in p for p in parts) else "{}".join(parts)


def messages(source: bytes) -> set[tuple[str, str, tuple[str, ...]]]:
    """Every message a module logs with a literal head of MESSAGE_HEAD characters or more ('head'), or with
    as many literal characters in all its parts ('template', '{}' where a value goes), with the defs it is logged in
    (outermost first)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set()
    out: set[tuple[str, str, tuple[str, ...]]] = set()

    def visit(node: ast.AST, stack: tuple[str, ...]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, _DEF):
                visit(child, (*stack, child.name))
                continue
            parts = _logged(child)
            if parts and len(head := parts[0].strip()) >= MESSAGE_HEAD:
                out.add(("head", head, stack))
            elif parts and (rx := template([parts[0].lstrip(), *parts[1:]])):
                out.add(("template", rx, stack))
            visit(child, stack)

    visit(tree, ())
    return out


def raised(source: bytes) -> set[tuple[str, tuple[str, ...]]]:
    """Every exception message a module raises (``raise X("...")``, ``assert cond, "..."``) with a literal
    head of MESSAGE_HEAD characters or more, with the defs it is raised in (outermost first)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set()
    out: set[tuple[str, tuple[str, ...]]] = set()

    def visit(node: ast.AST, stack: tuple[str, ...]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, _DEF):
                visit(child, (*stack, child.name))
                continue
            arg: ast.AST | None = None
            if isinstance(child, ast.Raise) and isinstance(child.exc, ast.Call) and child.exc.args:
                arg = child.exc.args[0]
            elif isinstance(child, ast.Assert):
                arg = child.msg
            if arg is not None and len(head := _head(arg)) >= MESSAGE_HEAD:
                out.add((head, stack))
            visit(child, stack)

    visit(tree, ())
    return out


def _functions(source: bytes) -> tuple[set[str], set[str], dict[str, set[str]]]:
    """Every def in a module (methods and nested ones by their own name), those whose body logs, and the
    messages each top-level def logs at ERROR level."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set(), set(), {}
    names: set[str] = set()
    logging: set[str] = set()
    errors: dict[str, set[str]] = {}

    def visit(node: ast.AST, top: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, _DEF):
                names.add(child.name)
                owner = top or child.name
                if top is None and _logs(child):
                    logging.add(owner)
                if top is None and (msgs := _errors(child)):
                    errors.setdefault(owner, set()).update(msgs)
                visit(child, owner)
            else:
                visit(child, top)

    visit(tree, None)
    return names, logging, errors


def read_tree(engine: str, sources: list[str]) -> Tree:
    tree = Tree()
    for src in sources:
        gitdir, _, commit = src.partition("@")
        commit = commit or "HEAD"
        full = _git(gitdir, "rev-parse", commit).decode().strip()
        tree.sources.append(f"{Path(gitdir).parent.name.replace('+', '/')}@{full}")
        prefix = SPEC[engine]["root"][0][0]
        listing = _git(gitdir, "ls-tree", "-r", "--name-only", full, "--", prefix + engine + "/").decode().splitlines()
        paths = [p for p in listing if p.endswith(".py")]
        # SGLang's lines name no module: its messages are read from every module (a message logged in
        # two places of different phases names neither); vLLM's modules, every one, for the tags whose
        # ERROR line is an exception's own message
        wanted = paths
        batch = "".join(f"{full}:{p}\n" for p in wanted).encode()
        out = _git(gitdir, "cat-file", "--batch", data=batch)
        i = 0
        for p in wanted:
            header_end = out.index(b"\n", i)
            size = int(out[i:header_end].split()[2])
            body = out[header_end + 1 : header_end + 1 + size]
            i = header_end + 1 + size + 1
            mod = p[len(prefix) :]
            for head, stack in raised(body):
                tree.raised[head].add((mod, stack))
            if engine == "sglang":
                for form, key, stack in messages(body):
                    (tree.messages if form == "head" else tree.templates)[key].add((mod, stack))
            elif b"logger.exception(" in body and (raises := _logs_exception(body)) is not None:
                tree.raises[mod] = tree.raises.get(mod, True) and raises
            if not _relevant(engine, mod):
                continue
            names, logging, errors = _functions(body)
            tree.modules[mod] |= names
            tree.logging[mod] |= logging
            for fn, msgs in errors.items():
                tree.errors[mod].setdefault(fn, set()).update(msgs)
        for p in paths:  # every module's name, for the bare-file-name tags
            tree.modules.setdefault(p[len(prefix) :], set())
    return tree


def _relevant(engine: str, mod: str) -> bool:
    spec = SPEC[engine]
    names = {e[0].rsplit("/", 1)[-1] for e in spec.get("error_sites", [])}  # and every module named like one
    return (
        any(re.fullmatch(p, mod) for (p,) in spec.get("serving_sites", []))
        or any(mod.startswith(m[0]) for m in spec["modules"])
        or any(mod.startswith(f[0]) for f in spec["functions"])
        or mod.rsplit("/", 1)[-1] in names
    )


def exception_sites(tree: Tree) -> dict[str, str]:
    """The logger tags whose ERROR line, right before a traceback at the same tag, is the exception's own
    message (tag -> module): modules that log a caught exception with ``logger.exception(e)``. A bare
    file name only when every module of that name that calls logger.exception() does so."""
    tags: dict[str, str] = {}
    for mod, raises in sorted(tree.raises.items()):
        if not raises:
            continue
        tags[_shrink(mod)] = mod
        name = mod.rsplit("/", 1)[-1]
        if all(r for m, r in tree.raises.items() if m.rsplit("/", 1)[-1] == name):
            tags[name] = mod
    return tags


def error_sites(engine: str, tree: Tree) -> tuple[dict[str, str], dict[str, str]]:
    """The logger tags whose ERROR lines are the start failing (tag -> module), and every ERROR-level
    message of those modules ('module::function' -> messages) for review."""
    tags: dict[str, str] = {}
    calls: dict[str, str] = {}
    for (mod,) in SPEC[engine].get("error_sites", []):
        if mod not in tree.modules:
            print(f"{engine}: error site {mod} is in none of these snapshots", file=sys.stderr)
            continue
        tags[_shrink(mod)] = mod
        name = mod.rsplit("/", 1)[-1]
        sites = {m for (m,) in SPEC[engine]["error_sites"]}
        others = [m for m in tree.modules if m.rsplit("/", 1)[-1] == name and m not in sites]
        if not any(tree.errors.get(m) for m in others):
            tags[name] = mod
        for fn, msgs in sorted(tree.errors.get(mod, {}).items()):
            calls[f"{mod}::{fn}"] = " | ".join(sorted(msgs))
    return tags, calls


def serving_sites(engine: str, tree: Tree) -> dict[str, str]:
    """The logger tags whose ERROR lines are a request being served (tag -> module): the modules the
    spec's patterns match whose ERROR-level calls are all in request handlers (none in ``__init__``), by
    their DEBUG-format path, their path under vllm/, and their bare file name when every module of that
    name that logs at ERROR level is one."""
    kept = {
        mod
        for mod in tree.modules
        if any(re.fullmatch(p, mod) for (p,) in SPEC[engine].get("serving_sites", []))
        and tree.errors.get(mod)
        and "__init__" not in tree.errors[mod]
    }
    tags: dict[str, str] = {}
    for mod in sorted(kept):
        tags[_shrink(mod)] = mod
        tags[mod.split("/", 1)[1]] = mod
        name = mod.rsplit("/", 1)[-1]
        if all(m in kept for m in tree.modules if m.rsplit("/", 1)[-1] == name and tree.errors.get(m)):
            tags.setdefault(name, mod)
    return tags


def build(engine: str, tree: Tree) -> tuple[dict[str, str], dict[str, str], dict[str, str], list[str]]:
    spec = SPEC[engine]
    modules: dict[str, str] = {}
    unused: list[str] = []
    for prefix, _phase in spec["modules"]:  # a prefix no snapshot holds is reported
        hits = [m for m in tree.modules if m.startswith(prefix) and tree.modules[m] is not None]
        if not hits:
            unused.append(f"module {prefix}")
    for mod in sorted(tree.modules):
        best = max((p for p in spec["modules"] if mod.startswith(p[0])), key=lambda p: len(p[0]), default=None)
        if best is not None and best[1] and mod.endswith(".py"):
            modules[mod] = best[1]
    functions: dict[str, str] = {}
    for prefix, pattern, phase in spec["functions"]:
        rx = re.compile(f"(?:{pattern})$")
        n = 0
        for mod in sorted(tree.modules):
            if not mod.startswith(prefix) or modules.get(mod) == phase or _excluded(engine, mod):
                continue
            for name in sorted(tree.modules[mod]):
                key = f"{mod}::{name}"
                if rx.match(name) and key not in functions:
                    functions[key] = phase
                    n += 1
        if not n:
            unused.append(f"functions {prefix} {pattern}")
    tags: dict[str, str] = {}
    # a module's tag names a phase when every function of it that logs belongs to that one phase
    tag_phase: dict[str, str | None] = {}
    for mod in tree.modules:
        if mod in modules:
            tag_phase[mod] = modules[mod]
            continue
        logging = tree.logging.get(mod, set())
        phases = {functions.get(f"{mod}::{fn}") for fn in logging}
        tag_phase[mod] = phases.pop() if len(phases) == 1 and None not in phases and logging else None
    by_name: dict[str, set[str | None]] = defaultdict(set)
    for mod, phase in tag_phase.items():
        by_name[mod.rsplit("/", 1)[-1]].add(phase)
    for mod, phase in sorted(tag_phase.items()):
        if phase is None:
            continue
        tags[_shrink(mod)] = phase
        name = mod.rsplit("/", 1)[-1]
        if by_name[name] == {phase}:
            tags[name] = phase
    return modules, functions, tags, unused


_BUILDING = re.compile(r"(?i)compil|jit|autotun|tuning|build|warm ?up")
"""A JIT module's message that says a kernel is being built or tuned (the modules also wrap the kernels
they built, and log about them at every call)."""


def message_map(found: dict[str, set[tuple[str, tuple[str, ...]]]], modules: dict[str, str], functions: dict[str, str]) -> dict[str, str]:
    """A logged message (its literal head, or its template) -> the phase of every place that logs it (the
    innermost def of the map's functions, else the module's phase), kept only when every place has that one phase."""
    out: dict[str, str] = {}
    for head, places in found.items():
        phases: set[str | None] = set()
        for mod, stack in places:
            phase = next((functions[k] for fn in reversed(stack) if (k := f"{mod}::{fn}") in functions), None)
            phases.add(phase or modules.get(mod))
        if len(phases) == 1 and None not in phases:
            phase = phases.pop()
            if phase == "jit_compile" and not _BUILDING.search(head):
                continue  # a JIT kernel's wrapper speaking of something else (its backend, an override)
            out[head] = phase  # type: ignore[assignment]
    return out


def raise_map(found: dict[str, set[tuple[str, tuple[str, ...]]]], modules: dict[str, str], functions: dict[str, str]) -> dict[str, str]:
    """An exception message (its literal head) -> the phase of every place that raises it, as message_map;
    a place of no phase does not count against it when its function has the name of a placed one (the
    same step in another platform's worker: xpu_worker's determine_num_available_blocks beside worker.py's)."""
    out: dict[str, str] = {}
    for head, places in found.items():
        placed: dict[str, str | None] = {}
        loose: set[str] = set()
        for mod, stack in places:
            phase = next((functions[k] for fn in reversed(stack) if (k := f"{mod}::{fn}") in functions), None) or modules.get(mod)
            fn = stack[-1] if stack else "<module>"
            if phase is None:
                loose.add(fn)
            else:
                placed.setdefault(phase, fn)
        names = set(placed.values())
        if len(placed) == 1 and loose <= names:
            phase = next(iter(placed))
            if phase != "jit_compile" or _BUILDING.search(head):
                out[head] = phase
    return out


def _excluded(engine: str, mod: str) -> bool:
    """The module's most specific spec entry says it belongs to no phase."""
    best = max((p for p in SPEC[engine]["modules"] if mod.startswith(p[0])), key=lambda p: len(p[0]), default=None)
    return best is not None and not best[1]


def _shrink(mod: str) -> str:
    """vLLM's DEBUG-format file info (logging_utils/formatter.py shrink_path): 'model_executor/.../quantization/utils/fp8_utils.py'."""
    parts = mod.split("/")
    if parts and parts[0] == "vllm":
        parts = parts[1:]
    head = parts[:2] if parts and parts[0] == "v1" else parts[:1]
    rest = parts[len(head) :]
    return "/".join(head + (["..."] + rest[-2:] if len(rest) > 2 else rest))


def _toml_table(name: str, items: dict[str, str]) -> list[str]:
    out = [f"[{name}]"]
    out += [f"{json.dumps(k, ensure_ascii=False)} = {json.dumps(v, ensure_ascii=False)}" for k, v in sorted(items.items())]
    return out + [""]


def _engine_tables(engine: str, tree: Tree, trees: dict[str, Tree]) -> list[str]:
    """One engine's tables of the map (and its counts on stderr)."""
    lines: list[str] = []
    modules, functions, tags, unused = build(engine, tree)
    if engine not in ("sglang", "vllm") and "vllm" in trees:
        # a plug-in logs through vLLM's logger: its bare file name names a phase only when no module
        # of vLLM's has that name (vLLM's own v1/core/kv_cache_manager.py is not the TPU runner's)
        names = {m.rsplit("/", 1)[-1] for m in trees["vllm"].modules}
        tags = {k: v for k, v in tags.items() if "/" in k or k not in names}
    for u in unused:
        print(f"{engine}: spec entry matches nothing in these snapshots: {u}", file=sys.stderr)
    lines += [f"[{engine}]", "sources = [" + ", ".join(f'"{s}"' for s in tree.sources) + "]", ""]
    lines += _toml_table(f"{engine}.modules", modules)
    lines += _toml_table(f"{engine}.functions", functions)
    if engine != "sglang":  # vLLM's logger format (its plugins log through it)
        lines += _toml_table(f"{engine}.tags", tags)
    else:  # SGLang's lines carry no module: the messages its modules log
        msgs = message_map(tree.messages, modules, functions)
        lines += ["# a logged message's literal start -> the phase of every place that logs it"]
        lines += _toml_table(f"{engine}.messages", msgs)
        shapes = message_map(tree.templates, modules, functions)
        lines += ["# a message whose literal start is short, as its literal parts ('{}' where a value goes) -> the same"]
        lines += _toml_table(f"{engine}.templates", shapes)
    raises = raise_map(tree.raised, modules, functions)
    lines += ["# an exception message's literal start -> the phase of every place that raises it"]
    lines += _toml_table(f"{engine}.raises", raises)
    if engine != "sglang" and (raising := exception_sites(tree)):
        lines += ["# tags whose ERROR line before a traceback is the exception's own message (logger.exception(e))"]
        lines += _toml_table(f"{engine}.exception_sites", raising)
    if serving := serving_sites(engine, tree):
        lines += ["# tags whose ERROR lines are a request being served (the API server was up)"]
        lines += _toml_table(f"{engine}.serving_sites", serving)
    sites, calls = error_sites(engine, tree)
    if sites:
        lines += _toml_table(f"{engine}.error_sites", sites)
        lines += ["# every ERROR-level message of those modules, per function (review these per release)"]
        lines += _toml_table(f"{engine}.error_calls", calls)
    shown = f", {len(tags)} tags" if engine != "sglang" else f", {len(msgs)} messages, {len(shapes)} templates"
    shown += f", {len(raises)} raised messages"
    print(f"{engine}: {len(modules)} modules, {len(functions)} functions{shown}", file=sys.stderr)
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python scripts/structure_map.py")
    ap.add_argument("--sglang", action="append", default=[], metavar="GITDIR@COMMIT")
    ap.add_argument("--vllm", action="append", default=[], metavar="GITDIR@COMMIT")
    ap.add_argument("--vllm-ascend", dest="vllm_ascend", action="append", default=[], metavar="GITDIR@COMMIT")
    ap.add_argument("--tpu-inference", dest="tpu_inference", action="append", default=[], metavar="GITDIR@COMMIT")
    ap.add_argument("--vllm-omni", dest="vllm_omni", action="append", default=[], metavar="GITDIR@COMMIT")
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args(argv)
    if not a.sglang or not a.vllm:
        ap.error("give at least one snapshot of each engine (--sglang and --vllm)")
    lines = [
        "# GENERATED by scripts/structure_map.py from the engines' source; do not edit by hand (edit the",
        "# script's SPEC and rerun it per engine release). Module and function -> start-up phase, for",
        "# traceback frames ('.../sglang/srt/model_loader/loader.py in load_model'), and vLLM logger tag ->",
        "# phase ('[default_loader.py:397]', DEBUG format '[model_executor/.../model_loader/default_loader.py:397]').",
        "",
    ]
    trees = {engine: read_tree(engine, getattr(a, engine)) for engine in SPEC if getattr(a, engine)}
    args = [
        f"--{e.replace('_', '-')} <{src.split('@')[0]} git dir>@{src.split('@')[1][:12]}" for e, t in trees.items() for src in t.sources
    ]
    lines += ["# regenerate: python scripts/structure_map.py " + " ".join(args), ""]
    for engine, tree in trees.items():
        lines += _engine_tables(engine, tree, trees)
    a.out.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
