"""SSH host: one paramiko transport per run; every probe is a channel on it.

The only module that imports paramiko. Honours ~/.ssh/config (HostName, User, Port,
IdentityFile, ProxyJump, ServerAliveInterval, ConnectTimeout, UserKnownHostsFile; Host and Match
blocks as paramiko evaluates them; Include followed here), uses keys and the agent, and checks
host keys strictly against known_hosts.
"""

from __future__ import annotations

import base64
import contextlib
import fnmatch
import functools
import glob
import hashlib
import hmac
import logging
import os
import re
import select
import shlex
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import paramiko

from coldwatch.errors import ConfigError, UnreachableError
from coldwatch.files import IDENTITY_LIMIT, check_regular, exists
from coldwatch.hosts.base import HEARTBEAT_S, RunResult, TcpStream, until_closed, with_deadline

MAX_OUTPUT = 4 << 20
"""At most this much of one command's stdout (and of its stderr) is kept."""

logging.getLogger("paramiko").addHandler(logging.NullHandler())
logging.getLogger("paramiko").propagate = False


@functools.cache
def _logger(name: str) -> logging.Logger:
    """paramiko's ``util.get_logger``, once per name: it is called for every channel opened (each HTTP
    probe, each command) and takes the logging module's global lock each time (``logging.getLogger``).
    A fleet of 100 targets had 81 of its 732 threads queued on that one lock (py-spy dump, issue 25);
    the logger and its filter are the same objects either way."""
    return _paramiko_get_logger(name)


_paramiko_get_logger = paramiko.util.get_logger
paramiko.util.get_logger = _logger


def fingerprint(key: paramiko.PKey) -> str:
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def parse_destination(dest: str) -> tuple[str | None, str, int | None]:
    """'[user@]host[:port]' -> (user, host, port). IPv6 literals go in brackets: [::1]:22."""
    user = None
    if "@" in dest:
        user, dest = dest.rsplit("@", 1)
    port: int | None = None
    if dest.startswith("["):
        host, _, rest = dest[1:].partition("]")
        if rest.startswith(":"):
            port = _port(rest[1:], dest)
    elif dest.count(":") == 1:
        host, p = dest.split(":")
        port = _port(p, dest)
    else:
        host = dest
    if not host or any(c.isspace() for c in host) or host.startswith("-"):
        raise ConfigError(f"invalid SSH destination {dest!r}")
    return user or None, host, port


def _port(text: str, dest: str) -> int:
    if not (text.isascii() and text.isdigit()) or not 0 < int(text) < 65536:
        raise ConfigError(f"invalid port in SSH destination {dest!r}")
    return int(text)


def _uses_hashed_names(path: Path) -> bool:
    """Does this known_hosts already hide its host names (``|1|salt|hash``, HashKnownHosts)?"""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return any(line.startswith("|1|") for line in fh)
    except OSError:
        return False


def _host_matches(name: str, patterns: list[str]) -> bool:
    """Does a known_hosts host field (patterns, negations, hashed names) cover ``name``?"""
    hit = False
    for pat in patterns:
        neg = pat.startswith("!")
        pat = pat[1:] if neg else pat
        if pat.startswith("|1|"):
            ok = hmac.compare_digest(paramiko.HostKeys.hash_host(name, pat), pat)
        else:
            ok = fnmatch.fnmatchcase(name.lower(), pat.lower())
        if ok and neg:
            return False
        hit = hit or ok
    return hit


