"""A systemd unit: ``systemctl show`` for the state, the journal of the unit's current invocation for
the log (followed on the host by a small python3 poller over libsystemd, ``POLLER``).

The journal is read as JSON (``journalctl -o json -a``): every entry carries its ``__CURSOR``, so after
an SSH drop the follower resumes with ``--after-cursor`` and no line is lost or repeated. The poller
looks for new entries every 50 ms: ``journalctl -f`` only wakes when journald announces a change,
which journald coalesces into one announcement per 250-500 ms, so a fatal line after a quiet spell
reached coldwatch a quarter to a half second late (``python -m benchmarks.journald``). It prints what
``journalctl`` would have printed first (the same command without ``-f``), then continues from its
last cursor; without python3 or libsystemd it is ``journalctl -f`` itself.
"""

from __future__ import annotations

import base64
import json
import re
import zlib

from coldwatch.errors import ConfigError
from coldwatch.evidence import SupervisorState
from coldwatch.hosts.base import q
from coldwatch.probes.parse import ServiceState, parse_systemctl_show
from coldwatch.supervisors.base import SupervisorKind, SupervisorSpec

SERVICE_PROPS = "ActiveState,SubState,Result,NRestarts,MainPID,ExecMainStatus,InvocationID,LoadState,ActiveEnterTimestamp"


class Systemd:
    """A systemd unit: ``systemctl show`` for the state, the unit's invocation for the log."""

    kind = "systemd"
    pid_pattern = r"^MainPID=(\d+)\s*$"
    journal = True

    def __init__(self, unit: str, log_given: bool = False) -> None:
        self.name = unit
        self.log_given = log_given
        """--log-cmd names the log: a unit that does not exist only means there is no supervisor to ask."""

    def state_command(self) -> str:
        return f"systemctl show -p {SERVICE_PROPS} --no-pager -- {q(self.name)}"

    def parse(self, rc: int | None, text: str) -> SupervisorState:
        if rc != 0:
            return SupervisorState(False)
        return systemd_state(parse_systemctl_show(text), self.name)

    def first_state(self, rc: int | None, text: str) -> SupervisorState:
        """A unit that does not exist is the same mistake as a container that does not: exit 2, named
        (with --log-cmd the watch goes on without a supervisor)."""
        st = self.parse(rc, text)
        if st.not_found:
            if self.log_given:
                return SupervisorState(False)
            raise ConfigError(
                f"unit {self.name}: no such unit on the host (systemctl: LoadState=not-found); name it with --unit, "
                "or the log with --log-cmd (and the process with --pid)"
            )
        return st

    def log_command(self, svc: SupervisorState | None, follow: bool, cursor: str | None = None) -> str:
        """The journal of the unit's current invocation (all of the unit's before systemd names one):
        followed by the host-side poller (``journal_follow``), or what is there now."""
        if not follow:
            return self.journalctl(svc, cursor, False)
        if svc is not None and svc.start_id:
            matches: list[list[str]] | None = [[f"_SYSTEMD_INVOCATION_ID={svc.start_id}"]]
        else:
            matches = unit_matches(self.name)
        return journal_follow(self.journalctl(svc, cursor, True), self.journalctl(svc, cursor, False, backlog=True), matches)

    def journalctl(self, svc: SupervisorState | None, cursor: str | None, follow: bool, backlog: bool = False) -> str:
        """``journalctl`` for the current start; ``backlog``: what ``-f`` would print before it follows."""
        fmt = "-f -a -o json --no-pager" if follow else "-a -o json --no-pager"
        if svc is not None and svc.start_id:
            base = f"journalctl _SYSTEMD_INVOCATION_ID={q(svc.start_id)} {fmt}"
        else:
            base = f"journalctl --unit={q(self.name)} {fmt}"  # one argv word: never read as an option
        if cursor:
            return f"{base} --after-cursor={q(cursor)}"
        if svc is not None and svc.start_id:
            return f"{base} --no-tail"
        if svc is not None and svc.since and svc.since != "n/a":
            return f"{base} --no-tail --since {q(since_arg(svc.since))}"
        return f"{base} -n 0" if follow or backlog else f"{base} -n 5000"

    def url(self, port: int | None, engine: str) -> None:
        return None  # the server listens on this host: --port, else --url's default


def systemd_state(svc: ServiceState, unit: str) -> SupervisorState:
    """systemctl show's properties -> the judge's supervisor state."""
    if not svc.known:
        return SupervisorState(False)
    if svc.result in ("signal", "core-dump", "watchdog"):
        kind = "killed"
    elif svc.result == "oom-kill":
        kind = "oom"
    else:
        kind = "exited"
    status = f", status={svc.exec_status}" if svc.exec_status is not None else ""
    return SupervisorState(
        known=True,
        running=svc.active in ("active", "activating", "reloading"),
        dead=svc.dead,
        waiting=svc.sub == "auto-restart" or svc.active == "activating",
        restarts=svc.restarts,
        start_id=svc.invocation,
        since=svc.active_since,
        main_pid=svc.main_pid,
        death_kind=kind if svc.dead else None,
        death_reason=f"unit {unit} is {svc.active}/{svc.sub} (Result={svc.result}{status})",
        not_found=svc.load == "not-found",
    )


def since_arg(stamp: str) -> str:
    """'Sun 2026-11-29 18:24:46 UTC' -> '2026-11-29 18:24:46 UTC' (journalctl's --since form)."""
    parts = stamp.split()
    if parts and parts[0].isalpha() and len(parts[0]) == 3:
        parts = parts[1:]
    return " ".join(parts)


