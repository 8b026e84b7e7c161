"""HTTP through the host connection, and the readiness ladder.

The only module that knows httpcore: a NetworkBackend whose streams are the host's TCP
streams (SSH direct-tcpip channels, or plain sockets), under a stock httpx client.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import json
import ssl
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import httpcore
import httpx

from coldwatch.errors import ColdwatchError, ConfigError
from coldwatch.evidence import HttpState
from coldwatch.hosts.base import Host, TcpStream

__all__ = ["HttpState", "Ladder", "check_url", "completion_ok", "make_client"]

BODY_CAP = 64 * 1024
"""At most this many bytes of any response body are read."""

PROBE_LIMIT = 30.0
"""Default total time for one readiness probe (models + completion), however the bytes trickle in."""

_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("coldwatch_http_deadline", default=None)


class DeadlinePassed(httpcore.ReadTimeout):
    """The whole exchange ran past its deadline (httpx only bounds each read on its own)."""


@contextlib.contextmanager
def deadline_scope(deadline: float | None) -> Iterator[None]:
    """Every connect, read and write of this thread's HTTP exchanges ends by ``deadline``
    (a time.monotonic() instant); a server that drips one byte per read timeout cannot hold on."""
    outer = _DEADLINE.get()
    if outer is not None and (deadline is None or outer < deadline):
        deadline = outer
    token = _DEADLINE.set(deadline)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def _bounded(timeout: float | None) -> float | None:
    """The per-operation timeout, shortened to what is left of the exchange's deadline."""
    deadline = _DEADLINE.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise DeadlinePassed("the exchange's deadline passed")
    return left if timeout is None else min(timeout, left)


class _Stream(httpcore.NetworkStream):
    def __init__(self, sock: TcpStream) -> None:
        self._sock = sock

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        self._sock.settimeout(_bounded(timeout))
        try:
            return self._sock.recv(max_bytes)
        except TimeoutError as exc:
            _bounded(None)  # the deadline, when that is what ran out
            raise httpcore.ReadTimeout(str(exc)) from exc
        except OSError as exc:
            raise httpcore.ReadError(str(exc)) from exc

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._sock.settimeout(_bounded(timeout))
        try:
            self._sock.sendall(buffer)
        except TimeoutError as exc:
            raise httpcore.WriteTimeout(str(exc)) from exc
        except OSError as exc:
            raise httpcore.WriteError(str(exc)) from exc

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.close()

    def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        return _TlsStream(self._sock, ssl_context, server_hostname, timeout)

    def get_extra_info(self, info: str) -> Any:
        return None


class _TlsStream(httpcore.NetworkStream):
    """TLS over any byte stream (an SSH channel has no file descriptor for ssl.wrap_socket)."""

    def __init__(self, sock: TcpStream, ctx: ssl.SSLContext, hostname: str | None, timeout: float | None) -> None:
        self._sock = sock
        self._in = ssl.MemoryBIO()
        self._out = ssl.MemoryBIO()
        self._obj = ctx.wrap_bio(self._in, self._out, server_side=False, server_hostname=hostname)
        try:
            self._retry(self._obj.do_handshake, timeout)
        except DeadlinePassed:
            with contextlib.suppress(OSError):
                sock.close()
            raise
        except (ssl.SSLError, OSError, httpcore.ReadTimeout) as exc:
            with contextlib.suppress(OSError):
                sock.close()
            raise httpcore.ConnectError(f"TLS handshake failed: {exc}") from exc

    def _flush(self, timeout: float | None) -> None:
        data = self._out.read()
        if data:
            self._sock.settimeout(_bounded(timeout))
            self._sock.sendall(data)

    def _retry(self, fn: Any, timeout: float | None, *args: Any) -> Any:
        while True:
            try:
                result = fn(*args)
                self._flush(timeout)
                return result
            except ssl.SSLWantReadError:
                self._flush(timeout)
                self._sock.settimeout(_bounded(timeout))
                try:
                    data = self._sock.recv(65536)
                except TimeoutError as exc:
                    _bounded(None)
                    raise httpcore.ReadTimeout(str(exc)) from exc
                if not data:
                    self._in.write_eof()
                else:
                    self._in.write(data)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        try:
            return bytes(self._retry(self._obj.read, timeout, max_bytes))
        except ssl.SSLZeroReturnError:
            return b""
        except (ssl.SSLError, OSError) as exc:
            raise httpcore.ReadError(str(exc)) from exc

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        try:
            self._retry(self._obj.write, timeout, buffer)
        except (ssl.SSLError, OSError) as exc:
            raise httpcore.WriteError(str(exc)) from exc

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.close()

    def start_tls(self, *a: Any, **k: Any) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("TLS inside TLS is not supported")

    def get_extra_info(self, info: str) -> Any:
        return self._obj if info == "ssl_object" else None


