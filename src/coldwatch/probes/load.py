"""What the host says about the weight load's storage, inside the streaming sampler.

LOAD_FUNCS runs on the host (python3, standard library only) next to PROC_FUNCS:

* ``load_target(pid, cmd)``: once per server command line, the model directory it names (seen from the
  server's own mount namespace, through ``/proc/PID/root``), the mount holding it (``/proc/PID/mountinfo``),
  the block devices under that mount (``/sys/dev/block/MAJ:MIN``, then ``slaves/`` through
  device-mapper and md to the disks) and how much of its ``*.safetensors`` is in page cache
  (``fincore`` from util-linux when present, else ``mincore(2)`` through ctypes).
* ``io_sample(devs, pids, last)``: every interval, those devices' sectors read and ``io_ticks`` from
  ``/proc/diskstats``, and (while the tree reads) the busiest thread's CPU share over the interval.

The judge's side (deltas, the verdict) is pure: ``coldwatch.bandwidth``.
"""

from __future__ import annotations

LOAD_FUNCS = r"""
def model_dir(cmd):
    a = cmd.split()
    for i, w in enumerate(a):
        v = None
        if w in ("--model-path", "--model") and i + 1 < len(a): v = a[i + 1]
        elif w.startswith(("--model-path=", "--model=")): v = w.split("=", 1)[1]
        elif w == "serve" and i + 1 < len(a) and a[i + 1].startswith("/"): v = a[i + 1]
        if v and v.startswith("/"): return v
    return None
def mount_of(pid, path):
    best = None
    with open("/proc/%d/mountinfo" % pid) as f:
        for line in f:
            a = line.split()
            if "-" not in a: continue
            k = a.index("-"); mp = a[4].replace("\\040", " ")
            if (path == mp or path.startswith(mp.rstrip("/") + "/")) and (best is None or len(mp) >= len(best[0])):
                best = (mp, a[2], a[k + 1], a[k + 2] if len(a) > k + 2 else "")
    return best
def leaves(majmin, source):
    if majmin.startswith("0:") and source.startswith("/dev/"):
        try:
            st = os.stat(source).st_rdev; majmin = "%d:%d" % (os.major(st), os.minor(st))
        except OSError: return []
    try: name = os.path.basename(os.path.realpath("/sys/dev/block/" + majmin))
    except OSError: return []
    if not os.path.exists("/sys/class/block/" + name): return []
    out = []; todo = [name]; seen = set()
    while todo and len(seen) < 64:
        n = todo.pop()
        if n in seen: continue
        seen.add(n)
        try: kids = os.listdir("/sys/class/block/%s/slaves" % n)
        except OSError: kids = []
        if kids: todo.extend(kids)
        else: out.append(n)
    return sorted(out)
def resident(files):
    try:
        res = 0
        for i in range(0, len(files), 200):
            r = subprocess.run(["fincore", "--bytes", "--noheadings", "--raw", "--output", "RES,SIZE"] + files[i:i + 200], capture_output=True, timeout=60)
            if r.returncode: raise OSError(r.returncode)
            for line in r.stdout.split(b"\n"):
                a = line.split()
                if len(a) == 2: res += min(int(a[0]), int(a[1]))
        return res, "fincore"
    except (OSError, ValueError, subprocess.TimeoutExpired):
        pass
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    win = 1 << 30; vec = (ctypes.c_ubyte * (win // PAGE))(); res = 0
    for fn in files:
        fd = os.open(fn, os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size; off = 0
            while off < size:
                n = min(win, size - off)
                addr = libc.mmap(None, n, 1, 1, fd, off)  # PROT_READ, MAP_SHARED
                if addr is None or addr == ctypes.c_void_p(-1).value: return None, "mincore"
                try:
                    if libc.mincore(addr, n, vec) != 0: return None, "mincore"
                    pages = (n + PAGE - 1) // PAGE
                    res += min((pages - bytes(vec[:pages]).count(0)) * PAGE, n)
                finally:
                    libc.munmap(addr, n)
                off += n
        finally:
            os.close(fd)
    return res, "mincore"
def load_target(pid, cmd):
    d = model_dir(cmd)
    if not d: return None
    root = "/proc/%d/root" % pid
    local = root + d if os.path.isdir(root + d) else d
    if not os.path.isdir(local): return None
    out = {"dir": d[:300]}
    try:
        m = mount_of(pid, os.path.normpath(d))  # the path as the server sees it, in its mount namespace
    except OSError:
        m = None
    if m:
        out.update(mount=m[0][:300], fs=m[2][:40], src=m[3][:300], devs=leaves(m[1], m[3]))
    files = sorted(os.path.join(local, n) for n in os.listdir(local) if n.endswith(".safetensors"))
    if files:
        out["size"] = sum(os.path.getsize(f) for f in files)
        try:
            res, how = resident(files)
        except OSError:
            res, how = None, None
        out["cached"] = res; out["how"] = how
    return out
def io_sample(devs, pids, last, reading):
    out = {"t": time.monotonic(), "devs": {}}
    if devs:
        with open("/proc/diskstats") as f:
            for line in f:
                a = line.split()
                if len(a) > 12 and a[2] in devs: out["devs"][a[2]] = [int(a[5]), int(a[12])]
    if reading:
        now = {}
        for p in pids:
            try: tids = os.listdir("/proc/%d/task" % p)
            except OSError: continue
            for t in tids:
                try:
                    with open("/proc/%d/task/%s/stat" % (p, t)) as f: r = f.read().rsplit(")", 1)[1].split()
                    now[t] = (int(r[11]) + int(r[12])) / TICK
                except (OSError, IndexError, ValueError): pass
        if last.get("threads") is not None and out["t"] > last["t"]:
            prev = last["threads"]
            busy = max([now[t] - prev[t] for t in now if t in prev] or [0.0])
            out["core"] = round(busy / (out["t"] - last["t"]), 3)
        last["threads"] = now
    else:
        last["threads"] = None
    last["t"] = out["t"]
    return out
"""
