"""Nothing leaked, nothing lost: the API key never reaches a sink, history survives bad records,
full disks and unwritable homes, JUnit stays valid and in its place, input files are bounded.

Real parts: a real HTTP server (ThreadingHTTPServer on loopback) that echoes the bearer token,
the real CLI in a subprocess, a real full filesystem (a small tmpfs) where one can be mounted.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from conftest import OWN_LOGS, coldwatch, json_lines

KEY = "sk-live-4f9a1c2e8b7d6a5f"


class Echo(BaseHTTPRequestHandler):
    """A server that answers with the caller's bearer token in its bodies (as some proxies do)."""

    mode = "ready"
    warming = 0
    """Completions answered 503 before the first served one: a start the watch sees (an attach,
    a server up before the watch, records nothing)."""

    def log_message(self, *a: object) -> None:
        pass

    def _send(self, code: int, obj: object) -> None:
        b = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def do_GET(self) -> None:
        self._send(200, {"data": [{"id": "model-for " + self.headers.get("Authorization", "")}]})

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        auth = self.headers.get("Authorization", "")
        if "chat" in self.path:
            self._send(401, {"error": f"invalid credentials {auth}"})
        elif type(self).warming > 0:
            type(self).warming -= 1
            self._send(503, {"error": "warming up"})
        elif self.mode == "error":
            self._send(200, {"choices": [{"text": "x", "finish_reason": "length"}], "error": f"invalid credentials {auth}"})
        else:
            self._send(200, {"choices": [{"text": "x", "finish_reason": "length"}]})


@pytest.fixture
def echo() -> Iterator[tuple[str, type[Echo]]]:
    handler = type("EchoH", (Echo,), {})
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}", handler
    srv.shutdown()
    srv.server_close()


