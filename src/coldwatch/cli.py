"""Thin Typer layer: parse, resolve settings, pick sinks, run, map the verdict to an exit code.

``main()`` is the only place that turns errors into exit codes and one-line messages.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from coldwatch import __version__
from coldwatch.errors import ColdwatchError, ConfigError, Terminated
from coldwatch.exitcodes import ExitCode

if TYPE_CHECKING:
    from coldwatch.settings import Settings

app = typer.Typer(
    name="coldwatch",
    help="Watch an LLM server's cold start until it is ready, failed or stuck; exit with a code a CI step can gate on.",
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)

OutputOpt = Annotated[str, typer.Option("--output", "-o", metavar="MODE", help="auto | live | plain | json (NDJSON on stdout).")]


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
    log: Annotated[str, typer.Argument(metavar="LOG", help="Saved start-up log; '-' reads standard input.", show_default=False)],
    engine: Annotated[str, typer.Option(metavar="ENGINE", help="auto | sglang | vllm: which engine's rules apply.")] = "auto",
    rules: Annotated[
        Optional[list[Path]],
        typer.Option("--rules", metavar="FILE", help="Extra rules file (TOML); a rule with a known id replaces it."),
    ] = None,
    output: OutputOpt = "auto",
    record: Annotated[bool, typer.Option("--record", help="Import this start into the history (the ETA baseline).")] = False,
    target: Annotated[
        Optional[str], typer.Option("--target", metavar="NAME", help="History target name for --record (default: the file name).")
    ] = None,
    max_restarts: Annotated[
        int, typer.Option("--max-restarts", metavar="N", help="Restarts in the log tolerated before the start counts as failed.", min=0)
    ] = 0,
    stall_after: Annotated[
        Optional[str],
        typer.Option(
            "--stall-after",
            metavar="DURATION",
            help="Stalled at a gap in the log longer than this (90s, 10m) [default: off].",
            show_default=False,
        ),
    ] = None,
    report: ReportOpt = None,
    metrics: MetricsOpt = None,
    pushgateway: PushgatewayOpt = None,
) -> None:
    """Tell the story of a cold start from a saved log: phase timeline and verdict."""
    from coldwatch.commands import run_replay
    from coldwatch.settings import parse_duration

    _check_output(output, ("auto", "live", "plain", "json"))
    from coldwatch.phases.rules import ENGINES, engine_choices

    if engine not in ("auto", *ENGINES):
        raise ConfigError(f"--engine: expected {engine_choices()}, got {engine!r}")
    stall = parse_duration(stall_after, "--stall-after") if stall_after is not None else 0.0
    code = run_replay(log, engine, rules or [], output, record, target, max_restarts, stall, (report, metrics, pushgateway))
    raise typer.Exit(int(code))


_RUN: dict[str, Any] = {}
"""This run's resolved settings, once there are some: main() reads the output mode and --junit
from them to finish a run that ends in an error with the same sinks."""


def _settings(flags: dict[str, Any], config: Optional[Path], profile: Optional[str]) -> Settings:
    from coldwatch.settings import resolve

    s = resolve(flags, config, profile)
    _RUN["settings"] = s
    return s


HostArg = Annotated[
    Optional[str],
    typer.Argument(
        metavar="HOST", help="SSH destination [user@]host[:port] or ~/.ssh/config alias; omit for this machine.", show_default=False
    ),
]
UnitOpt = Annotated[
    Optional[str], typer.Option("--unit", metavar="NAME", help="systemd unit of the server [default: sglang].", show_default=False)
]
LogCmdOpt = Annotated[
    Optional[str],
    typer.Option(
        "--log-cmd",
        metavar="CMD",
        help=(
            "Command on the host that prints this start's log and follows it: journalctl -u UNIT -f, docker logs -f NAME, "
            "kubectl logs -f POD, tail -F FILE. The server's lines must keep their timestamps (SGLang's and vLLM's own "
            "are): in a log the server appends to, lines stamped before this start (the unit's start; with --pid, the "
            "watch's start less 60s) are shown as an earlier run's and never decide."
        ),
        show_default=False,
    ),
]
GpuCmdOpt = Annotated[
    Optional[str],
    typer.Option(
        "--gpu-cmd",
        metavar="CMD",
        help="Command printing nvidia-smi's CSV (index,memory.used,memory.total,utilization.gpu).",
        show_default=False,
    ),
]
UrlOpt = Annotated[
    Optional[str],
    typer.Option(
        "--url", metavar="URL", help="Server base URL as seen from the host [default: http://127.0.0.1:30000].", show_default=False
    ),
]
ModelOpt = Annotated[
    Optional[str],
    typer.Option("--model", metavar="NAME", help="Model name for the probe [default: first id of /v1/models].", show_default=False),
]
ApiKeyOpt = Annotated[
    Optional[str], typer.Option("--api-key", metavar="KEY", help="Bearer token for the API (never printed).", show_default=False)
]
TimeoutOpt = Annotated[
    Optional[str],
    typer.Option("--timeout", metavar="DURATION", help="Deadline: 90, 90s, 15m, 1h; 0 = none [default: 30m].", show_default=False),
]
IntervalOpt = Annotated[
    Optional[float], typer.Option("--interval", metavar="SECONDS", help="Seconds between probes [default: 2].", show_default=False)
]
StallOpt = Annotated[
    Optional[str],
    typer.Option(
        "--stall-after", metavar="DURATION", help="Stalled after this long with no liveness evidence [default: 10m].", show_default=False
    ),
]
PidOpt = Annotated[
    Optional[int],
    typer.Option("--pid", metavar="PID", help="Server main PID on the host when there is no systemd unit.", show_default=False),
]
CheckOpt = Annotated[
    Optional[list[str]],
    typer.Option("--check", metavar="CHECK", help="Post-ready check: reasoning or tools (repeatable).", show_default=False),
]
ConfigOpt = Annotated[
    Optional[Path], typer.Option("--config", metavar="FILE", help="TOML config file (keys mirror the options).", show_default=False)
]
ProfileOpt = Annotated[
    Optional[str], typer.Option("--profile", metavar="NAME", help="Use the [profiles.NAME] table of the config.", show_default=False)
]
AcceptOpt = Annotated[bool, typer.Option("--accept-new-host-key", help="Record an unknown SSH host key (a changed key is always refused).")]
InsecureOpt = Annotated[bool, typer.Option("--insecure", help="Do not verify TLS certificates of an https --url.")]
MaxRestartsOpt = Annotated[
    Optional[int],
    typer.Option(
        "--max-restarts", metavar="N", help="Server restarts tolerated during the wait [default: 0, a restart fails].", show_default=False
    ),
]
EngineOpt = Annotated[
    Optional[str], typer.Option("--engine", metavar="ENGINE", help="auto | sglang | vllm [default: auto].", show_default=False)
]
RulesOpt = Annotated[
    Optional[list[Path]], typer.Option("--rules", metavar="FILE", help="Extra rules file (TOML), repeatable.", show_default=False)
]
ReconnectOpt = Annotated[
    Optional[str],
    typer.Option(
        "--reconnect-for",
        metavar="DURATION",
        help="Keep reconnecting a dropped SSH connection this long [default: 2m].",
        show_default=False,
    ),
]
JunitOpt = Annotated[
    Optional[Path],
    typer.Option(
        "--junit", metavar="FILE", help="Also write JUnit XML here (one test case per target), for CI test reports.", show_default=False
    ),
]
ReportOpt = Annotated[
    Optional[Path],
    typer.Option("--report", metavar="FILE", help="Also write an offline HTML report of the start here.", show_default=False),
]
MetricsOpt = Annotated[
    Optional[Path],
    typer.Option("--metrics", metavar="FILE", help="Also write the start's figures here, Prometheus text format.", show_default=False),
]
PushgatewayOpt = Annotated[
    Optional[str],
    typer.Option("--pushgateway", metavar="URL", help="Push the start's figures to this Prometheus Pushgateway.", show_default=False),
]
ContainerOpt = Annotated[
    Optional[str],
    typer.Option(
        "--container", metavar="NAME", help="The server is this Docker or Podman container (instead of a systemd unit).", show_default=False
    ),
]
RuntimeOpt = Annotated[
    Optional[str],
    typer.Option("--runtime", metavar="RUNTIME", help="auto | docker | podman: the container runtime [default: auto].", show_default=False),
]
PortOpt = Annotated[
    Optional[int],
    typer.Option(
        "--port",
        metavar="PORT",
        help="The server's port when --url is not given (a container's: probed where it is published) [default: 30000 SGLang, 8000 vLLM].",
        show_default=False,
    ),
]
TargetOpt = Annotated[
    Optional[str],
    typer.Option(
        "--target",
        metavar="NAME",
        help=(
            "Name of this target in the history [default: HOST/UNIT; HOST/container:NAME with --container; "
            "HOST:PORT of the probed URL with --log-cmd]."
        ),
        show_default=False,
    ),
]


def _flags(**kw: Any) -> dict[str, Any]:
    """The options the user actually gave (config and profile are sources, not settings)."""
    return {k: v for k, v in kw.items() if k not in ("config", "profile") and v is not None and v is not False and v != []}


def _given(ctx: typer.Context, skip: tuple[str, ...] = (), rename: dict[str, str] | None = None) -> dict[str, Any]:
    """The options the user gave on the command line, by their settings names: Typer's own record
    of where each value came from (a default is not given; config and profile are sources, not
    settings)."""
    out: dict[str, Any] = {}
    for name, value in ctx.params.items():
        source = ctx.get_parameter_source(name)
        if name in skip or source is None or source.name == "DEFAULT":
            continue
        out[(rename or {}).get(name, name)] = value
    return out


def _api_key_hint(api_key: str | None) -> None:
    """A key given as a flag is in this machine's process list (ps) for as long as the run lasts."""
    if api_key is not None:
        _err(
            "coldwatch: note: --api-key is visible to other users in the process list (ps); "
            "set COLDWATCH_API_KEY or api_key in the config file instead"
        )


