"""python -m benchmarks.verdicts [--json FILE] [--corpus NAME]: coldwatch's verdicts against labelled
real start-up logs, per corpus: outcome, last phase and failure-kind accuracy, and every miss with
the file, what the label says, what coldwatch said and the line that decided it. The oom/nccl figure
is the kind accuracy on the failures labelled oom or nccl alone.

Corpora: shared (the team's fixture logs), real (recorded from real engines here), composed (our
format-string logs), public (real logs from public bug reports and repositories, labelled blind), blind26 and blind30
(later sets labelled and frozen before their first run; FIRST_SCORE.txt in each holds that first score).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coldwatch.replay import read_chunks, replay

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "tests" / "fixtures" / "logs"
_TEAM = ROOT.parent / "shared" / "fixtures" / "logs"
SHARED = Path(os.environ.get("COLDWATCH_SHARED_LOGS", _TEAM if _TEAM.is_dir() else LOGS / "shared"))  # a clone: the copy
CORPORA = {
    "shared": SHARED,
    "real": LOGS / "real",
    "composed": LOGS,
    "public": LOGS / "public",
    "blind26": LOGS / "blind26",
    "blind30": LOGS / "blind30",
    "blind31": LOGS / "blind31",
    "blind32": LOGS / "blind32",
    "blind33": LOGS / "blind33",
    "blind34": LOGS / "blind34",
    "blind35": LOGS / "blind35",
    "blind36": LOGS / "blind36",
    "blind37": LOGS / "blind37",
    "blind38": LOGS / "blind38",
    "blind39": LOGS / "blind39",
    "blind40": LOGS / "blind40",
    "blind41": LOGS / "blind41",
    "blind42": LOGS / "blind42",
    "blind43": LOGS / "blind43",
    "blind44": LOGS / "blind44",
    "blind45": LOGS / "blind45",
    "blind46": LOGS / "blind46",
    "blind47": LOGS / "blind47",
    "blind48": LOGS / "blind48",
    "blind49": LOGS / "blind49",
    "blind50": LOGS / "blind50",
    "blind51": LOGS / "blind51",
    "blind52": LOGS / "blind52",
    "blind53": LOGS / "blind53",
    "blind54": LOGS / "blind54",
    "blind55": LOGS / "blind55",
    "blind56": LOGS / "blind56",
    "blind57": LOGS / "blind57",
    "blind58": LOGS / "blind58",
    "blind59": LOGS / "blind59",
    "blind60": LOGS / "blind60",
    "blind61": LOGS / "blind61",
    "blind62": LOGS / "blind62",
    "blind63": LOGS / "blind63",
    "blind64": LOGS / "blind64",
    "blind65": LOGS / "blind65",
    "blind66": LOGS / "blind66",
    "blind67": LOGS / "blind67",
    "blind68": LOGS / "blind68",
    "blind69": LOGS / "blind69",
    "blind70": LOGS / "blind70",
    "blind71": LOGS / "blind71",
    "blind72": LOGS / "blind72",
    "blind73": LOGS / "blind73",
    "blind74": LOGS / "blind74",
    "blind76": LOGS / "blind76",
    "blind75": LOGS / "blind75",
    "blind77": LOGS / "blind77",
    "blind79": LOGS / "blind79",
    "blind78": LOGS / "blind78",
    "blind80": LOGS / "blind80",
    "blind81": LOGS / "blind81",
    "blind82": LOGS / "blind82",
    "blind85": LOGS / "blind85",
    "blind90": LOGS / "blind90",
    "blind91": LOGS / "blind91",
    "blind92": LOGS / "blind92",
    "blind86": LOGS / "blind86",
    "blind87": LOGS / "blind87",
    "blind83": LOGS / "blind83",
    "blind84": LOGS / "blind84",
    "blind88": LOGS / "blind88",
    "blind89": LOGS / "blind89",
    "blind94": LOGS / "blind94",
    "blind95": LOGS / "blind95",
    "blind93": LOGS / "blind93",
    "blind96": LOGS / "blind96",
    "blind98": LOGS / "blind98",
    "blind99": LOGS / "blind99",
    "blind100": LOGS / "blind100",
    "blind101": LOGS / "blind101",
    "blind102": LOGS / "blind102",
    "blind103": LOGS / "blind103",
    "blind104": LOGS / "blind104",
    "blind106": LOGS / "blind106",
    "blind108": LOGS / "blind108",
    "blind105": LOGS / "blind105",
    "blind118": LOGS / "blind118",
    "blind113": LOGS / "blind113",
    "blind115": LOGS / "blind115",
    "blind111": LOGS / "blind111",
    "blind109": LOGS / "blind109",
    "blind112": LOGS / "blind112",
    "blind107": LOGS / "blind107",
    "blind110": LOGS / "blind110",
    "blind119": LOGS / "blind119",
    "blind120": LOGS / "blind120",
    "blind121": LOGS / "blind121",
    "blind122": LOGS / "blind122",
    "blind123": LOGS / "blind123",
    "blind124": LOGS / "blind124",
    "blind125": LOGS / "blind125",
    "blind126": LOGS / "blind126",
    "blind127": LOGS / "blind127",
    "blind128": LOGS / "blind128",
    "blind129": LOGS / "blind129",
    "blind130": LOGS / "blind130",
    "blind131": LOGS / "blind131",
    "blind132": LOGS / "blind132",
    "blind133": LOGS / "blind133",
    "blind134": LOGS / "blind134",
    "blind135": LOGS / "blind135",
    "blind136": LOGS / "blind136",
    "blind137": LOGS / "blind137",
    "blind138": LOGS / "blind138",
    "blind139": LOGS / "blind139",
    "blind140": LOGS / "blind140",
    "blind141": LOGS / "blind141",
    "blind142": LOGS / "blind142",
    "blind143": LOGS / "blind143",
    "blind144": LOGS / "blind144",
    "blind151": LOGS / "blind151",
    "blind152": LOGS / "blind152",
    "blind153": LOGS / "blind153",
    "blind154": LOGS / "blind154",
    "blind155": LOGS / "blind155",
    "blind156": LOGS / "blind156",
    "blind157": LOGS / "blind157",
    "blind158": LOGS / "blind158",
}


@dataclass
class Score:
    n: int = 0
    outcome: int = 0
    phase_n: int = 0
    phase: int = 0
    kind_n: int = 0
    kind: int = 0
    hard_n: int = 0
    """Failed logs labelled oom or nccl (the kinds a user acts on differently: memory, the network)."""
    hard: int = 0
    misses: list[dict[str, Any]] = field(default_factory=list)

    def pct(self, a: int, b: int) -> float:
        return 100.0 * a / b if b else 100.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "logs": self.n,
            "outcome_pct": round(self.pct(self.outcome, self.n), 1),
            "phase_pct": round(self.pct(self.phase, self.phase_n), 1),
            "kind_pct": round(self.pct(self.kind, self.kind_n), 1),
            "oom_nccl_pct": round(self.pct(self.hard, self.hard_n), 1),
            "outcome": [self.outcome, self.n],
            "phase": [self.phase, self.phase_n],
            "kind": [self.kind, self.kind_n],
            "oom_nccl": [self.hard, self.hard_n],
            "misses": self.misses,
        }


def labels(folder: Path) -> list[dict[str, Any]]:
    """The folder's labels.json: one object per log (file, source, server, outcome, failure_kind, last_phase, ...)."""
    f = folder / "labels.json"
    return list(json.loads(f.read_text())) if f.exists() else []


