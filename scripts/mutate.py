"""Mutation testing of coldwatch's decisive modules: does a test notice when the code is wrong?

Each mutant changes one thing in one module (a comparison, an arithmetic operator, a boolean
operator, a negation, a number, a truth value), then runs the fast tests that cover the module;
a mutant the tests do not notice *survives*. Survivors are listed with their line so that a test
can be written for each one (or the mutant judged equivalent, with the reason).

    .venv/bin/python scripts/mutate.py                  # every module, every mutant (long)
    .venv/bin/python scripts/mutate.py fleet eta --max 30 --seed 1
    .venv/bin/python scripts/mutate.py judge --list     # the mutants only, nothing run
    .venv/bin/python scripts/mutate.py judging          # each module of a package (judging, phases)
    .venv/bin/python scripts/mutate.py judge --tests tests/test_liveness.py --lines 140,211
                                                        # a second pass: survivors against slower tests

The module's file is changed in place for each run and restored afterwards (also on Ctrl-C);
each run compiles into its own bytecode cache, so a mutant of the same size is never hidden by a
stale .pyc. Exit status: 0 when no mutant survived, 1 otherwise.
"""

from __future__ import annotations

import argparse
import ast
import copy
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "coldwatch"

MODULES: dict[str, tuple[str, list[str]]] = {
    # name: (file under src/coldwatch, fast tests that decide it)
    "judge": ("judge.py", ["tests/test_judge.py", "tests/test_liveness.py"]),
    "group": ("group.py", ["tests/test_group.py", "tests/test_mutants_group.py"]),
    "fleet": (
        "fleet.py",
        [
            "tests/test_fleet_rules.py",
            "tests/test_fleet_run.py",
            "tests/test_signals.py::test_fleet_ends_within_seconds_of_sigterm",
            "tests/test_mutants_fleet.py",
        ],
    ),
    "classifier": (
        "phases/classifier.py",
        # the quickest first: a mutant they kill stops the run there (-x)
        [
            "tests/test_mutants_phases.py",
            "tests/test_mutants_classifier.py",
            "tests/test_real_engine_logs.py",
            "tests/test_verdict_floors.py",
            "tests/test_structure.py",
            "tests/test_startup.py",
            "tests/test_rules.py",
            "tests/test_prefilter.py",
            "tests/test_replay_fixtures.py",
        ],
    ),
    "rules": ("phases/rules.py", ["tests/test_rules.py", "tests/test_mutants_rules.py"]),
    "http": (
        "http.py",
        ["tests/test_reliability.py::test_completion_validation", "tests/test_reliability.py::test_the_probe_asks_for_one_token"],
    ),
    "sanitise": (
        "sanitise.py",
        [
            "tests/test_reliability.py::test_sanitise_caps_and_escapes",
            "tests/test_reliability.py::test_a_registered_secret_is_redacted_in_every_spelling",
            "tests/test_ci.py",
        ],
    ),
    "eta": ("eta.py", ["tests/test_eta.py", "tests/test_mutants_eta.py"]),
    "bandwidth": (
        "bandwidth.py",
        # not the loop-device tests: a loader burning a core is timing-bound on a busy machine
        [
            "tests/test_bandwidth.py::test_verdict_rules_in_order",
            "tests/test_bandwidth.py::test_tracker_measures_util_from_io_ticks_and_says_a_bound_once",
            "tests/test_bandwidth.py::test_hostile_sampler_fields_are_bounded_or_dropped",
            "tests/test_mutants_bandwidth.py",
        ],
    ),
    "ranks": ("ranks.py", ["tests/test_ranks.py", "tests/test_mutants_ranks.py"]),
    "verdict": ("verdict.py", ["tests/test_mutants_verdict.py"]),
}

JUDGE_TESTS = ["tests/test_judge.py", "tests/test_judge_parts.py", "tests/test_mutants_judge.py", "tests/test_mutants_judging.py"]
"""The pure judge tests (about a second); the real-server ones (tests/test_liveness.py,
tests/test_inprocess.py, a minute) are the second pass over survivors: ``--tests ... --lines ...``."""
MODULES["judge"] = ("judge.py", JUDGE_TESTS)
for _part in sorted(f.stem for f in (SRC / "judging").glob("*.py") if f.stem != "__init__"):
    MODULES[f"judging.{_part}"] = (f"judging/{_part}.py", JUDGE_TESTS)
CLASSIFIER_TESTS = MODULES["classifier"][1]
"""The classifier's parts are decided by the classifier's tests (through its public face)."""
for _part in ("state", "tracker", "tracebacks", "causes"):
    MODULES[f"phases.{_part}"] = (f"phases/{_part}.py", CLASSIFIER_TESTS)
PACKAGES = {"judging": [m for m in MODULES if m.startswith("judging.")], "phases": [m for m in MODULES if m.startswith("phases.")]}
"""A package's name stands for each of its modules listed here (``mutate.py judging``)."""

FUNCTIONS: dict[str, set[str]] = {"http": {"completion_ok", "_probe"}}
"""Where only some functions of a module are decisive, mutants are made in those only."""

SWAP_CMP: dict[type, type] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
SWAP_BIN: dict[type, type] = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult, ast.FloorDiv: ast.Div}


@dataclass(frozen=True)
class Mutant:
    module: str
    line: int
    start: int
    end: int
    before: str
    after: str

    def describe(self) -> str:
        return f"{self.module}:{self.line}: {self.before.strip()[:70]!r} -> {self.after.strip()[:70]!r}"


def _offsets(text: str) -> list[int]:
    out, n = [0], 0
    for line in text.splitlines(keepends=True):
        n += len(line.encode("utf-8"))
        out.append(n)
    return out


