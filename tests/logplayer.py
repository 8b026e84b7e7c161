"""A server stand-in for the parity tests: prints a saved log (compressed in time) as a log command
would; then, when told the real server came up after that log, serves a validated completion on
127.0.0.1:PORT until it is stopped, else exits as `docker logs -f` does when its container stops."""

from __future__ import annotations

import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        return

    def _send(self, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        self._send({"data": [{"id": "replayed-model"}]})

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        self.rfile.read(int(self.headers.get("Content-Length", "0") or 0))
        self._send({"choices": [{"text": "x", "finish_reason": "length"}]})


def main() -> None:
    path, port, serve = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "serve"
    data = Path(path).read_bytes()
    out = sys.stdout.buffer
    step = max(len(data) // 20, 1)
    for i in range(0, len(data), step):  # about 20 writes, 0.5 s in all
        out.write(data[i : i + step])
        out.flush()
        time.sleep(0.025)
    if not data.endswith(b"\n"):
        out.write(b"\n")
        out.flush()
    if serve:  # the server came up after this log
        ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
    # otherwise its output ends here, as `docker logs -f` does when the container stops


if __name__ == "__main__":
    main()