HostsArg = Annotated[
    Optional[list[str]],
    typer.Argument(
        metavar="[HOST]...",
        help="SSH destination [user@]host[:port] or ~/.ssh/config alias; omit for this machine. Several: a fleet of servers.",
        show_default=False,
    ),
]
WorkerOpt = Annotated[
    Optional[list[str]],
    typer.Option(
        "--worker", metavar="HOST", help="Another node of the same server (multi-node; HTTP on HOST only). Repeatable.", show_default=False
    ),
]
TargetsFileOpt = Annotated[
    Optional[Path],
    typer.Option("--targets-file", metavar="FILE", help="Fleet: one SSH destination per line (# comments).", show_default=False),
]
ParallelOpt = Annotated[
    Optional[int], typer.Option("--parallel", metavar="N", help="Fleet: targets watched at once [default: 32].", show_default=False)
]
MinReadyOpt = Annotated[
    Optional[str],
    typer.Option("--min-ready", metavar="N|P%", help="Fleet: ready targets needed for exit 0 [default: all].", show_default=False),
]
FailFastOpt = Annotated[bool, typer.Option("--fail-fast", help="Fleet: end the run at the first target that cannot become ready.")]


def _targets(hosts: list[str] | None, targets_file: Path | None) -> list[str]:
    """HOSTs from the command line, then from --targets-file; each once, in order."""
    out = list(hosts or [])
    if any(not t.strip() for t in out):
        raise ConfigError("HOST: is empty (an unset variable?); omit HOST to watch this machine")
    if targets_file is not None:
        from coldwatch.files import TARGETS_LIMIT, read_text

        try:
            text = read_text(targets_file, TARGETS_LIMIT, "targets file")
        except ConfigError as exc:
            raise ConfigError(f"--targets-file: {exc}") from None
        for i, raw in enumerate(text.splitlines(), 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            if line.startswith("-") or " " in line or not line.isprintable():
                raise ConfigError(f"--targets-file: line {i}: {line[:60]!r} is not an SSH destination")
            out.append(line)
    seen: set[str] = set()
    return [t for t in out if not (t in seen or seen.add(t))]  # type: ignore[func-returns-value]


@app.command()
def wait(
    ctx: typer.Context,
    hosts: HostsArg = None,
    worker: WorkerOpt = None,
    targets_file: TargetsFileOpt = None,
    parallel: ParallelOpt = None,
    min_ready: MinReadyOpt = None,
    fail_fast: FailFastOpt = False,
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
        Optional[str],
        typer.Option("--output", "-o", metavar="MODE", help="auto | live | plain | json [default: auto].", show_default=False),
    ] = None,
    accept_new_host_key: AcceptOpt = False,
    insecure: InsecureOpt = False,
    max_restarts: MaxRestartsOpt = None,
    engine: EngineOpt = None,
    rules: RulesOpt = None,
    target: TargetOpt = None,
    reconnect_for: ReconnectOpt = None,
    junit: JunitOpt = None,
    container: ContainerOpt = None,
    runtime: RuntimeOpt = None,
    port: PortOpt = None,
    report: ReportOpt = None,
    metrics: MetricsOpt = None,
    pushgateway: PushgatewayOpt = None,
) -> None:
    """Watch a cold start until ready, failed, stalled or the deadline; exit with its code.

    One HOST is one server; --worker adds the other nodes of a multi-node server; several HOSTs
    (or --targets-file) are a fleet of independent servers with one table and one result."""
    from coldwatch.commands import run_wait
    from coldwatch.settings import resolve

    _api_key_hint(api_key)
    flags = _given(ctx, skip=("hosts", "targets_file", "config", "profile"), rename={"worker": "workers"})
    targets = _targets(hosts, targets_file)
    if len(targets) > 1:
        raise typer.Exit(_wait_fleet(targets, flags, config, profile))
    one = targets[0] if targets else None
    _RUN["settings"] = s = resolve({**flags, "host": one}, config, profile, target=one)
    raise typer.Exit(int(run_wait(s)))