def load_known_hosts(path: Path) -> tuple[list[paramiko.hostkeys.HostKeyEntry], list[tuple[list[str], paramiko.PKey]]]:
    """known_hosts as ``ssh`` reads it: (plain entries, revoked keys with their host patterns).

    ``@cert-authority`` lines are skipped (a host certificate is not checked here; the host's own
    key still is), ``@revoked`` keys are never accepted, lines ``ssh`` could not read are skipped as
    it skips them. The file is bounded and must be a regular file."""
    from coldwatch.files import KNOWN_HOSTS_LIMIT, read_text

    entries: list[paramiko.hostkeys.HostKeyEntry] = []
    revoked: list[tuple[list[str], paramiko.PKey]] = []
    for raw in read_text(path, KNOWN_HOSTS_LIMIT, "known_hosts").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        marker = None
        if line.startswith("@"):
            marker, _, line = line.partition(" ")
            line = line.strip()
            if marker not in ("@revoked", "@cert-authority"):
                continue
        try:
            entry = paramiko.hostkeys.HostKeyEntry.from_line(line)
        except Exception:  # noqa: BLE001 - paramiko raises several types for a line it cannot read
            continue
        if entry is None or entry.key is None:
            continue
        if marker == "@revoked":
            revoked.append((list(entry.hostnames), entry.key))
        elif marker is None:
            entries.append(entry)
    return entries, revoked


def _revoked(revoked: list[tuple[list[str], paramiko.PKey]], names: list[str], key: paramiko.PKey) -> bool:
    return any(k.asbytes() == key.asbytes() and any(_host_matches(n, pats) for n in names) for pats, k in revoked)


class _Recorder(paramiko.MissingHostKeyPolicy):
    """Unknown key: refuse, or (with --accept-new-host-key) record it in known_hosts: hashed when
    the file already hashes its names or ssh_config says HashKnownHosts yes, as ssh would; a file
    created here is private (0600) in a private directory (0700)."""

    def __init__(self, accept: bool, path: Path, hash_names: bool = False) -> None:
        self.accept = accept
        self.path = path
        self.hash_names = hash_names

    revoked: list[tuple[list[str], paramiko.PKey]] = []

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
        if _revoked(self.revoked, [hostname], key):
            raise UnreachableError(
                f"host key for {hostname} is REVOKED in {self.path} ({key.get_name()} {fingerprint(key)}); refusing to connect"
            )
        if not self.accept:
            raise UnreachableError(
                f"host key for {hostname} is not in {self.path} ({key.get_name()} {fingerprint(key)}); "
                "verify it, then rerun with --accept-new-host-key to record it"
            )
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        name = paramiko.HostKeys.hash_host(hostname) if self.hash_names or _uses_hashed_names(self.path) else hostname
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
        with open(fd, "a+b") as fh:
            size = fh.seek(0, os.SEEK_END)
            glued = size > 0 and os.pread(fd, 1, size - 1) != b"\n"  # a last line without its newline
            fh.write(("\n" if glued else "").encode() + f"{name} {key.get_name()} {key.get_base64()}\n".encode())


_QUICKACK: int | None = getattr(socket, "TCP_QUICKACK", None)


