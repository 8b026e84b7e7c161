"""python -m benchmarks.probe [N]: one readiness probe (a 1-token completion on a kept-alive
connection) through the SSH connection, against the same request straight over TCP, in the same run;
N probes each (200). Two servers: one that sends a reply's headers and body apart with Nagle off (as
uvicorn does: asyncio sets TCP_NODELAY), and http.server's own, which leaves Nagle on.

sshd leaves Nagle on for a session without a pty, so the second small packet of an answer waits for
the client's ACK, which Linux delays by up to 40 ms unless the client asks for quick ACKs
(``hosts/ssh.py``). Set ``COLDWATCH_BENCH_NO_QUICKACK=1`` to see the figure without them.
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import hostfix  # noqa: E402

GOOD = json.dumps({"choices": [{"text": "x", "finish_reason": "length"}]}).encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a: Any) -> None:
        return

    def _send(self, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802
        self._send(b'{"data": [{"id": "m"}]}')

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._send(GOOD)


class _NoDelay(ThreadingHTTPServer):
    def get_request(self) -> tuple[socket.socket, Any]:
        conn, addr = super().get_request()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn, addr


def _timed(probe: Any, n: int) -> tuple[float, float]:
    """(median wall ms, CPU ms per probe of this process)."""
    walls = []
    cpu = time.process_time()
    for _ in range(n):
        t = time.perf_counter()
        st = probe()
        walls.append((time.perf_counter() - t) * 1000)
        assert st.state == "ready", st
    return statistics.median(walls), (time.process_time() - cpu) / n * 1000


def run(n: int = 200) -> dict[str, Any]:
    why = hostfix.why_not()
    if why:
        print(f"probe: skipped ({why})")
        return {}
    if os.environ.get("COLDWATCH_BENCH_NO_QUICKACK"):
        import coldwatch.hosts.ssh as ssh

        ssh._QUICKACK = None
    from coldwatch.hosts.local import LocalHost
    from coldwatch.hosts.ssh import SshHost
    from coldwatch.http import Ladder, make_client

    fix = Path(tempfile.mkdtemp(prefix="cwprobe-", dir="/tmp"))
    user, hostfix.USER = hostfix.USER, "cwbench"
    host = hostfix.start(fix)
    out: dict[str, Any] = {}
    try:
        ssh_host = SshHost.connect("gpu1", ssh_config=host.home / ".ssh" / "config", known_hosts=host.home / ".ssh" / "known_hosts")
        for name, cls in (("nodelay", _NoDelay), ("http.server", ThreadingHTTPServer)):
            srv = cls(("127.0.0.1", 0), _Handler)
            threading.Thread(target=srv.serve_forever, daemon=True).start()
            url = f"http://127.0.0.1:{srv.server_address[1]}"
            try:
                with make_client(ssh_host) as via_ssh, make_client(LocalHost()) as direct:
                    a, b = Ladder(via_ssh, url, None, None), Ladder(direct, url, None, None)
                    a.probe(), b.probe()  # connect and list the model once
                    ssh_ms, ssh_cpu = _timed(a.probe, n)
                    tcp_ms, tcp_cpu = _timed(b.probe, n)
            finally:
                srv.shutdown()
                srv.server_close()
            out[name] = {"ssh_ms": ssh_ms, "ssh_cpu_ms": ssh_cpu, "tcp_ms": tcp_ms, "tcp_cpu_ms": tcp_cpu}
            print(
                f"probe ({name} server): through SSH {ssh_ms:.2f} ms median ({ssh_cpu:.2f} ms CPU) vs straight over TCP "
                f"{tcp_ms:.2f} ms ({tcp_cpu:.2f} ms CPU): {ssh_ms / tcp_ms:.1f}x"
            )
        ssh_host.close()
    finally:
        host.close()
        hostfix.USER = user
        subprocess.run(["rm", "-rf", str(fix)])
    return out


if __name__ == "__main__":
    print(json.dumps(run(int(sys.argv[1]) if len(sys.argv) > 1 else 200), indent=1))
