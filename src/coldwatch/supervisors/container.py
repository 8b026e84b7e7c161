"""A Docker or Podman container: ``inspect`` for the state (the runtime found on the host when not
named), ``logs --since`` for the current start's log, and the host address its serving port is
published on for the URL."""

from __future__ import annotations

import datetime as _dt
import json
import re
import signal
from typing import Any

from coldwatch.errors import ConfigError
from coldwatch.evidence import SupervisorState
from coldwatch.hosts.base import q
from coldwatch.phases.rules import serving_ports
from coldwatch.supervisors.base import SupervisorKind, SupervisorSpec

RUNTIMES = ("auto", "docker", "podman")
INSPECT = (
    '{"State":{{json .State}},"RestartCount":{{json .RestartCount}},"Network":{{json .HostConfig.NetworkMode}},'
    '"Ports":{{json .NetworkSettings.Ports}},"Bindings":{{json .HostConfig.PortBindings}},"Image":{{json .Config.Image}}}'
)
"""Only what the watch needs from ``inspect`` (never the environment, which may hold secrets). A stopped or
restarting container has no ``NetworkSettings.Ports``; its ``HostConfig.PortBindings`` still say what
``-p`` asked for."""
NOT_LISTENING = "http://127.0.0.1:0"
"""Where a container that is not running now, with a port published only when it runs (``-p 30000``), is
probed until it runs again: a port nothing listens on, so the log and the runtime's state decide."""
_RFC3339 = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d{1,9})?(Z|[+-]\d\d:\d\d)$")


def rfc3339(stamp: str) -> float | None:
    """A runtime's RFC 3339 time (nanoseconds, Z or an offset) -> Unix seconds; None when it is not one
    or is Go's zero time (a container that never finished)."""
    m = _RFC3339.match(stamp)
    if not m or stamp.startswith("0001-"):
        return None
    try:
        base = _dt.datetime.fromisoformat(m.group(1) + ("+00:00" if m.group(3) == "Z" else m.group(3)))
    except ValueError:
        return None
    return base.timestamp() + float(m.group(2) or 0)


