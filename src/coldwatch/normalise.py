"""Turn raw start-up log bytes into clean, timestamped, rank-tagged lines.

Pure: no clock, no I/O beyond the iterables it is given. Memory stays bounded whatever the
input: a record is cut at MAX_RECORD bytes and the rest of it, up to the next separator, is
skipped.
"""

from __future__ import annotations

import datetime as _dt
import functools
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

MAX_RECORD = 64 * 1024
"""Longest record kept, in bytes; longer records are cut (the tail is dropped, marked)."""

_MONTHS = {m: i for i, m in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1)}
# journald prints the month in the host's locale (LC_TIME): the common non-English abbreviations
for _i, _names in enumerate(
    (
        ("янв", "jan.", "janv.", "Jän", "ene", "gen"),
        ("фев", "feb.", "févr.", "fév", "Feb"),
        ("мар", "mars", "Mär", "mrt", "März"),
        ("апр", "avr.", "abr", "apr."),
        ("май", "mai", "Mai", "mei", "mag"),
        ("июн", "juin", "jun."),
        ("июл", "juil.", "jul."),
        ("авг", "août", "ago", "aug."),
        ("сен", "sept.", "set", "sep."),
        ("окт", "oct.", "Okt", "okt."),
        ("ноя", "nov.", "Nov."),
        ("дек", "déc.", "Dez", "dic", "dec."),
    ),
    1,
):
    for _n in _names:
        _MONTHS.setdefault(_n, _i)


@dataclass(frozen=True, slots=True)
class LogLine:
    """One log record after unwrapping: the message text, its time and its rank tag."""

    text: str
    """Message body without wrappers, timestamps or ANSI codes."""
    t: float | None
    """Seconds on the log's own clock (see LogClock), or None when the line carries no stamp."""
    rank: str
    """Rank tag such as 'TP3', 'DP0 TP0' or 'worker3'; '' for untagged lines."""
    raw: str
    """The record as decoded, before unwrapping (for evidence and causal lines)."""
    stamp_style: str = ""
    """Which timestamp form the line carried: 'sglang', 'vllm', 'journal', 'iso', 'pylog', ''."""
    stamped_back: bool = False
    """Its own stamp is at least STAMP_BACK seconds before lines already read: text out of time order
    (a report that pastes its sections in another order), not a new event."""


# --- splitting -------------------------------------------------------------------------------


def split_records(chunks: Iterable[bytes], max_record: int = MAX_RECORD, tail: list[bytes] | None = None) -> Iterator[bytes]:
    """Split a byte stream into records on ``\\n`` and ``\\r``, in bounded memory.

    Empty records are dropped. A record longer than ``max_record`` is cut to its first
    ``max_record`` bytes; the remainder up to the next separator is skipped. The stream's last
    record, unterminated, is yielded too, or with ``tail`` given appended to it instead (a follower
    cut by a dropped connection may have stopped inside it).
    """
    carry = b""
    skipping = False
    for chunk in chunks:
        if not chunk:
            continue
        parts = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
        # parts[0] continues the carried record; parts[-1] is an unfinished record
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            if i == 0:
                if skipping:
                    if last:
                        continue
                    skipping = False
                    continue
                part = carry + part if carry else part
                carry = b""
            if last:
                if len(part) > max_record:
                    yield part[:max_record]
                    skipping = True
                else:
                    carry = part
                break
            if part:
                yield part[:max_record]
    if carry and not skipping:
        if tail is None:
            yield carry
        else:
            tail.append(carry)


_BAR_CLOCK = re.compile(rb"\d\d:\d\d:\d\d")
_NOT_BAR_MARKS = bytes(b for b in range(256) if b not in b"%[]\r")
"""Every byte but those a redraw run is checked by: each redraw holds one '%', then one '[', then one ']'."""


