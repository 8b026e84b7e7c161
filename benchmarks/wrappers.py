"""python -m benchmarks.wrappers [--corpus NAME] [--wrapper NAME] [--show N]: do coldwatch's verdicts
hold when a labelled log reaches it through a collector or a paste that the log was not recorded with?

Every labelled log of every corpus in ``benchmarks.verdicts`` is replayed as it is, then once per
wrapper below, each line (split on newlines only, as a collector splits: a bar's carriage-return
redraws stay one line) given the prefix or ending that wrapper writes. The figure per wrapper is the
share of logs whose verdict (outcome, last phase, failure kind) is unchanged, the baseline being the
same log's unwrapped verdict in the same run; a changed verdict is listed with what moved.

The wrappers are the ways operators' logs reach an issue thread or a CI step that the corpora hold
only a few of: docker compose's service column (plain and coloured), ``kubectl logs --timestamps``
and ``--prefix``, journald's short and ISO formats, moreutils' ``ts``, Slurm's ``srun --label``,
a Windows copy (CRLF), an e-mail or issue quote (``> ``) and a Markdown code block's indent. A log
that is itself a quoted reply keeps its quote marker outermost (a person quotes what a collector wrote).
Collector times follow the engine's own clock where a line carries one, so a wrapper never invents
a restart or a stall.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import io
import re
import sys
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from benchmarks.verdicts import CORPORA, judge_chunks, labels
from coldwatch.replay import read_chunks

_WHEN = re.compile(rb"(?<!\d)(?:(?:\d{4}-)?(\d\d)-(\d\d)[ T])?([01]\d|2[0-3]):([0-5]\d):([0-5]\d)(?!\d)")


def _clock(lines: list[bytes]) -> list[_dt.datetime]:
    """A collector's time for each line: the engine's own time where the line has one (a collector
    stamps a line as it is written, and a paste that reorders lines moves their stamps with them),
    its month and day too where the line names them, else the line before's; 2026-12-02 08:00:00
    before the first."""
    out, now = [], _dt.datetime(2026, 12, 2, 8, 0, 0)
    for ln in lines:
        m = _WHEN.search(ln[:80])
        if m:
            month, day = (int(m.group(1)), int(m.group(2))) if m.group(1) else (now.month, now.day)
            with contextlib.suppress(ValueError):  # not a date after all ('99-99 12:00:00')
                now = _dt.datetime(2026, month, day, int(m.group(3)), int(m.group(4)), int(m.group(5)))
        out.append(now)
    return out


Prefix = Callable[[int, _dt.datetime], bytes]
"""(line index, collector time) to the prefix."""

WRAPPERS: dict[str, Prefix | None] = {
    "compose": lambda i, t: b"vllm-1  | ",
    "compose-colour": lambda i, t: b"\x1b[36mvllm-1  |\x1b[0m ",
    "kubectl-timestamps": lambda i, t: f"{t:%Y-%m-%dT%H:%M:%S}.{i % 1000:03d}456789Z ".encode(),
    "kubectl-prefix": lambda i, t: b"[pod/vllm-6f7d8c-x2k9q/vllm] ",
    "journal-short": lambda i, t: f"{t:%b %d %H:%M:%S} gpu01 vllm[4242]: ".encode(),
    "journal-iso": lambda i, t: f"{t:%Y-%m-%dT%H:%M:%S}+0000 gpu01 vllm[4242]: ".encode(),
    "ts": lambda i, t: f"{t:%b %d %H:%M:%S} ".encode(),
    "srun-label": lambda i, t: b"0: ",
    "quote": lambda i, t: b"> ",
    "indent": lambda i, t: b"    ",
    "crlf": None,
}


def wrap(data: bytes, name: str) -> bytes:
    lines = data.split(b"\n")
    tail = lines.pop() if lines and lines[-1] == b"" else None
    pre = WRAPPERS[name]
    if pre is None:  # crlf
        out = [ln if ln.endswith(b"\r") else ln + b"\r" for ln in lines]
    else:
        clock = _clock(lines)
        out = []
        for i, (ln, t) in enumerate(zip(lines, clock, strict=True)):
            # a reply's quote marker is a person's, added after any collector: it stays outermost
            q = 2 if ln[:2] == b"> " else 1 if ln[:1] == b">" else 0
            out.append(ln[:q] + pre(i, t) + ln[q:])
    return b"\n".join(out) + (b"\n" if tail is not None else b"")


Verdict = tuple[str, str | None, str | None]


def verdict(data: bytes) -> Verdict:
    """(outcome, last phase, failure kind) of one log, read as ``benchmarks.verdicts`` reads a file."""
    got = judge_chunks(read_chunks(io.BytesIO(data)))
    return got["outcome"], got["phase"], got["kind"]


def _one(job: tuple[str, list[str]]) -> tuple[str, Verdict, dict[str, Verdict]]:
    path, names = job
    data = Path(path).read_bytes()
    base = verdict(data)
    return path, base, {n: verdict(wrap(data, n)) for n in names}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.wrappers")
    ap.add_argument("--corpus", choices=sorted(CORPORA), action="append", help="only these corpora")
    ap.add_argument("--wrapper", choices=sorted(WRAPPERS), action="append", help="only these wrappers")
    ap.add_argument("--show", type=int, default=5, help="changed verdicts listed per wrapper (default 5)")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args(argv)
    names = a.wrapper or list(WRAPPERS)
    jobs = []
    for c in a.corpus or list(CORPORA):
        for lab in labels(CORPORA[c]):
            jobs.append((str(CORPORA[c] / lab["file"]), names))
    with ProcessPoolExecutor(a.jobs) as ex:
        results = list(ex.map(_one, jobs, chunksize=8))
    print(f"{len(results)} labelled logs, each replayed as it is and through {len(names)} wrappers")
    worst = 100.0
    for n in names:
        moved = [(p, b, w[n]) for p, b, w in results if w[n] != b]
        pct = 100.0 * (len(results) - len(moved)) / len(results) if results else 100.0
        worst = min(worst, pct)
        print(f"{n:<19} verdict unchanged {pct:5.1f}% ({len(results) - len(moved)}/{len(results)})")
        for p, b, w in moved[: a.show]:
            print(f"    {Path(p).parent.name}/{Path(p).name[:60]}: {list(b)} -> {list(w)}")
    print(f"worst wrapper {worst:.1f}% unchanged")
    return 0


if __name__ == "__main__":
    sys.exit(main())
