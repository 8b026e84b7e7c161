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
from coldwatch.errors import ColdwatchError, ConfigError, Terminated
from coldwatch.exitcodes import ExitCode

app = typer.Typer(
    name="coldwatch",
    help="Watch an LLM server's cold start until it is ready, failed or stuck; exit with a code a CI step can gate on.",
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
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


def _settings(flags: dict[str, Any], config: Optional[Path], profile: Optional[str]) -> Any:
    from coldwatch.settings import resolve

    return resolve(flags, config, profile)


HostArg = Annotated[
    Optional[str],
    typer.Argument(help="SSH destination [user@]host[:port] or ~/.ssh/config alias; omit for this machine.", show_default=False),
]
UnitOpt = Annotated[Optional[str], typer.Option("--unit", help="systemd unit of the server [default: sglang].", show_default=False)]
LogCmdOpt = Annotated[
    Optional[str],
    typer.Option("--log-cmd", help="Command that follows the server log (docker logs -f, tail -F, kubectl logs -f).", show_default=False),
]
GpuCmdOpt = Annotated[
    Optional[str],
    typer.Option(
        "--gpu-cmd", help="Command printing nvidia-smi's CSV (index,memory.used,memory.total,utilization.gpu).", show_default=False
    ),
]
UrlOpt = Annotated[
    Optional[str],
    typer.Option("--url", help="Server base URL as seen from the host [default: http://127.0.0.1:30000].", show_default=False),
]
ModelOpt = Annotated[
    Optional[str], typer.Option("--model", help="Model name for the probe [default: first id of /v1/models].", show_default=False)
]
ApiKeyOpt = Annotated[Optional[str], typer.Option("--api-key", help="Bearer token for the API (never printed).", show_default=False)]
TimeoutOpt = Annotated[
    Optional[str], typer.Option("--timeout", help="Deadline: 90, 90s, 15m, 1h; 0 = none [default: 30m].", show_default=False)
]
IntervalOpt = Annotated[Optional[float], typer.Option("--interval", help="Seconds between probes [default: 2].", show_default=False)]
StallOpt = Annotated[
    Optional[str],
    typer.Option("--stall-after", help="Stalled after this long with no liveness evidence [default: 10m].", show_default=False),
]
PidOpt = Annotated[
    Optional[int], typer.Option("--pid", help="Server main PID on the host when there is no systemd unit.", show_default=False)
]
CheckOpt = Annotated[
    Optional[list[str]], typer.Option("--check", help="Post-ready check: reasoning or tools (repeatable).", show_default=False)
]
ConfigOpt = Annotated[Optional[Path], typer.Option("--config", help="TOML config file (keys mirror the options).", show_default=False)]
ProfileOpt = Annotated[Optional[str], typer.Option("--profile", help="Use the [profiles.NAME] table of the config.", show_default=False)]
AcceptOpt = Annotated[bool, typer.Option("--accept-new-host-key", help="Record an unknown SSH host key (a changed key is always refused).")]
InsecureOpt = Annotated[bool, typer.Option("--insecure", help="Do not verify TLS certificates of an https --url.")]
MaxRestartsOpt = Annotated[
    Optional[int],
    typer.Option("--max-restarts", help="Server restarts tolerated during the wait [default: 0, a restart fails].", show_default=False),
]
EngineOpt = Annotated[Optional[str], typer.Option("--engine", help="auto | sglang | vllm [default: auto].", show_default=False)]
RulesOpt = Annotated[Optional[list[Path]], typer.Option("--rules", help="Extra rules file (TOML), repeatable.", show_default=False)]
ReconnectOpt = Annotated[
    Optional[str],
    typer.Option("--reconnect-for", help="Keep reconnecting a dropped SSH connection this long [default: 2m].", show_default=False),
]
TargetOpt = Annotated[
    Optional[str], typer.Option("--target", help="Name of this target in the history [default: HOST/UNIT].", show_default=False)
]


def _flags(**kw: Any) -> dict[str, Any]:
    """The options the user actually gave (config and profile are sources, not settings)."""
    return {k: v for k, v in kw.items() if k not in ("config", "profile") and v is not None and v is not False and v != []}


def _api_key_hint(api_key: str | None) -> None:
    """A key given as a flag is in this machine's process list (ps) for as long as the run lasts."""
    if api_key is not None:
        _err(
            "coldwatch: note: --api-key is visible to other users in the process list (ps); "
            "set COLDWATCH_API_KEY or api_key in the config file instead"
        )


@app.command()
def wait(
    host: HostArg = None,
    unit: UnitOpt = None,
    log_cmd: LogCmdOpt = None,
    gpu_cmd: GpuCmdOpt = None,
    url: UrlOpt = None,
    model: ModelOpt = None,
    api_key: ApiKeyOpt = None,
    timeout: TimeoutOpt = None,
    interval: IntervalOpt = None,
    stall_after: StallOpt = None,
    pid: PidOpt = None,
    check: CheckOpt = None,
    config: ConfigOpt = None,
    profile: ProfileOpt = None,
    output: Annotated[
        Optional[str], typer.Option("--output", "-o", help="auto | live | plain | json [default: auto].", show_default=False)
    ] = None,
    accept_new_host_key: AcceptOpt = False,
    insecure: InsecureOpt = False,
    max_restarts: MaxRestartsOpt = None,
    engine: EngineOpt = None,
    rules: RulesOpt = None,
    target: TargetOpt = None,
    reconnect_for: ReconnectOpt = None,
) -> None:
    """Watch a cold start until ready, failed, stalled or the deadline; exit with its code."""
    flags = dict(locals())  # every option as given; config and profile are taken out below
    _api_key_hint(api_key)
    from coldwatch.commands import run_wait

    s = _settings(_flags(**flags), config, profile)
    raise typer.Exit(int(run_wait(s)))


@app.command()
def status(
    host: HostArg = None,
    unit: UnitOpt = None,
    log_cmd: LogCmdOpt = None,
    gpu_cmd: GpuCmdOpt = None,
    url: UrlOpt = None,
    model: ModelOpt = None,
    api_key: ApiKeyOpt = None,
    config: ConfigOpt = None,
    profile: ProfileOpt = None,
    output: Annotated[
        Optional[str], typer.Option("--output", "-o", help="auto | plain | json [default: auto].", show_default=False)
    ] = None,
    accept_new_host_key: AcceptOpt = False,
    insecure: InsecureOpt = False,
    engine: EngineOpt = None,
) -> None:
    """One snapshot: phase now, GPU memory, HTTP state, last causal log line; no waiting."""
    flags = dict(locals())
    _api_key_hint(api_key)
    from coldwatch.commands import run_status

    s = _settings(_flags(**flags), config, profile)
    raise typer.Exit(int(run_status(s)))


@app.command()
def history(
    target: Annotated[Optional[str], typer.Argument(help="Only this target.", show_default=False)] = None,
    output: OutputOpt = "auto",
) -> None:
    """Past cold starts per target with phase durations (the ETA baseline)."""
    from coldwatch.commands import run_history

    _check_output(output, ("auto", "plain", "json", "live"))
    raise typer.Exit(int(run_history(target, output)))


@app.command()
def demo(
    scenario: Annotated[
        str, typer.Option("--scenario", help="ready | oom | hang | restart | slow | silent_death | error_body | silent_load | jit_busy.")
    ] = "ready",
    speed: Annotated[float, typer.Option("--speed", help="Time factor of the simulated start (0.5 = twice as fast).")] = 1.0,
    output: Annotated[
        Optional[str], typer.Option("--output", "-o", help="auto | live | plain | json [default: auto].", show_default=False)
    ] = None,
    check: CheckOpt = None,
    fail_checks: Annotated[bool, typer.Option("--fail-checks", help="Make the simulated server fail the --check requests.")] = False,
    timeout: TimeoutOpt = None,
    stall_after: StallOpt = None,
    max_restarts: MaxRestartsOpt = None,
) -> None:
    """Watch a simulated 8-GPU SGLang cold start (~30 s) with the real wait pipeline."""
    from coldwatch.demo import run_demo
    from coldwatch.sim import SCENARIOS

    if scenario not in SCENARIOS:
        raise ConfigError(f"--scenario: expected one of {', '.join(SCENARIOS)}, got {scenario!r}")
    if not 0.01 <= speed <= 100:
        raise ConfigError(f"--speed: expected a factor between 0.01 and 100, got {speed}")
    default_stall = "20s" if scenario == "hang" else None
    s = _settings(
        _flags(
            output=output,
            check=check,
            timeout=timeout or "3m",
            stall_after=stall_after or default_stall,
            max_restarts=max_restarts,
            interval=0.5,
        ),
        None,
        None,
    )
    raise typer.Exit(int(run_demo(scenario, speed, s, fail_checks)))


def _install_sigterm() -> None:
    def handler(signum: int, frame: Any) -> None:
        raise Terminated()

    with contextlib.suppress(ValueError):  # not the main thread
        signal.signal(signal.SIGTERM, handler)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return the exit code. Every error becomes one line and a documented code."""
    _install_sigterm()
    try:
        rc = app(args=argv, standalone_mode=False, prog_name="coldwatch")
        return int(rc) if isinstance(rc, int) else 0
    except typer.Exit as exc:
        return int(exc.exit_code)
    except ColdwatchError as exc:
        _err(f"coldwatch: {exc}")
        return exc.exit_code
    except KeyboardInterrupt:
        _err("coldwatch: interrupted")
        return int(ExitCode.INTERRUPTED)
    except Terminated:
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
    """One line on stderr. Error text can carry remote text (an SSH banner, a server's answer)."""
    from coldwatch.sanitise import clean

    try:
        sys.stderr.write(clean(msg, 1000) + "\n")
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):
        pass


def entry() -> None:
    sys.exit(main())