def _plain_bar_run(piece: bytes, lo: int, hi: int, i: int, j: int) -> bytes | None:
    """``piece[lo:hi]`` is consecutive redraws of one tqdm bar and nothing else (every CR-separated
    segment one update ending in its rate, '... 12/64 [00:03<00:09, 4.1it/s]', the same description
    first and last, nothing glued in: one '%', '[' and ']' each, so no timestamp of its own; ``i``/``j``
    are its first and last CR): the bar's key (its description), else None."""
    if not (piece.endswith((b"it/s]", b"s/it]"), lo, i) and piece.endswith((b"it/s]", b"s/it]"), j + 1, hi)):
        return None
    a, b = piece.find(b"%", lo, i), piece.find(b"%", j + 1, hi)
    if a < lo + 1 or b < j + 2:
        return None
    key = piece[lo : a - 3].split(b" (", 1)[0]
    if key != piece[j + 1 : b - 3].split(b" (", 1)[0]:
        return None
    marks = piece[lo:hi].translate(None, _NOT_BAR_MARKS)  # one pass: the '%', '[', ']' and CRs, in order
    cr = marks.count(b"\r")
    if marks != b"%[]\r" * cr + b"%[]" or piece.count(b"]\r", lo, hi) != cr:
        return None
    if _BAR_CLOCK.search(piece, lo, a) is not None:
        return None
    return key


def _coalesce_redraws(piece: bytes, seen: set[bytes], max_record: int) -> Iterator[bytes]:
    """The records of one newline-free piece that holds CRs: a run of one bar's redraws coalesced
    (its first update if the bar is new to ``seen``, its first at 100 %, its last), else every
    CR-separated segment."""
    lo, hi = 0, len(piece)
    while lo < hi and piece[lo] == 13:
        lo += 1
    while hi > lo and piece[hi - 1] == 13:
        hi -= 1
    i, j = piece.find(b"\r", lo, hi), piece.rfind(b"\r", lo, hi)
    key = _plain_bar_run(piece, lo, hi, i, j) if lo < i < j else None
    if key is None:
        for seg in piece.split(b"\r"):
            if seg:
                yield seg[:max_record]
        return
    new = key not in seen
    if new:
        if len(seen) < 4096:
            seen.add(key)
        yield piece[lo:i][:max_record]
    k = piece.find(b" 100%", lo, j)
    if 0 <= k < j and not (new and k < i):  # its completion may open the next phase
        yield piece[piece.rfind(b"\r", lo, k) + 1 : piece.find(b"\r", k, hi)][:max_record]
    yield piece[j + 1 : hi][:max_record]


def split_coalesced(chunks: Iterable[bytes], max_record: int = MAX_RECORD) -> Iterator[bytes]:
    """``split_records`` for a saved log read in big chunks: the redraws of one progress bar that a
    chunk holds in a row are coalesced to the updates that can change the verdict or the timeline:
    the first of a bar never seen before (it may open its phase, its text is the span's evidence),
    the first at 100 % (its completion may open the next phase) and the last (the final count).
    Every other record is kept, in order, cut at ``max_record`` like split_records does."""
    carry = b""
    skipping = False
    seen: set[bytes] = set()
    for chunk in chunks:
        if not chunk:
            continue
        data = carry + chunk if carry else chunk
        end = max(data.rfind(b"\n"), data.rfind(b"\r"))
        if end < 0:
            if skipping:
                carry = b""
            elif len(data) > max_record:
                yield data[:max_record]
                skipping, carry = True, b""
            else:
                carry = data
            continue
        complete, carry = data[:end], data[end + 1 :]
        for piece in complete.split(b"\n"):
            if skipping:
                # the rest of a cut record runs to the next separator
                k = piece.find(b"\r")
                if k < 0:
                    skipping = False
                    continue
                piece = piece[k + 1 :]
                skipping = False
            if b"\r" not in piece:
                if piece:
                    yield piece[:max_record]
                continue
            yield from _coalesce_redraws(piece, seen, max_record)
        if len(carry) > max_record:
            yield carry[:max_record]
            skipping, carry = True, b""
    if carry and not skipping:
        yield carry


