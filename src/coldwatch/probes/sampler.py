"""The streaming sampler: one long-lived command per connection that prints one JSON record per
interval with the GPU rows, the supervisor's state and the server's process tree (with, once the
model directory is known, its storage: see ``probes/load.py``).

It replaces three short commands every interval (nvidia-smi, systemctl show, the process sampler),
each an exec channel of its own over SSH, by one channel that stays open. A record carries only
what changed since the previous one (``gpu`` and ``svc`` are omitted when equal), so a quiet
minute costs a few kilobytes. Hosts without python3 fall back to the per-sample commands.
"""

from __future__ import annotations

import base64
import json
import zlib
from dataclasses import dataclass
from typing import Any

from coldwatch.hosts.base import q
from coldwatch.probes.load import LOAD_FUNCS
from coldwatch.probes.parse import PROC_FUNCS

LOOP = r"""
cfg = json.loads(sys.argv[2])
interval = float(cfg["interval"]); gpu_cmd = cfg.get("gpu"); svc_cmd = cfg.get("svc"); pid0 = cfg.get("pid"); port = int(cfg.get("port") or 0)
import re
pid_re = re.compile(cfg.get("pid_re") or "^MainPID=(\\d+)", re.M)
import signal
deadline = max(5.0, 2 * interval); stuck = {}
def kill_tree(pid):
    tree = kids(); todo = [pid]; seen = []
    while todo:
        q_ = todo.pop(); seen.append(q_); todo.extend(tree.get(q_, []))
    for q_ in seen:
        try:
            os.kill(q_, signal.SIGKILL)
        except OSError:
            pass
def run(cmd):
    # killed with its children at the deadline (it stays in the sampler's process group, so the
    # channel's end takes it too); one that cannot die (a GPU driver in D state) is never started
    # again while it lives: at most one stuck copy on the host
    old = stuck.get(cmd)
    if old is not None:
        if old.poll() is None:
            return None, "", "hung: no answer within %gs" % deadline
        del stuck[cmd]
    try:
        p = subprocess.Popen(cmd, shell=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as exc:
        return 127, "", str(exc)
    try:
        out, err = wait_for(p)
    except subprocess.TimeoutExpired:
        kill_tree(p.pid)
        try:
            p.wait(1.0)
        except subprocess.TimeoutExpired:
            stuck[cmd] = p
        return None, "", "hung: no answer within %gs" % deadline
    return p.returncode, out.decode("utf-8", "replace")[:16384], err.decode("utf-8", "replace")[-300:]
last = {}; cmd_seen = None; load = None; io_last = {}; read_last = None
import select, stat
try:  # over SSH stdin is the channel's pipe: its end means coldwatch is gone, so stop at once
    watch_stdin = stat.S_ISFIFO(os.fstat(0).st_mode) or stat.S_ISSOCK(os.fstat(0).st_mode)
except OSError:
    watch_stdin = False
def wait_for(p):
    # in slices while coldwatch is there: a sampler whose channel ended (a restart, a reconnect)
    # ends at once with its command, never lingers beside its successor with a second copy
    end = time.time() + deadline
    while True:
        try:
            return p.communicate(timeout=min(0.25, max(0.0, end - time.time())) if watch_stdin else deadline)
        except subprocess.TimeoutExpired:
            if watch_stdin and select.select([0], [], [], 0)[0] and not os.read(0, 4096):
                kill_tree(p.pid)
                sys.exit(0)
            if not watch_stdin or time.time() >= end:
                raise
def pause(seconds):
    if not watch_stdin:
        time.sleep(seconds); return
    ready = select.select([0], [], [], seconds)[0]
    if ready and not os.read(0, 4096):
        sys.exit(0)
while True:
    rec = {}
    if gpu_cmd:
        rc, out, err = run(gpu_cmd)
        rec["gpu"] = [rc, out, err if rc != 0 else ""]
        if rc == 127 and not cfg.get("gpu_given"): gpu_cmd = None
    pid = pid0
    if svc_cmd:
        rc, out, err = run(svc_cmd)
        rec["svc"] = [rc, out]
        if not pid0:
            m = pid_re.search(out) if rc == 0 else None
            pid = int(m.group(1)) if m and m.group(1).isdigit() and int(m.group(1)) > 0 else None
    if pid:
        try:
            p = proc_sample(pid, False, port)
        except Exception as exc:
            p = {"error": "%s: %s" % (type(exc).__name__, exc)}
        pids = p.pop("_pids", None) or []
        if p.get("alive") and p.get("cmd") != cmd_seen:
            cmd_seen = p["cmd"]; p["model"] = model_size(cmd_seen)
            try:
                load = load_target(pid, cmd_seen)
            except Exception as exc:
                load = None; p["load_error"] = "%s: %s" % (type(exc).__name__, exc)
            if load: p["load"] = load
        elif "cmd" in p:
            del p["cmd"]
        if load and p.get("alive"):
            reading = read_last is not None and p.get("read", 0) > read_last
            read_last = p.get("read", 0)
            try:
                p["io"] = io_sample(load.get("devs") or [], pids, io_last, reading)
            except Exception:
                pass
        rec["pid"] = pid; rec["proc"] = p
    for k in ("gpu", "svc"):
        if k in rec and last.get(k) == rec[k]: del rec[k]
        elif k in rec: last[k] = rec[k]
    sys.stdout.write(json.dumps(rec, separators=(",", ":")) + "\n"); sys.stdout.flush()
    pause(interval)
"""


def sampler_command(
    interval: float, gpu_cmd: str | None, gpu_given: bool, svc_cmd: str | None, pid: int | None, port: int | None, pid_re: str = ""
) -> str:
    """The host command: python3 running the compressed sampler with its settings as one JSON argument.
    ``pid_re`` finds the main PID in ``svc_cmd``'s output (the supervisor's ``pid_pattern``)."""
    code = base64.b64encode(zlib.compress((PROC_FUNCS + LOAD_FUNCS + LOOP).encode(), 9)).decode()
    cfg = json.dumps(
        {"interval": interval, "gpu": gpu_cmd, "gpu_given": gpu_given, "svc": svc_cmd, "pid": pid, "port": port or 0, "pid_re": pid_re}
    )
    unpack = "import base64, sys, zlib; exec(zlib.decompress(base64.b64decode(sys.argv[1])))"
    return f"exec python3 -u -c {q(unpack)} {code} {q(cfg)}"


@dataclass(frozen=True, slots=True)
class SamplerRecord:
    """One record: each part None when absent (unchanged, or not sampled)."""

    gpu: tuple[int | None, str, str] | None
    svc: tuple[int | None, str] | None
    pid: int | None
    proc: dict[str, Any] | None


def parse_record(line: bytes) -> SamplerRecord | None:
    """One line of the sampler's output; None when it is not a record (a warning, a traceback)."""
    try:
        data = json.loads(line)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    gpu = data.get("gpu")
    svc = data.get("svc")
    pid = data.get("pid")
    proc = data.get("proc")
    return SamplerRecord(
        gpu=(_rc(gpu[0]), str(gpu[1]), str(gpu[2])) if isinstance(gpu, list) and len(gpu) == 3 else None,
        svc=(_rc(svc[0]), str(svc[1])) if isinstance(svc, list) and len(svc) == 2 else None,
        pid=pid if isinstance(pid, int) and not isinstance(pid, bool) and pid > 0 else None,
        proc=proc if isinstance(proc, dict) else None,
    )


def _rc(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
