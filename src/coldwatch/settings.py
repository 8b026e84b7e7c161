"""Settings for wait/status/demo: flags > COLDWATCH_* env > --profile table > --config file's top level > defaults."""

from __future__ import annotations

import math
import os
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from coldwatch.errors import ConfigError

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
MAX_DURATION = 366 * 86400.0
"""The longest duration any option takes (a year): beyond it a clock's arithmetic overflows."""
MAX_INTERVAL = 3600.0


def parse_duration(value: Any, name: str) -> float:
    """'90', '90s', '15m', '1h', '0' -> seconds."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not math.isfinite(value):
            raise ConfigError(f"{name}: expected a duration such as 90, 90s, 15m or 1h, got {value}")
        if value < 0:
            raise ConfigError(f"{name}: must not be negative, got {value}")
        secs = float(value)
    else:
        m = _DURATION.match(str(value))
        if not m:
            raise ConfigError(f"{name}: expected a duration such as 90, 90s, 15m or 1h, got {value!r}")
        secs = float(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600, None: 1}[m.group(2)]
    if secs > MAX_DURATION:
        raise ConfigError(f"{name}: at most {MAX_DURATION / 86400:.0f} days, got {value if isinstance(value, str) else format(value, 'g')}")
    return secs


@dataclass(slots=True)
class Settings:
    host: str | None = None
    unit: str = "sglang"
    log_cmd: str | None = None
    gpu_cmd: str | None = None
    url: str = "http://127.0.0.1:30000"
    model: str | None = None
    api_key: str | None = field(default=None, repr=False)
    timeout: float = 1800.0
    interval: float = 2.0
    stall_after: float = 600.0
    pid: int | None = None
    check: list[str] = field(default_factory=list)
    output: str = "auto"
    accept_new_host_key: bool = False
    insecure: bool = False
    max_restarts: int = 0
    reconnect_for: float = 120.0
    engine: str = "auto"
    rules: list[Path] = field(default_factory=list)
    connect_timeout: float = 10.0
    known_hosts: Path | None = None
    ssh_config: Path | None = None
    identity: Path | None = None
    target: str | None = None
    record: bool = True
    junit: Path | None = None
    workers: list[str] = field(default_factory=list)
    """Other nodes of one multi-node server (HTTP is probed on the head, HOST, only)."""
    targets_file: Path | None = None
    parallel: int = 32
    min_ready: str | None = None
    """Fleet: ready targets needed for exit 0, N or P% (default all)."""
    fail_fast: bool = False
    node_overrides: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)
    """Per worker node: the options its [targets.NAME] table sets (filled by ``resolve``)."""

    container: str | None = None
    runtime: str = "auto"
    port: int | None = None
    report: Path | None = None
    metrics: Path | None = None
    pushgateway: str | None = None
    url_given: bool = field(default=False, repr=False)
    """--url came from some source (else a container's published port, or --port, chooses it)."""

    def for_node(self, name: str) -> Settings:
        """The settings of a worker node: these, on that host, with its [targets.NAME] table applied
        when the config file has one (resolved by the CLI into ``node_overrides``)."""
        import dataclasses

        over = self.node_overrides.get(name, self.node_overrides.get("*"))
        if over is None:
            return dataclasses.replace(self, host=name, workers=[])
        return dataclasses.replace(Settings(**over), host=name, workers=[], node_overrides={})

    def target_name(self) -> str:
        if self.target:
            return self.target
        if self.container:
            return f"{self.host or 'localhost'}/container:{self.container}"
        if self.log_cmd:
            # the server a log command watches is the one on the probed port: two servers on one host
            # (two log commands) never share a baseline
            from urllib.parse import urlsplit

            try:
                u = urlsplit(self.url)
                port = u.port or (443 if u.scheme == "https" else 80)
            except ValueError:
                return f"{self.host or 'localhost'}/log-cmd"
            return f"{self.host or 'localhost'}:{port}"
        return f"{self.host or 'localhost'}/{self.unit}"


_DURATIONS = {"timeout", "interval", "stall_after", "reconnect_for", "connect_timeout"}
_PATHS = {"known_hosts", "ssh_config", "identity", "junit", "targets_file", "report", "metrics"}
_INTERNAL = {"url_given", "node_overrides"}
"""Fields no source sets by name."""
_CHECKS = ("reasoning", "tools")
_OUTPUTS = ("auto", "live", "plain", "json")
# systemd's unit-name grammar (systemd.unit(5)): PREFIX[@[INSTANCE]][.TYPE], PREFIX and INSTANCE
# of ASCII letters, digits and ":-_.\\", at most 255 characters; no TYPE means ".service", as for
# systemctl. A leading "-" is refused (systemd allows "-.mount"; no LLM server is one).
UNIT_TYPES = ("service", "socket", "device", "mount", "automount", "swap", "target", "path", "timer", "slice", "scope")
_UNIT = re.compile(r"^(?!-)[A-Za-z0-9:_.\\-]+(?:@[A-Za-z0-9:_.\\-]*)?$")
# Docker's (and Podman's) container-name grammar; a name never starts with "-"
_CONTAINER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,254}$")