# --- unwrapping ------------------------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|(?<![\w\]])\[[0-9;]{1,12}m|#033\[[0-9;]{0,12}m")
"""ANSI colour codes: raw, with the ESC lost (`[1;36m`), or as CloudWatch's export writes ESC (`#033[1;36m`)."""
_LEVELS = ("INFO ", "WARNING ", "ERROR ", "DEBUG ", "CRITICAL ")
_CTRL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

# outer wrappers: one of each kind per pass, in this order; ``_outer`` makes up to three passes
# RFC 3339 first on the line: GitHub Actions logs, `docker logs --timestamps` (UTC, "Z") and
# `podman logs --timestamps` (an offset); a stamp alone on its line is a CR-split bar's first record
_GHA = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.\d+)?(Z|[+-]\d\d:\d\d)(?: |$)")
_TRACING = re.compile(r" ?(?:TRACE|DEBUG|INFO|WARN|WARNING|ERROR|CRITICAL) +[A-Za-z_][\w.]*: ")
"""After an RFC 3339 time, a tracing-style level and target ('2025-11-05T01:56:54.28Z  INFO
model_runner.init_device_graphs: Capture cuda graph end.', NVIDIA Dynamo re-logging SGLang's lines)."""
_JOURNAL_ISO = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)? \S+ [^\s:\[]+(?:\[\d+\])?:(?: |$)")
_JOURNAL_SHORT = re.compile(r"^([^\W\d_]{3,5}\.?) ([ \d]\d) (\d\d:\d\d:\d\d) [^\s:]+ (?:[^\s:\[]+\[\d+\]|kernel):(?: |$)")
"""journald's short format in any locale: 'May 30 20:27:13 host unit[pid]: ', 'авг 18 14:15:04 host python3[27876]: '.
The pid is required (but for the kernel's lines), so that ``ts``'s time before an engine's 'ValueError: x: y'
is not read as a host and a unit."""
_TS = re.compile(r"^([^\W\d_]{3,5}\.?) ([ \d]\d) (\d\d:\d\d:\d\d)(?:\.\d+)?(?: |$)")
"""moreutils' ``ts`` before each line, its default format ('Dec 02 08:00:05 '): journald's short time
without host and unit; exactly one space is its own, so a traceback frame keeps its indent."""
_CSV = re.compile(r"^\d{10,13},")
_RUNPOD = re.compile(r"^[a-z0-9]{8,24}\[(?:info|warning|error|debug|critical)\]")
"""A serverless console's worker id and level before each line ('j6zswihe185nfq[info]...', RunPod)."""
_FILE_FIRST = re.compile(r"^[\w.-]+\.py +:\d+ +(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)[.,]\d{3} ")
"""A worker's own logger with the file first ('engine.py           :116  2025-03-24 18:13:28,839 ...')."""
_CLOUD = re.compile(r"^(?:DEFAULT|DEBUG|INFO|NOTICE|WARNING|ERROR|CRITICAL) (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.\d+)?Z ")
"""Google Cloud Logging's export: severity and an RFC 3339 time before each line ('ERROR 2025-04-05T00:01:19.2Z ')."""
"""CloudWatch Logs exported as CSV (SageMaker): '<epoch ms>,<message>', quoted when the message holds a comma."""
_SRUN = re.compile(r"^\d{1,4}: ")
"""Slurm's task label before each line ('srun --label': '0: [rank0]:[W305 ...] ...'); its one space only,
so a frame keeps its indent ('0:   File "..."')."""
_COMPOSE = re.compile(r"^[\w.-]+\s+\| ")
_KUBECTL = re.compile(r"^\[pod/[\w.-]+/[\w.-]+\] ")
"""``kubectl logs --prefix`` (and ``oc logs --prefix``): '[pod/vllm-6f7d8c-x2k9q/vllm] ' before each line."""


def service_of(raw: str) -> str:
    """The container a line's wrapper names: compose's service column (the innermost), else ``kubectl logs --prefix``'s pod
    and container; under the wrappers outside them too (Slurm's task label, a collector's time: journald's,
    kubectl's, ``ts``'s); '' when it names none."""
    text, pod, name = raw, "", ""
    for _ in range(3):
        before = text
        if text[:1].isdigit() and (m := _SRUN.match(text)) is not None:
            text = text[m.end() :]
        if text[:1].isalnum():
            text, _ = _collector(text)
        if text.startswith("[pod/") and (m := _KUBECTL.match(text)) is not None:
            pod, text = pod or m.group(0), text[m.end() :]
        if " | " in text[:64] and not text.startswith(("INFO", "WARNING", "ERROR", "DEBUG")):
            m = _COMPOSE.match(text)
            if m:
                name, text = m.group(0).split()[0], text[m.end() :]
        if text == before:
            break
    return name or pod


_PROC = re.compile(r"^\(([A-Za-z_][\w-]*)(?: rank=(\d+))?(?: pid=\d+)(?:, ip=[^)]*)?\) ")
_RAY_SUFFIX = re.compile(r" ?\[repeated \d+x across cluster\]$")
_TORCH_RANK = re.compile(r"^\[rank(\d+)\]:")
# engine stamps
_SGLANG = re.compile(
    r"^\[(?:(\d{4}-\d\d-\d\d) )?(\d\d:\d\d:\d\d)(?:\.\d+)?(?: DisaggregationMode\.\w+)?((?: (?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d+)*)\] "
    r"(?:(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) [\w./-]+:\d+: )?"
)
_VLLM = re.compile(r"^(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) (\d\d)-(\d\d) (\d\d:\d\d:\d\d)(?:\.\d+)? (?:\[[^\]]*\] |[\w./-]+:\d+\] )")
_PYLOG = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),\d{3} - [\w.]+ - (?:(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) - )?")
_PIPELOG = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?:[.,]\d+)? \| (?:TRACE|DEBUG|INFO|SUCCESS|WARNING|ERROR|CRITICAL) *\| [^|]{1,80}? \| "
)
"""A host program's loguru-style columns ('2025-07-02 16:41:30 | ERROR | stderr | ...', Transformer Lab
re-logging the server's output): its stamp, then the engine's own line."""
_BARE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?:[.,]\d{1,9})?(?:Z| UTC)?[ \t]+(?=[^\s|-])")
"""A console's or log store's own time alone before each line, the date and time apart ('2025-03-11
09:50:47.549<TAB>Loading safetensors ...': a web console's export, a log viewer's copy): its stamp,
then the engine's line (Python logging's ' - name - ' and loguru's ' | ' columns are their own)."""
_SGLANG_MD = re.compile(r"^\[(\d\d)-(\d\d) (\d\d:\d\d:\d\d)(?:\.\d+)?\] ")
"""SGLang's diffusion runtime (multimodal_gen's logger): month and day, no year ('[12-16 14:27:08] Rank 0
scheduler is dead. ...')."""
_GPU_ID = re.compile(r"^\[gpu_id=(\d+)\] ")
_RANK_TAG = re.compile(r"^\[((?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d+(?: (?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d+)*)\] ")
"""SGLang's rank tag without its time ('[TP1] Capture target verify CUDA graph end.': a note's copy, a
log viewer that drops the stamp)."""
_RANK_HEADS = frozenset(("DP", "PP", "AT", "MO", "TP", "EP"))
"""SGLang before v0.3: a rank tag and no timestamp ('[gpu_id=0] Load weight end.')."""
_EMBEDDED = re.compile(
    r"\((?:[A-Za-z_][\w-]*)(?: rank=\d+)? pid=\d+(?:, ip=[^)]*)?\) "
    r"|\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?(?: (?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d+)*\] "
    r"|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? (?:\[[^\]]*\] |[\w./-]+:\d+\] )"
    r"|\[rank\d+\]:"
)
"""An engine's own prefix behind a wrapper no rule knows (a host program re-logging each line, a pod
name, a second timestamp): found anywhere near the start of the line, everything before it is dropped."""
_EMBED_SPAN = 200
_GLUED = re.compile(r"(?<=\S)(?=\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[^\]]*\] |\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} - )")
_FLAT = re.compile(
    r"(?:\([\w.-]+(?: pid=\d+)?\) )?(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[[\w.-]+:\d+\] "
)
"""The start of a vLLM record inside a line: several records flattened onto one line (a paste whose
newlines a web page turned into spaces) are read one each."""
_FLAT_MIN = 300
_WORKER_RANK = re.compile(r"(?:_|^)(?:TP|rank)(\d+)", re.IGNORECASE)