# The host side of the journal follower: argv[1] is a JSON object {"backlog": command, "follow":
# command, "matches": [[FIELD=VALUE, ...], ...] (groups OR-ed, matches in a group AND-ed), "poll": s}.
POLLER = r"""
import ctypes, json, os, subprocess, sys
cfg = json.loads(sys.argv[1])
def fallback():
    sys.stdout.flush()
    os.execvp("sh", ["sh", "-c", "exec " + cfg["follow"]])
try:
    lib = ctypes.CDLL("libsystemd.so.0")
    j = ctypes.c_void_p()
    if lib.sd_journal_open(ctypes.byref(j), 1) < 0:
        raise OSError("sd_journal_open")
except (OSError, AttributeError):
    fallback()
for i, group in enumerate(cfg["matches"]):
    if i:
        lib.sd_journal_add_disjunction(j)
    for m in group:
        b = m.encode()
        lib.sd_journal_add_match(j, b, ctypes.c_size_t(len(b)))
libc = ctypes.CDLL(None)
libc.free.argtypes = [ctypes.c_void_p]
cur = ctypes.c_void_p()
def cursor():
    if lib.sd_journal_get_cursor(j, ctypes.byref(cur)) < 0 or not cur.value:
        return None
    c = ctypes.string_at(cur)
    libc.free(cur)
    return c
lib.sd_journal_seek_tail(j)
before = cursor() if lib.sd_journal_previous(j) > 0 else None
last = None
out = sys.stdout.buffer
p = subprocess.Popen(["sh", "-c", "exec " + cfg["backlog"]], stdout=subprocess.PIPE)
for line in p.stdout:
    i = line.find(b'"__CURSOR":"')
    if i >= 0:
        last = line[i + 12 : line.find(b'"', i + 12)]
    out.write(line)
out.flush()
p.wait()
def anchor(at):
    # every round starts again from the last entry printed (one bisection) instead of trusting the
    # iterator's end-of-journal state across journald's writes and file rotations
    if at:
        lib.sd_journal_seek_cursor(j, at)
        if lib.sd_journal_next(j) > 0 and lib.sd_journal_test_cursor(j, at) <= 0:
            lib.sd_journal_previous(j)
    else:
        lib.sd_journal_seek_head(j)
last = last or before
data = ctypes.c_void_p(); size = ctypes.c_size_t(); usec = ctypes.c_uint64()
poll = ctypes.c_uint64(int(float(cfg.get("poll", 0.05)) * 1e6))
while True:
    anchor(last)
    while lib.sd_journal_next(j) > 0:
        last = cursor()
        e = {"__CURSOR": (last or b"").decode("ascii", "replace")}
        if lib.sd_journal_get_realtime_usec(j, ctypes.byref(usec)) >= 0:
            e["__REALTIME_TIMESTAMP"] = str(usec.value)
        if lib.sd_journal_get_data(j, b"MESSAGE", ctypes.byref(data), ctypes.byref(size)) >= 0:
            raw = ctypes.string_at(data, size.value)[8:]
            try:
                e["MESSAGE"] = raw.decode("utf-8")
            except UnicodeDecodeError:
                e["MESSAGE"] = list(raw)
        out.write(json.dumps(e, separators=(",", ":")).encode() + b"\n")
    out.flush()
    lib.sd_journal_wait(j, poll)
"""

_UNIT_OK = re.compile(r"^[A-Za-z0-9:_.\\@-]+$")
COREDUMP_ID = "fc2e22bc6ee647b6b90729ab34a250b1"


def unit_matches(unit: str) -> list[list[str]] | None:
    """journalctl's matches for ``--unit=UNIT`` (the unit's own lines, its core dumps, PID 1's and other
    root daemons' messages about it); None for a glob or an odd name (journalctl itself follows it)."""
    if not _UNIT_OK.match(unit) or unit.startswith("-"):
        return None
    if "." not in unit:
        unit += ".service"
    return [
        [f"_SYSTEMD_UNIT={unit}"],
        [f"MESSAGE_ID={COREDUMP_ID}", "_UID=0", f"COREDUMP_UNIT={unit}"],
        ["_PID=1", f"UNIT={unit}"],
        ["_UID=0", f"OBJECT_SYSTEMD_UNIT={unit}"],
    ]


def journal_follow(follow: str, backlog: str, matches: list[list[str]] | None, poll: float = 0.05) -> str:
    """The host command that follows the journal: the python3 poller, or ``follow`` (journalctl -f)
    without python3 on the host or without matches to give it."""
    if matches is None:
        return follow
    code = base64.b64encode(zlib.compress(POLLER.encode(), 9)).decode()
    cfg = json.dumps({"follow": follow, "backlog": backlog, "matches": matches, "poll": poll})
    unpack = "import base64, sys, zlib; exec(zlib.decompress(base64.b64decode(sys.argv.pop(1))))"
    return f"if command -v python3 >/dev/null 2>&1; then exec python3 -u -c {q(unpack)} {code} {q(cfg)}; else exec {follow}; fi"


def choose(spec: SupervisorSpec) -> Systemd:
    """Every watch no other supervisor claims: the unit (--unit), its journal unless --log-cmd names the log."""
    return Systemd(spec.unit, log_given=spec.log_cmd is not None)


KIND = SupervisorKind("systemd", 100, choose)
