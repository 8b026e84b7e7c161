"""Supervisors as a package: each kind in its own module, found by the registry, each owning the
command that prints the current start's log (the unit's journal, a container's ``logs``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from coldwatch.errors import ConfigError
from coldwatch.evidence import SupervisorState
from coldwatch.normalise import Normaliser, split_records
from coldwatch.probes.log import LogSource
from coldwatch.supervisors import Container, NoSupervisor, Systemd, kinds, server_url, supervisor_for
from coldwatch.supervisors.systemd import journal_follow, since_arg, unit_matches


def test_the_kinds_are_found_from_the_package_in_the_order_they_are_asked() -> None:
    """Every module's KIND, no hand list: a named container is asked first, systemd (the fallback) last."""
    names = [k.name for k in kinds()]
    assert {"container", "none", "systemd"} <= set(names) and len(set(names)) == len(names)
    assert names[0] == "container" and names[-1] == "systemd"
    assert names.index("none") < names.index("systemd")


def test_the_kinds_are_asked_by_their_order_not_by_their_file_names(monkeypatch: pytest.MonkeyPatch) -> None:
    import pkgutil

    import coldwatch.supervisors as package

    listed = list(pkgutil.iter_modules(package.__path__))
    monkeypatch.setattr(pkgutil, "iter_modules", lambda path: reversed(listed))
    assert [k.name for k in kinds()][0] == "container" and [k.name for k in kinds()][-1] == "systemd"
    assert supervisor_for("u", "tail -F /v.log", 7).kind == "none"


@pytest.mark.parametrize(
    ("args", "kind"),
    [
        (("vllm.service", None, None, None), "systemd"),
        (("vllm.service", "tail -F /var/log/v.log", None, None), "systemd"),  # the unit still says if it lives
        (("vllm.service", "tail -F /var/log/v.log", 4242, None), "none"),
        (("vllm.service", None, 4242, "vllm"), "container"),
        (("vllm.service", "docker logs -f vllm", 4242, "vllm"), "container"),
    ],
)
def test_the_first_kind_that_claims_the_watch_supervises_it(args: tuple[str, str | None, int | None, str | None], kind: str) -> None:
    assert supervisor_for(*args).kind == kind


def test_the_units_journal_is_scoped_to_its_invocation_then_resumed_after_the_cursor() -> None:
    sd = Systemd("sglang.service")
    assert sd.log_command(None, False) == "journalctl --unit=sglang.service -a -o json --no-pager -n 5000"
    since = SupervisorState(True, running=True, since="Tue 2026-12-01 09:00:00 UTC")
    assert sd.log_command(since, False).endswith("--no-tail --since '2026-12-01 09:00:00 UTC'")
    inv = SupervisorState(True, running=True, start_id="4f0c")
    follow = sd.log_command(inv, True)
    assert "_SYSTEMD_INVOCATION_ID=4f0c" in follow and "exec python3" in follow  # the host-side poller
    assert sd.log_command(inv, False, cursor="s=1;i=2").endswith("--after-cursor='s=1;i=2'")


def test_without_matches_the_journal_is_journalctl_follow_itself() -> None:
    assert unit_matches("sglang-*.service") is None  # a glob: journalctl resolves it
    assert journal_follow("journalctl -f --unit=x", "journalctl --unit=x", None) == "journalctl -f --unit=x"
    assert unit_matches("sglang") == [
        ["_SYSTEMD_UNIT=sglang.service"],
        ["MESSAGE_ID=fc2e22bc6ee647b6b90729ab34a250b1", "_UID=0", "COREDUMP_UNIT=sglang.service"],
        ["_PID=1", "UNIT=sglang.service"],
        ["_UID=0", "OBJECT_SYSTEMD_UNIT=sglang.service"],
    ]
    assert since_arg("Sun 2026-11-29 18:24:46 UTC") == "2026-11-29 18:24:46 UTC"


def test_the_log_source_follows_the_supervisors_own_log_unless_log_cmd_names_one() -> None:
    journal = LogSource(None, "sglang.service", None)
    assert journal.journal and journal.command(False).startswith("journalctl --unit=sglang.service")
    c = Container("vllm", "podman")
    own = LogSource(None, "x", SupervisorState(True, running=True, since="2026-12-01T09:00:00.5Z"), c)
    assert not own.journal
    assert own.command(True) == "podman logs -f --timestamps --since 2026-12-01T09:00:00.5Z -- vllm 2>&1"
    given = LogSource("tail -F /v.log", "sglang.service", None, Systemd("sglang.service"))
    assert not given.journal and given.command(True) == "tail -F /v.log" and given.command(False) == "timeout 5 tail -F /v.log"


