"""Hostile remote text and the last fault paths: nothing from the host reaches a terminal raw,
no bad input ends in an internal error. Real HTTP servers on 127.0.0.1, real TCP servers
speaking a fake SSH banner, the loopback sshd, the real CLI in a subprocess."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hostfix import GpuHost

import json
import os
import random
import re
import socket
import stat
import string
import subprocess
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from conftest import coldwatch, json_lines

from coldwatch.hosts.local import LocalHost
from coldwatch.http import Ladder, make_client
from coldwatch.normalise import LogLine
from coldwatch.phases import Classifier, load_rules
from coldwatch.sim import free_port

# an OSC title change, a raw C1 CSI (U+009B) with a colour, Rich markup, a bidi override, a
# newline that would forge a second output line
HOSTILE = "m\x1b]2;PWNED\x1b\\\x9b31m[bold red]X[/]\u202eevil\nREADY (exit 0)"
RAW_MARKS = ("\x1b", "\x9b", "\u202e", "\x07")


def assert_inert(text: str) -> None:
    """No control, C1 or bidi character: what a terminal shows is what is written."""
    bad = [c for c in RAW_MARKS if c in text]
    assert not bad, f"raw control characters reached the output: {bad!r} in {text!r}"


# ---- real servers ------------------------------------------------------------------------


def http_server(
    models: Any = None, completion: Any = None, chat: Callable[[BaseHTTPRequestHandler], None] | None = None
) -> tuple[str, ThreadingHTTPServer]:
    """A real HTTP server: /v1/models, /v1/completions and /v1/chat/completions as given."""

    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a: Any) -> None:
            return

        def _send(self, obj: Any) -> None:
            body = json.dumps(obj).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802
            self._send(models if models is not None else {"data": [{"id": "m"}]})

        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path.endswith("/chat/completions") and chat is not None:
                chat(self)
                return
            self._send(completion if completion is not None else {"choices": [{"text": " hi", "finish_reason": "length"}]})

    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{srv.server_address[1]}", srv


def drip(h: BaseHTTPRequestHandler) -> None:
    """Headers promising a body, then one byte every 0.3 s: each read succeeds, the answer never ends."""
    h.send_response(200)
    h.send_header("Content-Length", "100000")
    h.end_headers()
    h.wfile.flush()
    try:
        for _ in range(400):
            h.wfile.write(b" ")
            h.wfile.flush()
            time.sleep(0.3)
    except OSError:
        return


@pytest.fixture
def servers() -> Iterator[list[ThreadingHTTPServer]]:
    made: list[ThreadingHTTPServer] = []
    yield made
    for s in made:
        s.shutdown()
        s.server_close()


def fake_sshd(banner: bytes) -> tuple[int, socket.socket]:
    """A TCP server on loopback that answers every connection with ``banner`` (not a real sshd)."""
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen()

    def serve() -> None:
        while True:
            try:
                conn, _ = lsock.accept()
            except OSError:
                return
            conn.sendall(banner)
            threading.Timer(3, conn.close).start()

    threading.Thread(target=serve, daemon=True).start()
    return lsock.getsockname()[1], lsock


def local_wait(tmp_path: Path, url: str, *more: str, env: dict[str, str] | None = None, timeout: float = 60) -> Any:
    """coldwatch wait on this machine with a quiet log and no GPUs."""
    log = tmp_path / "server.log"
    log.write_text("starting\n")
    args = ["wait", "--log-cmd", f"tail -n +1 -F {log}", "--gpu-cmd", "true", "--url", url, "--interval", "0.3", *more]
    return coldwatch(*args, env=env, timeout=timeout)


# ---- 1. terminal injection ---------------------------------------------------------------


def test_model_id_is_inert_in_plain_output(tmp_path: Path, servers: list[ThreadingHTTPServer]) -> None:
    """A model id carrying OSC/CSI/C1/bidi/markup/newline: ready (exit 0), shown escaped on one line."""
    url, srv = http_server(models={"data": [{"id": HOSTILE}]})
    servers.append(srv)
    r = local_wait(tmp_path, url, "--output", "plain", "--timeout", "20")
    err = r.stderr.decode()
    assert r.returncode == 0, err
    assert_inert(err)
    assert "\\x1b]2;PWNED" in err and "\\x9b" in err and "\\u202e" in err
    # the newline in the id forged no line of its own: every line starts with the time column
    assert all(re.match(r"^ *\d+:\d\d  ", ln) for ln in err.splitlines()), err


def test_model_id_kept_raw_but_escaped_in_ndjson(tmp_path: Path, servers: list[ThreadingHTTPServer]) -> None:
    """NDJSON: the model id parses back exactly, and no raw control/C1/bidi byte is on stdout."""
    url, srv = http_server(models={"data": [{"id": HOSTILE}]})
    servers.append(srv)
    r = local_wait(tmp_path, url, "--output", "json", "--timeout", "20")
    assert r.returncode == 0, r.stderr.decode()
    out = r.stdout.decode()
    assert_inert(out)
    assert json_lines(r.stdout)[-1]["model"] == HOSTILE


def test_lone_surrogate_model_id_is_no_internal_error(tmp_path: Path, servers: list[ThreadingHTTPServer]) -> None:
    """A model id with a lone surrogate (valid JSON, not encodable as UTF-8): ready, never a crash."""
    url, srv = http_server(models=json.loads('{"data": [{"id": "m\\ud800x"}]}'))
    servers.append(srv)
    for mode in ("plain", "json"):
        r = local_wait(tmp_path, url, "--output", mode, "--timeout", "20")
        assert r.returncode == 0, r.stderr.decode()
        assert "internal error" not in r.stderr.decode()
    assert json_lines(r.stdout)[-1]["model"] == "m\ud800x"


def test_completion_error_string_is_inert(tmp_path: Path, servers: list[ThreadingHTTPServer]) -> None:
    """The `error` string of a 200 completion body: never ready (124), shown escaped in the verdict."""
    url, srv = http_server(completion={"error": "boom\x1b]2;PWNED\x07\x9b2J"})
    servers.append(srv)
    r = local_wait(tmp_path, url, "--output", "plain", "--timeout", "3")
    err = r.stderr.decode()
    assert r.returncode == 124, err
    assert_inert(err)
    assert "boom\\x1b]2;PWNED\\x07\\x9b2J" in err


def test_live_panel_is_inert(tmp_path: Path, servers: list[ThreadingHTTPServer]) -> None:
    """The live panel (Rich, forced to a terminal): no OSC, C1 or bidi from the model id; markup not applied."""
    url, srv = http_server(models={"data": [{"id": HOSTILE}]})
    servers.append(srv)
    r = local_wait(tmp_path, url, "--output", "live", "--timeout", "20", env={"FORCE_COLOR": "1", "COLUMNS": "250"})
    err = r.stderr.decode()
    assert r.returncode == 0, err
    assert "\x1b[" in err  # Rich did style the panel: the check below is not vacuous
    assert "\x1b]" not in err and "\x9b" not in err and "\u202e" not in err and "\x07" not in err
    assert "[bold red]X[/]" in err  # shown as text, not applied as markup


def test_process_name_on_the_port_is_inert(tmp_path: Path) -> None:
    """The name of a foreign process holding the probed port (/proc/PID/comm) is shown escaped."""
    port = free_port()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import socket,time,sys\n"
            "open('/proc/self/comm','w').write('\\x1b]2;PWNED\\x07')\n"
            f"s=socket.socket(); s.bind(('127.0.0.1',{port})); s.listen(); print('up', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
    )
    server = subprocess.Popen(["sleep", "60"])
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"up\n"
        r = local_wait(tmp_path, f"http://127.0.0.1:{port}", "--pid", str(server.pid), "--output", "plain", "--timeout", "4")
    finally:
        holder.kill()
        server.kill()
        holder.communicate()
        server.wait()
    err = r.stderr.decode()
    assert r.returncode == 124, err
    assert_inert(err)
    assert f"port {port} is served by \\x1b]2;PWNED\\x07" in err


@pytest.mark.parametrize(
    ("banner", "shown"),
    [
        (b"SSH-\x1b]2;PWNED\x07\xc2\x9b31m-x\r\n", "Incompatible version (\\x1b]2;PWNED\\x07\\x9b31m instead of 2.0)"),
        (b"SSH-\xe2\x80\xae0.2\x1bP+q\x1b\\-x\r\n", "Incompatible version (\\u202e0.2\\x1bP+q\\x1b\\ instead of 2.0)"),
    ],
)
def test_ssh_banner_is_inert(banner: bytes, shown: str) -> None:
    """A fake SSH server's banner in the error line: exit 4, one line, escaped."""
    port, lsock = fake_sshd(banner)
    try:
        r = coldwatch("status", f"127.0.0.1:{port}", "--accept-new-host-key", timeout=60)
    finally:
        lsock.close()
    err = r.stderr.decode()
    assert r.returncode == 4, err
    assert_inert(err)
    assert err.count("\n") == 1 and "internal error" not in err
    assert shown in err