def _secs(date: str | None, hms: str) -> tuple[int | None, int]:
    """'YYYY-MM-DD' (or None) and 'HH:MM:SS' to (day ordinal or None, seconds of day)."""
    h, m, s = int(hms[0:2]), int(hms[3:5]), int(hms[6:8])
    return (_day(date) if date else None), h * 3600 + m * 60 + s


@functools.lru_cache(maxsize=64)
def _day(date: str) -> int | None:
    """'YYYY-MM-DD' to its day ordinal (None if it is no date); a log's lines share a few dates."""
    try:
        return _dt.date(int(date[0:4]), int(date[5:7]), int(date[8:10])).toordinal()
    except ValueError:
        return None


def _md(month: int, dom: int) -> int | None:
    try:
        return _dt.date(2000, month, dom).toordinal()  # 2000: leap year, so 02-29 parses
    except ValueError:
        return None


@dataclass(slots=True)
class _Stamp:
    style: str
    day: int | None
    sod: int


def _collector(text: str) -> tuple[str, _Stamp | None]:
    """The outermost wrapper a log collector adds (GitHub Actions, docker/podman, journald,
    Cloud Logging, CloudWatch CSV): the text without it, and its stamp."""
    c0 = text[:1]
    if c0.isdigit() and text[4:5] == "-" and text[10:11] == "T":
        m = _GHA.match(text)
        if m:
            d, s = _secs(m.group(1)[:10], m.group(1)[11:19])
            if m.group(2) != "Z" and d is not None:  # to UTC, so a zone change never moves the clock
                off = m.group(2)
                total = d * 86400 + s - (1 if off[0] == "+" else -1) * (int(off[1:3]) * 3600 + int(off[4:6]) * 60)
                d, s = divmod(total, 86400)
            rest = text[m.end() :]
            if rest[:1] in " TDIWEC" and (tr := _TRACING.match(rest)) is not None:
                rest = rest[tr.end() :]
            return rest, _Stamp("iso", d, s)
        m = _JOURNAL_ISO.match(text)
        if m:
            d, s = _secs(m.group(1)[:10], m.group(1)[11:19])
            return text[m.end() :], _Stamp("journal", d, s)
    elif c0.isupper() and "Z " in text[24:48] and (m := _CLOUD.match(text)) is not None:
        d, s = _secs(m.group(1)[:10], m.group(1)[11:19])
        return text[m.end() :], _Stamp("iso", d, s)
    elif c0.isalpha() and " " in text[3:7]:
        m = _JOURNAL_SHORT.match(text) or _TS.match(text)
        if m:
            month = _MONTHS.get(m.group(1))
            return text[m.end() :], _Stamp("journal", _md(month, int(m.group(2))) if month else None, _secs(None, m.group(3))[1])
    elif c0.isdigit() and "," in text[10:14]:
        m = _CSV.match(text)
        if m:
            text = text[m.end() :]
            if len(text) > 1 and text[0] == '"' and text[-1] == '"':
                text = text[1:-1].replace('""', '"')
    if "[" in text[8:25] and (m := _RUNPOD.match(text)) is not None:
        text = text[m.end() :]
        if ".py " in text[:40] and (m := _FILE_FIRST.match(text)) is not None:
            d, s = _secs(m.group(1)[:10], m.group(1)[11:19])
            return text[m.end() :], _Stamp("pylog", d, s)
    return text, None