def judge_file(path: Path) -> dict[str, Any]:
    with path.open("rb") as fh:
        return judge_chunks(read_chunks(fh))


def judge_chunks(chunks: Iterable[bytes]) -> dict[str, Any]:
    """One log's verdict: outcome, phase, kind and the line that decided it."""
    j, v = replay(chunks)
    st = j.state
    deciding = v.reason if v.outcome != "incomplete" else st.last_line
    outcome = getattr(v.outcome, "value", v.outcome)  # the plain word in the report, not the enum's repr
    return {"outcome": outcome, "phase": v.phase, "kind": v.failure_kind, "line": deciding[:200]}


def score(folder: Path) -> Score:
    s = Score()
    for lab in labels(folder):
        got = judge_file(folder / lab["file"])
        s.n += 1
        want_phase = lab.get("last_phase")
        ok_o = got["outcome"] == lab["outcome"]
        s.outcome += ok_o
        ok_p = True
        if want_phase is not None or lab["outcome"] == "failed":
            s.phase_n += 1
            # a labelled log has lines, so a null label is the contract's 'starting' (DESIGN: null only
            # for a start without a line); coldwatch answering null for it is a miss
            ok_p = got["phase"] == (want_phase or "starting")
            s.phase += ok_p
        ok_k = True
        if lab["outcome"] == "failed" and lab.get("failure_kind"):
            s.kind_n += 1
            ok_k = got["kind"] == lab["failure_kind"]
            s.kind += ok_k
            if lab["failure_kind"] in ("oom", "nccl"):
                s.hard_n += 1
                s.hard += ok_k
        if not (ok_o and ok_p and ok_k):
            s.misses.append(
                {
                    "file": lab["file"],
                    "want": [lab["outcome"], want_phase, lab.get("failure_kind")],
                    "got": [got["outcome"], got["phase"], got["kind"]],
                    "line": got["line"],
                }
            )
    return s


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.verdicts")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument("--corpus", choices=sorted(CORPORA), action="append", help="only these corpora")
    ap.add_argument("--quiet", action="store_true", help="no list of misses")
    a = ap.parse_args(argv)
    out: dict[str, Any] = {}
    total = Score()
    for name in a.corpus or list(CORPORA):
        s = score(CORPORA[name])
        if not s.n:
            print(f"{name:<9} no labelled logs at {CORPORA[name]}")
            continue
        out[name] = s.as_dict()
        for f in ("n", "outcome", "phase_n", "phase", "kind_n", "kind", "hard_n", "hard"):
            setattr(total, f, getattr(total, f) + getattr(s, f))
        print(
            f"{name:<9} {s.n:4d} logs  outcome {s.pct(s.outcome, s.n):5.1f}% ({s.outcome}/{s.n})  "
            f"last phase {s.pct(s.phase, s.phase_n):5.1f}% ({s.phase}/{s.phase_n})  kind {s.pct(s.kind, s.kind_n):5.1f}% ({s.kind}/{s.kind_n})"
            f"  oom/nccl {s.pct(s.hard, s.hard_n):5.1f}% ({s.hard}/{s.hard_n})"
        )
        if not a.quiet:
            for m in s.misses:
                print(f"   miss {m['file']}: want {m['want']} got {m['got']}\n        deciding: {m['line'][:160]!r}")
    out["all"] = total.as_dict()
    print(
        f"{'all':<9} {total.n:4d} logs  outcome {total.pct(total.outcome, total.n):5.1f}%  "
        f"last phase {total.pct(total.phase, total.phase_n):5.1f}%  kind {total.pct(total.kind, total.kind_n):5.1f}%"
        f"  oom/nccl {total.pct(total.hard, total.hard_n):5.1f}%"
    )
    if a.json:
        a.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
