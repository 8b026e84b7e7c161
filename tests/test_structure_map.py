"""scripts/structure_map.py on small engine trees in real git repositories: modules under a phase
directory, functions of mixed modules, and logger tags only for modules whose logging functions all
belong to one phase (and bare file names only when no other module shares the name)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

from conftest import ROOT

SCRIPT = ROOT / "scripts" / "structure_map.py"


def _repo(root: Path, files: dict[str, str]) -> str:
    root.mkdir()
    for rel, body in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(body)
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "snapshot"], check=True)
    return f"{root / '.git'}@HEAD"


def _generate(tmp_path: Path, sglang: str, vllm: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    """Run the generator on one snapshot of each engine; the run and the map it wrote."""
    out = tmp_path / "structure.toml"
    run = subprocess.run(
        [sys.executable, str(SCRIPT), "--sglang", sglang, "--vllm", vllm, "--out", str(out)], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    return run, out


def test_the_generator_reads_modules_functions_and_logger_tags(tmp_path: Path) -> None:
    sglang = _repo(
        tmp_path / "sglang",
        {
            "python/sglang/srt/model_loader/loader.py": "def load_model():\n    pass\n",
            "python/sglang/srt/managers/scheduler.py": "class Scheduler:\n    def maybe_init_draft_worker(self):\n        pass\n    def run(self):\n        pass\n",
        },
    )
    vllm = _repo(
        tmp_path / "vllm",
        {
            "vllm/model_executor/model_loader/default_loader.py": "import logging\nlogger = logging.getLogger()\ndef load():\n    logger.info('x')\n",
            # logs in a load function and in a capture function: a line tagged with it names no phase
            "vllm/v1/worker/gpu_model_runner.py": (
                "class R:\n    def load_model(self):\n        logger.info('a')\n    def capture_model(self):\n        logger.info('b')\n"
            ),
            # logs only from its load function: its tag names weight_load
            "vllm/v1/worker/gpu_worker.py": "class W:\n    def load_model(self):\n        logger.info('a')\n    def other(self):\n        pass\n",
            # a second module named utils.py with another phase: the bare name is ambiguous
            "vllm/model_executor/model_loader/utils.py": "def f():\n    logger.info('x')\n",
            "vllm/utils.py": "def g():\n    logger.info('y')\n",
        },
    )
    run, out = _generate(tmp_path, sglang, vllm)
    data = tomllib.loads(out.read_text())
    sg, vl = data["sglang"], data["vllm"]
    assert sg["modules"]["sglang/srt/model_loader/loader.py"] == "weight_load"
    assert sg["functions"] == {"sglang/srt/managers/scheduler.py::maybe_init_draft_worker": "draft_init"}
    assert vl["functions"]["vllm/v1/worker/gpu_model_runner.py::capture_model"] == "graph_capture"
    assert vl["tags"]["default_loader.py"] == "weight_load"
    assert vl["tags"]["gpu_worker.py"] == "weight_load"
    assert "gpu_model_runner.py" not in vl["tags"]
    assert "utils.py" not in vl["tags"]
    assert vl["tags"]["model_executor/model_loader/utils.py"] == "weight_load"
    assert "spec entry matches nothing" in run.stderr  # this small tree lacks most of the spec: reported


def test_the_shipped_map_is_the_generators_format() -> None:
    data = tomllib.loads((ROOT / "src" / "coldwatch" / "phases" / "rules" / "structure.toml").read_text())
    assert {"sglang", "vllm", "vllm_ascend", "tpu_inference"} <= set(data)
    for engine in data.values():
        assert engine["sources"] and all("@" in s and len(s.split("@")[1]) == 40 for s in engine["sources"])
        assert all("::" in k for k in engine["functions"])


def test_the_generator_lists_vllms_fatal_error_sites_and_their_messages(tmp_path: Path) -> None:
    """The modules whose ERROR lines fail the start get their tags (the DEBUG path, and the bare name
    unless another module of that name logs at ERROR level), with every ERROR message listed for review."""
    sglang = _repo(tmp_path / "sglang", {"python/sglang/srt/model_loader/loader.py": "def load_model():\n    pass\n"})
    vllm = _repo(
        tmp_path / "vllm",
        {
            "vllm/v1/engine/core.py": (
                "def run_engine_core():\n    try:\n        pass\n    except Exception:\n"
                "        logger.exception('EngineCore failed to start.')\n        raise\n"
                "def step():\n    logger.info('not an error')\n"
            ),
            "vllm/worker/worker_base.py": "def execute_method(m):\n    msg = f'Error executing method {m!r}.'\n    logger.exception(msg)\n",
            # another worker_base.py that logs at ERROR level: the bare name would be ambiguous
            "vllm/v1/worker/worker_base.py": "def f():\n    logger.error(f'bad {1}')\n",
        },
    )
    run, out = _generate(tmp_path, sglang, vllm)
    vl = tomllib.loads(out.read_text())["vllm"]
    assert vl["error_sites"] == {
        "core.py": "vllm/v1/engine/core.py",
        "v1/engine/core.py": "vllm/v1/engine/core.py",
        "worker/worker_base.py": "vllm/worker/worker_base.py",
    }
    assert vl["error_calls"]["vllm/v1/engine/core.py::run_engine_core"] == "EngineCore failed to start."
    assert vl["error_calls"]["vllm/worker/worker_base.py::execute_method"] == "<computed message>"
    assert "vllm/v1/engine/core.py::step" not in vl["error_calls"]


def test_the_generator_reads_sglangs_messages_and_vllms_exception_sites(tmp_path: Path) -> None:
    """SGLang's INFO messages map to the phase of every place that logs them (a message two phases log, a
    warning, a 'will not run' message and a short one are left out); a vLLM module whose every
    logger.exception() logs the caught exception is an exception site, by path and by its bare name."""
    sglang = _repo(
        tmp_path / "sglang",
        {
            "python/sglang/srt/model_loader/loader.py": (
                "class L:\n    def load_model(self):\n"
                "        logger.info('Model is already quantized, loading directly...')\n"
                "        logger.info(f'Loading the weights for {self.name} from the checkpoint')\n"
                "        logger.info('Shared message logged by two phases')\n"
                "        logger.warning('A warning the loader logs about a config')\n"
                "        logger.info('Disable something because of the config')\n"
                "        logger.info('Too short')\n"
                "        logger.info('Loaded %s: %s (%s version). model size: %.2f GB', a, b, c, d)\n"
            ),
            "python/sglang/srt/model_executor/cuda_graph_runner.py": "def capture():\n    logger.info('Shared message logged by two phases')\n",
        },
    )
    vllm = _repo(
        tmp_path / "vllm",
        {
            "vllm/engine/multiprocessing/engine.py": "def run():\n    try:\n        pass\n    except BaseException as e:\n        logger.exception(e)\n",
            "vllm/v1/engine/engine.py": "def run():\n    try:\n        pass\n    except Exception:\n        logger.exception('EngineCore failed')\n",
            "vllm/entrypoints/launcher.py": "def serve():\n    try:\n        pass\n    except Exception as err:\n        logger.exception(repr(err))\n",
        },
    )
    run, out = _generate(tmp_path, sglang, vllm)
    data = tomllib.loads(out.read_text())
    assert data["sglang"]["messages"] == {
        "Model is already quantized, loading directly...": "weight_load",
        "Loading the weights for": "weight_load",
    }
    assert data["sglang"]["templates"] == {"Loaded {}: {} ({} version). model size: {} GB": "weight_load"}
    sites = data["vllm"]["exception_sites"]
    assert sites["engine/multiprocessing/engine.py"] == "vllm/engine/multiprocessing/engine.py"
    assert sites["launcher.py"] == "vllm/entrypoints/launcher.py"
    assert "engine.py" not in sites  # v1/engine/engine.py logs its own words: the bare name is ambiguous
    assert "v1/engine/engine.py" not in sites


def test_the_generator_lists_vllms_serving_sites(tmp_path: Path) -> None:
    """A serving module whose every ERROR-level call is in a request's handler is a serving site (its
    DEBUG path, its path under vllm/, and its bare name when every module of that name logging at ERROR
    level is one); one that logs an error while it is built (in __init__) is not."""
    sglang = _repo(tmp_path / "sglang", {"python/sglang/srt/model_loader/loader.py": "def load_model():\n    pass\n"})
    vllm = _repo(
        tmp_path / "vllm",
        {
            "vllm/entrypoints/openai/chat_completion/serving.py": (
                "class S:\n    def __init__(self):\n        logger.info('Using default chat sampling params')\n"
                "    async def chat_completion_stream_generator(self):\n        logger.exception('Error in chat completion stream generator.')\n"
            ),
            "vllm/entrypoints/openai/serving_models.py": "class M:\n    def __init__(self):\n        logger.error('bad adapter')\n",
            "vllm/entrypoints/openai/serving_tokens.py": "def tokens():\n    logger.info('no error here')\n",
        },
    )
    run, out = _generate(tmp_path, sglang, vllm)
    vl = tomllib.loads(out.read_text())["vllm"]
    mod = "vllm/entrypoints/openai/chat_completion/serving.py"
    assert vl["serving_sites"] == {
        "entrypoints/.../chat_completion/serving.py": mod,
        "entrypoints/openai/chat_completion/serving.py": mod,
        "serving.py": mod,
    }


def test_the_generator_maps_the_messages_the_engines_code_raises(tmp_path: Path) -> None:
    """An exception message raised (or asserted) only in one phase's code names that phase; one raised in a
    module of no phase too is left out, unless that place is the same step of another platform's worker
    (a function of the same name)."""
    sglang = _repo(tmp_path / "sglang", {"python/sglang/srt/model_loader/loader.py": "def load_model():\n    pass\n"})
    vllm = _repo(
        tmp_path / "vllm",
        {
            "vllm/model_executor/model_loader/default_loader.py": (
                "def _prepare_weights(p):\n    raise RuntimeError(f'Cannot find any model weights with `{p}`')\n"
                "def f():\n    raise ValueError('Unknown quantization method given here')\n"
            ),
            "vllm/utils/misc.py": "def g():\n    raise ValueError('Unknown quantization method given here')\n",
            "vllm/worker/worker.py": "class W:\n    def determine_num_available_blocks(self):\n        assert ok, ('Error in memory profiling. ' f'Initial {x}')\n",
            "vllm/worker/xpu_worker.py": "class X:\n    def determine_num_available_blocks(self):\n        assert ok, ('Error in memory profiling. ' f'Initial {x}')\n",
        },
    )
    run, out = _generate(tmp_path, sglang, vllm)
    raises = tomllib.loads(out.read_text())["vllm"]["raises"]
    assert raises["Cannot find any model weights with `"] == "weight_load"
    assert raises["Error in memory profiling. Initial"] == "kv_alloc"
    assert "Unknown quantization method given here" not in raises