def _process(text: str) -> tuple[str, str]:
    """The wrappers a process manager adds (compose's service column, Ray's and vLLM's process
    tag, Ray's repeat suffix, torchrun's rank): the text without them, and the rank they name."""
    rank = ""
    if text.startswith("[pod/") and (m := _KUBECTL.match(text)) is not None:
        text = text[m.end() :]
    if " | " in text[:64]:
        m = _COMPOSE.match(text)
        if m and not text.startswith(("INFO", "WARNING", "ERROR", "DEBUG")):
            text = text[m.end() :]
    if text[:1] == "(":
        m = _PROC.match(text)
        if m:
            if m.group(2) is not None:
                rank = "worker" + m.group(2)
            else:
                w = _WORKER_RANK.search(m.group(1))
                if w and m.group(1) != "APIServer":
                    rank = "worker" + w.group(1)
            text = text[m.end() :]
    if text.endswith("cluster]"):
        text = _RAY_SUFFIX.sub("", text)
    if text.startswith("[rank"):
        m = _TORCH_RANK.match(text)
        if m:
            rank = rank or "rank" + m.group(1)
            text = text[m.end() :]
    return text, rank


def _bracketed(text: str) -> tuple[str, str, _Stamp | None]:
    """A bracketed engine prefix (SGLang's time and ranks, its diffusion runtime's month and day, its old
    gpu_id tag, a bare rank tag): the text without it, the rank it names and its stamp."""
    m = _SGLANG.match(text)
    if m:
        d, sod = _secs(m.group(1), m.group(2))
        return text[m.end() :], m.group(3).strip() if m.group(3) else "", _Stamp("sglang", d, sod)
    if text[3:4] == "-" and (m := _SGLANG_MD.match(text)) is not None:
        return text[m.end() :], "", _Stamp("sglang", _md(int(m.group(1)), int(m.group(2))), _secs(None, m.group(3))[1])
    if text.startswith("[gpu_id=") and (m := _GPU_ID.match(text)) is not None:
        return text[m.end() :], "gpu" + m.group(1), None
    if text[1:3] in _RANK_HEADS and (m := _RANK_TAG.match(text)) is not None:
        return text[m.end() :], m.group(1), None
    return text, "", None