@pytest.mark.ssh
def test_remote_stderr_is_inert(gpu_host: GpuHost) -> None:
    """A remote command's stderr (through the loopback sshd) shown in a warning: escaped."""
    sim = gpu_host.start_sim("ready")
    r = coldwatch(
        "wait",
        "gpu1",
        "--log-cmd",
        f"tail -n +1 -F {sim.dir}/server.log",
        "--gpu-cmd",
        "printf 'bad\\033]2;PWNED\\007\\302\\233H\\n' >&2; exit 1",
        "--url",
        sim.url,
        "--interval",
        "0.5",
        "--output",
        "plain",
        env=gpu_host.env,
        timeout=90,
    )
    err = r.stderr.decode()
    assert r.returncode == 0, err
    assert_inert(err)
    assert "GPU stream off: bad\\x1b]2;PWNED\\x07\\x9bH" in err


# ---- 3. a total deadline on every HTTP exchange ------------------------------------------


def test_probe_against_a_trickling_server_ends_by_its_deadline(servers: list[ThreadingHTTPServer]) -> None:
    """One byte every 0.3 s never trips the 1 s read timeout; the probe still ends by its deadline."""
    url, srv = http_server(models={"data": [{"id": "m"}]})
    servers.append(srv)

    class Drip(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a: Any) -> None:
            return

        def do_GET(self) -> None:  # noqa: N802
            drip(self)

    slow = ThreadingHTTPServer(("127.0.0.1", 0), Drip)
    slow.daemon_threads = True
    servers.append(slow)
    threading.Thread(target=slow.serve_forever, daemon=True).start()
    host = LocalHost()
    t0 = time.monotonic()
    with make_client(host, timeout=1.0) as client:
        st = Ladder(client, f"http://127.0.0.1:{slow.server_address[1]}", None, None).probe(deadline=time.monotonic() + 2.0)
    took = time.monotonic() - t0
    host.close()
    assert st.state == "timeout" and "no complete answer" in st.detail
    assert 1.9 <= took < 3.0