def _skip(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """Numbers in slices (text caps), f-strings and annotations are not decisions."""
    p = parents.get(node)
    while p is not None:
        if isinstance(p, (ast.Slice, ast.JoinedStr, ast.AnnAssign)) and not (isinstance(p, ast.AnnAssign) and p.value is not None):
            return True
        if isinstance(p, ast.Call) and isinstance(p.func, ast.Name) and p.func.id in ("round", "range", "format"):
            return True
        p = parents.get(p)
    return False


def mutants(name: str) -> Iterator[Mutant]:
    path = SRC / MODULES[name][0]
    text = path.read_text(encoding="utf-8")
    data = text.encode("utf-8")
    offs = _offsets(text)
    tree = ast.parse(text)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    only = FUNCTIONS.get(name)

    def inside(node: ast.AST) -> bool:
        if only is None:
            return True
        p = parents.get(node)
        while p is not None:
            if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef)) and p.name in only:
                return True
            p = parents.get(p)
        return False

    def span(node: ast.expr) -> tuple[int, int]:
        assert node.end_lineno is not None and node.end_col_offset is not None
        return offs[node.lineno - 1] + node.col_offset, offs[node.end_lineno - 1] + node.end_col_offset

    def make(node: ast.expr, new: ast.expr) -> Mutant:
        s, e = span(node)
        return Mutant(name, node.lineno, s, e, data[s:e].decode(), "(" + ast.unparse(new) + ")")

    for node in ast.walk(tree):
        if not isinstance(node, ast.expr) or not inside(node):
            continue
        # strings (docstrings, messages) are never mutated: only decisions and numbers
        if isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                if type(op) in SWAP_CMP:
                    new = copy.deepcopy(node)
                    new.ops[i] = SWAP_CMP[type(op)]()
                    yield make(node, new)
        elif isinstance(node, ast.BinOp) and type(node.op) in SWAP_BIN and not _skip(node, parents):
            if isinstance(node.left, ast.Constant) and isinstance(node.left.value, str):
                continue  # "%" formatting and string concatenation
            new = copy.deepcopy(node)
            new.op = SWAP_BIN[type(node.op)]()
            yield make(node, new)
        elif isinstance(node, ast.BoolOp):
            new = copy.deepcopy(node)
            new.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
            yield make(node, new)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            yield make(node, copy.deepcopy(node.operand))
        elif isinstance(node, ast.Constant) and not _skip(node, parents):
            v = node.value
            if isinstance(v, bool):
                yield make(node, ast.Constant(not v))
            elif isinstance(v, int):
                yield make(node, ast.Constant(v + 1))
            elif isinstance(v, float):
                yield make(node, ast.Constant(v * 2 if v else 1.0))


def run_tests(tests: list[str], timeout: float) -> bool:
    """True when the tests pass (the mutant survives)."""
    with tempfile.TemporaryDirectory(prefix="cw-mut-") as cache:
        env = {**os.environ, "PYTHONPYCACHEPREFIX": cache, "PYTHONDONTWRITEBYTECODE": "1"}
        env.pop("CI", None)
        cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-m", "not slow", *tests]
        try:
            r = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return False  # a mutant that hangs the tests is caught
        return r.returncode == 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("modules", nargs="*", default=list(MODULES), help=f"of: {', '.join([*MODULES, *PACKAGES])}")
    ap.add_argument("--max", type=int, default=0, help="at most this many mutants per module (a random sample; 0 = all)")
    ap.add_argument("--seed", type=int, default=24)
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds one test run may take")
    ap.add_argument("--list", action="store_true", help="list the mutants, run nothing")
    ap.add_argument(
        "--tests", default="", help="run these tests instead of the module's own (comma-separated), e.g. the tests before new ones"
    )
    ap.add_argument("--lines", default="", help="only mutants on these lines (comma-separated), e.g. to recheck survivors")
    args = ap.parse_args(argv)
    args.modules = [m for name in args.modules for m in PACKAGES.get(name, [name])]
    unknown = [m for m in args.modules if m not in MODULES]
    if unknown:
        ap.error(f"unknown module(s): {', '.join(unknown)}")
    survived_any = False
    for name in args.modules:
        rel, tests = MODULES[name]
        if args.tests:
            tests = [x for x in args.tests.split(",") if x.strip()]
        path = SRC / rel
        ms = list(mutants(name))
        if args.lines:
            wanted = {int(x) for x in args.lines.split(",") if x.strip()}
            ms = [m for m in ms if m.line in wanted]
        total = len(ms)
        if args.max and len(ms) > args.max:
            ms = sorted(random.Random(args.seed).sample(ms, args.max), key=lambda m: m.start)
        if args.list:
            for m in ms:
                print(m.describe())
            continue
        original = path.read_bytes()
        if not run_tests(tests, args.timeout):
            print(f"{name}: the tests fail without any mutant; fix them first ({' '.join(tests)})")
            return 2
        survivors: list[Mutant] = []
        t0 = time.monotonic()
        try:
            for m in ms:
                path.write_bytes(original[: m.start] + m.after.encode() + original[m.end :])
                try:
                    compile(path.read_bytes(), str(path), "exec")
                except SyntaxError:
                    continue
                if run_tests(tests, args.timeout):
                    survivors.append(m)
                    print(f"  SURVIVED {m.describe()}", flush=True)
        finally:
            path.write_bytes(original)
        killed = len(ms) - len(survivors)
        score = 100.0 * killed / len(ms) if ms else 100.0
        print(
            f"{name}: {killed}/{len(ms)} killed ({score:.0f}%), {len(ms)} of {total} mutants run, {time.monotonic() - t0:.0f}s", flush=True
        )
        survived_any = survived_any or bool(survivors)
    return 1 if survived_any else 0


if __name__ == "__main__":
    sys.exit(main())
