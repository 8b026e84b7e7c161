"""Write docs/cli.md from the CLI's own --help (a test keeps it current).

python scripts/gen_docs.py          # rewrite docs/cli.md
python scripts/gen_docs.py --check  # exit 1 if it is stale
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = [[], ["wait"], ["replay"], ["status"], ["history"], ["demo"]]


def help_text(args: list[str]) -> str:
    env = {**os.environ, "COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb", "_TYPER_FORCE_DISABLE_TERMINAL": "1"}
    env.pop("FORCE_COLOR", None)
    out = subprocess.run([sys.executable, "-m", "coldwatch", *args, "--help"], capture_output=True, text=True, env=env, check=True)
    return "\n".join(line.rstrip() for line in out.stdout.splitlines()).strip() + "\n"


def render() -> str:
    parts = ["# coldwatch command line\n", "Generated from `--help` by `scripts/gen_docs.py`; do not edit by hand.\n"]
    for args in COMMANDS:
        title = " ".join(["coldwatch", *args])
        parts.append(f"\n## `{title}`\n\n```text\n{help_text(args)}```\n")
    return "".join(parts)


def main() -> int:
    target = ROOT / "docs" / "cli.md"
    text = render()
    if "--check" in sys.argv:
        if not target.exists() or target.read_text() != text:
            print("docs/cli.md is stale: run python scripts/gen_docs.py", file=sys.stderr)
            return 1
        return 0
    target.parent.mkdir(exist_ok=True)
    target.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