def check_remote_arg(value: str, name: str) -> str:
    """Any value that reaches a command line on the host: one printable line, never an option."""
    if not value or value.startswith("-") or not value.isprintable():
        raise ConfigError(f"{name}: {value!r} is not allowed (empty, starts with '-' or has control characters)")
    return value


def check_unit(unit: str) -> str:
    """A systemd unit name, by systemd's own grammar; the suffix may be left out (.service)."""
    if unit.startswith("-"):
        raise ConfigError(f"unit: {unit!r} is not a valid systemd unit name (a name starting with '-' would be read as an option)")
    stem, dot, suffix = unit.rpartition(".")
    if dot and suffix in UNIT_TYPES:
        prefix = stem
    elif unit.endswith("@"):
        raise ConfigError(f"unit: {unit!r} is a template; name an instance (NAME@INSTANCE) or add its type (NAME@.service)")
    else:
        prefix = unit  # systemctl appends .service
    if len(unit) > 255 or not prefix or not _UNIT.match(prefix) or prefix.startswith("@"):
        raise ConfigError(f"unit: {unit!r} is not a valid systemd unit name (letters, digits, ':-_.\\', one '@', a type suffix)")
    return unit


def check_container(name: str) -> str:
    """A Docker or Podman container name (or ID) as it may appear on the host's command line."""
    check_remote_arg(name, "container")
    if not _CONTAINER.match(name):
        raise ConfigError(f"container: {name!r} is not a valid container name ([A-Za-z0-9][A-Za-z0-9_.-]*)")
    return name


def _duration(name: str, value: Any, where: str) -> float:
    secs = parse_duration(value, where)
    if name == "interval" and not 0 < secs <= MAX_INTERVAL:
        bound = "more than 0" if secs <= 0 else f"at most {MAX_INTERVAL:g}s"
        raise ConfigError(f"{where}: must be {bound}, got {value if isinstance(value, str) else format(value, 'g')}")
    return secs


def _workers(name: str, value: Any, where: str) -> list[str]:
    items = value if isinstance(value, (list, tuple)) else [v for v in str(value).replace(",", " ").split() if v]
    for v in items:
        if not isinstance(v, str) or not v or v.startswith("-") or not v.isprintable() or " " in v:
            raise ConfigError(f"{where}: {v!r} is not an SSH destination")
    return list(items)


def _min_ready(name: str, value: Any, where: str) -> str:
    text = str(value).strip()
    m = re.fullmatch(r"(\d+)(%?)", text)
    if not m or (m.group(2) and int(m.group(1)) > 100):
        raise ConfigError(f"{where}: expected a count such as 3 or a share such as 90%, got {value!r}")
    if int(m.group(1)) == 0:
        raise ConfigError(f"{where}: 0 targets ready would pass a fleet where none came up; expected 1 or more (or a share above 0%)")
    return text


