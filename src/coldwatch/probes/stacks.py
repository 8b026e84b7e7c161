"""The stack sampler: one command on the host that reads each server process's threads from /proc
(state, wchan, the syscall in progress, CPU over a short window, bytes read) and, when py-spy is on
the host's PATH, its Python stacks (``py-spy dump --json --pid N``, which pauses the process for a
few milliseconds). Bounded: it stops dumping at its deadline and reports what each dump cost.

The processes are the server's tree from its main PID; py-spy dumps only those whose title names a
rank (``sglang::scheduler_TP1``, ``VLLM::Worker_TP1``), else the main process.
"""

from __future__ import annotations

import json
import zlib
from typing import Any

from coldwatch.hosts.base import Host, q
from coldwatch.ranks import SYSCALLS, Frame, ProcStack, StackSample, ThreadStack

WINDOW = 0.5
"""Seconds between the two /proc readings a sample's CPU and read rates come from."""
BUDGET = 6.0
"""Seconds one sample may take on the host (py-spy dumps stop at this deadline)."""
MAX_PROCS = 64
MAX_DUMPS = 16

SCRIPT = r"""
import json, os, re, shutil, subprocess, sys, time
cfg = json.loads(sys.argv[1]); root = int(cfg["pid"]); t_start = time.time(); deadline = t_start + float(cfg["budget"])
title_re = re.compile(cfg["title_re"]); TICK = os.sysconf("SC_CLK_TCK")
def rd(path):
    try:
        with open(path, "rb") as f: return f.read().decode("utf-8", "replace")
    except OSError: return None
def tree():
    kids = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            s = rd("/proc/%s/stat" % d)
            if s:
                try: kids.setdefault(int(s.rsplit(")", 1)[1].split()[1]), []).append(int(d))
                except (IndexError, ValueError): pass
    out, todo = [], [root]
    while todo and len(out) < int(cfg["max_procs"]):
        p = todo.pop(0); out.append(p); todo.extend(sorted(kids.get(p, [])))
    return out
def title(p):
    c = rd("/proc/%d/cmdline" % p)
    if c:
        t = c.split("\0")[0].strip()
        if t: return t[:200]
    return (rd("/proc/%d/comm" % p) or "").strip()
def rchar(p):
    for line in (rd("/proc/%d/io" % p) or "").splitlines():
        if line.startswith("rchar:"): return int(line.split()[1])
    return None
def threads(p):
    out = {}
    try: tids = os.listdir("/proc/%d/task" % p)
    except OSError: return out
    for tid in tids[:256]:
        s = rd("/proc/%d/task/%s/stat" % (p, tid))
        if not s: continue
        try:
            name = s[s.index("(") + 1:s.rindex(")")]; rest = s.rsplit(")", 1)[1].split()
            out[int(tid)] = [rest[0], int(rest[11]) + int(rest[12]), name]
        except (ValueError, IndexError): pass
    return out
def detail(p, tid):
    w = (rd("/proc/%d/task/%d/wchan" % (p, tid)) or "").strip()
    sc = (rd("/proc/%d/task/%d/syscall" % (p, tid)) or "").split()
    return w, (sc[0] if sc else "")
procs = tree(); t0 = time.time()
first = {p: (threads(p), rchar(p)) for p in procs}
pyspy = None if cfg.get("no_pyspy") else (cfg.get("pyspy") or shutil.which("py-spy"))
targets = [p for p in procs if title_re.match(title(p))] or [root]
dumps = {}; ms = []; errors = []
if pyspy:
    for p in targets[:int(cfg["max_dumps"])]:
        left = deadline - time.time() - float(cfg["window"]) - 0.2
        if left <= 0.05:
            errors.append("py-spy: deadline reached before pid %d" % p); break
        a = time.time()
        try:
            r = subprocess.run([pyspy, "dump", "--json", "--pid", str(p)], capture_output=True, timeout=left)
            ms.append(round((time.time() - a) * 1000, 1))
            if r.returncode == 0:
                try: dumps[p] = json.loads(r.stdout.decode("utf-8", "replace"))
                except ValueError: errors.append("py-spy pid %d: unreadable output" % p)
            else:
                errors.append("py-spy pid %d: %s" % (p, (r.stderr.decode("utf-8", "replace").strip().splitlines() or ["status %d" % r.returncode])[-1][:200]))
        except subprocess.TimeoutExpired:
            ms.append(round((time.time() - a) * 1000, 1)); errors.append("py-spy pid %d: timed out" % p)
        except OSError as exc:
            errors.append("py-spy: %s" % exc); break
rest = float(cfg["window"]) - (time.time() - t0)
if rest > 0: time.sleep(rest)
win = max(time.time() - t0, 0.001)
out = []
for p in procs:
    th0, r0 = first[p]; th1 = threads(p); r1 = rchar(p)
    st = rd("/proc/%d/stat" % p)
    if not st:
        out.append({"pid": p, "title": "", "alive": False}); continue
    pst = st.rsplit(")", 1)[1].split()[0]
    ths = []
    for tid, (s, ticks, name) in sorted(th1.items())[:64]:
        w, sc = detail(p, tid)
        old = th0.get(tid)
        cpu = (ticks - old[1]) / TICK / win * 100 if old else 0.0
        ths.append([tid, s, w, sc, round(cpu, 1), name])
    out.append({"pid": p, "title": title(p), "alive": True, "state": pst, "read": (r1 - r0) if r0 is not None and r1 is not None else 0, "threads": ths, "dump": dumps.get(p)})
print(json.dumps({"machine": os.uname().machine, "pyspy": pyspy, "window": round(win, 3), "ms": ms, "errors": errors, "procs": out, "elapsed": round((time.time() - t_start) * 1000, 1)}))
"""

