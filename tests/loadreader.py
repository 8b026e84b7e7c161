"""A stand-in for a server loading its weights: `python loadreader.py --model-path DIR MODE`.

Waits for DIR/../go, then reads every *.safetensors in DIR. MODE: ``disk`` reads 16 KiB blocks with
O_DIRECT, one thread per shard, so the device is never idle (an IOPS-bound load); ``cpu`` reads 64 KiB
blocks through the page cache and works through each in pure Python first (one core saturated, the
disk mostly idle); ``cache`` reads 1 MiB blocks through the page cache. Then it idles until killed, as
a server would after its load.
"""

from __future__ import annotations

import mmap
import os
import sys
import threading
import time
from pathlib import Path

BLOCK = int(os.environ.get("LOADREADER_BLOCK", "16384"))


def direct_read(f: Path) -> None:
    fd = os.open(f, os.O_RDONLY | os.O_DIRECT)
    buf = mmap.mmap(-1, BLOCK)  # page-aligned, as O_DIRECT needs
    off = 0
    while os.preadv(fd, [buf], off) > 0:
        off += BLOCK
    os.close(fd)


def main() -> None:
    d = Path(sys.argv[2])
    mode = sys.argv[3]
    go = d.parent / "go"
    while not go.exists():
        time.sleep(0.05)
    files = sorted(d.glob("*.safetensors"))
    if mode == "disk":
        # one thread per shard, as multithreaded loaders do: the device always has requests queued
        threads = [threading.Thread(target=direct_read, args=(f,)) for f in files]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    for f in files if mode != "disk" else []:
        block = 1 << 16 if mode == "cpu" else 1 << 20
        with f.open("rb", buffering=0) as fh:
            while True:
                b = fh.read(block)
                if not b:
                    break
                if mode == "cpu":
                    x = 0
                    for c in b:
                        x = (x * 31 + c) & 0xFFFFFFFF
    (d.parent / "done").write_text("1")
    time.sleep(600)


if __name__ == "__main__":
    main()
