"""Thin Typer layer: parse, resolve settings, pick sinks, run, map the verdict to an exit code.

``main()`` is the only place that turns errors into exit codes and one-line messages.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from coldwatch import __version__
from coldwatch.errors import ColdwatchError, ConfigError
from coldwatch.exitcodes import ExitCode

app = typer.Typer(
    name="coldwatch",
    help="Watch an LLM server's cold start until it is ready, failed or stuck; exit with a code a CI step can gate on.",
    add_completion=False,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)

OutputOpt = Annotated[str, typer.Option("--output", "-o", help="auto | live | plain | json (NDJSON on stdout).")]


def _version(value: bool) -> None:
    if value:
        typer.echo(f"coldwatch {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        Optional[bool], typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = None,
) -> None:
    """coldwatch: cold-start watcher for SGLang and vLLM servers."""


def _check_output(value: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ConfigError(f"--output: expected one of {', '.join(allowed)}, got {value!r}")
    return value


@app.command()
def replay(
    log: Annotated[str, typer.Argument(help="Saved start-up log; '-' reads standard input.", show_default=False)],
    engine: Annotated[str, typer.Option(help="auto | sglang | vllm: which engine's rules apply.")] = "auto",
    rules: Annotated[
        Optional[list[Path]],
        typer.Option("--rules", help="Extra rules file (TOML); a rule with a known id replaces it."),
    ] = None,
    output: OutputOpt = "auto",
    record: Annotated[bool, typer.Option("--record", help="Import this start into the history (the ETA baseline).")] = False,
    target: Annotated[Optional[str], typer.Option("--target", help="History target name for --record (default: the file name).")] = None,
) -> None:
    """Tell the story of a cold start from a saved log: phase timeline and verdict."""
    from coldwatch.commands import run_replay

    _check_output(output, ("auto", "live", "plain", "json"))
    if engine not in ("auto", "sglang", "vllm"):
        raise ConfigError(f"--engine: expected auto, sglang or vllm, got {engine!r}")
    code = run_replay(log, engine, rules or [], output, record, target)
    raise typer.Exit(int(code))


def _install_sigterm() -> None:
    def handler(signum: int, frame: Any) -> None:
        raise _Terminated()

    with contextlib.suppress(ValueError):  # not the main thread
        signal.signal(signal.SIGTERM, handler)


class _Terminated(BaseException):
    """SIGTERM, raised in the main thread so every context manager closes."""


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return the exit code. Every error becomes one line and a documented code."""
    _install_sigterm()
    try:
        rc = app(args=argv, standalone_mode=False)
        return int(rc) if isinstance(rc, int) else 0
    except typer.Exit as exc:
        return int(exc.exit_code)
    except ColdwatchError as exc:
        _err(f"coldwatch: {exc}")
        return exc.exit_code
    except KeyboardInterrupt:
        _err("coldwatch: interrupted")
        return int(ExitCode.INTERRUPTED)
    except _Terminated:
        _err("coldwatch: terminated")
        return int(ExitCode.TERMINATED)
    except Exception as exc:  # usage errors from the parser, and bugs
        if type(exc).__name__ == "Abort":
            _err("coldwatch: interrupted")
            return int(ExitCode.INTERRUPTED)
        show = getattr(exc, "show", None)
        if callable(show) and hasattr(exc, "exit_code"):
            show(file=sys.stderr)
            return int(ExitCode.USAGE)
        _err(f"coldwatch: internal error ({type(exc).__name__}: {exc}); please report it")
        return 1


def _err(msg: str) -> None:
    try:
        sys.stderr.write(msg + "\n")
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):
        pass


def entry() -> None:
    sys.exit(main())