def _watch(url: str, tmp_path: Path, *more: str) -> tuple[subprocess.CompletedProcess[bytes], str, str]:
    junit, summary = tmp_path / "j.xml", tmp_path / "summary.md"
    r = coldwatch(
        "wait", "--url", url, "--log-cmd", "true", "--gpu-cmd", "true", "--interval", "0.3", "-o", "json",
        "--junit", str(junit), *more,
        env={"COLDWATCH_API_KEY": KEY, "GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)},
    )  # fmt: skip
    return r, junit.read_text(), summary.read_text() if summary.exists() else ""


def _history_text() -> str:
    p = Path(os.environ["COLDWATCH_HOME"]) / "history.jsonl"
    return p.read_text() if p.exists() else ""


def test_echoed_key_never_in_stderr_ndjson_junit_summary_or_history(echo, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    url, handler = echo
    handler.mode = "error"  # a completion that is an error object quoting the token: the reason holds it
    r, junit, summary = _watch(url, tmp_path, "--timeout", "3s")
    assert r.returncode == 124
    res = json_lines(r.stdout)[-1]
    assert "invalid credentials Bearer ***" in res["reason"]  # what the server said is kept, the key is not
    for sink in (r.stdout.decode(), r.stderr.decode(), junit, summary, _history_text()):
        assert KEY not in sink
    ET.fromstring(junit)


def test_echoed_key_never_printed_by_a_failed_check(echo, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    url, _ = echo
    r, junit, summary = _watch(url, tmp_path, "--timeout", "20s", "--check", "tools")
    assert r.returncode == 3, r.stderr
    assert "401" in json_lines(r.stdout)[-1]["reason"]
    for sink in (r.stdout.decode(), r.stderr.decode(), junit, summary, _history_text()):
        assert KEY not in sink
    assert "***" in r.stdout.decode()


# ---- history: a bad record, a torn line, a full disk, an unwritable home --------------------------


def _home() -> Path:
    return Path(os.environ["COLDWATCH_HOME"])


def test_bad_history_record_leaves_wait_and_history_working(echo, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    url, handler = echo
    handler.warming = 2  # a cold start, so this run is recorded beside the good old record
    home = _home()
    home.mkdir(parents=True)
    good = {"target": "localhost/log-cmd", "outcome": "ready", "durations": {"weight_load": 12.0}, "total": 30.0, "ts": "2026-01-01"}
    bad = {**good, "durations": {"weight_load": "12s"}}
    (home / "history.jsonl").write_text(json.dumps(bad) + "\n" + json.dumps(good) + "\n")
    r = coldwatch("wait", "--url", url, "--log-cmd", "true", "--gpu-cmd", "true", "--interval", "0.3", "--timeout", "20s", "-o", "json")
    assert r.returncode == 0, r.stderr
    assert json_lines(r.stdout)[-1]["event"] == "result"
    warned = [ln for ln in r.stderr.decode().splitlines() if "bad history record" in ln]
    assert len(warned) == 1 and "history.jsonl: line 1:" in warned[0] and "weight_load" in warned[0]
    h = coldwatch("history", "-o", "plain")
    assert h.returncode == 0, h.stderr
    assert "localhost/log-cmd" in h.stdout.decode()
    hj = coldwatch("history", "-o", "json")
    assert hj.returncode == 0 and len(json_lines(hj.stdout)) == 2  # the good old record and this run's


def test_torn_last_line_is_set_aside_and_the_next_record_stays_whole() -> None:
    from coldwatch import history

    history.append({"target": "t", "outcome": "ready", "total": 5.0})
    with open(history.path(), "a") as fh:
        fh.write('{"target": "t", "outc')  # a writer killed half-way
    seen: list[str] = []
    assert len(history.load(warn=seen.append)) == 1
    assert len(seen) == 1 and "line 2: torn last line" in seen[0] and str(history.path()) in seen[0]
    history.append({"target": "t", "outcome": "failed", "total": 7.0})
    seen.clear()
    recs = history.load(warn=seen.append)
    assert [r["outcome"] for r in recs] == ["ready", "failed"] and seen == []
    assert history.path().with_name("history.jsonl.torn").read_text() == '{"target": "t", "outc\n'


def _mount_tmpfs(where: Path, size: str) -> None:
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("needs root to mount a small tmpfs")
    where.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.decode().strip()}")


def _fill(fs: Path) -> None:
    with open(fs / "filler", "wb", buffering=0) as fh:
        for chunk in (4096, 1):
            while True:
                try:
                    fh.write(b"x" * chunk)
                except OSError:
                    break


def test_full_disk_leaves_history_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from coldwatch import history
    from coldwatch.errors import ConfigError

    fs = tmp_path / "small"
    _mount_tmpfs(fs, "64k")
    try:
        monkeypatch.setenv("COLDWATCH_HOME", str(fs / "cw"))
        history.append({"target": "t", "outcome": "ready", "total": 1.0})
        _fill(fs)  # the history's own page has room left, nothing else has
        before = history.path().read_bytes()
        with pytest.raises(ConfigError, match="No space left"):
            history.append({"target": "t", "outcome": "ready", "total": 2.0, "model": "m" * 8000})
        assert history.path().read_bytes() == before  # nothing of the record that did not fit
        (fs / "filler").unlink()
        history.append({"target": "t", "outcome": "failed", "total": 3.0})
        seen: list[str] = []
        assert [r["total"] for r in history.load(warn=seen.append)] == [1.0, 3.0] and seen == []
    finally:
        subprocess.run(["umount", "-l", str(fs)], capture_output=True)


def test_replay_record_keeps_its_verdict_when_history_cannot_be_written(tmp_path: Path) -> None:
    log = OWN_LOGS / "vllm-v011-kv-cache-too-small.log"
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    r = coldwatch("replay", str(log), "--record", "-o", "json", env={"COLDWATCH_HOME": str(blocker / "cw")})
    assert r.returncode == 3, r.stderr
    assert json_lines(r.stdout)[-1]["exit_code"] == 3
    assert "cannot write history" in r.stderr.decode() and "Traceback" not in r.stderr.decode()


def test_history_warning_comes_before_the_result_line(echo, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    url, handler = echo
    handler.warming = 2  # a cold start: an attach would record nothing and warn of nothing
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    r = coldwatch(
        "wait", "--url", url, "--log-cmd", "true", "--gpu-cmd", "true", "--interval", "0.3", "--timeout", "20s", "-o", "json",
        env={"COLDWATCH_HOME": str(blocker / "cw")},
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    evs = json_lines(r.stdout)
    assert evs[-1]["event"] == "result"
    assert any(e["event"] == "warning" and "history not written" in e["message"] for e in evs[:-1])


# ---- --junit: what is at the path is respected -------------------------------------------------


def test_junit_onto_a_fifo_leaves_the_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "report.xml"
    os.mkfifo(fifo)
    r = coldwatch("demo", "--speed", "0.05", "-o", "json", "--junit", str(fifo), timeout=60)
    err = r.stderr.decode().strip().splitlines()
    assert r.returncode == 2 and len(err) == 1 and "FIFO" in err[0] and "Traceback" not in r.stderr.decode()
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert json_lines(r.stdout)[-1]["exit_code"] == 2


def test_junit_through_a_symlink_writes_the_file_it_names(tmp_path: Path) -> None:
    (tmp_path / "reports").mkdir()
    target = tmp_path / "reports" / "coldwatch.xml"
    link = tmp_path / "junit.xml"
    link.symlink_to(target)
    r = coldwatch("demo", "--speed", "0.05", "-o", "json", "--junit", str(link), timeout=60)
    assert r.returncode == 0, r.stderr
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert ET.parse(target).getroot().tag == "testsuites"


# ---- every file coldwatch reads: bounded, regular, a one-line error -------------------------------


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP port that accepts (so a run gets as far as reading known_hosts) and says nothing."""
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    yield s.getsockname()[1]
    s.close()


def _one_line_exit_2(r: subprocess.CompletedProcess[bytes], *words: str) -> None:
    err = r.stderr.decode()
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert r.returncode == 2, err
    assert len(lines) == 1 and "Traceback" not in err and "internal error" not in err, err
    for w in words:
        assert w in lines[0], lines[0]


def test_bad_input_files_are_refused_in_one_line(tmp_path: Path, listener: int) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    big = tmp_path / "big.toml"
    big.write_bytes(b"# " + b"x" * (2 << 20) + b"\n")
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    env = {"HOME": str(home)}
    t0 = time.monotonic()
    for args, words in [
        (["wait", "--config", "/dev/zero"], ["/dev/zero", "character device"]),
        (["wait", "--config", str(fifo)], ["FIFO"]),
        (["wait", "--config", str(big)], ["larger than 1 MiB"]),
        (["status", "--config", "/dev/zero"], ["character device"]),
        (["replay", str(OWN_LOGS / "vllm-v011-kv-cache-too-small.log"), "--rules", "/dev/zero"], ["rules file", "character device"]),
        (["wait", "--rules", str(fifo), "--timeout", "5s"], ["rules file", "FIFO"]),
        (["wait", "--targets-file", "/dev/zero"], ["targets file", "character device"]),
        (["wait", "--targets-file", str(fifo)], ["FIFO"]),
    ]:
        start = time.monotonic()
        r = coldwatch(*args, env=env, timeout=30)
        _one_line_exit_2(r, *words)
        assert time.monotonic() - start < 5.0, args
    # SSH's files: the identity, known_hosts and the SSH config
    (home / ".ssh" / "config").write_text(f"Host h\n  HostName 127.0.0.1\n  Port {listener}\n  IdentityFile /dev/zero\n")
    _one_line_exit_2(coldwatch("wait", "h", "--timeout", "5s", env=env, timeout=30), "SSH identity", "character device")
    (home / ".ssh" / "config").write_text(f"Host h\n  HostName 127.0.0.1\n  Port {listener}\n  UserKnownHostsFile {fifo}\n")
    _one_line_exit_2(coldwatch("wait", "h", "--timeout", "5s", env=env, timeout=30), "known_hosts", "FIFO")
    (home / ".ssh" / "config").unlink()
    (home / ".ssh" / "config").symlink_to("/dev/zero")
    _one_line_exit_2(coldwatch("wait", "127.0.0.1", "--timeout", "5s", env=env, timeout=30), "SSH config", "character device")
    assert time.monotonic() - t0 < 60


def test_a_history_that_is_not_a_file_is_a_warning_for_wait_and_exit_2_for_history(echo, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    url, _ = echo
    home = _home()
    home.mkdir(parents=True)
    os.mkfifo(home / "history.jsonl")
    r = coldwatch(
        "wait", "--url", url, "--log-cmd", "true", "--gpu-cmd", "true", "--interval", "0.3", "--timeout", "20s", "-o", "json", timeout=60
    )
    assert r.returncode == 0, r.stderr
    assert "FIFO" in r.stderr.decode()
    _one_line_exit_2(coldwatch("history", timeout=30), "history", "FIFO")


# ---- the decisive rules of completion validation and sanitising, in absolute terms ----------------


class Answer(BaseHTTPRequestHandler):
    status = 200
    body = b""
    asked: list[dict[str, object]] = []

    def log_message(self, *a: object) -> None:
        pass

    def _send(self, code: int, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._send(200, b'{"data": [{"id": "m"}]}')

    def do_POST(self) -> None:
        type(self).asked.append(json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0)))))
        self._send(self.status, self.body)


GOOD = json.dumps({"choices": [{"text": "x", "finish_reason": "length"}]}).encode()


def _exactly(n: int) -> bytes:
    """A well-formed completion body of exactly ``n`` bytes."""
    empty = json.dumps({"choices": [{"text": "", "finish_reason": "length"}]}).encode()
    body = json.dumps({"choices": [{"text": "x" * (n - len(empty)), "finish_reason": "length"}]}).encode()
    assert len(body) == n
    return body


@pytest.mark.parametrize(
    ("status", "body", "state"),
    [
        (200, GOOD, "ready"),
        (400, GOOD, "status"),  # a 4xx with a well-formed completion is never ready
        (503, GOOD, "status"),
        (201, GOOD, "status"),
        (200, json.dumps({"choices": [{"text": "x", "finish_reason": "length"}], "error": "boom"}).encode(), "status"),
        (200, json.dumps({"choices": [{"text": "x", "finish_reason": "length"}], "error": ""}).encode(), "ready"),
        (200, json.dumps({"choices": []}).encode(), "status"),
        (200, json.dumps({"choices": [{"text": 1, "finish_reason": "length"}]}).encode(), "status"),
        (200, json.dumps({"choices": [{"text": "", "finish_reason": "stop"}]}).encode(), "ready"),
        (200, json.dumps({"choices": [{"text": "x", "finish_reason": None}]}).encode(), "status"),
        (200, json.dumps({"choices": [{"text": "x"}]}).encode(), "status"),
        (200, json.dumps([1]).encode(), "status"),
        (200, b"not json", "status"),
        (200, json.dumps({"choices": [{"text": "x" * (64 * 1024), "finish_reason": "length"}]}).encode(), "status"),
        (200, json.dumps({"choices": [{"text": "x" * (63 * 1024), "finish_reason": "length"}]}).encode(), "ready"),
        (200, _exactly(64 * 1024), "ready"),  # the cap is 64 KiB: a body of exactly that size is read
        (200, _exactly(64 * 1024 + 1), "status"),
    ],
)
def test_completion_validation(status: int, body: bytes, state: str) -> None:
    from coldwatch.hosts.local import LocalHost
    from coldwatch.http import Ladder, make_client

    handler = type("AnswerH", (Answer,), {"status": status, "body": body, "asked": []})
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        with make_client(LocalHost()) as client:
            st = Ladder(client, f"http://127.0.0.1:{srv.server_address[1]}", None, None).probe()
        assert st.state == state, st
        if state == "ready":
            assert st.model == "m"
    finally:
        srv.shutdown()
        srv.server_close()


def test_the_probe_asks_for_one_token() -> None:
    """The readiness probe costs the server one deterministic token, never more."""
    from coldwatch.hosts.local import LocalHost
    from coldwatch.http import Ladder, make_client

    handler: type[Answer] = type("AnswerH", (Answer,), {"status": 200, "body": GOOD, "asked": []})
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        with make_client(LocalHost()) as client:
            assert Ladder(client, f"http://127.0.0.1:{srv.server_address[1]}", "mm", None).probe().state == "ready"
        assert handler.asked == [{"model": "mm", "prompt": "Hello", "max_tokens": 1, "temperature": 0}]
    finally:
        srv.shutdown()
        srv.server_close()


def test_a_warming_server_s_model_is_listed_once_and_again_after_a_404() -> None:
    """A server in warm-up lists its model and answers 503 to completions: each probe then costs one
    request, not two (a fleet's probes at the ready instant wait on half as many round trips); a 404
    (no such model any more, a restart with another one) makes the next probe list the models again."""
    from coldwatch.hosts.local import LocalHost
    from coldwatch.http import Ladder, make_client

    gets: list[str] = []

    class Warming(Answer):
        def do_GET(self) -> None:
            gets.append(self.path)
            super().do_GET()

    handler: type[Answer] = type("WarmH", (Warming,), {"status": 503, "body": b'{"message": "warming up"}', "asked": []})
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        with make_client(LocalHost()) as client:
            ladder = Ladder(client, f"http://127.0.0.1:{srv.server_address[1]}", None, None)
            assert [ladder.probe().state for _ in range(3)] == ["status"] * 3
            assert gets == ["/v1/models"]
            handler.status = 404
            assert ladder.probe().status == 404
            handler.status, handler.body = 200, GOOD
            st = ladder.probe()
            assert st.state == "ready" and st.model == "m"
            assert gets == ["/v1/models", "/v1/models"]
            assert len(handler.asked) == 5
    finally:
        srv.shutdown()
        srv.server_close()


def test_sanitise_caps_and_escapes() -> None:
    from coldwatch.sanitise import LIMIT, clean, inert, json_line

    assert LIMIT == 300
    assert clean("a" * 1000) == "a" * 299 + "…" and len(clean("b" * 301)) == 300 and clean("c" * 300) == "c" * 300
    assert clean("x" * 50, 10) == "x" * 9 + "…" and clean("y" * 50, None) == "y" * 50
    assert (
        clean("zero\u200bwidth \u200eleft \u200fright \u202ebidi \u2066iso")
        == "zero\\u200bwidth \\u200eleft \\u200fright \\u202ebidi \\u2066iso"
    )
    assert clean("\x1b[31mred\x1b[0m \x1b]0;title\x07 \x9b2J") == "red \\x1b]0;title\\x07 \\x9b2J"
    assert clean("a\nb\tc\rd") == "a\\nb c\\rd"
    assert clean("\ud800 \U000e0041 \ufeff") == "\\ud800 \\U000e0041 \\ufeff"
    assert inert("a\nb\u202ec\uffff") == "a\nb\\u202ec\\uffff" and inert("a\nb\tc", newlines=False) == "a b c"
    assert json_line({"m": "\u202e\x9b\ud800"}) == '{"m": "\\u202e\\u009b\\ud800"}'
    assert json.loads(json_line({"m": "\u202e"})) == {"m": "\u202e"}
    assert json_line({"m": "café ✓"}) == '{"m": "café ✓"}'  # printable non-ASCII text stays as it is
    assert clean("abcdefgh", 4) == "abc…" and clean("ab", 1) == "…"
    assert inert("\x1b[2Jx\x07") == "\\x1b[2Jx\\x07"  # ASCII control characters too


def test_a_registered_secret_is_redacted_in_every_spelling() -> None:
    from coldwatch.sanitise import add_secret, clean, inert, json_line, redact

    add_secret('sk-"quoted\\key')
    for text in ('Bearer sk-"quoted\\key', 'Bearer sk-\\"quoted\\\\key', repr('sk-"quoted\\key')):
        assert "quoted" not in redact(text), text
    assert "quoted" not in clean('x sk-"quoted\\key y') and "quoted" not in inert('sk-"quoted\\key')
    assert "quoted" not in json_line({"k": 'sk-"quoted\\key'})
    add_secret("abc")  # too short to redact safely: ignored
    assert redact("abc") == "abc"
    add_secret("wxyz")  # four characters are enough
    assert redact("key wxyz") == "key ***"