class HostBackend(httpcore.NetworkBackend):
    """httpcore network backend: every TCP connection is opened by the host."""

    def __init__(self, host: Host) -> None:
        self.host = host

    def connect_tcp(
        self, host: str, port: int, timeout: float | None = None, local_address: str | None = None, socket_options: Any = None
    ) -> httpcore.NetworkStream:
        try:
            return _Stream(self.host.connect_tcp(host, port, _bounded(timeout or 5.0) or 5.0))
        except ConnectionRefusedError as exc:
            raise httpcore.ConnectError(f"refused: {exc}") from exc
        except ColdwatchError as exc:  # the SSH connection itself is down: not a server state
            raise httpcore.ConnectError(f"no connection to the host: {exc}") from exc
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(str(exc)) from exc
        except OSError as exc:
            raise httpcore.ConnectError(str(exc)) from exc

    def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options: Any = None) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("unix sockets are not supported")

    def sleep(self, seconds: float) -> None:
        import time

        time.sleep(seconds)


@functools.cache
def _ssl_context(verify: bool) -> ssl.SSLContext:
    """One TLS context per process: loading the system's CA certificates took ~15 ms and ~0.8 MB for each
    target of a fleet (an SSLContext is safe to share between threads)."""
    return ssl.create_default_context() if verify else ssl._create_unverified_context()  # noqa: S323 - --insecure only


def make_client(host: Host, verify: bool = True, timeout: float = 5.0) -> httpx.Client:
    """A stock httpx client whose connections go through the host."""
    ctx = _ssl_context(verify)
    transport = httpx.HTTPTransport(verify=ctx)
    transport._pool = httpcore.ConnectionPool(ssl_context=ctx, network_backend=HostBackend(host), max_connections=4)
    return httpx.Client(transport=transport, timeout=timeout, follow_redirects=False)


def check_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"--url: expected http(s)://HOST[:PORT], got {url!r}")
    return url.rstrip("/")


def _read_capped(resp: httpx.Response) -> bytes:
    buf = bytearray()
    for chunk in resp.iter_bytes():
        buf += chunk
        if len(buf) > BODY_CAP:
            break
    return bytes(buf[: BODY_CAP + 1])


def _request(client: httpx.Client, method: str, url: str, headers: dict[str, str], body: Any = None) -> tuple[int, bytes]:
    # ASCII JSON: a model id as the server spelt it goes back exactly, even one that UTF-8 cannot
    # encode (a lone surrogate from a "\ud800" escape)
    content = None if body is None else json.dumps(body).encode("ascii")
    if content is not None:
        headers = {**headers, "Content-Type": "application/json"}
    with client.stream(method, url, headers=headers, content=content) as resp:
        return resp.status_code, _read_capped(resp)


def _json(body: bytes) -> Any:
    if len(body) > BODY_CAP:
        return None
    try:
        return json.loads(body)
    except ValueError:
        return None


def completion_ok(body: bytes) -> tuple[bool, str]:
    """A real completion: JSON, choices[0].text a string, finish_reason set. Anything else is not ready."""
    if len(body) > BODY_CAP:
        return False, f"body larger than {BODY_CAP // 1024} KB"
    data = _json(body)
    if not isinstance(data, dict):
        return False, "body is not a JSON object"
    if "error" in data and data.get("error"):
        return False, f"error object: {str(data['error'])[:120]}"
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        return False, "no choices in the body"
    first = choices[0]
    if not isinstance(first, dict) or not isinstance(first.get("text"), str):
        return False, "choices[0].text is not a string"
    if not first.get("finish_reason"):
        return False, "choices[0].finish_reason is not set"
    return True, "completion returned"


