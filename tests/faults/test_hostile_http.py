"""Hostile or broken HTTP servers (real ones, on 127.0.0.1): none is ever taken as ready."""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from coldwatch.hosts.local import LocalHost
from coldwatch.http import BODY_CAP, Ladder, make_client

MODELS = {"object": "list", "data": [{"id": "m"}]}
GOOD = {"choices": [{"text": " hi", "finish_reason": "length"}]}


def serve(reply: Any, tls: ssl.SSLContext | None = None) -> tuple[str, ThreadingHTTPServer]:
    """A real HTTP server whose /v1/completions answer is ``reply`` (status, headers, body)."""

    class H(BaseHTTPRequestHandler):
        def log_message(self, *a: Any) -> None:
            return

        def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802
            self._send(200, json.dumps(MODELS).encode())

        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            status, headers, body = reply
            if status == "hang":
                time.sleep(30)
                return
            self._send(status, body, headers)

    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    srv.daemon_threads = True
    if tls is not None:
        srv.socket = tls.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    scheme = "https" if tls else "http"
    return f"{scheme}://127.0.0.1:{srv.server_address[1]}", srv


@pytest.fixture
def host() -> Iterator[LocalHost]:
    h = LocalHost()
    yield h
    h.close()


CASES = {
    "error body mentioning choices": (500, {}, b'{"object":"error","message":"no choices available"}'),
    "200 error object with choices": (
        200,
        {},
        json.dumps({"error": {"message": "x"}, "choices": [{"text": "", "finish_reason": "stop"}]}).encode(),
    ),
    "empty choices": (200, {}, b'{"choices": []}'),
    "null choices": (200, {}, b'{"choices": null}'),
    "text not a string": (200, {}, b'{"choices": [{"text": null, "finish_reason": "stop"}]}'),
    "no finish_reason": (200, {}, b'{"choices": [{"text": "x"}]}'),
    "non-JSON": (200, {}, b"<html>choices</html>"),
    "redirect": (302, {"Location": "http://example.invalid/"}, b""),
    "over the size cap": (200, {}, json.dumps({"choices": [{"text": "x" * (BODY_CAP * 2), "finish_reason": "length"}]}).encode()),
}


@pytest.mark.parametrize("case", list(CASES))
def test_broken_answers_are_not_ready(host: LocalHost, case: str) -> None:
    """Each broken answer leaves the ladder short of ready, with a reason."""
    url, srv = serve(CASES[case])
    try:
        with make_client(host) as client:
            st = Ladder(client, url, None, None).probe()
    finally:
        srv.shutdown()
        srv.server_close()
    assert st.state != "ready" and st.detail


def test_good_answer_is_ready(host: LocalHost) -> None:
    """The control: a real completion is ready, and the model came from /v1/models."""
    url, srv = serve((200, {}, json.dumps(GOOD).encode()))
    try:
        with make_client(host) as client:
            st = Ladder(client, url, None, None).probe()
    finally:
        srv.shutdown()
        srv.server_close()
    assert (st.state, st.model) == ("ready", "m")


def test_server_that_never_answers_times_out(host: LocalHost) -> None:
    """Accepts and never answers: 'timeout' within the request timeout, not a hang."""
    url, srv = serve(("hang", {}, b""))
    t0 = time.monotonic()
    try:
        with make_client(host, timeout=1.0) as client:
            st = Ladder(client, url, None, None).probe()
    finally:
        srv.shutdown()
        srv.server_close()
    assert st.state == "timeout" and time.monotonic() - t0 < 5


def test_closed_port_is_refused(host: LocalHost) -> None:
    """Nothing listening: 'refused' (the port is not bound yet)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with make_client(host) as client:
        st = Ladder(client, f"http://127.0.0.1:{port}", None, None).probe()
    assert st.state == "refused"


@pytest.fixture(scope="module")
def tls_ctx(tmp_path_factory: pytest.TempPathFactory) -> ssl.SSLContext:
    d: Path = tmp_path_factory.mktemp("tls")
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(d / "k.pem"),
            "-out",
            str(d / "c.pem"),
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(d / "c.pem", d / "k.pem")
    return ctx


def test_tls_verified_by_default_insecure_opt_out(host: LocalHost, tls_ctx: ssl.SSLContext) -> None:
    """https with a self-signed certificate: refused by default, ready with --insecure."""
    url, srv = serve((200, {}, json.dumps(GOOD).encode()), tls_ctx)
    try:
        with make_client(host) as client:
            strict = Ladder(client, url, None, None).probe()
        with make_client(host, verify=False) as client:
            loose = Ladder(client, url, None, None).probe()
    finally:
        srv.shutdown()
        srv.server_close()
    assert strict.state != "ready" and "CERTIFICATE" in strict.detail.upper()
    assert loose.state == "ready"