def test_check_against_a_trickling_server_obeys_timeout(tmp_path: Path, servers: list[ThreadingHTTPServer]) -> None:
    """wait --check reasoning against a chat endpoint that trickles forever: 124 by --timeout, not a hang."""
    url, srv = http_server(chat=drip)
    servers.append(srv)
    t0 = time.monotonic()
    r = local_wait(tmp_path, url, "--check", "reasoning", "--timeout", "4", "--output", "json", timeout=30)
    took = time.monotonic() - t0
    res = json_lines(r.stdout)[-1]
    assert r.returncode == 124, r.stderr.decode()
    assert res["outcome"] == "timeout" and "--check reasoning" in res["reason"]
    assert took < 12
    checks = [e for e in json_lines(r.stdout) if e["event"] == "check"]
    assert checks and "no complete answer" in checks[0]["detail"]


def test_run_check_deadline(servers: list[ThreadingHTTPServer]) -> None:
    """run_check with a deadline: a trickling answer fails the check at the deadline."""
    from coldwatch.checks import run_check

    url, srv = http_server(chat=drip)
    servers.append(srv)
    host = LocalHost()
    t0 = time.monotonic()
    with make_client(host, timeout=1.0) as client:
        ok, what = run_check("tools", client, url, "m", {}, deadline=time.monotonic() + 1.5)
    host.close()
    assert not ok and "no complete answer" in what and time.monotonic() - t0 < 3.0


# ---- 4 and 8. the API key ------------------------------------------------------------------

SECRET = "sk-abc123"