def test_a_bare_process_has_no_log_of_its_own() -> None:
    with pytest.raises(ConfigError, match="--log-cmd"):
        NoSupervisor("pid 7").log_command(None, True)


def test_the_url_is_the_supervisors_when_no_url_names_it() -> None:
    default = "http://127.0.0.1:30000"
    assert server_url("http://gpu:9", True, Container("c"), 8000, "vllm") == ("http://gpu:9", True)
    assert server_url(default, False, Systemd("u"), 8001, "auto") == ("http://127.0.0.1:8001", True)
    assert server_url(default, False, Systemd("u"), None, "auto") == (default, True)
    c = Container("c", "docker")
    c.ports = {"8000/tcp": [{"HostIp": "0.0.0.0", "HostPort": "18000"}]}
    assert server_url(default, False, c, None, "vllm") == ("http://127.0.0.1:18000", False)
    with pytest.raises(ConfigError, match="port 30000 is not published"):
        server_url(default, False, c, None, "sglang")


def test_a_plain_log_cut_anywhere_by_a_drop_resumes_with_every_record_once() -> None:
    """A `tail -n +1 -F` follower cut at any byte of a real log with tqdm redraws, then re-run from the
    start: the records handed on are the log's own, each once, none cut short (the CI failure: a
    follower cut inside a bar redraw had handed on half the redraw as a record of its own)."""
    data = (Path(__file__).parent / "fixtures/logs/shared/010-sglang-qwen3-14b-tp2-graph-capture-in-progress.log").read_bytes()
    want = list(split_records([data]))
    assert b"\r" in data and len(want) > 50
    for cut in range(1, len(data), 13):
        source = LogSource("tail -n +1 -F /v.log", "sglang.service", None)
        first = list(source.records([data[:cut]], hold_tail=True))
        source.resume()
        again = list(source.records([data], hold_tail=True))
        rest = source.rest()
        assert first + again + ([rest] if rest else []) == want, cut


def test_a_plain_log_that_ends_by_itself_keeps_its_unterminated_last_line() -> None:
    source = LogSource("cat /v.log", "sglang.service", None)
    assert list(source.records([b"a\nRuntimeError: CUDA out of memory"], hold_tail=True)) == [b"a"]
    assert source.rest() == b"RuntimeError: CUDA out of memory" and source.rest() is None and source.seen == 2


def test_a_follower_replaced_by_a_reconnect_reads_nothing_more() -> None:
    """The CI failure behind 157 lines of 156: the old follower still had buffered lines when the reconnect
    took its count for the new follower's skip; what it read after that was handed on and then read again
    by the new follower. Once replaced (``live`` false) it counts and hands on nothing."""
    source = LogSource("tail -n +1 -F /v.log", "sglang.service", None)
    current = [True]
    old = source.records(iter([b"a\nb\n", b"c\nd\n"]), hold_tail=True, live=lambda: current[0])
    got = [next(old), next(old)]
    current[0] = False  # the reconnect: the follower is stale, then the count is taken
    source.resume()
    got += list(old)
    got += list(source.records([b"a\nb\nc\nd\n"], hold_tail=True))
    assert got == [b"a", b"b", b"c", b"d"]


def test_a_reconnect_mid_bar_reads_the_same_lines_as_one_follower() -> None:
    """The log's lines through one normaliser kept across the reconnect are the lines of one reading of
    the whole log, wherever the drop fell: a fresh normaliser after a drop mid-bar showed a redraw the
    continuous reading thins out (the CI failure's last cause: 157 lines judged of 156)."""
    bar = b"".join(
        b"Loading safetensors checkpoint shards: %d%% Completed | %d/200 [00:%02d<00:10, 3.0it/s]\r" % (i // 2, i, i % 60)
        for i in range(1, 201)
    )
    data = b"[2026-12-01 10:00:00 TP0] Load weight begin. avail mem=70.00 GB\n" + bar + b"\n[2026-12-01 10:01:00 TP0] Load weight end.\n"
    one = Normaliser()
    want = [ln.text for r in split_records([data]) for ln in one.lines(r)]
    assert len(want) < 40  # the redraws are thinned
    for cut in range(1, len(data), 97):
        source = LogSource("tail -n +1 -F /v.log", "sglang.service", None)
        got = [ln.text for r in source.records([data[:cut]], hold_tail=True) for ln in source.norm.lines(r)]
        source.resume()
        got += [ln.text for r in source.records([data], hold_tail=True) for ln in source.norm.lines(r)]
        rest = source.rest()
        got += [ln.text for ln in source.norm.lines(rest)] if rest else []
        assert got == want, cut