class Ladder:
    """connect -> /v1/models -> 1-token /v1/completions."""

    def __init__(self, client: httpx.Client, base_url: str, model: str | None, api_key: str | None) -> None:
        self.client = client
        self.base = check_url(base_url)
        self.model = model
        self.listed: str | None = None
        """The model /v1/models last listed: asked once, not before every completion (a server in
        warm-up lists its model and answers 503 to completions for a while); dropped on a 404."""
        self.headers = {"Authorization": f"Bearer {check_api_key(api_key)}"} if api_key else {}

    def probe(self, deadline: float | None = None) -> HttpState:
        """One climb of the ladder, over by ``deadline`` (a time.monotonic() instant) or within
        PROBE_LIMIT seconds, whichever comes first, however slowly the server sends."""
        start = time.monotonic()
        end = start + PROBE_LIMIT if deadline is None else min(deadline, start + PROBE_LIMIT)
        try:
            with deadline_scope(end):
                return self._probe()
        except httpx.ConnectTimeout:
            return HttpState("timeout", detail="connect timed out")
        except httpx.ConnectError as exc:
            text = str(exc)
            if "no connection to the host" in text:
                return HttpState("error", detail="SSH connection down")
            if "refused" in text.lower():
                return HttpState("refused", detail="connection refused (port not bound yet)")
            return HttpState("refused", detail=redact(text, self.headers)[:160])
        except httpx.TimeoutException:
            if time.monotonic() >= end:
                return HttpState("timeout", detail=f"no complete answer within {end - start:.1f}s (a slow or trickling server)")
            return HttpState("timeout", detail="no answer within the request timeout")
        except (httpx.HTTPError, OSError, ValueError) as exc:
            return HttpState("error", detail=redact(f"{type(exc).__name__}: {exc}", self.headers)[:160])

    def _probe(self) -> HttpState:
        model = self.model or self.listed
        if model is None:
            status, body = _request(self.client, "GET", self.base + "/v1/models", self.headers)
            if status != 200:
                return HttpState("status", status, f"/v1/models answered {status}")
            data = _json(body)
            try:
                model = str(data["data"][0]["id"])
            except (TypeError, KeyError, IndexError):
                return HttpState("status", status, "/v1/models listed no model")
            self.listed = model
        payload = {"model": model, "prompt": "Hello", "max_tokens": 1, "temperature": 0}
        status, body = _request(self.client, "POST", self.base + "/v1/completions", self.headers, payload)
        if status != 200:
            if status == 404:
                self.listed = None  # no such model (any more): list them again next time
            return HttpState("status", status, f"/v1/completions answered {status}", model)
        ok, why = completion_ok(body)
        if ok:
            self.model = model
            return HttpState("ready", status, why, model)
        return HttpState("status", status, f"200 but {why}", model)


def check_api_key(key: str | None) -> str | None:
    """A bearer token is visible ASCII (no space, CR, LF, NUL or other control): anything else
    would be refused by the HTTP layer with the header's repr in the message. Never echoed."""
    if key is not None and not (key.isascii() and key.isprintable() and " " not in key):
        raise ConfigError("api_key: must be visible ASCII characters only (no spaces or control characters); the value is not shown")
    from coldwatch.sanitise import add_secret

    add_secret(key)  # every sink shows it as *** from now on, even when the server echoes it
    return key


def redact(text: str, headers: dict[str, str]) -> str:
    """The API key out of an error text, in every form an exception may spell it: as is, in a
    str or bytes repr (escaped backslashes, quotes, control characters) and JSON-escaped."""
    auth = headers.get("Authorization")
    if not auth or not auth.startswith("Bearer "):
        return text
    key = auth[7:]
    forms = {key, repr(key)[1:-1], repr(key.encode("utf-8", "surrogatepass"))[2:-1], json.dumps(key)[1:-1]}
    for form in sorted((f for f in forms if f), key=len, reverse=True):
        text = text.replace(form, "***")
    return text