def _wait_fleet(targets: list[str], flags: dict[str, Any], config: Path | None, profile: str | None) -> int:
    """``wait`` for several HOSTs: a fleet of independent servers, each with its own settings."""
    from coldwatch.commands import run_fleet
    from coldwatch.settings import resolve

    if flags.get("workers"):
        raise ConfigError("--worker: a multi-node server has one head HOST; for several servers use [targets.NAME] workers = [...]")
    _RUN["settings"] = base = resolve(flags, config, profile)
    if base.min_ready and not base.min_ready.endswith("%") and int(base.min_ready) > len(targets):
        raise ConfigError(f"--min-ready: {base.min_ready} targets ready needed, but the fleet has only {len(targets)}")

    def settings_for(t: str) -> Settings:
        return resolve({**flags, "host": t}, config, profile, target=t)

    return int(run_fleet(targets, settings_for, base))


@app.command()
def status(
    ctx: typer.Context,
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
        Optional[str], typer.Option("--output", "-o", metavar="MODE", help="auto | plain | json [default: auto].", show_default=False)
    ] = None,
    accept_new_host_key: AcceptOpt = False,
    insecure: InsecureOpt = False,
    engine: EngineOpt = None,
    container: ContainerOpt = None,
    runtime: RuntimeOpt = None,
    port: PortOpt = None,
    pid: PidOpt = None,
    max_restarts: MaxRestartsOpt = None,
    rules: RulesOpt = None,
    report: ReportOpt = None,
    stacks: Annotated[
        bool, typer.Option("--stacks", help="Also sample every rank's stack (py-spy on the host, else /proc) and print it.")
    ] = False,
) -> None:
    """One snapshot: phase now, GPU memory, HTTP state, last causal log line; no waiting. The
    outcome and exit code are the judge's that `wait` uses (same grace, restart and death rules)."""
    _api_key_hint(api_key)
    from coldwatch.commands import run_status
    from coldwatch.settings import resolve

    flags = _given(ctx, skip=("config", "profile", "stacks"))
    s = resolve(flags, config, profile, target=host)
    _RUN["settings"] = s
    raise typer.Exit(int(run_status(s, stacks=stacks)))


