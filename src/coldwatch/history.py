"""Per-target records of past cold starts (JSONL, mode 0600) and the ETA they give."""

from __future__ import annotations

import hashlib
import json
import os
import statistics
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import platformdirs

from coldwatch.errors import ConfigError

FILE = "history.jsonl"


def home() -> Path:
    """COLDWATCH_HOME, else the platform state directory."""
    env = os.environ.get("COLDWATCH_HOME")
    return Path(env) if env else Path(platformdirs.user_state_dir("coldwatch"))


def path() -> Path:
    return home() / FILE


def cmd_hash(cmdline: str | None) -> str | None:
    return hashlib.sha256(cmdline.encode()).hexdigest()[:16] if cmdline else None


def durations(phases: Iterable[dict[str, Any]]) -> dict[str, float]:
    """Phase -> seconds, for phases with both ends known."""
    out: dict[str, float] = {}
    for p in phases:
        if p.get("start") is not None and p.get("end") is not None and p["phase"] not in ("ready",):
            out[p["phase"]] = round(float(p["end"]) - float(p["start"]), 3)
    return out


def append(record: dict[str, Any]) -> None:
    """Append one record; the file is created 0600 (it names hosts and models)."""
    p = path()
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(p, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, sort_keys=True) + "\n")
    except OSError as exc:
        raise ConfigError(f"{p}: cannot write history: {exc.strerror or exc}") from None


def load() -> list[dict[str, Any]]:
    """Every readable record; a corrupt line is skipped, never fatal."""
    p = path()
    if not p.exists():
        return []
    out: list[dict[str, Any]] = []
    try:
        with p.open(encoding="utf-8", errors="replace") as fh:
            for line in fh:
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if isinstance(rec, dict) and "target" in rec:
                    out.append(rec)
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read history: {exc.strerror or exc}") from None
    return out


def starts(phases: Iterable[dict[str, Any]]) -> dict[str, float]:
    """Phase -> seconds from the start to its first entry (the per-phase ETA's segments)."""
    return {str(p["phase"]): round(float(p["start"]), 3) for p in phases if p.get("start") is not None and p.get("phase") != "ready"}


def make_record(target: str, result: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """One history record; ``extra`` adds what the driver knows (host, unit, model, model_path, tp)."""
    d = durations(result.get("phases", []))
    ready = next((p["start"] for p in result.get("phases", []) if p["phase"] == "ready"), None)
    return {
        "target": target,
        "outcome": result["outcome"],
        "phase": result.get("phase"),
        "failure_kind": result.get("failure_kind"),
        "durations": d,
        "starts": starts(result.get("phases", [])),
        "total": ready if ready is not None else result.get("t"),
        "ts": result.get("ts"),
        **({"engine_timings": result["engine_timings"]} if result.get("engine_timings") else {}),
        **{k: v for k, v in extra.items() if v is not None},
    }


def record_replay(target: str, result: dict[str, Any]) -> None:
    append(make_record(target, result, source="replay"))


def baseline(target: str, model: str | None = None, records: list[dict[str, Any]] | None = None) -> dict[str, float]:
    """Median seconds per phase (and 'total') over earlier ready starts of the target.

    Falls back to ready starts of the same model on other targets.
    """
    recs = records if records is not None else load()
    mine = [r for r in recs if r.get("target") == target and r.get("outcome") == "ready"]
    if not mine and model:
        mine = [r for r in recs if r.get("model") == model and r.get("outcome") == "ready"]
    if not mine:
        return {}
    per: dict[str, list[float]] = {}
    for r in mine:
        for ph, secs in (r.get("durations") or {}).items():
            per.setdefault(ph, []).append(float(secs))
        if r.get("total") is not None:
            per.setdefault("total", []).append(float(r["total"]))
    return {ph: statistics.median(v) for ph, v in per.items()}
