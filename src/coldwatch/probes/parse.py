"""Pure parsers for what the host prints: nvidia-smi CSV, systemctl show, process samples."""

from __future__ import annotations

import json
from typing import Any

from coldwatch.bandwidth import parse_io, parse_target
from coldwatch.evidence import GpuSample as GpuSample
from coldwatch.evidence import ProcSample as ProcSample
from coldwatch.evidence import ServiceState as ServiceState


def _num(text: str) -> int | None:
    text = text.strip()
    if not text or text.startswith("[") or text.upper() in ("N/A", "NA"):
        return None
    try:
        value = float(text.split()[0])
    except (ValueError, IndexError):
        return None
    if value != value or value < 0 or value > 1e12:  # NaN or absurd
        return None
    return int(value)


def parse_gpu_csv(text: str) -> tuple[list[GpuSample], list[str]]:
    """nvidia-smi --query-gpu=index,memory.used,memory.total,utilization.gpu CSV -> samples, problems."""
    samples: list[GpuSample] = []
    problems: list[str] = []
    for i, line in enumerate(text.splitlines()[:64]):
        if not line.strip():
            continue
        cells = [c.strip() for c in line.split(",")]
        if len(cells) < 4:
            problems.append(f"row {i + 1}: expected 4 columns, got {line[:60]!r}")
            continue
        idx = _num(cells[0])
        if idx is None:
            problems.append(f"row {i + 1}: bad GPU index {cells[0][:20]!r}")
            continue
        used, total, util = _num(cells[1]), _num(cells[2]), _num(cells[3])
        if used is None and total is None:
            problems.append(f"GPU {idx}: memory not reported ({cells[1][:20]!r})")
        samples.append(GpuSample(idx, used, total, util))
    return samples, problems


def parse_systemctl_show(text: str) -> ServiceState:
    props: dict[str, str] = {}
    for line in text.splitlines()[:200]:
        key, sep, value = line.partition("=")
        if sep and key.isidentifier():
            props[key] = value.strip()[:500]
    if "ActiveState" not in props:
        return ServiceState(False, props=props)

    def num(k: str) -> int | None:
        v = props.get(k, "")
        return int(v) if v.isascii() and v.isdigit() else None

    pid = num("MainPID")
    return ServiceState(
        True,
        active=props.get("ActiveState", ""),
        sub=props.get("SubState", ""),
        result=props.get("Result", ""),
        restarts=num("NRestarts"),
        main_pid=pid if pid else None,
        exec_status=num("ExecMainStatus"),
        invocation=props.get("InvocationID", ""),
        load=props.get("LoadState", ""),
        active_since=props.get("ActiveEnterTimestamp", ""),
        props=props,
    )


COMPILERS = ("nvcc", "cicc", "ptxas", "ninja", "cc1plus", "gcc", "g++", "c++", "clang", "ld")


def parse_proc_sample(text: str) -> ProcSample | None:
    """The JSON line printed by PROC_SCRIPT; None when it is not one."""
    line = text.strip().splitlines()[-1] if text.strip() else ""
    try:
        data = json.loads(line)
    except ValueError:
        return None
    return proc_from_dict(data)


def proc_from_dict(data: Any) -> ProcSample | None:
    """One process-tree sample (the dict PROC_FUNCS' proc_sample returns); None when malformed."""
    if not isinstance(data, dict):
        return None
    try:
        return ProcSample(
            alive=bool(data.get("alive")),
            cpu_s=float(data.get("cpu", 0.0)),
            read_bytes=int(data.get("read", 0)),
            rss_kb=int(data.get("rss", 0)),
            procs=int(data.get("n", 0)),
            children=tuple(str(c)[:32] for c in (data.get("names") or [])[:64]),
            cmdline=str(data.get("cmd", ""))[:2000],
            model_bytes=int(data["model"]) if data.get("model") is not None else None,
            load=parse_target(data.get("load")),
            io=parse_io(data.get("io")),
            **_port_fields(data.get("port")),
        )
    except (TypeError, ValueError):
        return None