def _whole(name: str, value: Any, where: str) -> int:
    try:
        n = int(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: TOML's inf
        raise ConfigError(f"{where}: expected a whole number, got {value!r}") from None
    if name == "pid" and n <= 0:
        raise ConfigError(f"{where}: expected a positive process id, got {value!r}")
    if name == "parallel" and n <= 0:
        raise ConfigError(f"{where}: expected 1 or more, got {value!r}")
    if name == "port" and not 0 < n < 65536:
        raise ConfigError(f"{where}: expected a TCP port (1-65535), got {value!r}")
    if n < 0:
        raise ConfigError(f"{where}: expected 0 or more, got {value!r}")
    return n


def _switch(name: str, value: Any, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if str(value).lower() in ("1", "true", "yes", "on"):
        return True
    if str(value).lower() in ("0", "false", "no", "off", ""):
        return False
    raise ConfigError(f"{where}: expected true or false, got {value!r}")


def _path(name: str, value: Any, where: str) -> Path:
    return Path(os.path.expanduser(str(value)))


def _paths(name: str, value: Any, where: str) -> list[Path]:
    items = value if isinstance(value, (list, tuple)) else [value]
    return [Path(os.path.expanduser(str(v))) for v in items]


def _checks(name: str, value: Any, where: str) -> list[str]:
    items = value if isinstance(value, (list, tuple)) else [v for v in str(value).split(",") if v]
    for v in items:
        if v not in _CHECKS:
            raise ConfigError(f"{where}: unknown check {v!r} (checks: {', '.join(_CHECKS)})")
    return list(items)


_TYPED: dict[str, Callable[[str, Any, str], Any]] = {
    **dict.fromkeys(_DURATIONS, _duration),
    "workers": _workers,
    "min_ready": _min_ready,
    **dict.fromkeys(("pid", "max_restarts", "parallel", "port"), _whole),
    **dict.fromkeys(("accept_new_host_key", "insecure", "record", "fail_fast"), _switch),
    **dict.fromkeys(_PATHS, _path),
    "rules": _paths,
    "check": _checks,
}
"""The settings that are no plain string: each one's reader (every other setting is a string)."""


def _named_check(name: str, value: str, where: str) -> str:
    """A unit, a container or an API key, checked by its own checker."""
    check: Callable[[str], object]
    if name == "api_key":
        from coldwatch.http import check_api_key

        check = check_api_key
    else:
        check = check_unit if name == "unit" else check_container
    try:
        check(value)
    except ConfigError as exc:  # the checker names the key; the message names the source instead
        raise ConfigError(f"{where}: {str(exc).split(': ', 1)[-1]}") from None
    return value


def _choice(allowed: tuple[str, ...], said: str) -> Callable[[str, str, str], str]:
    def check(name: str, value: str, where: str) -> str:
        if value not in allowed:
            raise ConfigError(f"{where}: expected {said}, got {value!r}")
        return value

    return check


def _engine(name: str, value: str, where: str) -> str:
    """An engine the rules know (rules/*.toml), or auto; the rules load only when one is named."""
    if value not in ("auto", *_engines()):
        raise ConfigError(f"{where}: expected {_engine_choices()}, got {value!r}")
    return value


def _one_line(name: str, value: str, where: str) -> str:
    if "\n" in value or "\x00" in value:
        raise ConfigError(f"{where}: must be one line")
    return value


def _pushgateway(name: str, value: str, where: str) -> str:
    from coldwatch.metrics import check_pushgateway

    return check_pushgateway(value, where)


def _url(name: str, value: str, where: str) -> str:
    from coldwatch.http import check_url

    try:
        return check_url(value)
    except ConfigError:
        raise ConfigError(f"{where}: expected http(s)://HOST[:PORT], got {value!r}") from None


_STRINGS: dict[str, Callable[[str, str, str], str]] = {
    **dict.fromkeys(("unit", "container", "api_key"), _named_check),
    "runtime": _choice(("auto", "docker", "podman"), "auto, docker or podman"),
    "output": _choice(_OUTPUTS, f"one of {', '.join(_OUTPUTS)}"),
    "engine": _engine,
    **dict.fromkeys(("log_cmd", "gpu_cmd"), _one_line),
    "pushgateway": _pushgateway,
    "url": _url,
}
"""The string settings with a check of their own (the rest are taken as written)."""


def _coerce(name: str, value: Any, where: str) -> Any:
    """One value from one source, checked; ``where`` names the source the user wrote it in
    (``--timeout``, ``COLDWATCH_TIMEOUT``, ``FILE: timeout``)."""
    if value is None:
        return None
    typed = _TYPED.get(name)
    if typed is not None:
        return typed(name, value, where)
    if name == "host" and isinstance(value, str) and not value.strip():
        raise ConfigError("HOST: is empty (an unset variable?); omit HOST to watch this machine")
    if not isinstance(value, str):
        shown = "a " + type(value).__name__ if name == "api_key" else repr(value)  # a key is never echoed
        raise ConfigError(f"{where}: expected a string, got {shown}")
    checked = _STRINGS.get(name)
    return checked(name, value, where) if checked is not None else value


def _read_config(path: Path) -> dict[str, Any]:
    from coldwatch.files import CONFIG_LIMIT, read_text

    text = read_text(path, CONFIG_LIMIT, "config")  # bounded; a FIFO or device is refused
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None


def _apply(values: dict[str, Any], table: dict[str, Any], source: str, known: set[str]) -> None:
    for key, value in table.items():
        name = key.replace("-", "_")
        if name in ("profiles", "targets") and isinstance(value, dict):
            continue
        if name not in known:
            raise ConfigError(f"{source}: unknown key {key!r}")
        values[name] = _coerce(name, value, f"{source}: {key}")


def resolve(flags: dict[str, Any], config: Path | None = None, profile: str | None = None, target: str | None = None) -> Settings:
    """Merge the sources, later ones winning: defaults < the file's top level < its
    ``[profiles.NAME]`` < its ``[targets.TARGET]`` (a HOST or worker as written) < ``COLDWATCH_*`` <
    flags. Every bad value is named with its source."""
    known = {f.name for f in fields(Settings)} - _INTERNAL
    values: dict[str, Any] = {}
    config = config or (Path(os.environ["COLDWATCH_CONFIG"]) if os.environ.get("COLDWATCH_CONFIG") else None)
    profile = profile or os.environ.get("COLDWATCH_PROFILE")
    data: dict[str, Any] = _read_config(config) if config else {}
    if config:
        _apply(values, data, str(config), known)
    if profile:
        profiles = data.get("profiles", {})
        if not isinstance(profiles, dict) or not isinstance(profiles.get(profile), dict):
            where = str(config) if config else "no --config file"
            raise ConfigError(f"profile {profile!r} not found ({where})")
        _apply(values, profiles[profile], f"{config} [profiles.{profile}]", known)
    targets = data.get("targets", {})
    if not isinstance(targets, dict):
        raise ConfigError(f"{config}: targets: expected [targets.NAME] tables")
    for name, table in targets.items():
        if not isinstance(table, dict):
            raise ConfigError(f"{config} [targets.{name}]: expected a table of options")
    late: dict[str, Any] = {}  # env and flags: above every table
    for name in sorted(known):
        env = os.environ.get(env_name(name))
        if env is not None and name != "host":
            late[name] = _coerce(name, env, env_name(name))
    for name, value in flags.items():
        if value is not None and value != [] and name in known:
            late[name] = _coerce(name, value, "--" + name.replace("_", "-"))
    base = dict(values)
    overrides: dict[str, dict[str, Any]] = {}
    for name, table in targets.items():  # every table is checked, and gives its node's settings
        node = dict(base)
        _apply(node, table, f"{config} [targets.{name}]", known)
        node.update(late)
        overrides[str(name)] = {k: v for k, v in node.items() if k not in ("host", "workers")}
    overrides["*"] = {k: v for k, v in {**base, **late}.items() if k not in ("host", "workers")}  # a node without a table
    if target is not None and target in targets:
        _apply(values, targets[target], f"{config} [targets.{target}]", known)
    values.update(late)
    values["node_overrides"] = overrides
    values["url_given"] = "url" in values
    return Settings(**values)


def env_name(name: str) -> str:
    """The environment variable of a setting: ``stall_after`` -> ``COLDWATCH_STALL_AFTER``."""
    return "COLDWATCH_" + name.upper()


def _engines() -> tuple[str, ...]:
    """The engines of the rules (rules/*.toml); the rules load only when an engine is named."""
    from coldwatch.phases.rules import ENGINES

    return ENGINES


def _engine_choices() -> str:
    from coldwatch.phases.rules import engine_choices

    return engine_choices()