def _outer(record: str) -> tuple[str, str, _Stamp | None]:
    """The wrappers outside the engine's own prefix: Slurm's task label, a collector's (``_collector``),
    a process manager's (``_process``), in that order; again while a pass removed one, as a log can pass
    through several (compose's column over journald's, kubectl's time over a file's ``ts`` stamps), up
    to three layers. The outermost stamp is the collector's time; the rank is the innermost named."""
    text, rank, outer = record, "", None
    for _ in range(3):
        before = text
        if text[:1].isdigit() and ": " in text[1:6] and (m := _SRUN.match(text)) is not None:
            text = text[m.end() :]
        if text[:1].isalnum():  # a record that opens with '[' or '(' carries no collector's wrapper
            text, stamp = _collector(text)
            outer = outer or stamp
        # where a process manager's wrapper can be: its first or last characters
        if text[:1] == "(" or " | " in text[:64] or text.startswith(("[rank", "[pod/")) or text.endswith("cluster]"):
            text, r = _process(text)
            rank = r or rank
        if text == before:
            break
    return text, rank, outer


def unwrap(record: str, depth: int = 0) -> tuple[str, str, _Stamp | None, str]:
    """Strip wrappers and prefixes. Returns (text, rank, stamp, style).

    Outside in: a collector's wrapper (``_collector``), a process manager's (``_process``), the
    engine's own prefix (SGLang's, vLLM's, Python logging's, SGLang's old gpu_id tag). An engine
    prefix behind an unknown wrapper is found by a second pass (``depth`` 1).

    Each regex runs only when the first characters allow it to match (this is the hot path).
    """
    if record[:1] == "[" and not record.startswith(("[rank", "[pod/")) and " | " not in record[:64] and not record.endswith("cluster]"):
        text, rank, outer = record, "", None  # the engine's own bracket first (SGLang's stamp): no wrapper outside it
    else:
        text, rank, outer = _outer(record)
    inner: _Stamp | None = None  # the engine's own prefix, the common case: inline
    style = ""
    c0 = text[:1]
    if c0 == "[":
        text, tag, inner = _bracketed(text)
        rank = tag or rank
        style = "sglang" if inner is not None else ""
    elif c0 in "DIWEC" and text[:1].isupper():
        m = _VLLM.match(text)
        if m:
            inner, style = _Stamp("vllm", _md(int(m.group(1)), int(m.group(2))), _secs(None, m.group(3))[1]), "vllm"
            text = text[m.end() :]
    elif c0.isdigit() and text[4:5] == "-":
        m = _PYLOG.match(text) or (_PIPELOG.match(text) if " | " in text[19:32] else None)
        if m:
            d, sod = _secs(m.group(1)[:10], m.group(1)[11:19])
            inner, style = _Stamp("pylog", d, sod), "pylog"
            text = text[m.end() :]
        elif text[10:11] == " " and (m := _BARE.match(text)) is not None:
            d, sod = _secs(m.group(1)[:10], m.group(1)[11:19])
            inner, style = _Stamp("bare", d, sod), "bare"
            text = text[m.end() :]
    if depth == 0 and (inner is None or style in ("pylog", "bare")):
        head = text[:_EMBED_SPAN]
        if "pid=" in head or "[20" in head or "[rank" in head or "INFO " in head or "ERROR " in head or "WARNING " in head:
            m = _EMBEDDED.search(head, 0 if inner is not None else 1)
            if m:
                text, rank2, inner2, style2 = unwrap(text[m.start() :], 1)
                rank = rank2 or rank
                if inner is None:
                    inner, style = inner2, style2
    stamp = outer or inner
    return text, rank, stamp, style or (outer.style if outer else "")


