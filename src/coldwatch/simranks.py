"""Stand-in rank processes for the simulator's rank scenarios and the tests: real processes titled
like SGLang's schedulers (``sglang::scheduler_TP1``, argv[0] set at exec and the kernel's name set
with prctl), each in real Python frames that a stack sampler sees as they are.

Roles: ``collective`` spins in ``all_reduce ← init_memory_pool`` (a rank that finished loading and
waits for its peer; an NCCL wait spins a core); ``hung_read`` sleeps in a read that never returns in
``read_shard ← load_weights`` (a hung network filesystem); ``loading`` burns CPU in
``parse_tensors ← load_weights`` (a slow but live load); ``busy`` burns CPU in
``compile_graph ← capture_graphs`` (a silent compile); ``gloo_wait`` / ``gloo_absent`` join a real
two-rank gloo group (torch.distributed): rank 0 enters ``all_reduce``, rank 1 never does.

Stdlib only (torch for the gloo roles): it runs as a script under any python3, as another user too.
Run: ``python3 -P simranks.py ROLE RANK WORLD DIR``; ``spawn()`` starts one with its title.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROLES = ("collective", "hung_read", "loading", "busy", "gloo_wait", "gloo_absent")


def spawn(
    title: str, role: str, rank: int, world: int, d: Path, python: str | None = None, user: str | None = None
) -> subprocess.Popen[bytes]:
    """Start one rank process titled ``title`` (its argv[0]); ``user``: as that user."""
    exe = python or sys.executable
    argv = [title, "-P", os.path.abspath(__file__), role, str(rank), str(world), str(d)]  # -P: not this package on sys.path
    env = dict(os.environ)
    if python is None:  # argv[0] is the title, so a virtual environment is not found from it: name its packages
        import site

        env["PYTHONPATH"] = os.pathsep.join([*site.getsitepackages(), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    log = open(d / f"rank{rank}.err", "ab")  # noqa: SIM115 - the child keeps its own descriptor
    with log:
        return subprocess.Popen(argv, executable=exe, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env, **as_user(user))


def as_user(user: str | None) -> dict[str, Any]:
    """Popen's arguments for a process of ``user`` with that user's own group only: a process left
    with root's group cannot be read (ptrace, /proc/PID/syscall) by its own user."""
    if user is None:
        return {}
    import pwd

    return {"user": user, "group": pwd.getpwnam(user).pw_gid, "extra_groups": []}


def _name(title: str) -> None:
    """The kernel's name of the process (comm, 15 bytes) and an end with its parent."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(15, ctypes.c_char_p(title.encode()[:15]), 0, 0, 0)  # PR_SET_NAME
        libc.prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG


def _orphaned(parent: int) -> bool:
    return os.getppid() != parent


def all_reduce(parent: int) -> None:
    n = 0
    while True:  # an NCCL wait: the host thread polls, a core busy, nothing moves
        n += 1
        if n % 2_000_000 == 0 and _orphaned(parent):
            return


def init_memory_pool(parent: int, tensor: Any = None) -> None:
    if tensor is None:
        all_reduce(parent)
    else:  # a real collective: gloo's all_reduce, which waits for every rank of the group
        importlib.import_module("torch.distributed").all_reduce(tensor)


def read_shard(fd: int) -> bytes:
    return os.read(fd, 1 << 20)  # a read that never returns (no writer ever comes)


def load_weights(d: Path, rank: int, parent: int = 0, live: bool = False) -> None:
    if live:
        parse_tensors(parent)
        return
    fifo = d / f"shard-rank{rank}.fifo"
    with contextlib.suppress(FileExistsError):
        os.mkfifo(fifo)
    fd = os.open(fifo, os.O_RDWR)  # holds a writer end itself, so the read blocks, never EOF
    read_shard(fd)


def parse_tensors(parent: int) -> None:
    data = bytes(range(256)) * 4096
    while not _orphaned(parent):
        sum(data[::7])  # CPU-bound work in a frame that is not a wait


def compile_graph(parent: int) -> None:
    code = [f"x{i} = {i} * 3" for i in range(200)]
    while not _orphaned(parent):
        compile("\n".join(code), "<graph>", "exec")  # CPU-bound, in a frame that is not a wait


def capture_graphs(parent: int) -> None:
    compile_graph(parent)


def join_group(parent: int, rank: int, world: int, d: Path) -> None:
    import datetime

    torch: Any = importlib.import_module("torch")  # only the gloo roles need it
    dist = torch.distributed

    dist.init_process_group(
        "gloo", init_method=f"file://{d}/gloo.rendezvous", rank=rank, world_size=world, timeout=datetime.timedelta(hours=1)
    )
    if rank == 0:
        (d / "gloo.joined").write_text("1")
        init_memory_pool(parent, torch.ones(4))
    else:
        load_weights(d, rank)


def main(argv: list[str]) -> int:
    role, rank, world, d = argv[1], int(argv[2]), int(argv[3]), Path(argv[4])
    with open("/proc/self/cmdline", "rb") as f:
        _name(f.read().split(b"\0")[0].decode("utf-8", "replace"))
    parent = os.getppid()
    (d / f"rank{rank}.pid").write_text(str(os.getpid()))
    if role == "collective":
        init_memory_pool(parent)
    elif role == "hung_read":
        load_weights(d, rank)
    elif role == "loading":
        load_weights(d, rank, parent, live=True)
    elif role == "busy":
        capture_graphs(parent)
    elif role in ("gloo_wait", "gloo_absent"):
        join_group(parent, rank, world, d)
    else:
        print(f"unknown role {role!r}; one of {', '.join(ROLES)}", file=sys.stderr)
        return 2
    while not _orphaned(parent):
        time.sleep(1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