class _CountingSocket:
    """The TCP socket under the SSH transport, counting the bytes that cross it."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self.sent = 0
        self.received = 0

    def send(self, data: bytes) -> int:
        n = self._sock.send(data)
        self.sent += n
        return n

    def sendall(self, data: bytes) -> None:
        self._sock.sendall(data)
        self.sent += len(data)

    def recv(self, n: int) -> bytes:
        if _QUICKACK is not None:
            # acknowledge at once what comes next: sshd leaves Nagle on for a session without a pty, so
            # the second small packet of an answer (an HTTP body after its headers) waits for our ACK,
            # which the kernel otherwise delays by up to 40 ms; TCP_QUICKACK lasts only until the next ACK
            with contextlib.suppress(OSError):
                self._sock.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)
        data = self._sock.recv(n)
        self.received += len(data)
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


class _Pinger:
    """The keepalive requests of one SSH connection, asked by one thread of its own that lives as long
    as the connection (it used to be a new thread per ping). paramiko's ``global_request`` has no
    timeout; the asker waits on ``done`` for as long as it likes, and a request still unanswered is
    not sent again: the next ask waits on the same one. The same thread sends the followers'
    heartbeats (one byte down each follower's channel every ``HEARTBEAT_S``), by which their commands
    know on the host that coldwatch still reads them."""

    def __init__(self, transport: paramiko.Transport, name: str, channels: list[paramiko.Channel]) -> None:
        self.transport = transport
        self.channels = channels
        self.wanted = threading.Event()
        self.done = threading.Event()
        self.done.set()
        threading.Thread(target=self._run, name=f"coldwatch-ssh-ping {name}", daemon=True).start()

    def ask(self, timeout: float) -> bool:
        """Did the server answer a keepalive within ``timeout``?"""
        if self.done.is_set():  # none outstanding: send one
            self.done.clear()
            self.wanted.set()
        return self.done.wait(timeout)

    def _run(self) -> None:
        t = self.transport
        beat = time.monotonic()
        while t.is_active():
            asked = self.wanted.wait(max(0.0, beat + HEARTBEAT_S - time.monotonic()))
            if time.monotonic() >= beat + HEARTBEAT_S:
                beat = time.monotonic()
                self._beat()
            if not asked:
                continue
            self.wanted.clear()
            with contextlib.suppress(Exception):
                t.global_request("keepalive@openssh.com", wait=True)
            self.done.set()
        self.done.set()

    def _beat(self) -> None:
        for chan in list(self.channels):
            if chan.get_transport() is self.transport and not chan.closed and chan.send_ready():
                with contextlib.suppress(Exception):
                    chan.send(b"\n")


class SshFollower:
    def __init__(self, chan: paramiko.Channel) -> None:
        self._chan = chan

    def chunks(self) -> Iterator[bytes]:
        while True:
            try:
                data = self._chan.recv(65536)
            except (OSError, EOFError, paramiko.SSHException):
                return
            if not data:
                return
            yield data

    @property
    def exit_status(self) -> int | None:
        if self._chan.exit_status_ready():
            return self._chan.recv_exit_status()
        return None

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._chan.close()


class SshHost:
    """A live SSH connection to the GPU host."""

    def __init__(self, name: str, client: paramiko.SSHClient, jump: SshHost | None = None) -> None:
        self.name = name
        self._client = client
        self._jump = jump
        self.handshakes: int = 1 + (jump.handshakes if jump is not None else 0)
        self._channels: list[paramiko.Channel] = []
        self._params: tuple[Any, ...] = ()
        self._counter: _CountingSocket | None = None
        self._bytes_done = (0, 0)  # from connections replaced by a reconnect
        self._pinger: _Pinger | None = None
        self._heard = 0
        """Bytes received from the server as of the last ping."""

    @property
    def transport(self) -> paramiko.Transport:
        t = self._client.get_transport()
        if t is None:
            raise UnreachableError(f"SSH connection to {self.name} is closed")
        return t

    # ---- connecting --------------------------------------------------------------------
    @classmethod
    def connect(
        cls,
        dest: str,
        accept_new_host_key: bool = False,
        connect_timeout: float = 10.0,
        known_hosts: Path | None = None,
        ssh_config: Path | None = None,
        identity: Path | None = None,
        _depth: int = 0,
    ) -> SshHost:
        if _depth > 3:
            raise ConfigError("ProxyJump chain is too deep (more than 3 hops)")
        params = (dest, accept_new_host_key, connect_timeout, known_hosts, ssh_config, identity, _depth)
        user, alias, port = parse_destination(dest)
        cfg = _lookup(alias, ssh_config)
        hostname = str(cfg.get("hostname", alias))
        port = port or int(cfg.get("port", 22))
        user = user or cfg.get("user") or _local_user()
        timeout = float(cfg.get("connecttimeout", connect_timeout))
        kh_path = known_hosts or Path(os.path.expanduser(str(cfg.get("userknownhostsfile", "~/.ssh/known_hosts")).split()[0]))
        keys = _identities(identity, cfg)
        jump, sock = cls._open_socket(cfg, hostname, port, timeout, params)
        host_key_name = hostname if port == 22 else f"[{hostname}]:{port}"
        try:
            client = _client(kh_path, host_key_name, accept_new_host_key, str(cfg.get("hashknownhosts", "no")).lower() == "yes")
        except ConfigError:
            _close_sock(sock)
            raise
        _handshake(client, hostname, port, str(user), keys, sock, timeout, host_key_name)
        t = client.get_transport()
        if t is not None:
            t.set_keepalive(int(cfg.get("serveraliveinterval", 15)))
        host = cls(f"{user}@{host_key_name}", client, jump)
        host._params = params
        host._counter = sock if isinstance(sock, _CountingSocket) else None
        return host

    @classmethod
    def _open_socket(
        cls, cfg: dict[str, Any], hostname: str, port: int, timeout: float, params: tuple[Any, ...]
    ) -> tuple[SshHost | None, Any]:
        """The byte stream the SSH session runs on: a TCP connection, or a channel through the
        ProxyJump host (connected first, with the same settings one hop deeper)."""
        try:
            if cfg.get("proxyjump") and str(cfg["proxyjump"]).lower() != "none":
                _, accept, connect_timeout, known_hosts, ssh_config, identity, depth = params
                jump = cls.connect(
                    str(cfg["proxyjump"]).split(",")[0], accept, connect_timeout, known_hosts, ssh_config, identity, depth + 1
                )
                return jump, jump.transport.open_channel("direct-tcpip", (hostname, port), ("127.0.0.1", 0), timeout=timeout)
            raw = socket.create_connection((hostname, port), timeout=timeout)
            raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return None, _CountingSocket(raw)
        except socket.gaierror as exc:
            raise UnreachableError(f"cannot resolve host {hostname!r}: {exc.strerror or exc}") from None
        except TimeoutError:
            raise UnreachableError(f"cannot connect to {hostname}:{port}: timed out after {timeout:g}s") from None
        except OSError as exc:
            raise UnreachableError(f"cannot connect to {hostname}:{port}: {exc.strerror or exc}") from None
        except paramiko.ChannelException as exc:
            raise UnreachableError(f"jump host cannot reach {hostname}:{port}: {exc}") from None

    # ---- the host interface ------------------------------------------------------------
    def _session(self, timeout: float) -> paramiko.Channel:
        try:
            return self.transport.open_session(timeout=timeout)
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise UnreachableError(f"SSH connection to {self.name} lost: {exc or type(exc).__name__}") from None

    def run(self, cmd: str, timeout: float = 10.0, stdin: bytes | None = None) -> RunResult:
        """One exec channel: blocking reads (no polling), stdout then stderr, bounded by ``timeout``."""
        chan = self._session(timeout)
        out, err = bytearray(), bytearray()
        try:
            chan.settimeout(timeout)
            chan.exec_command(with_deadline(cmd, timeout + 1.0))  # the channel's deadline ends it on the host too
            if stdin is not None:
                chan.sendall(stdin)
                chan.shutdown_write()
            while len(out) < MAX_OUTPUT and (data := chan.recv(65536)):
                out += data
            while len(err) < MAX_OUTPUT and (data := chan.recv_stderr(65536)):
                err += data
            return RunResult(chan.recv_exit_status(), bytes(out), bytes(err))
        except (OSError, paramiko.SSHException, EOFError):
            return RunResult(None, bytes(out), bytes(err))
        finally:
            with contextlib.suppress(Exception):
                chan.close()

    def follow(self, cmd: str) -> SshFollower:
        chan = self._session(10.0)
        chan.set_combine_stderr(True)
        chan.exec_command(until_closed(cmd))
        self._channels.append(chan)
        self._pinger_for(self.transport)  # its heartbeats keep the command alive on the host
        return SshFollower(chan)

    def connect_tcp(self, host: str, port: int, timeout: float) -> TcpStream:
        try:
            chan = self.transport.open_channel("direct-tcpip", (host, port), ("127.0.0.1", 0), timeout=timeout)
        except paramiko.ChannelException as exc:
            if exc.code == 2:
                raise ConnectionRefusedError(f"{host}:{port} refused (through {self.name})") from None
            raise ConnectionError(f"{host}:{port}: {exc.text}") from None
        except (paramiko.SSHException, EOFError) as exc:
            raise ConnectionError(f"SSH tunnel to {host}:{port} failed: {exc}") from None
        return chan

    def _pinger_for(self, t: paramiko.Transport) -> _Pinger:
        if self._pinger is None or self._pinger.transport is not t:
            self._pinger = _Pinger(t, self.name, self._channels)
        return self._pinger

    def alive(self) -> bool:
        t = self._client.get_transport()
        return t is not None and t.is_active()

    def ping(self, timeout: float) -> bool:
        """An application-level keepalive: does the server still answer on this connection?

        paramiko's keepalives only send; a hung peer (or a black-holed link) is noticed here, when
        no reply (success or failure) comes back within ``timeout`` and nothing else arrived either.
        A reply that is late because this process is starved (a big fleet on few cores) is not a
        dead link: bytes that reached the connection while it waited, or that wait unread in the
        socket, say the server is there. Bytes received since the last ping answer it without a
        request (a streaming sampler sends a record every interval): a fleet's 100 connections
        asked sshd 20 keepalives a second for nothing, and 65 of them waited on a loaded host.
        """
        t = self._client.get_transport()
        if t is None or not t.is_active():
            return False
        before = self.bytes[1]
        if self._counter is not None and before > self._heard:
            self._heard = before  # the server spoke since the last ping (the sampler's records): no need to ask
            return True
        answered = self._pinger_for(t).ask(timeout)
        self._heard = self.bytes[1]
        return t.is_active() and (answered or self._heard > before or self._unread())

    def _unread(self) -> bool:
        """Bytes from the server in the socket that the transport's reader has not taken yet."""
        c = self._counter
        if c is None:
            return False
        with contextlib.suppress(OSError, ValueError):
            return bool(select.select([c._sock], [], [], 0)[0])
        return False

    @property
    def bytes(self) -> tuple[int, int]:
        """(sent, received) over the SSH connection(s) of this run, at the TCP level."""
        c = self._counter
        now = (c.sent, c.received) if c is not None else (0, 0)
        return self._bytes_done[0] + now[0], self._bytes_done[1] + now[1]

    def reconnect(self) -> None:
        """A fresh connection with the same settings (one more handshake)."""
        self._bytes_done = self.bytes
        self.close()
        fresh = SshHost.connect(*self._params)
        self._client, self._jump, self._counter = fresh._client, fresh._jump, fresh._counter
        self.handshakes += fresh.handshakes

    def close(self) -> None:
        for chan in self._channels:
            with contextlib.suppress(Exception):
                chan.close()
        self._channels.clear()
        with contextlib.suppress(Exception):
            self._client.close()
        if self._jump is not None:
            self._jump.close()


def _identities(identity: Path | None, cfg: dict[str, Any]) -> list[str]:
    """--identity, then ssh_config's IdentityFile entries that exist (bounded regular files: paramiko reads them)."""
    keys: list[str] = [str(identity)] if identity else []
    keys += [os.path.expanduser(k) for k in cfg.get("identityfile", [])]
    keys = [k for k in keys if exists(Path(k))]
    for k in keys:
        check_regular(k, IDENTITY_LIMIT, "SSH identity")
    return keys


def _client(kh_path: Path, host_key_name: str, accept_new_host_key: bool, hash_names: bool) -> paramiko.SSHClient:
    """A client that knows known_hosts' keys (revoked ones never) and refuses or records an unknown one."""
    client = paramiko.SSHClient()
    entries: list[paramiko.hostkeys.HostKeyEntry] = []
    revoked: list[tuple[list[str], paramiko.PKey]] = []
    try:
        if exists(kh_path):
            entries, revoked = load_known_hosts(kh_path)
    except ConfigError:
        client.close()
        raise
    known = client.get_host_keys()
    for entry in entries:
        if _revoked(revoked, [host_key_name], entry.key):
            continue  # a revoked key is never a known one (the policy refuses it by name)
        for name in entry.hostnames:
            known.add(name, entry.key.get_name(), entry.key)
    recorder = _Recorder(accept_new_host_key, kh_path, hash_names)
    recorder.revoked = revoked
    client.set_missing_host_key_policy(recorder)  # keys learnt this run are saved by _Recorder, not by paramiko
    return client


class _Transport(paramiko.Transport):
    """paramiko's transport, its reader thread waking once a second when the link is idle instead of ten
    times (it checks for close and keepalives then): a fleet of 100 connections was 1,000 wake-ups a
    second for nothing. Data and a close by the server still wake it at once."""

    _active_check_timeout = 1.0


def _handshake(
    client: paramiko.SSHClient, hostname: str, port: int, user: str, keys: list[str], sock: Any, timeout: float, host_key_name: str
) -> None:
    """The SSH handshake and authentication on ``sock``; every failure is one UnreachableError."""
    try:
        client.connect(
            hostname,
            port=port,
            username=user,
            key_filename=keys or None,  # type: ignore[arg-type]  # paramiko takes a list too
            sock=sock,
            timeout=timeout,
            banner_timeout=timeout,
            auth_timeout=timeout,
            allow_agent=True,
            look_for_keys=not keys,
            transport_factory=_Transport,  # type: ignore[arg-type]  # the stubs' factory signature is paramiko 3's
        )
    except UnreachableError:
        client.close()
        raise
    except paramiko.BadHostKeyException as exc:
        client.close()
        raise UnreachableError(
            f"host key for {host_key_name} has CHANGED: known_hosts has {fingerprint(exc.expected_key)}, "
            f"the server offered {fingerprint(exc.key)}; refusing to connect (remove the old key only if you know why it changed)"
        ) from None
    except paramiko.AuthenticationException:
        client.close()
        raise UnreachableError(f"authentication failed for {user}@{host_key_name} (tried keys and agent)") from None
    except (paramiko.SSHException, OSError, EOFError) as exc:
        client.close()
        raise UnreachableError(f"SSH to {host_key_name} failed: {exc or type(exc).__name__}") from None


def _close_sock(sock: Any) -> None:
    with contextlib.suppress(Exception):
        sock.close()


def _local_user() -> str:
    import getpass

    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no passwd entry in some containers
        return "root"


def _lookup(alias: str, path: Path | None) -> dict[str, Any]:
    p = path or Path(os.path.expanduser("~/.ssh/config"))
    if not p.exists():
        return {}
    try:
        cfg = paramiko.SSHConfig.from_text(ssh_config_text(p))
    except ConfigError:
        raise
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{p}: cannot read SSH config: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - paramiko raises several types for bad syntax
        raise ConfigError(f"{p}: invalid SSH config: {exc}") from None
    return dict(cfg.lookup(alias))


_INCLUDE = re.compile(r"^\s*include(?:\s*=\s*|\s+)(.+?)\s*$", re.I)
_BLOCK = re.compile(r"^\s*(host|match)(\s*=\s*|\s+)", re.I)
MAX_INCLUDE_DEPTH = 16
"""OpenSSH's own limit on nested Include."""


def ssh_config_text(path: Path, depth: int = 0) -> str:
    """The SSH config with every ``Include`` replaced by the files it names, as OpenSSH reads
    them (paramiko does not follow Include): globs sorted, ``~`` expanded, relative paths under
    ``~/.ssh``, missing files skipped. An Include inside a Host or Match block brings its lines
    into that block; after the included text the block is reopened, so the lines that follow in
    the including file stay in it."""
    if depth > MAX_INCLUDE_DEPTH:
        raise ConfigError(f"{path}: SSH config Include nested more than {MAX_INCLUDE_DEPTH} deep")
    out: list[str] = []
    block: str | None = None
    from coldwatch.files import SSH_CONFIG_LIMIT, read_text

    for line in read_text(path, SSH_CONFIG_LIMIT, "SSH config").splitlines():
        if _BLOCK.match(line):
            block = line
        m = _INCLUDE.match(line)
        if not m:
            out.append(line)
            continue
        for pattern in shlex.split(m.group(1)):
            full = os.path.expanduser(pattern)
            if not os.path.isabs(full):
                full = os.path.join(os.path.expanduser("~/.ssh"), full)
            for name in sorted(glob.glob(full)):
                if os.path.isfile(name):
                    out.append(ssh_config_text(Path(name), depth + 1))
        out.append(block if block is not None else "Host *")  # back in the including block
    return "\n".join(out) + "\n"
