"""Use coldwatch as a library: classify saved logs, print each verdict and the slowest phase."""

from __future__ import annotations

import sys

import coldwatch


def main(paths: list[str]) -> int:
    worst = 0
    for path in paths:
        verdict, timeline = coldwatch.replay_file(path)
        spans = [s for s in timeline if s.start is not None and s.end is not None and s.phase != "starting"]
        slowest = max(spans, key=lambda s: (s.end or 0) - (s.start or 0), default=None)
        where = f", slowest {slowest.phase} {(slowest.end or 0) - (slowest.start or 0):.0f}s" if slowest else ""
        print(f"{path}: {verdict.outcome} (exit {int(verdict.exit_code)}){where}")
        worst = max(worst, int(verdict.exit_code))
    return worst


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