@pytest.mark.parametrize(
    "how",
    ["flag CR", "env LF", "config NUL", "config not a string"],
)
def test_bad_api_key_exits_2_without_echo(tmp_path: Path, how: str) -> None:
    """A key with CR, LF or NUL (or not a string): exit 2, one line, the key never shown."""
    port = free_port()
    base = ["wait", "--log-cmd", "true", "--gpu-cmd", "true", "--url", f"http://127.0.0.1:{port}", "--timeout", "3"]
    env: dict[str, str] = {}
    if how == "flag CR":
        args = [*base, "--api-key", SECRET + "\rINJECTED"]
    elif how == "env LF":
        args, env = base, {"COLDWATCH_API_KEY": SECRET + "\nINJECTED"}
    else:
        cfg = tmp_path / "c.toml"
        value = '"' + SECRET + '\\u0000INJECTED"' if how == "config NUL" else '["' + SECRET + 'INJECTED"]'
        cfg.write_text(f"api_key = {value}\n")
        args = [*base, "--config", str(cfg)]
    r = coldwatch(*args, env=env, timeout=30)
    both = r.stderr.decode() + r.stdout.decode()
    assert r.returncode == 2, both
    assert "abc123" not in both and "INJECTED" not in both
    assert [ln for ln in r.stderr.decode().splitlines() if "api_key" in ln.lower()]
    assert "Traceback" not in both and "internal error" not in both


def test_key_is_redacted_in_every_repr_form() -> None:
    """redact(): the key as is, in str and bytes reprs and JSON-escaped: all become ***."""
    from coldwatch.http import redact

    key = "k\\ey'\"x"
    headers = {"Authorization": f"Bearer {key}"}
    text = " | ".join([key, repr(key), repr(("Bearer " + key).encode()), json.dumps(key), str([key])])
    out = redact(text, headers)
    assert "ey" not in out, out


def test_api_key_flag_prints_a_hint(tmp_path: Path) -> None:
    """--api-key on the command line: a one-line hint to use COLDWATCH_API_KEY; the env var: no hint."""
    port = free_port()
    args = ["status", "--log-cmd", "true", "--gpu-cmd", "true", "--url", f"http://127.0.0.1:{port}"]
    flag = coldwatch(*args, "--api-key", SECRET, timeout=60)
    env = coldwatch(*args, env={"COLDWATCH_API_KEY": SECRET}, timeout=60)
    assert "COLDWATCH_API_KEY" in flag.stderr.decode() and SECRET not in flag.stderr.decode()
    assert "COLDWATCH_API_KEY" not in env.stderr.decode()


# ---- 5. option injection through the unit name ---------------------------------------------


@pytest.mark.parametrize("unit", ["-Hroot@elsewhere", "-H", "x@", "foo@a@b", "@x.service", "-.mount"])
def test_bad_unit_names_exit_2(unit: str) -> None:
    """Unit names outside systemd's grammar, or starting with '-': exit 2, one line, no host contacted."""
    r = coldwatch("wait", f"--unit={unit}", "--timeout", "2", timeout=30)
    err = r.stderr.decode()
    assert r.returncode == 2, err
    assert err.count("\n") == 1 and "unit" in err


@pytest.mark.parametrize("unit", ["sglang", "sglang.service", "llm@kimi.service", "llm@kimi", "vllm-0.32:a_b.service"])
def test_good_unit_names_pass(unit: str) -> None:
    """Real unit names (bare, typed, template instances) are accepted."""
    from coldwatch.settings import resolve

    assert resolve({"unit": unit}).unit == unit