@app.command()
def history(
    target: Annotated[Optional[str], typer.Argument(metavar="TARGET", help="Only this target.", show_default=False)] = None,
    output: OutputOpt = "auto",
    report: Annotated[
        Optional[Path],
        typer.Option("--report", metavar="FILE", help="Also write an HTML page comparing the recorded starts.", show_default=False),
    ] = None,
) -> None:
    """Past cold starts per target with phase durations (the ETA baseline)."""
    from coldwatch.commands import run_history

    _check_output(output, ("auto", "plain", "json", "live"))
    raise typer.Exit(int(run_history(target, output, report)))


DEMO_SCENARIOS = (
    "ready | oom | hang | restart | crash_once | slow | silent_death | error_body | silent_load | jit_busy | hang_load | barrier | nccl"
    " | rank_hang (one rank hangs, the other waits in all_reduce: real rank processes) | rank_loading | rank_busy"
)


@app.command()
def demo(
    scenario: Annotated[str, typer.Option("--scenario", metavar="NAME", help=f"{DEMO_SCENARIOS}.")] = "ready",
    speed: Annotated[
        float, typer.Option("--speed", metavar="FACTOR", help="Time factor of the simulated start (0.5 = twice as fast).")
    ] = 1.0,
    output: Annotated[
        Optional[str],
        typer.Option("--output", "-o", metavar="MODE", help="auto | live | plain | json [default: auto].", show_default=False),
    ] = None,
    check: CheckOpt = None,
    fail_checks: Annotated[bool, typer.Option("--fail-checks", help="Make the simulated server fail the --check requests.")] = False,
    timeout: Annotated[
        Optional[str], typer.Option("--timeout", metavar="DURATION", help="Deadline of the demo [default: 3m].", show_default=False)
    ] = None,
    stall_after: Annotated[
        Optional[str],
        typer.Option(
            "--stall-after",
            metavar="DURATION",
            help="Stalled after this long with no liveness evidence [default: 20s for the hang scenarios, 10m otherwise].",
            show_default=False,
        ),
    ] = None,
    max_restarts: MaxRestartsOpt = None,
    junit: JunitOpt = None,
) -> None:
    """Watch a simulated 8-GPU SGLang cold start (~30 s) with the real wait pipeline."""
    from coldwatch.demo import run_demo
    from coldwatch.sim import SCENARIOS

    if scenario not in SCENARIOS:
        raise ConfigError(f"--scenario: expected one of {', '.join(SCENARIOS)}, got {scenario!r}")
    if not 0.01 <= speed <= 100:
        raise ConfigError(f"--speed: expected a factor between 0.01 and 100, got {speed}")
    default_stall = "20s" if scenario in ("hang", "hang_load", "barrier", "rank_hang", "rank_loading", "rank_busy") else None
    s = _settings(
        _flags(
            output=output,
            check=check,
            timeout=timeout or "3m",
            stall_after=stall_after or default_stall,
            max_restarts=max_restarts,
            interval=0.5,
            junit=junit,
        ),
        None,
        None,
    )
    raise typer.Exit(int(run_demo(scenario, speed, s, fail_checks)))