_EPOCH_DAY = _dt.date(1970, 1, 1).toordinal()
_FAKE_YEAR_DAYS = (_dt.date(2000, 1, 1).toordinal(), _dt.date(2001, 1, 1).toordinal())


class LogClock:
    """Maps stamps of several styles onto one non-decreasing clock, in seconds.

    The first style seen defines the clock; another style is aligned to it at first sight
    (logs mix a container's UTC stamps with a host's local time). Stamps without a date take
    the last known day and roll over at midnight.
    """

    def __init__(self) -> None:
        self.origin: float | None = None
        self.now: float | None = None
        self.behind = 0.0
        """How far the last stamp placed was before the clock (0 when it moved it on)."""
        self._offset: dict[str, float] = {}
        self._day: dict[str, int] = {}
        self._last_sod: dict[str, int] = {}
        self.origin_epoch: float | None = None
        """Unix time of t=0 when the first stamp carried a real date (else None)."""

    def place(self, stamp: _Stamp) -> float:
        style = stamp.style
        if stamp.day is not None:
            day = stamp.day
            self._day[style] = day
        else:
            day = self._day.get(style, 0)
            last = self._last_sod.get(style)
            if last is not None and stamp.sod < last - 12 * 3600:
                day += 1
            self._day[style] = day
        self._last_sod[style] = stamp.sod
        absolute = day * 86400.0 + stamp.sod
        if self.origin is None:
            self.origin = absolute
            if stamp.day is not None and not (_FAKE_YEAR_DAYS[0] <= stamp.day < _FAKE_YEAR_DAYS[1]):
                self.origin_epoch = (stamp.day - _EPOCH_DAY) * 86400.0 + stamp.sod
            self._offset[style] = 0.0
            self.now = 0.0
            self.behind = 0.0
            return 0.0
        if style not in self._offset:
            self._offset[style] = (self.now or 0.0) - (absolute - self.origin)
        t = absolute - self.origin + self._offset[style]
        if self.now is None or t > self.now:
            self.now = t
        self.behind = self.now - t
        return self.now


STAMP_BACK = 5.0
"""Seconds a line's stamp must be behind the log's clock to be out of time order (ranks and processes
interleave their writes by a second or two)."""
BAR_STEP = 10
"""A progress-bar update is kept when it moved at least this many percentage points (or hit 0/100)."""