def gpu_evidence(rc: int | None, stdout: str, stderr: str) -> tuple[list[GpuSample] | None, str | None]:
    """One run of the GPU command -> (samples or None, a warning or None). rc 127: no such command."""
    if rc == 127 or (rc not in (0, None) and not stdout):
        err = stderr.strip().splitlines()
        return None, f"GPU stream off: {(err[-1] if err else 'command failed')[:160]}"
    if rc is None:  # no exit status: the connection dropped (silent), or the command hung (said once)
        return None, (f"GPU command {stderr.strip()[:160]}; no GPU samples while it hangs" if stderr.strip() else None)
    samples, problems = parse_gpu_csv(stdout)
    return samples, ("GPU sample: " + "; ".join(problems[:3])) if problems else None


def _port_fields(port: Any) -> dict[str, Any]:
    if not isinstance(port, dict) or port.get("state") not in ("own", "free", "other", "unknown"):
        return {}
    pid = port.get("pid")
    name = port.get("name")
    return {
        "port": port["state"],
        "owner_pid": pid if isinstance(pid, int) and not isinstance(pid, bool) and pid > 0 else None,
        "owner_name": str(name)[:32] if isinstance(name, str) else None,
        "owner_older": port.get("older") is True,
    }


PROC_FUNCS = r"""
import json, os, subprocess, sys, time
TICK = os.sysconf("SC_CLK_TCK"); PAGE = os.sysconf("SC_PAGE_SIZE")
def kids():
    out = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f: s = f.read()
                out.setdefault(int(s.rsplit(")", 1)[1].split()[1]), []).append(int(d))
            except (OSError, IndexError, ValueError): pass
    return out
SCAN = {"procs": 0, "calls": 0}
def tree(root, threads):
    # root's process tree: from its threads' /proc children lists when that reads fewer files than a
    # scan of every process (``threads``: the tree's thread count at the last sample; a GPU host runs
    # hundreds of processes, the server a few), else, and every 60th call, from a scan of /proc
    SCAN["calls"] += 1
    if threads and threads < SCAN["procs"] and SCAN["calls"] % 60 and os.path.exists("/proc/%d/task/%d/children" % (root, root)):
        pids = []; todo = [root]
        while todo:
            p = todo.pop(); pids.append(p)
            try: tids = os.listdir("/proc/%d/task" % p)
            except OSError: continue
            for t in tids:
                try:
                    with open("/proc/%d/task/%s/children" % (p, t)) as f: todo.extend(int(x) for x in f.read().split() if int(x) not in pids)
                except (OSError, ValueError): pass
        return pids
    found = kids(); SCAN["procs"] = sum(len(v) for v in found.values())
    todo = [root]; pids = []
    while todo:
        p = todo.pop(); pids.append(p); todo.extend(found.get(p, []))
    return pids
def state(p):
    try:
        with open("/proc/%d/stat" % p) as f: return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError): return "X"
def started(p):
    with open("/proc/%d/stat" % p) as f: return int(f.read().rsplit(")", 1)[1].split()[19])
def socks(p):
    out = set()
    for fd in os.listdir("/proc/%d/fd" % p):
        try:
            link = os.readlink("/proc/%d/fd/%s" % (p, fd))
        except OSError:
            continue
        if link.startswith("socket:["): out.add(link[8:-1])
    return out
def model_size(cmd):
    a = cmd.split()
    for i, w in enumerate(a):
        if w in ("--model-path", "--model") and i + 1 < len(a) and os.path.isdir(a[i + 1]):
            return sum(os.path.getsize(os.path.join(a[i + 1], n)) for n in os.listdir(a[i + 1]) if n.endswith(".safetensors"))
    return None
def listening_nl(port):
    # the kernel's socket-diagnostics netlink, asked for listening TCP sockets only: it walks the small
    # listening table, where reading /proc/net/tcp walks every socket's hash bucket (milliseconds on a
    # big host, every sample)
    import socket, struct
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, 4)  # NETLINK_SOCK_DIAG
    inodes = set()
    try:
        s.settimeout(2.0)
        for fam in (socket.AF_INET, socket.AF_INET6):
            req = struct.pack("=BBBBI", fam, socket.IPPROTO_TCP, 0, 0, 1 << 10) + b"\0" * 36 + struct.pack("=III", 0, 0xFFFFFFFF, 0xFFFFFFFF)
            s.send(struct.pack("=IHHII", 16 + len(req), 20, 0x301, 1, 0) + req)  # SOCK_DIAG_BY_FAMILY, REQUEST|DUMP
            done = False
            while not done:
                data = s.recv(65536); off = 0
                if not data: break
                while off + 16 <= len(data):
                    ln, typ = struct.unpack_from("=IH", data, off)
                    if typ == 3: done = True; break  # NLMSG_DONE
                    if typ == 2 or ln < 16: raise OSError("sock_diag refused")  # NLMSG_ERROR
                    if ln >= 16 + 72 and struct.unpack_from("!H", data, off + 20)[0] == port:
                        inodes.add(str(struct.unpack_from("=I", data, off + 16 + 68)[0]))
                    off += (ln + 3) & ~3
    finally:
        s.close()
    return inodes
def same_netns(root):
    try:
        return os.stat("/proc/self/ns/net").st_ino == os.stat("/proc/%d/ns/net" % root).st_ino
    except OSError:
        return False
def listening(root, port):
    if same_netns(root):
        try:
            return listening_nl(port)
        except (OSError, ValueError, AttributeError):
            pass
    inodes = set()
    for fn in ("tcp", "tcp6"):  # the server's own network namespace (a container's, too)
        try:
            with open("/proc/%d/net/%s" % (root, fn)) as f:
                next(f)
                for line in f:
                    a = line.split()
                    if len(a) > 9 and a[3] == "0A" and int(a[1].rsplit(":", 1)[1], 16) == port: inodes.add(a[9])
        except (OSError, StopIteration, ValueError): pass
    return inodes
def holder(root, pids, port):
    inodes = listening(root, port)
    if not inodes:
        return {"state": "free"}
    mine, readable = False, True
    for p in pids:
        try:
            if socks(p) & inodes: mine = True; break
        except PermissionError: readable = False
        except OSError: pass
    if mine: return {"state": "own"}
    if not readable: return {"state": "unknown"}
    listen = {"state": "other"}
    for d in os.listdir("/proc"):
        if d.isdigit() and int(d) not in pids:
            try:
                if socks(int(d)) & inodes:
                    with open("/proc/%s/comm" % d) as f: listen = {"state": "other", "pid": int(d), "name": f.read().strip()}
                    listen["older"] = started(int(d)) < started(root)  # there before this start
                    break
            except OSError: pass
    return listen
def proc_sample(root, want_model, port):
    if state(root) in ("Z", "X"):  # gone, or a zombie nobody has reaped yet: dead either way
        return {"alive": False}
    pids = tree(root, SCAN.get("threads", 0))
    cpu = 0.0; rd = 0; rss = 0; names = []; threads = 0
    for p in pids:
        try:
            with open("/proc/%d/stat" % p) as f: s = f.read()
            name = s[s.index("(") + 1:s.rindex(")")]; rest = s.rsplit(")", 1)[1].split()
            cpu += (int(rest[11]) + int(rest[12])) / TICK; rss += int(rest[21]) * PAGE // 1024; threads += int(rest[17])
            if p != root: names.append(name)
            try:
                with open("/proc/%d/io" % p) as f:
                    for line in f:
                        if line.startswith("read_bytes:"): rd += int(line.split()[1])
            except OSError: pass
        except (OSError, ValueError, IndexError): pass
    cmd = ""
    try:
        with open("/proc/%d/cmdline" % root, "rb") as f: cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")[:2000]
    except OSError: pass
    SCAN["threads"] = threads
    out = {"alive": True, "cpu": round(cpu, 2), "read": rd, "rss": rss, "n": len(pids), "names": names[:64], "cmd": cmd, "_pids": pids}
    out["model"] = model_size(cmd) if want_model else None
    out["port"] = holder(root, pids, port) if port else None
    return out
"""

PROC_SCRIPT = (
    PROC_FUNCS
    + r"""
_s = proc_sample(int(sys.argv[1]), sys.argv[2] == "1", int(sys.argv[3]) if len(sys.argv) > 3 else 0); _s.pop("_pids", None)
print(json.dumps(_s))
"""
)
