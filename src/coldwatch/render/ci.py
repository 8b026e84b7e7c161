"""Sinks for CI systems: GitHub Actions workflow commands and step summary, JUnit XML, and the
plain verdict line on stderr when stdout carries NDJSON.

Each one only renders the event stream; ``coldwatch.render.ci_sinks`` picks them from the
settings and the environment.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, TextIO

from coldwatch import ending
from coldwatch.render.plain import verdict_line
from coldwatch.sanitise import inert

NOT_READY_AS_ERROR = {"unreachable", "usage", "interrupted"}
"""JUnit: outcomes where coldwatch could not judge the server (an <error>, not a <failure>)."""


def _printable(text: Any) -> str:
    """Remote text as one inert line: secrets redacted, controls, bidi and invisible characters
    visible escapes, tabs and newlines spaces."""
    return inert(text, newlines=False)


# ---- GitHub Actions ---------------------------------------------------------------------------


def gh_data(text: str) -> str:
    """Escape the message of a workflow command (GitHub's rules: %, CR, LF)."""
    return str(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def gh_property(text: str) -> str:
    """Escape a property value of a workflow command (data rules plus ':' and ',')."""
    return gh_data(text).replace(":", "%3A").replace(",", "%2C")


def _clean(text: str) -> str:
    """Secrets redacted, controls other than CR and LF (escaped by gh_data), bidi and invisible
    characters visible escapes."""
    return inert(text)


def _dur(seconds: float | None) -> str:
    if seconds is None:
        return ""
    m, s = divmod(round(seconds), 60)
    return f"{m}m{s:02d}s" if m else f"{s}s"


def durations(phases: list[dict[str, Any]] | None, now: Any = None) -> list[tuple[str, float | None]]:
    """(phase, seconds) from a result's ``phases`` list; a phase still open at the verdict runs
    to ``now`` (the result's ``t``), or is None without it."""
    out: list[tuple[str, float | None]] = []
    for p in phases or []:
        start, end = p.get("start"), p.get("end")
        if not isinstance(end, (int, float)) and p.get("phase") != "ready":
            end = now
        ok = isinstance(start, (int, float)) and isinstance(end, (int, float))
        out.append((str(p.get("phase")), round(max(float(end) - float(start), 0.0), 3) if ok else None))  # type: ignore[arg-type]
    return out


def _md(text: Any) -> str:
    """Remote text made inert inside a Markdown table cell (no HTML, links or formatting)."""
    s = _printable(text)
    for ch in "\\`*_[]<>|#!~":
        s = s.replace(ch, "\\" + ch)
    return s.replace("&", "&amp;")


class GithubSink:
    """``::error`` / ``::warning`` workflow commands on stderr (they are annotations whichever
    stream carries them, and stdout may be NDJSON), and a Markdown summary appended to
    ``$GITHUB_STEP_SUMMARY`` on the result."""

    def __init__(self, title: str, summary: Path | None, stream: TextIO | None = None) -> None:
        self.title = title
        self.summary = summary
        self.stream = stream or sys.stderr
        self.warnings: list[str] = []
        self.checks: list[dict[str, Any]] = []

    def _command(self, kind: str, message: str, title: str | None = None) -> None:
        props = f" title={gh_property(_clean(title))}" if title else ""
        try:
            self.stream.write(f"::{kind}{props}::{gh_data(_clean(message))}\n")
            self.stream.flush()
        except (BrokenPipeError, ValueError):
            pass

    def emit(self, ev: dict[str, Any]) -> None:
        kind = ev.get("event")
        if kind == "warning":
            where = f" ({ev['target']})" if ev.get("target") else ""
            msg = str(ev.get("message", ""))
            self.warnings.append(msg + where)
            self._command("warning", msg, f"coldwatch{where}")
        elif kind == "check":
            self.checks.append(ev)
        elif kind == "result":
            self._result(ev)

    def _result(self, ev: dict[str, Any]) -> None:
        targets = ev.get("targets") or []
        if ev.get("outcome") != "ready":
            bad = [t for t in targets if t.get("outcome") != "ready"] or [ev]
            for t in bad:
                name = f" {t['target']}:" if t.get("target") else ""
                self._command("error", str(t.get("reason") or ""), f"coldwatch:{name} {_headline(t)}")
        elif targets:
            for t in targets:
                if t.get("outcome") != "ready":
                    self._command("warning", str(t.get("reason") or ""), f"coldwatch: {t.get('target')}: {_headline(t)}")
        if self.summary is not None:
            self._write_summary(ev)

    def _write_summary(self, ev: dict[str, Any]) -> None:
        ok = ev.get("outcome") == "ready"
        after = f" after {_dur(ev['t'])}" if isinstance(ev.get("t"), (int, float)) else ""
        lines = [
            f"### coldwatch: {_md(self.title)}",
            "",
            f"{'✅' if ok else '❌'} **{_md(_headline(ev))} (exit {ev.get('exit_code')})**{after}",
            "",
        ]
        if not ok and ev.get("reason"):
            lines += [f"Cause: {_md(ev['reason'])}", ""]
        rows = [(p, d) for p, d in durations(ev.get("phases"), ev.get("t")) if p != "ready"]
        if rows:
            last = rows[-1][0]
            lines += ["| phase | duration |", "|---|---:|"]
            for p, d in rows:
                mark = f" ({ev.get('outcome')} here)" if p == last and not ok and p == ev.get("phase") else ""
                lines.append(f"| {_phase(p)} | {_dur(d)}{mark} |")
            lines.append("")
        targets = ev.get("targets") or []
        if targets:
            lines += ["| target | outcome | exit | phase | reason |", "|---|---|---:|---|---|"]
            for t in targets:
                lines.append(
                    f"| {_md(t.get('target'))} | {_md(t.get('outcome'))} | {t.get('exit_code')} | {_phase(t.get('phase') or '')} "
                    f"| {_md(t.get('reason') or '')} |"
                )
            lines.append("")
        for c in self.checks:
            lines.append(f"- check {_md(c.get('name'))}: {'passed' if c.get('passed') else 'FAILED'}: {_md(c.get('detail', ''))}")
        for w in self.warnings:
            lines.append(f"- ⚠ {_md(w)}")
        assert self.summary is not None
        try:
            with open(self.summary, "a", encoding="utf-8") as f:
                f.write("\n".join(lines).rstrip("\n") + "\n\n")
        except OSError as exc:
            self._command("warning", f"step summary not written: {exc.strerror or exc}", "coldwatch")

    def close(self) -> None:
        pass


def _phase(name: Any) -> str:
    """A phase name as code when it is one of ours (a word), else inert text."""
    text = str(name)
    return f"`{text}`" if text.isidentifier() else _md(text)


def _headline(ev: dict[str, Any]) -> str:
    """``FAILED [oom] in graph_capture``: the verdict without its reason."""
    if ev.get("outcome") == "ready":
        return "READY"
    kind = f" [{ev['failure_kind']}]" if ev.get("failure_kind") else ""
    phase = f" in {ev['phase']}" if ev.get("phase") else ""
    return f"{str(ev.get('outcome', '')).upper()}{kind}{phase}"


# ---- JUnit XML --------------------------------------------------------------------------------


def _xml(text: Any) -> str:
    """Text XML 1.0 can carry, inert: secrets redacted; controls but tab, LF, CR, bidi and
    invisible characters, lone surrogates, U+FFFE and U+FFFF as visible escapes."""
    return inert(text)


class JunitSink:
    """JUnit XML for GitLab, Jenkins and Buildkite: one test case per target; ``failure`` when the
    server did not come up, ``error`` when coldwatch could not judge it; phase durations as
    properties. Written atomically when the result arrives."""

    def __init__(self, path: Path, title: str) -> None:
        self.path = path
        self.title = title
        self.warnings: list[dict[str, Any]] = []
        self.phase_starts: dict[str, list[tuple[str, float]]] = {}
        self.written = False

    def emit(self, ev: dict[str, Any]) -> None:
        kind = ev.get("event")
        if kind == "warning":
            self.warnings.append(ev)
        elif kind == "phase" and isinstance(ev.get("t"), (int, float)) and ev.get("target"):
            seq = self.phase_starts.setdefault(str(ev["target"]), [])
            if not seq or seq[-1][0] != ev["phase"]:
                seq.append((str(ev["phase"]), float(ev["t"])))
        elif kind == "result":
            self.write(ev)

    def _phases_of(self, target: dict[str, Any], res: dict[str, Any], single: bool) -> list[dict[str, Any]]:
        if target.get("phases") is not None:
            return list(target["phases"])
        if single:
            return list(res.get("phases") or [])
        seq = self.phase_starts.get(str(target.get("target")), [])
        end = res.get("t")
        out = []
        for i, (ph, start) in enumerate(seq):
            out.append({"phase": ph, "start": start, "end": seq[i + 1][1] if i + 1 < len(seq) else end})
        return out

    def write(self, res: dict[str, Any]) -> None:
        if not ending.claim("junit") and ending.ending() is not None:
            return  # a signal's watchdog wrote it already
        targets = res.get("targets") or [{**res, "target": res.get("target") or self.title}]
        single = not res.get("targets")
        suite = ET.Element("testsuite", name="coldwatch", tests=str(len(targets)))
        failures = errors = 0
        for t in targets:
            name = str(t.get("target") or self.title)
            phases = self._phases_of(t, res, single)
            total = t.get("t", res.get("t")) if single else res.get("t")
            case = ET.SubElement(suite, "testcase", classname="coldwatch.wait", name=_xml(name))
            if isinstance(total, (int, float)):
                case.set("time", f"{float(total):.3f}")
            props = ET.SubElement(case, "properties")
            for key in ("outcome", "exit_code", "phase", "failure_kind"):
                if t.get(key) is not None:
                    ET.SubElement(props, "property", name=key, value=_xml(t[key]))
            for ph, secs in durations(phases, total):
                if secs is not None:
                    ET.SubElement(props, "property", name=f"phase.{_xml(ph)}.seconds", value=f"{secs:.3f}")
            outcome = str(t.get("outcome"))
            if outcome != "ready":
                tag = "error" if outcome in NOT_READY_AS_ERROR else "failure"
                failures += tag == "failure"
                errors += tag == "error"
                node = ET.SubElement(case, tag, message=_xml(verdict_line(t)), type=_xml(t.get("failure_kind") or outcome))
                node.text = _xml(t.get("reason") or "")
            mine = [w for w in self.warnings if single or w.get("target") == t.get("target")]
            if mine:
                out = ET.SubElement(case, "system-out")
                out.text = _xml("\n".join(f"warning: {w.get('message', '')}" for w in mine))
        suite.set("failures", str(failures))
        suite.set("errors", str(errors))
        if isinstance(res.get("t"), (int, float)):
            suite.set("time", f"{float(res['t']):.3f}")
        if res.get("ts"):
            suite.set("timestamp", _xml(res["ts"]))
        root = ET.Element("testsuites", name="coldwatch", tests=suite.get("tests", "0"), failures=str(failures), errors=str(errors))
        root.append(suite)
        ET.indent(root)
        try:
            self._atomic_write(ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n")
        except OSError as exc:
            with contextlib.suppress(BrokenPipeError, ValueError):
                sys.stderr.write(f"coldwatch: --junit {self.path}: not written: {exc.strerror or exc}\n")
            return
        self.written = True

    def _atomic_write(self, data: bytes) -> None:
        with contextlib.suppress(FileNotFoundError):
            if not stat.S_ISREG(os.lstat(self.path).st_mode):  # appeared since the start: left alone
                raise OSError(errno.EEXIST, "something that is not a regular file is there now")
        directory = self.path.parent if str(self.path.parent) else Path(".")
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=directory)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.chmod(tmp, 0o644)
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def close(self) -> None:
        pass


# ---- stderr verdict ---------------------------------------------------------------------------


class VerdictSink:
    """The plain verdict line on stderr, for ``--output json`` where stdout is the NDJSON: the CI
    log still says why."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr

    def emit(self, ev: dict[str, Any]) -> None:
        if ev.get("event") != "result":
            return
        lines = [f"coldwatch: {_printable(verdict_line(ev))}"]
        for t in ev.get("targets") or []:
            lines.append(f"coldwatch: {_printable(t.get('target'))}: {_printable(verdict_line(t))}")
        try:
            self.stream.write("\n".join(lines) + "\n")
            self.stream.flush()
        except (BrokenPipeError, ValueError):
            pass

    def close(self) -> None:
        pass