def test_unit_is_never_an_option_on_the_host(tmp_path: Path) -> None:
    """systemctl gets '--' before the unit; journalctl gets --unit=NAME (one word): recorded argv."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    rec = tmp_path / "argv"
    for tool, out in (("systemctl", "ActiveState=active\nSubState=running\nMainPID=0\nLoadState=loaded\n"), ("journalctl", "")):
        script = bin_dir / tool
        script.write_text(
            f'#!/bin/sh\nprintf "%s\\n" "{tool} $*" >> {rec}\nprintf "{out}"\nexec sleep 30\n'
            if tool == "journalctl"
            else f'#!/bin/sh\nprintf "%s\\n" "{tool} $*" >> {rec}\nprintf "{out}"\n'
        )
        script.chmod(0o755)
    port = free_port()
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}"}
    r = coldwatch(
        "wait",
        "--unit",
        "llm@kimi.service",
        "--gpu-cmd",
        "true",
        "--url",
        f"http://127.0.0.1:{port}",
        "--timeout",
        "2",
        env=env,
        timeout=30,
    )
    assert r.returncode == 124, r.stderr.decode()
    calls = rec.read_text().splitlines()
    show = [c for c in calls if c.startswith("systemctl show")]
    journal = [c for c in calls if c.startswith("journalctl")]
    assert show and all(c.endswith(" -- llm@kimi.service") for c in show), calls
    assert journal and all("--unit=llm@kimi.service " in c and " -u " not in c for c in journal), calls


# ---- 6. the classifier's memory is bounded by bytes -----------------------------------------


def test_classifier_miss_memory_is_bounded_by_bytes() -> None:
    """2000 distinct non-matching 1.5 kB lines (3 MB): the classifier keeps at most its byte budget."""
    MISS_BUDGET = 2 << 20  # noqa: N806 - phases.classifier.MISS_BUDGET, spelt out so the test runs against any version

    c = Classifier(load_rules([]), None)
    c.feed(LogLine("warm-up line", 0.0, "", "warm-up line"))
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    rnd = random.Random(16)
    for i in range(2000):
        text = f"noise {i:05d} " + "".join(rnd.choices(string.ascii_lowercase, k=1500))
        c.feed(LogLine(text, float(i), "", text))
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert grown < MISS_BUDGET + 256 * 1024, f"{grown / 1e6:.1f} MB kept"


# ---- 7. known_hosts written by --accept-new-host-key ---------------------------------------


def _status_env(gpu_host: GpuHost, tmp_path: Path, hash_known_hosts: bool = False) -> tuple[dict[str, str], Path]:
    kh = tmp_path / "new" / "known_hosts"
    cfg = (gpu_host.home / ".ssh" / "config").read_text()
    if hash_known_hosts:
        cfg = cfg.replace("Host gpu1\n", "Host gpu1\n  HashKnownHosts yes\n")
    (tmp_path / "ssh_config").write_text(cfg)
    env = {**gpu_host.env, "COLDWATCH_KNOWN_HOSTS": str(kh), "COLDWATCH_SSH_CONFIG": str(tmp_path / "ssh_config")}
    return env, kh


def _status(env: dict[str, str], *more: str) -> Any:
    return coldwatch("status", "gpu1", "--log-cmd", "true", "--gpu-cmd", "true", "--url", "http://127.0.0.1:9", *more, env=env, timeout=60)


@pytest.mark.ssh
def test_known_hosts_created_private_and_plain(gpu_host: GpuHost, tmp_path: Path) -> None:
    """A new known_hosts: mode 0600 in a 0700 directory; names in the clear when nothing asks for hashing."""
    env, kh = _status_env(gpu_host, tmp_path)
    r = _status(env, "--accept-new-host-key")
    assert r.returncode != 4, r.stderr.decode()
    assert stat.S_IMODE(kh.stat().st_mode) == 0o600 and stat.S_IMODE(kh.parent.stat().st_mode) == 0o700
    assert kh.read_text().startswith(f"[127.0.0.1]:{gpu_host.port} ssh-ed25519 ")


@pytest.mark.ssh
def test_known_hosts_hashed_when_the_file_hashes(gpu_host: GpuHost, tmp_path: Path) -> None:
    """A known_hosts that already hashes its names gets a hashed entry, which the next run accepts."""
    env, kh = _status_env(gpu_host, tmp_path)
    kh.parent.mkdir()
    other = subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "o")], capture_output=True)
    assert other.returncode == 0
    key = (tmp_path / "o.pub").read_text().split()
    kh.write_text(f"|1|2rUMvQ7zt1nhBpWvTKYIi+k0Vac=|lrqHBXhUZDPCCrU0Xk/hEnZvfak= {key[0]} {key[1]}")  # no final newline
    r = _status(env, "--accept-new-host-key")
    assert r.returncode != 4, r.stderr.decode()
    lines = kh.read_text().splitlines()
    assert len(lines) == 2 and lines[1].startswith("|1|") and "127.0.0.1" not in kh.read_text()
    again = _status(env)
    assert again.returncode != 4, again.stderr.decode()


@pytest.mark.ssh
def test_known_hosts_hashed_when_ssh_config_says_so(gpu_host: GpuHost, tmp_path: Path) -> None:
    """HashKnownHosts yes in ssh_config: the recorded name is hashed."""
    env, kh = _status_env(gpu_host, tmp_path, hash_known_hosts=True)
    r = _status(env, "--accept-new-host-key")
    assert r.returncode != 4, r.stderr.decode()
    text = kh.read_text()
    assert text.startswith("|1|") and "127.0.0.1" not in text
