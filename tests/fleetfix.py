"""What the fleet tests share: real HTTP model servers on loopback (ready at once, or never) and a sink
that keeps every event it is given."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Server(BaseHTTPRequestHandler):
    ready = True

    def log_message(self, *a: object) -> None:
        pass

    def _send(self) -> None:
        b = json.dumps({"data": [{"id": "m"}], "choices": [{"text": "x", "finish_reason": "length"}]}).encode()
        self.send_response(200 if self.ready else 503)
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def do_GET(self) -> None:
        self._send()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self._send()


@contextmanager
def model_servers(names: tuple[str, ...]) -> Iterator[dict[str, str]]:
    """Target name -> URL: names starting with r are ready at once, the others never are."""
    made, urls = [], {}
    for name in names:
        srv = ThreadingHTTPServer(("127.0.0.1", 0), type("S", (Server,), {"ready": name.startswith("r")}))
        srv.daemon_threads = True
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        made.append(srv)
        urls[name] = f"http://127.0.0.1:{srv.server_address[1]}"
    try:
        yield urls
    finally:
        for srv in made:
            srv.shutdown()
            srv.server_close()


class Collect:
    """A sink that keeps every event."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def emit(self, ev: dict[str, Any]) -> None:
        self.events.append(ev)

    def close(self) -> None:
        pass