TITLE_RE = r"^(sglang::(scheduler|gpu_worker|semi_pd_scheduler)|[A-Za-z][\w-]*::(Worker|EngineCore))"


def stack_command(
    pid: int, pyspy: str | None = None, budget: float = BUDGET, window: float = WINDOW, use_pyspy: bool = True
) -> tuple[str, bytes]:
    """The host command and its stdin (the script, compressed); ``use_pyspy`` False: /proc only."""
    cfg = json.dumps(
        {
            "pid": int(pid),
            "budget": budget,
            "window": window,
            "title_re": TITLE_RE,
            "max_procs": MAX_PROCS,
            "max_dumps": MAX_DUMPS,
            "pyspy": pyspy,
            "no_pyspy": not use_pyspy,
        }
    )
    unpack = q("import sys, zlib; exec(zlib.decompress(sys.stdin.buffer.read()))")
    return f"python3 -c {unpack} {q(cfg)}", zlib.compress(SCRIPT.encode(), 9)


def take(host: Host, pid: int, pyspy: str | None = None, budget: float = BUDGET) -> StackSample:
    """One stack sample of the server whose main process is ``pid``; a sample with ``errors`` when
    the host could not give one."""
    cmd, script = stack_command(pid, pyspy, budget)
    r = host.run(cmd, timeout=budget + 5.0, stdin=script)
    if r.rc != 0:
        err = r.stderr.decode("utf-8", "replace").strip().splitlines()
        why = err[-1][:200] if err else ("timed out" if r.rc is None else f"status {r.rc}")
        return StackSample((), errors=(f"stack sample failed: {why}",))
    return parse_sample(r.stdout.decode("utf-8", "replace"))


def parse_sample(text: str) -> StackSample:
    """The sampler's JSON line -> a sample (hostile text: every field checked)."""
    try:
        data = json.loads(text)
    except ValueError:
        line = text.strip().splitlines()[-1] if text.strip() else ""
        try:
            data = json.loads(line)
        except ValueError:
            return StackSample((), errors=("stack sample: unreadable output",))
    if not isinstance(data, dict):
        return StackSample((), errors=("stack sample: unreadable output",))
    table = SYSCALLS.get(str(data.get("machine", "")), {})
    procs = []
    for p in data.get("procs") or []:
        ps = _proc(p, table)
        if ps is not None:
            procs.append(ps)
    pyspy = data.get("pyspy")
    ms = tuple(float(x) for x in data.get("ms") or [] if isinstance(x, (int, float)))
    errors = tuple(str(e)[:240] for e in data.get("errors") or [])[:20]
    return StackSample(
        tuple(procs),
        pyspy=str(pyspy)[:300] if isinstance(pyspy, str) else None,
        window=float(data.get("window") or 0.0),
        elapsed_ms=float(data.get("elapsed") or 0.0),
        pyspy_ms=ms,
        errors=errors,
    )


def _int(x: Any, default: int = 0) -> int:
    return x if isinstance(x, int) and not isinstance(x, bool) else default


def _syscall(field: str, table: dict[int, str]) -> str:
    if field == "running":
        return "running"
    if field.isdigit():
        n = int(field)
        return table.get(n, f"syscall {n}")
    return ""


def _proc(p: Any, table: dict[int, str]) -> ProcStack | None:
    if not isinstance(p, dict) or _int(p.get("pid")) <= 0:
        return None
    pid = _int(p.get("pid"))
    title = str(p.get("title") or "")[:200]
    if not p.get("alive"):
        return ProcStack(pid, title, alive=False)
    frames: dict[int, tuple[str, tuple[Frame, ...]]] = {}
    dump = p.get("dump")
    if isinstance(dump, list):
        for th in dump[:256]:
            if not isinstance(th, dict):
                continue
            tid = _int(th.get("os_thread_id")) or _int(th.get("thread_id"))
            found: list[Frame] = []
            for f in th.get("frames") or []:
                if isinstance(f, dict):
                    ln = f.get("line")
                    found.append(
                        Frame(str(f.get("name") or "?")[:120], str(f.get("filename") or "")[:300], ln if isinstance(ln, int) else None)
                    )
            frames[tid] = (str(th.get("thread_name") or "")[:60], tuple(found[:64]))
    threads = []
    for t in p.get("threads") or []:
        if not isinstance(t, list) or len(t) < 6:
            continue
        tid = _int(t[0])
        got = frames.get(tid)
        name, fs = got if got is not None else (str(t[5])[:60], None)
        cpu = t[4] if isinstance(t[4], (int, float)) else 0.0
        threads.append(ThreadStack(tid, str(t[1])[:2], str(t[2])[:60], _syscall(str(t[3]), table), float(cpu), name, fs))
    return ProcStack(
        pid,
        title,
        alive=True,
        state=str(p.get("state") or "?")[:2],
        read_bytes=max(0, _int(p.get("read"))),
        threads=tuple(threads),
        pyspy=isinstance(dump, list),
    )
