"""Text of remote origin made safe for a terminal: one function, used by every human sink.

Model ids, error bodies, process names, remote stderr, SSH banners and log lines come from a
machine that may be compromised or simply misbehaving. Before any of it reaches a terminal,
``clean`` turns it into one inert line:

- colour codes (``ESC [ … m``) are dropped: they are common in honest output and harmless gone;
- every other control character (C0, DEL, C1 including U+009B CSI), every bidirectional
  override or isolate, zero-width and invisible format characters, line and paragraph
  separators and lone surrogates is shown as a visible escape (``\\x1b``, ``\\x9b``,
  ``\\u202e``), so an OSC title change or a DCS string arrives as readable, inert text;
- the result is capped at ``limit`` characters (an ellipsis marks a cut).

The NDJSON stream does not use ``clean``: it keeps the raw text, JSON-escaped (``json_line``).
Rich markup is never interpreted on the remote text either: sinks wrap it in ``rich.text.Text``.
"""

from __future__ import annotations

import json
import re
from typing import Any

LIMIT = 300
"""Default cap, in characters, for one piece of remote text on a human sink."""

_SGR = re.compile(r"\x1b\[[0-9;:]*m")
# C0 (tab and newline included: a line stays one line), DEL, C1; bidi marks, embeddings,
# overrides and isolates; zero-width and invisible format characters; line and paragraph
# separators; BOM; interlinear annotation; lone surrogates; tag characters
_UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb\ud800-\udfff\U000e0000-\U000e007f]"
)
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": " "}


def _escape(m: re.Match[str]) -> str:
    c = m.group()
    named = _NAMED.get(c)
    if named is not None:
        return named
    n = ord(c)
    if n < 0x100:
        return f"\\x{n:02x}"
    if n < 0x10000:
        return f"\\u{n:04x}"
    return f"\\U{n:08x}"


# ---- secrets ------------------------------------------------------------------------------

REDACTED = "***"
_SECRETS: dict[str, tuple[str, ...]] = {}


def add_secret(value: str | None) -> None:
    """A secret given to coldwatch (the API key): from now on every sink shows it as ``***``,
    in every spelling it may take in a text (as is, repr-escaped, JSON-escaped)."""
    if not value or len(value) < 4 or value in _SECRETS:
        return
    forms = {value, repr(value)[1:-1], repr(value.encode("utf-8", "surrogatepass"))[2:-1], json.dumps(value)[1:-1]}
    _SECRETS[value] = tuple(sorted((f for f in forms if f), key=len, reverse=True))


def redact(text: str) -> str:
    """``text`` with every registered secret replaced by ``***`` (a server may echo the key)."""
    for forms in _SECRETS.values():
        for form in forms:
            if form in text:
                text = text.replace(form, REDACTED)
    return text


def redact_obj(obj: Any) -> Any:
    """A JSON-like value with every string in it redacted (keys included)."""
    if not _SECRETS:
        return obj
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, dict):
        return {redact_obj(k): redact_obj(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [redact_obj(v) for v in obj]
    return obj


def clean(text: object, limit: int | None = LIMIT) -> str:
    """Remote text -> one printable, inert line of at most ``limit`` characters (None: no cap)."""
    s = text if isinstance(text, str) else str(text)
    if _SECRETS:
        s = redact(s)
    if limit is not None and len(s) > 4 * limit + 16:
        s = s[: 4 * limit + 16]  # bound the work; escapes only lengthen the text
    if not (s.isascii() and s.isprintable()):
        s = _UNSAFE.sub(_escape, _SGR.sub("", s))
    if limit is not None and len(s) > limit:
        s = s[: max(limit - 1, 0)] + "…"
    return s


# what XML 1.0 cannot carry at all (U+FFFE, U+FFFF; C0 and surrogates are in _UNSAFE already)
_INERT = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff"
    "\ufff9-\ufffb\ufffe\uffff\ud800-\udfff\U000e0000-\U000e007f]"
)


def inert(text: object, newlines: bool = True) -> str:
    """Remote text for a CI sink (a workflow command, the step summary, JUnit XML): secrets
    redacted, colour codes dropped, every control, bidi, invisible or XML-invalid character a
    visible escape; tab, CR and LF kept (``newlines``) or made spaces. No length cap."""
    s = text if isinstance(text, str) else str(text)
    if _SECRETS:
        s = redact(s)
    if not (s.isascii() and s.isprintable()):
        s = _INERT.sub(_escape, _SGR.sub("", s))
    if not newlines:
        s = s.replace("\t", " ").replace("\r", " ").replace("\n", " ")
    return s


# characters that json.dumps(ensure_ascii=False) leaves raw but a terminal or a strict encoder
# must not see: DEL, C1, bidi and invisible format characters, separators, lone surrogates
_JSON_RAW = re.compile("[\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb\ud800-\udfff]")


def json_line(obj: Any) -> str:
    """One NDJSON line: the raw text kept, every control or invisible character \\u-escaped.

    json.dumps escapes C0 but not DEL, C1 (U+009B is a CSI on some terminals), bidi overrides
    or lone surrogates (which a UTF-8 stream refuses to encode); these become ``\\uXXXX`` too, so
    the line parses back to exactly the same text and is inert when tailed in a terminal.
    """
    text = json.dumps(redact_obj(obj), ensure_ascii=False)
    if text.isascii():
        return text
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
