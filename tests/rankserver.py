"""A stand-in multi-rank server for the stack tests: a main process that writes an SGLang-style log
and starts real rank processes titled like SGLang's schedulers (``sglang::scheduler_TP1``; the
package's ``simranks.py``), each sitting in real Python frames:

- ``hang``: TP0 loads, then spins in ``all_reduce ← init_memory_pool``; TP1 sleeps in a read that
  never returns in ``read_shard ← load_weights``, 40 % through its shard bar.
- ``loading``: TP0 the same; TP1 still works (CPU) in ``parse_tensors ← load_weights``.
- ``busy``: both ranks compute in silence in ``compile_graph ← capture_graphs``.
- ``gloo``: a real two-rank gloo group (torch.distributed): TP0 in ``all_reduce``, TP1 never joins it.

Run as its own process (as another user too): ``python3 -P rankserver.py DIR SCENARIO [RANK0 NRANKS]``;
``start()`` does that and waits until the ranks are in place. ``python3 tests/rankserver.py capture
OUT`` writes the stack-sampler readings the unit tests use (tests/fixtures/stacks/).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent
SIMRANKS = HERE.parent / "src" / "coldwatch" / "simranks.py"
ROLES = {
    "hang": ("collective", "hung_read"),
    "loading": ("collective", "loading"),
    "busy": ("busy", "busy"),
    "gloo": ("gloo_wait", "gloo_absent"),
}


def _simranks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("simranks", SIMRANKS)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def serve(d: Path, scenario: str, first: int = 0, count: int | None = None) -> None:
    """The server's main process: its log, then its ranks (``first`` .. ``first + count``)."""
    sr = _simranks()
    roles = ROLES[scenario]
    count = len(roles) - first if count is None else count
    log = open(d / "server.log", "a", encoding="utf-8")  # noqa: SIM115 - lives as long as the server

    def say(msg: str, rank: int | None = None) -> None:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        log.write(f"[{stamp}{f' TP{rank}' if rank is not None else ''}] {msg}\n")
        log.flush()

    say(f"server_args=ServerArgs(model_path='stand-in/model', tp_size={len(roles)}, port=30000)")
    for r in range(first, first + count):
        say("Init torch distributed begin.", r)
    for r in range(first, first + count):
        say("Init torch distributed ends. elapsed=0.10 s, mem usage=0.10 GB", r)
        say("Load weight begin. avail mem=78.00 GB", r)
    for r in range(first, first + count):
        sr.spawn(f"sglang::scheduler_TP{r}", roles[r], r, len(roles), d)
    for n in range(5):
        log.write(f"\rLoading safetensors checkpoint shards: {n * 10:3d}% Completed | {n}/10 [00:0{n}<00:06, 1.00it/s]")
        log.flush()
        time.sleep(0.3)
    log.write("\n")
    if scenario == "busy":
        say("Load weight end. elapsed=2.00 s, type=Stand-in, avail mem=40.00 GB, mem usage=38.00 GB.")
        say("Capture cuda graph begin. This can take up to several minutes. avail mem=30.00 GB")
    elif first == 0:
        say("Load weight end. elapsed=1.50 s, type=Stand-in, avail mem=40.00 GB, mem usage=38.00 GB.", 0)
    (d / "ready-ranks").write_text("1")
    log.flush()
    while True:
        time.sleep(1)


def start(d: Path, scenario: str, user: str | None = None, first: int = 0, count: int | None = None) -> subprocess.Popen[bytes]:
    """Start the stand-in server (as ``user``: py-spy over SSH attaches only to its own user's
    processes) and wait until its ranks are in their frames."""
    d.mkdir(parents=True, exist_ok=True)
    os.chmod(d, 0o777)
    py = "/usr/bin/python3" if user else sys.executable
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    args = [py, "-P", str(Path(__file__).resolve()), str(d), scenario, str(first), str(count if count is not None else -1)]
    proc = subprocess.Popen(
        args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, **_simranks().as_user(user)
    )
    for _ in range(1200):
        if (d / "ready-ranks").exists() and (scenario != "gloo" or (d / "gloo.joined").exists()):
            break
        time.sleep(0.05)
    time.sleep(0.5)
    return proc


def stop(proc: subprocess.Popen[bytes]) -> None:
    """End the server; its ranks end with it (their parent-death signal)."""
    if proc.poll() is None:
        proc.kill()
    proc.wait(10)


def capture(out: Path) -> None:
    """Real readings of each scenario for the unit tests, paths made neutral."""
    sys.path.insert(0, str(HERE.parent / "src"))
    from coldwatch.probes.stacks import stack_command

    out.mkdir(parents=True, exist_ok=True)
    for scenario in ("hang", "loading", "busy", "gloo"):
        d = Path(f"/tmp/rankserver-{os.getpid()}-{scenario}")
        p = start(d, scenario)
        try:
            time.sleep(2.0 if scenario == "gloo" else 0.5)
            cmd, script = stack_command(p.pid)
            r = subprocess.run(cmd, shell=True, input=script, capture_output=True, check=True)
        finally:
            stop(p)
        text = r.stdout.decode()
        for old, new in ((sys.prefix, "/opt/venv"), (str(HERE.parent / "src"), "/opt/src"), (str(d), "/srv/stand-in")):
            text = text.replace(old, new)
        (out / f"{scenario}.json").write_text(json.dumps(json.loads(text), indent=1) + "\n")


if __name__ == "__main__":
    if sys.argv[1] == "capture":
        capture(Path(sys.argv[2]))
    else:
        c = int(sys.argv[4]) if len(sys.argv) > 4 else -1
        serve(Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 0, None if c < 0 else c)