class Normaliser:
    """Record bytes -> LogLine, keeping the clock across records.

    Consecutive updates of one progress bar that moved less than BAR_STEP points are dropped:
    a bar redrawn 1,000 times carries no more evidence than every fifth percent of it.
    """

    def __init__(self) -> None:
        self.clock = LogClock()
        self._bar_key = ""
        self._bar_pct = -100

    def _skip_bar(self, raw: str) -> bool:
        tail = raw[-12:]
        if not (raw.endswith("]") and ("it/s]" in tail or "s/it]" in tail)):
            self._bar_key = ""
            return False
        i = raw.find("%")
        if i < 1 or "][" in raw or "]2" in raw:
            self._bar_key = ""
            return False
        head = raw[max(0, i - 3) : i].strip()
        if not (head.isascii() and head.isdigit()):
            return False
        pct = int(head)
        key = raw[: max(0, i - 3)]
        key = key.split(" (", 1)[0]
        if key == self._bar_key and 0 < pct < 100 and 0 <= pct - self._bar_pct < BAR_STEP:
            return True
        self._bar_key, self._bar_pct = key, pct
        return False

    def lines(self, record: bytes) -> list[LogLine]:
        raw = record.decode("utf-8", "replace")
        if "%" in raw and self._skip_bar(raw):
            return []
        if "\x1b" in raw or "[0m" in raw or "[1;" in raw or "[3" in raw:
            raw = _ANSI.sub("", raw)
        if not raw.isprintable():
            raw = _CTRL.sub("", raw).replace("\t", " ")
        raw = raw.rstrip()
        while raw[:1] == ">" and raw[1:2] in ("", " ", ">"):
            # a markdown quote's marker (a log pasted into an issue as a reply, a reply quoting one): not the log's
            raw = raw[1:] if raw[1:2] == ">" else raw[2:]
        if raw[:2] == "**" and raw[-2:] == "**" and len(raw) > 4:
            raw = raw[2:-2]  # a line a reporter set in bold ('**KeyError: ...**')
        if "](http" in raw:
            raw = _LINK.sub(r"\1", raw)  # a renderer's links ('0[/6](https://host/6)', an address a viewer linked)
        if raw[:1] == " ":
            # a paste indented in a table, a list or a quote: the indent of a line that opens with a
            # stamp, a bracketed prefix, a process tag or a level word is not the log's (a frame's is)
            lead = raw.lstrip()
            if lead[:1] in "[(" or lead[:1].isdigit() or lead.startswith(_LEVELS):
                raw = lead
        if not raw:
            return []
        pieces = _GLUED.split(raw) if ("it/s][" in raw or "s/it][" in raw or "it/s]2" in raw or "s/it]2" in raw) else [raw]
        if len(raw) > _FLAT_MIN and raw.count("] ", 40) > 1:
            pieces = [p for piece in pieces for p in _flat(piece)]
        out: list[LogLine] = []
        for piece in pieces:
            text, rank, stamp, style = unwrap(piece)
            t = self.clock.place(stamp) if stamp is not None else self.clock.now
            if not text and style == "iso":
                continue  # a stamp with nothing after it (before a CR-split bar): it moves the clock only
            back = stamp is not None and self.clock.behind >= STAMP_BACK
            out.append(LogLine(text.strip(), t, rank, piece, style, back))
        return out


_LINK = re.compile(r"\[([^\[\]\n]{0,200})\]\(https?://[^)\s]*\)")
"""A markdown link a page or notebook rendered into a pasted log ('[/6](https://c1.modal.host/6)',
'[127.0.0.1:39726](http://127.0.0.1:39726/)'): the log's text is the link's."""


def _flat(raw: str) -> list[str]:
    """``raw`` cut before each vLLM record header after its first character (see _FLAT)."""
    cuts = [m.start() for m in _FLAT.finditer(raw) if m.start() > 0]
    if not cuts:
        return [raw]
    return [raw[a:b].rstrip() for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]


def normalise(chunks: Iterable[bytes]) -> Iterator[LogLine]:
    """Raw byte chunks -> clean LogLines (splitting, unwrapping and clock in one pass)."""
    n = Normaliser()
    for rec in split_records(chunks):
        yield from n.lines(rec)
