"""Rules as data: load the TOML rule files shipped in the package, plus user overrides."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from coldwatch.errors import ConfigError

PHASES = (
    "starting",
    "dist_init",
    "weight_load",
    "marlin_repack",
    "draft_init",
    "kv_alloc",
    "jit_compile",
    "graph_capture",
    "warmup",
    "ready",
)
FAILURE_KINDS = ("oom", "nccl", "exception", "killed", "exited", "other")
_ENGINE_TABLE = re.compile(r"^\[engine\][ \t]*(?:#.*)?$", re.M)


def _engine_files() -> tuple[str, ...]:
    """The shipped rule files with an ``[engine]`` table (each named after its engine), in name order."""
    base = resources.files("coldwatch.phases") / "rules"
    found = (p.name[: -len(".toml")] for p in base.iterdir() if p.name.endswith(".toml"))
    return tuple(sorted(n for n in found if _ENGINE_TABLE.search((base / f"{n}.toml").read_text(encoding="utf-8"))))


ENGINES = _engine_files()
"""The engines coldwatch knows: discovered from ``rules/*.toml``, never listed by hand. A new engine is
one rules file with an ``[engine]`` table (``name``, ``detect``: how its log is recognised, ``port``:
its default serving port)."""


def engine_choices() -> str:
    """``auto, sglang or vllm``: what --engine accepts, for its error message."""
    names = ("auto", *ENGINES)
    return f"{', '.join(names[:-1])} or {names[-1]}"


def _compile(pattern: str, where: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ConfigError(f"{where}: invalid regex {pattern!r}: {exc}") from None


def scoped(pattern: str) -> str:
    """Make a pattern safe to join into one alternation (global flags become scoped)."""
    if pattern.startswith("(?i)"):
        return "(?i:" + pattern[4:] + ")"
    return pattern


@dataclass(frozen=True, slots=True)
class PhaseRule:
    id: str
    engine: str
    regex: re.Pattern[str]
    enter: str | None = None
    end: tuple[str, ...] = ()
    requires: str | None = None
    unless: str | None = None
    sets: str | None = None
    is_global: bool = False
    stay_in: tuple[str, ...] = ()
    early: bool = False
    """Only while the start has not got past ``enter`` (set-up chatter that recurs later, e.g. NCCL INFO)."""
    resume: bool = False
    """After this end marker the rank is back in the phase it left for the ended one (JIT inside capture)."""
    reprint: bool = True
    """Ray's reprint of the line ('... [repeated 23x across cluster]') counts too; false for a line any process
    may print (another actor's, a trainer's), which only the process's own first print ties to the server."""


@dataclass(frozen=True, slots=True)
class BarRule:
    id: str
    engine: str
    regex: re.Pattern[str]
    phase: str
    stay_in: tuple[str, ...] = ()
    complete_enter: str | None = None
    complete_requires: str | None = None


@dataclass(frozen=True, slots=True)
class FailureRule:
    id: str
    engine: str
    regex: re.Pattern[str]
    kind: str
    role: str  # fatal | candidate | consequence


@dataclass(frozen=True, slots=True)
class StartRule:
    """A line that begins a new server process (a start): after progress, it means a restart."""

    id: str
    engine: str
    regex: re.Pattern[str]


@dataclass(frozen=True, slots=True)
class TaggedRegex:
    label: str
    regex: re.Pattern[str]
    after: str = ""
    """A [[frame]] rule's ``after``: it applies only once the log says that phase has ended (the step
    the engine runs next), e.g. vLLM's sampler warm-up, which also runs in the memory profile."""
    unless: re.Pattern[str] | None = None
    """A [[frame]] rule's ``unless``: it does not apply to a failure whose own words match (a step's
    frame that also runs a check of another kind: vLLM's init_device and its free-memory check)."""


@dataclass(frozen=True, slots=True)
class KindPhase:
    """Where a failure happened when nothing else places it, from its own words: a [[kind]] rule with a
    phase (a failure of that kind), or a [[frame]] text rule with ``fallback = true`` (kind "": any)."""

    kind: str
    phase: str
    regex: re.Pattern[str]


@dataclass(slots=True)
class RuleSet:
    """Every rule of every engine, in evaluation order."""

    phase: list[PhaseRule] = field(default_factory=list)
    bar: list[BarRule] = field(default_factory=list)
    failure: list[FailureRule] = field(default_factory=list)
    kind: list[TaggedRegex] = field(default_factory=list)
    frame: list[TaggedRegex] = field(default_factory=list)
    detect: dict[str, re.Pattern[str]] = field(default_factory=dict)
    start: list[StartRule] = field(default_factory=list)
    frame_kind: list[TaggedRegex] = field(default_factory=list)
    """Traceback frames -> failure kind, for a traceback whose exception line is missing (a cut paste)."""
    cause: list[TaggedRegex] = field(default_factory=list)
    """Lines that explain a later failure without being one ('Available memory: 0'): kind when the failure's own text has none."""
    kind_phase: list[KindPhase] = field(default_factory=list)
    """Where a failure happened when neither frames nor phase markers say, from its own words (an NCCL
    communicator being set up -> dist_init)."""
    warning: list[TaggedRegex] = field(default_factory=list)
    """Lines that are no failure but that a user must hear about (a weight cache that fell back to disk): message."""
    text_phase: list[TaggedRegex] = field(default_factory=list)
    """A failure's own text -> the phase it can only have happened in ([[frame]] with text instead of
    pattern: CUDA's capture-only errors)."""
    timing: list[TaggedRegex] = field(default_factory=list)
    """Lines where the engine reports its own duration of a step ('Loading weights took 26.93 seconds'):
    key, and the pattern's groups named s (seconds) and optionally key2/s2 for a second figure."""


def _phase(value: Any, where: str) -> str:
    if value not in PHASES:
        raise ConfigError(f"{where}: unknown phase {value!r} (phases: {', '.join(PHASES)})")
    return str(value)


def _phases(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise ConfigError(f"{where}: expected a list of phases, got {value!r}")
    return tuple(_phase(v, where) for v in value)


def _str(entry: dict[str, Any], key: str, where: str, required: bool = True) -> str | None:
    value = entry.get(key)
    if value is None:
        if required:
            raise ConfigError(f"{where}: missing key '{key}'")
        return None
    if not isinstance(value, str):
        raise ConfigError(f"{where}: key '{key}' must be a string, got {value!r}")
    return value


def _req(entry: dict[str, Any], key: str, where: str) -> str:
    """A required string key."""
    value = _str(entry, key, where)
    assert value is not None
    return value


def _pattern(entry: dict[str, Any], where: str, key: str = "pattern") -> re.Pattern[str]:
    return _compile(_str(entry, key, where) or "", where)


def _kind(value: Any, where: str, long: bool = False) -> str:
    if value not in FAILURE_KINDS:
        raise ConfigError(f"{where}: unknown failure kind {value!r}" + (f" (kinds: {', '.join(FAILURE_KINDS)})" if long else ""))
    return str(value)


def _phase_rule(e: dict[str, Any], where: str, engine: str, rules: RuleSet) -> None:
    rid = _req(e, "id", where)
    enter = e.get("enter")
    new = PhaseRule(
        id=rid,
        engine=str(e.get("engine", engine)),
        regex=_pattern(e, where),
        enter=_phase(enter, where) if enter is not None else None,
        end=_phases(e.get("end", []), where),
        requires=_str(e, "requires", where, False),
        unless=_str(e, "unless", where, False),
        sets=_str(e, "sets", where, False),
        is_global=bool(e.get("global", False)),
        stay_in=_phases(e.get("stay_in", []), where),
        early=bool(e.get("early", False)),
        resume=bool(e.get("resume", False)),
        reprint=bool(e.get("reprint", True)),
    )
    if new.early and new.enter is None:
        raise ConfigError(f"{where}: 'early' needs 'enter'")
    _put(rules.phase, new)


def _bar_rule(e: dict[str, Any], where: str, engine: str, rules: RuleSet) -> None:
    rid = _req(e, "id", where)
    ce = e.get("complete_enter")
    _put(
        rules.bar,
        BarRule(
            id=rid,
            engine=str(e.get("engine", engine)),
            regex=_pattern(e, where, "desc"),
            phase=_phase(e.get("phase"), where),
            stay_in=_phases(e.get("stay_in", []), where),
            complete_enter=_phase(ce, where) if ce is not None else None,
            complete_requires=_str(e, "complete_requires", where, False),
        ),
    )


def _failure_rule(e: dict[str, Any], where: str, engine: str, rules: RuleSet) -> None:
    rid = _req(e, "id", where)
    kind = _kind(e.get("kind", "exception"), where, long=True)
    role = e.get("role", "fatal")
    if role not in ("fatal", "candidate", "consequence"):
        raise ConfigError(f"{where}: role must be fatal, candidate or consequence, got {role!r}")
    _put(rules.failure, FailureRule(rid, str(e.get("engine", engine)), _pattern(e, where), kind, role))


def _start_rule(e: dict[str, Any], where: str, engine: str, rules: RuleSet) -> None:
    rid = _req(e, "id", where)
    _put(rules.start, StartRule(rid, str(e.get("engine", engine)), _pattern(e, where)))


def _kind_rule(e: dict[str, Any], where: str, engine: str, rules: RuleSet) -> None:
    kind = _kind(e.get("kind"), where)
    rx = _pattern(e, where)
    rules.kind.append(TaggedRegex(kind, rx))
    if e.get("phase") is not None:
        rules.kind_phase.append(KindPhase(kind, _phase(e.get("phase"), where), rx))


def _frame_rule(e: dict[str, Any], where: str, engine: str, rules: RuleSet) -> None:
    if e.get("text") is not None and e.get("pattern") is None:
        phase, rx = _phase(e.get("phase"), where), _pattern(e, where, key="text")
        if e.get("fallback") is True:
            rules.kind_phase.append(KindPhase("", phase, rx))  # only where neither frames nor the log say
        else:
            rules.text_phase.append(TaggedRegex(phase, rx))
        return
    rx = _pattern(e, where)
    if e.get("kind") is not None:
        rules.frame_kind.append(TaggedRegex(_kind(e["kind"], where), rx))
    else:
        after = e.get("after")
        unless = _pattern(e, where, key="unless") if e.get("unless") is not None else None
        rules.frame.append(TaggedRegex(_phase(e.get("phase"), where), rx, _phase(after, where) if after is not None else "", unless))


def _cause_rule(e: dict[str, Any], where: str, engine: str, rules: RuleSet) -> None:
    kind = _kind(e.get("kind"), where)
    rules.cause.append(TaggedRegex(kind, _pattern(e, where)))


def _warning_rule(e: dict[str, Any], where: str, engine: str, rules: RuleSet) -> None:
    message = _req(e, "message", where)
    rules.warning.append(TaggedRegex(message, _pattern(e, where)))


def _timing_rule(e: dict[str, Any], where: str, engine: str, rules: RuleSet) -> None:
    key = _req(e, "key", where)
    rx = _pattern(e, where)
    if "s" not in rx.groupindex:
        raise ConfigError(f"{where}: the pattern needs a group named s (the seconds), e.g. (?P<s>[0-9.]+)")
    rules.timing.append(TaggedRegex(key, rx))


_TABLES: dict[str, tuple[Callable[[dict[str, Any], str, str, RuleSet], None], bool]] = {
    "phase": (_phase_rule, True),
    "bar": (_bar_rule, True),
    "failure": (_failure_rule, True),
    "start": (_start_rule, True),
    "kind": (_kind_rule, False),
    "frame": (_frame_rule, False),
    "cause": (_cause_rule, False),
    "warning": (_warning_rule, False),
    "timing": (_timing_rule, False),
}
"""Each rules table, in the order its entries are read: its entry parser, and whether an entry
carries an id (named in error messages; a rule with a known id replaces it)."""


def _parse(data: dict[str, Any], source: str, engine: str, rules: RuleSet) -> None:
    known = {"engine", *_TABLES}
    for key in data:
        if key not in known:
            raise ConfigError(f"{source}: unknown table '{key}' (expected one of {', '.join(sorted(known))})")
    eng = data.get("engine", {})
    if eng:
        engine = str(eng.get("name", engine))
        det = eng.get("detect", [])
        if det:
            rules.detect[engine] = _compile("|".join(scoped(p) for p in det), f"{source} [engine] detect")
    for table, (parse, named) in _TABLES.items():
        for i, e in enumerate(data.get(table, [])):
            where = f"{source} [[{table}]] #{i + 1}" + (f" ({e.get('id', '?')})" if named else "")
            parse(e, where, engine, rules)


def _put(items: list[Any], new: PhaseRule | BarRule | FailureRule | StartRule) -> None:
    """Replace the rule with the same id in place, or append."""
    for i, old in enumerate(items):
        if old.id == new.id:
            items[i] = new
            return
    items.append(new)


def _load_text(text: str, source: str, engine: str, rules: RuleSet) -> None:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {exc}") from None
    _parse(data, source, engine, rules)


_BUILTIN: RuleSet | None = None


def builtin_rules() -> RuleSet:
    """The rules shipped in the package (cached; callers must not mutate)."""
    global _BUILTIN
    if _BUILTIN is None:
        rules = RuleSet()
        base = resources.files("coldwatch.phases") / "rules"
        for name in (*ENGINES, "common"):
            text = (base / f"{name}.toml").read_text(encoding="utf-8")
            _load_text(text, f"rules/{name}.toml", name if name != "common" else "*", rules)
        for name in ENGINES:
            if name not in rules.detect:
                raise ConfigError(f"rules/{name}.toml: its [engine] table must say name = {name!r} and how to detect it")
        _BUILTIN = rules
    return _BUILTIN


def serving_ports() -> dict[str, int]:
    """Each engine's default serving port, from its ``[engine] port`` (engines without one left out)."""
    base = resources.files("coldwatch.phases") / "rules"
    ports: dict[str, int] = {}
    for name in ENGINES:
        port = tomllib.loads((base / f"{name}.toml").read_text(encoding="utf-8")).get("engine", {}).get("port")
        if isinstance(port, int) and not isinstance(port, bool):
            ports[name] = port
    return ports


def load_rules(extra: list[Path] | None = None) -> RuleSet:
    """Built-in rules, then each user file in order (a rule with a known id replaces it)."""
    base = builtin_rules()
    if not extra:
        return base
    rules = RuleSet(
        list(base.phase),
        list(base.bar),
        list(base.failure),
        list(base.kind),
        list(base.frame),
        dict(base.detect),
        list(base.start),
        list(base.frame_kind),
        list(base.cause),
        list(base.kind_phase),
        list(base.warning),
        list(base.text_phase),
        list(base.timing),
    )
    for path in extra:
        from coldwatch.files import RULES_LIMIT, read_text

        text = read_text(path, RULES_LIMIT, "rules file")  # bounded; a FIFO or device is refused
        _load_text(text, str(path), "*", rules)
    return rules