class Container:
    """A Docker or Podman container: ``inspect`` for the state, ``logs --since`` for the current start."""

    kind = "container"
    pid_pattern = r'"Pid":\s*(\d+)'
    journal = False

    def __init__(self, name: str, runtime: str = "auto") -> None:
        self.name = name
        self.runtime = runtime
        """docker | podman; "auto" until the first ``inspect`` says which runtime knows the container."""
        self.network = ""
        self.ports: dict[str, Any] = {}
        self.bindings: dict[str, Any] = {}
        """``-p`` as asked (``HostConfig.PortBindings``): kept while the container is stopped."""
        self.running = True
        self.note = ""
        """Said once by the driver: how the URL was chosen for a container that is not running."""
        self.image = ""
        self.error = ""

    def _inspect(self, runtime: str) -> str:
        return f"{runtime} inspect --type container --format {q(INSPECT)} -- {q(self.name)}"

    def state_command(self) -> str:
        if self.runtime != "auto":
            return f"{self._inspect(self.runtime)} 2>&1"
        # the first runtime on the host that knows the container; its name on the first line
        return (
            "e=; for r in docker podman; do command -v $r >/dev/null 2>&1 || continue; "
            f'o=$({self._inspect("$r")} 2>&1) && {{ echo "runtime=$r"; printf "%s\\n" "$o"; exit 0; }}; '
            '[ -n "$e" ] || e="$r: $o"; done; [ -n "$e" ] && { printf "%s\\n" "$e"; exit 1; }; echo runtime=none; exit 127'
        )

    def parse(self, rc: int | None, text: str) -> SupervisorState:
        data: dict[str, Any] | None = None
        for line in text.splitlines()[:50]:
            if line.startswith("runtime=") and self.runtime == "auto" and line[8:].strip() in ("docker", "podman"):
                self.runtime = line[8:].strip()
            elif line.startswith('{"State"') and rc == 0:
                try:
                    value = json.loads(line)
                except ValueError:
                    continue
                if isinstance(value, dict) and isinstance(value.get("State"), dict):
                    data = value
        if data is None:
            self.error = " ".join(text.split())[:300] if rc is not None else "timed out"
            if rc is not None and rc != 0 and "no such" in text.lower():
                return SupervisorState(
                    True,
                    dead=True,
                    not_found=True,
                    death_kind="killed",
                    death_reason=f"container {self.name} was removed",
                )
            return SupervisorState(False)
        self.error = ""
        return self._state(data)

    def _state(self, data: dict[str, Any]) -> SupervisorState:
        st: dict[str, Any] = data["State"]
        self.network = str(data.get("Network") or "")
        ports = data.get("Ports")
        self.ports = ports if isinstance(ports, dict) else {}
        bindings = data.get("Bindings")
        self.bindings = bindings if isinstance(bindings, dict) else {}
        self.image = str(data.get("Image") or "")
        status = str(st.get("Status") or "").lower()
        restarting = st.get("Restarting") is True or status == "restarting"
        dead = status in ("exited", "dead", "stopped") and not restarting
        code = _int(st.get("ExitCode")) or 0
        oom = st.get("OOMKilled") is True
        started = str(st.get("StartedAt") or "")
        finished = str(st.get("FinishedAt") or "")
        if oom:
            kind, why = "killed", f"the kernel's OOM killer ended it (OOMKilled, exit code {code})"
        elif 128 < code <= 128 + 64:
            try:
                sig = signal.Signals(code - 128).name
            except ValueError:
                sig = f"signal {code - 128}"
            kind, why = "killed", f"it was killed by {sig} (exit code {code})"
        else:
            kind, why = "exited", f"it exited with code {code}"
        err = str(st.get("Error") or "")
        pid = _int(st.get("Pid"))
        self.running = st.get("Running") is True and not restarting
        return SupervisorState(
            known=True,
            running=st.get("Running") is True and not restarting,
            dead=dead,
            waiting=restarting,
            restarts=_int(data.get("RestartCount")),
            start_id=started,
            since=finished if restarting and rfc3339(finished) is not None else self._scope(started, finished),
            main_pid=pid if pid else None,
            death_kind=kind if dead or restarting else None,
            death_reason=f"container {self.name} stopped: {why}" + (f" ({err[:200]})" if err else ""),
        )

    @staticmethod
    def _scope(started: str, finished: str) -> str:
        """Where the current start's log begins: after the previous run finished (the runtime keeps its
        FinishedAt while the container runs again), so an earlier run's lines never count; the whole log
        when it never finished; its StartedAt once it has stopped. While it restarts, the next run's log
        begins after the last FinishedAt (its StartedAt is still the run that just failed)."""
        t0, t1 = rfc3339(started), rfc3339(finished)
        if t0 is None or t1 is None:
            return ""
        return finished if t1 < t0 else started

    def first_state(self, rc: int | None, text: str) -> SupervisorState:
        st = self.parse(rc, text)
        where = f"{self.runtime} " if self.runtime != "auto" else ""
        if rc == 127:
            what = "neither docker nor podman is" if self.runtime == "auto" else f"{self.runtime} is not"
            raise ConfigError(f"container {self.name}: {what} installed on the host")
        if st.not_found:
            raise ConfigError(f"container {self.name}: no such container ({where}inspect: {self.error})")
        if not st.known:
            raise ConfigError(f"container {self.name}: {where}inspect failed: {self.error or 'no answer'}")
        return st

    def log_command(self, svc: SupervisorState | None, follow: bool, cursor: str | None = None) -> str:
        """``logs`` of the current start (``--since`` its scope), with the runtime's timestamps."""
        runtime = self.runtime if self.runtime != "auto" else "docker"
        since = svc.since if svc is not None and _RFC3339.match(svc.since) else ""
        opts = "-f --timestamps" if follow else "--timestamps --tail 5000"
        if since:
            opts += f" --since {q(since)}"
        return f"{runtime} logs {opts} -- {q(self.name)} 2>&1"

    def url(self, port: int | None, engine: str) -> tuple[str, bool]:
        """The host address the serving port (``port``, else the engine's) is published on (the port
        itself with host networking); ``NOT_LISTENING`` while a container that publishes it only when it
        runs is stopped. Raises ConfigError when the port is not published."""
        want = port or self.serving_port(engine)
        addr = self.address(want)
        self.note = ""
        if addr is None and not self.running and f"{want}/tcp" in self.bindings:
            # stopped or restarting: a dynamic host port (-p 30000) exists only while it runs; the log and the
            # runtime's state say why it stopped, and a new start publishes the port again
            self.note = (
                f"container {self.name} is not running: port {want} is published only while it runs; "
                "probed again when it starts, judged on its log and state meanwhile"
            )
            return NOT_LISTENING, False
        if addr is None:
            published = ", ".join(sorted(k for k, v in self.ports.items() if v)) or "none"
            raise ConfigError(
                f"container {self.name}: port {want} is not published to the host (published: {published}); "
                "name the serving port with --port, or the URL with --url"
            )
        ip, host_port = addr
        host = f"[{ip}]" if ":" in ip else ip
        return f"http://{host}:{host_port}", self.network == "host"

    def address(self, port: int) -> tuple[str, int] | None:
        """Where the host reaches the container's ``port``: the port itself with host networking, else
        the host port it is published on; None when it is not published."""
        if self.network == "host":
            return "127.0.0.1", port
        binds = self.ports.get(f"{port}/tcp") or self.bindings.get(f"{port}/tcp")
        if not isinstance(binds, list):
            return None
        for b in binds:
            if not isinstance(b, dict):
                continue
            host_port = _int(b.get("HostPort"))
            if not host_port:
                continue
            ip = str(b.get("HostIp") or "")
            if ip in ("", "0.0.0.0"):
                ip = "127.0.0.1"
            elif ip == "::":
                ip = "::1"
            return ip, host_port
        return None

    def serving_port(self, engine: str) -> int:
        """The container's serving port when none is named: the engine's default (its rules' ``[engine]
        port``: 30000 SGLang, 8000 vLLM); with the engine unknown, whichever default it publishes, else
        by its image's name (SGLang's when the image names no engine)."""
        ports = serving_ports()
        if engine in ports:
            return ports[engine]
        for port in ports.values():
            if self.ports.get(f"{port}/tcp") or self.bindings.get(f"{port}/tcp"):
                return port
        image = self.image.lower()
        return next((p for name, p in ports.items() if name in image), ports.get("sglang", 30000))


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    return None


def choose(spec: SupervisorSpec) -> Container | None:
    """A watch that names a container (--container, --runtime)."""
    return Container(spec.container, spec.runtime) if spec.container is not None else None


KIND = SupervisorKind("container", 10, choose)