def interrupted(args: list[str], code: int) -> None:
    """The end of a run a signal stopped: one stderr line, the result line, the JUnit file (each
    once, whoever gets there first: the main thread or the signal's watchdog)."""
    from coldwatch import ending

    if ending.claim("stderr"):
        _err("coldwatch: interrupted" if code == int(ExitCode.INTERRUPTED) else "coldwatch: terminated")
    _finish(args, code, "interrupted (Ctrl-C)" if code == int(ExitCode.INTERRUPTED) else "terminated (SIGTERM)")


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return the exit code. Every error becomes one line and a documented code,
    and, in JSON mode, a final ``result`` line on stdout (for exit 2 and 4 too)."""
    from coldwatch import ending

    ending.reset()
    replaced = ending.install()
    _RUN.clear()
    _RUN["t0"] = time.monotonic()
    args = list(sys.argv[1:] if argv is None else argv)
    ending.finisher = lambda code: interrupted(args, code)
    try:
        return _main(args)
    finally:
        if argv is not None:  # called in-process: the caller's own signal handlers come back
            ending.restore(replaced)


def _main(args: list[str]) -> int:
    from coldwatch import ending

    try:
        rc = app(args=args, standalone_mode=False, prog_name="coldwatch")
        return int(rc) if isinstance(rc, int) else 0
    except typer.Exit as exc:
        return int(exc.exit_code)
    except ColdwatchError as exc:
        _err(f"coldwatch: {exc}")
        _finish(args, exc.exit_code, str(exc))
        return exc.exit_code
    except KeyboardInterrupt:
        interrupted(args, int(ExitCode.INTERRUPTED))
        return int(ExitCode.INTERRUPTED)
    except Terminated:
        interrupted(args, int(ExitCode.TERMINATED))
        return int(ExitCode.TERMINATED)
    except Exception as exc:  # usage errors from the parser, and bugs
        if type(exc).__name__ == "Abort":
            code = ending.ending() or int(ExitCode.INTERRUPTED)
            interrupted(args, code)
            return code
        show = getattr(exc, "show", None)
        if callable(show) and hasattr(exc, "exit_code"):
            show(file=sys.stderr)
            fmt = getattr(exc, "format_message", None)
            _finish(args, int(ExitCode.USAGE), str(fmt() if callable(fmt) else exc))
            return int(ExitCode.USAGE)
        _err(f"coldwatch: internal error ({type(exc).__name__}: {exc}); please report it")
        return 1


_WATCHING = ("wait", "demo", "status")
"""Commands whose output mode and --junit also come from COLDWATCH_* and the config file."""


def _finish(args: list[str], code: int, reason: str) -> None:
    """A run that ended in an error before its verdict still ends like every run: the result
    line on stdout in JSON mode, the workflow command and the JUnit file in CI."""
    from coldwatch import ending
    from coldwatch.render import Sink, ci_sinks
    from coldwatch.render.jsonl import JsonSink
    from coldwatch.verdict import error_verdict, result_line

    command, mode, junit = _requested(args)
    if ending.written("result") and (junit is None or command not in ("wait", "demo") or ending.written("junit")):
        return  # the run reported its own end already
    t = time.monotonic() - _RUN.get("t0", time.monotonic())
    res = result_line(error_verdict(code, reason), t, time.time() - t)
    sinks: list[Sink] = [JsonSink()] if mode == "json" else []
    if command in ("wait", "demo"):
        with contextlib.suppress(ColdwatchError):  # a bad --junit was the error: nothing more to write
            sinks += ci_sinks(junit, os.environ, "plain", _title(args, command))
    s = _RUN.get("settings")
    if command == "wait" and s is not None:  # --report, --metrics, --pushgateway say it too
        from coldwatch.outputs import settings_sinks

        fleet = len(_positional(args[1:])) > 1 or s.targets_file is not None
        with contextlib.suppress(ColdwatchError):  # a bad --report or --metrics was the error
            sinks += settings_sinks(s, "fleet" if fleet else "wait")
    for sink in sinks:
        with contextlib.suppress(Exception):
            sink.emit(res)
            sink.close()


def _title(args: list[str], command: str) -> str:
    s = _RUN.get("settings")
    if s is not None and s.host:
        return str(s.host)
    if command == "wait":
        positional = _positional(args[1:])
        if positional:
            return positional[0]
    return "this machine"


_VALUED = {
    "--unit", "--log-cmd", "--gpu-cmd", "--url", "--model", "--api-key", "--timeout", "--interval", "--stall-after",
    "--pid", "--check", "--config", "--profile", "--output", "-o", "--max-restarts", "--engine", "--rules", "--target",
    "--reconnect-for", "--junit", "--scenario", "--speed", "--container", "--runtime", "--port",
    "--report", "--metrics", "--pushgateway",
}  # fmt: skip


def _positional(args: list[str]) -> list[str]:
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a in _VALUED:
            skip = True
        elif not a.startswith("-"):
            out.append(a)
    return out


def _flag(args: list[str], *names: str) -> str | None:
    """The last value given for an option (``--x V``, ``--x=V``, ``-oV``), leniently."""
    found: str | None = None
    for i, a in enumerate(args):
        for n in names:
            if a == n and i + 1 < len(args):
                found = args[i + 1]
            elif a.startswith(n + "=") and n.startswith("--"):
                found = a[len(n) + 1 :]
            elif len(n) == 2 and a.startswith(n) and len(a) > 2 and not a.startswith("--"):
                found = a[2:]
    return found


def _requested(args: list[str]) -> tuple[str | None, str | None, Path | None]:
    """(command, output mode, --junit) of this run: from its settings when they resolved, else
    read leniently the same way (flag > COLDWATCH_* > profile > config file), ignoring what
    cannot be read: the run is already ending in an error."""
    command = args[0] if args and not args[0].startswith("-") else None
    s = _RUN.get("settings")
    if s is not None:
        from coldwatch.render import choose_output

        return command, choose_output(s.output, sys.stdout), s.junit
    output, junit = _flag(args, "--output", "-o"), _flag(args, "--junit")
    if command in _WATCHING:
        output = output or os.environ.get("COLDWATCH_OUTPUT")
        junit = junit or os.environ.get("COLDWATCH_JUNIT")
        config = _flag(args, "--config") or os.environ.get("COLDWATCH_CONFIG")
        profile = _flag(args, "--profile") or os.environ.get("COLDWATCH_PROFILE")
        if config and (output is None or junit is None):
            data: dict[str, Any] = {}
            from coldwatch.files import CONFIG_LIMIT, read_text

            with contextlib.suppress(OSError, ValueError, ConfigError):
                data = tomllib.loads(read_text(config, CONFIG_LIMIT, "config"))
            prof = data.get("profiles", {}).get(profile, {}) if profile and isinstance(data.get("profiles"), dict) else {}
            for table in (prof, data):
                if isinstance(table, dict):
                    output = output or (table.get("output") if isinstance(table.get("output"), str) else None)
                    junit = junit or (table.get("junit") if isinstance(table.get("junit"), str) else None)
    return command, output, Path(os.path.expanduser(junit)) if junit else None


def _err(msg: str) -> None:
    """One line on stderr. Error text can carry remote text (an SSH banner, a server's answer)."""
    from coldwatch.sanitise import clean

    try:
        sys.stderr.write(clean(msg, 1000) + "\n")
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):
        pass


def entry() -> None:
    from coldwatch import ending

    code = main()
    if code in (int(ExitCode.INTERRUPTED), int(ExitCode.TERMINATED)):
        ending.end(code)  # a fleet's targets still winding down are not waited for
    sys.exit(code)
