"""Every parser that takes remote output survives anything: a few thousand examples each."""

from __future__ import annotations

import contextlib
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coldwatch.evidence import ProcSample
from coldwatch.http import BODY_CAP, completion_ok
from coldwatch.phases import FAILURE_KINDS, PHASES
from coldwatch.probes.log import LogSource, journal_message
from coldwatch.probes.parse import parse_gpu_csv, parse_proc_sample, parse_systemctl_show
from coldwatch.replay import replay
from coldwatch.verdict import OUTCOME_OF_CODE, Outcome, Verdict

MANY = settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
cells = st.one_of(
    st.integers(-5, 10**7).map(str), st.sampled_from(["[N/A]", "N/A", "", " ", "nan", "1e400", "[Not Supported]"]), st.text(max_size=8)
)


@MANY
@given(st.lists(st.lists(cells, max_size=6).map(", ".join), max_size=10).map("\n".join))
def test_nvidia_smi_csv(text: str) -> None:
    """Garbage, [N/A] and short rows: samples with known fields, problems named, no exception."""
    samples, problems = parse_gpu_csv(text)
    for s in samples:
        assert s.used_mib is None or 0 <= s.used_mib <= 10**12
    assert isinstance(problems, list)


@MANY
@given(st.text(max_size=400))
def test_nvidia_smi_any_text(text: str) -> None:
    """Any text at all: rows with a GPU index, and a problem named for every row that is not one."""
    samples, problems = parse_gpu_csv(text)
    assert all(isinstance(g.index, int) and g.index >= 0 for g in samples), samples
    assert all(isinstance(p, str) and p for p in problems)


@MANY
@given(
    st.dictionaries(
        st.sampled_from(["ActiveState", "SubState", "NRestarts", "MainPID", "InvocationID", "Result", "x"]), st.text(max_size=20)
    ).map(lambda d: "\n".join(f"{k}={v}" for k, v in d.items()))
)
def test_systemctl_show(text: str) -> None:
    """Any property soup: a state, never an exception; numbers only when they are numbers."""
    svc = parse_systemctl_show(text)
    assert svc.restarts is None or svc.restarts >= 0
    assert svc.main_pid is None or svc.main_pid > 0


@MANY
@given(
    st.one_of(
        st.text(max_size=300),
        st.dictionaries(
            st.text(max_size=6), st.one_of(st.integers(), st.text(max_size=5), st.none(), st.lists(st.integers(), max_size=3))
        ).map(json.dumps),
    )
)
def test_proc_sample(text: str) -> None:
    """The process sampler's JSON line, or anything else: a sample or None, with sane counters."""
    sample = parse_proc_sample(text)
    assert sample is None or isinstance(sample, ProcSample)
    if sample is not None:
        assert isinstance(sample.alive, bool) and len(sample.children) <= 64 and len(sample.cmdline) <= 2000


@MANY
@given(
    st.one_of(
        st.binary(max_size=300),
        st.recursive(
            st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=10)),
            lambda c: st.one_of(
                st.lists(c, max_size=3), st.dictionaries(st.sampled_from(["choices", "text", "finish_reason", "error", "x"]), c, max_size=4)
            ),
            max_leaves=12,
        ).map(lambda v: json.dumps(v).encode()),
    )
)
def test_completion_bodies_never_ready_unless_real(body: bytes) -> None:
    """Any body: ready only with choices[0].text a string and finish_reason set, and never an error object."""
    ok, why = completion_ok(body)
    if ok:
        data = json.loads(body)
        assert isinstance(data["choices"][0]["text"], str) and data["choices"][0]["finish_reason"] and not data.get("error")
    assert isinstance(why, str)


def test_oversized_body_is_not_ready() -> None:
    """A valid completion padded past the cap is refused (read at most BODY_CAP)."""
    body = json.dumps({"choices": [{"text": "x" * BODY_CAP, "finish_reason": "length"}]}).encode()
    assert completion_ok(body) == (False, f"body larger than {BODY_CAP // 1024} KB")


@MANY
@given(
    st.one_of(
        st.binary(max_size=200),
        st.dictionaries(
            st.sampled_from(["MESSAGE", "__CURSOR"]),
            st.one_of(st.text(max_size=30), st.lists(st.integers(-3, 300), max_size=20), st.none()),
        ).map(lambda d: json.dumps(d).encode()),
    )
)
def test_journal_json_entries(entry: bytes) -> None:
    """journalctl -o json lines: MESSAGE as str, list of ints or null, or junk."""
    msg = journal_message(entry)
    assert msg is None or isinstance(msg, bytes)
    src = LogSource(None, "u", None)
    list(src.records([entry + b"\n"]))


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.binary(max_size=200), max_size=10))
def test_log_normaliser_bytes(chunks: list[bytes]) -> None:
    """The whole log path (split, unwrap, classify) on arbitrary bytes: a verdict of the vocabulary,
    its exit code the outcome's, events in time order and the result line last."""
    events: list[dict[str, object]] = []
    j, v = replay(chunks, on_event=events.append)
    _verdict_invariants(v, j.result(j.now), events)


@MANY
@given(st.text(alphabet=st.sampled_from("0123456789²³¹٣%|/: []abcit/s\r\n"), max_size=80))
def test_bar_like_text_with_unicode_digits(text: str) -> None:
    """Bar-shaped text with superscript and non-ASCII digits (isdigit but not int-able): a verdict, never a crash."""
    events: list[dict[str, object]] = []
    j, v = replay([text.encode()], on_event=events.append)
    _verdict_invariants(v, j.result(j.now), events)


@MANY
@given(st.text(max_size=30))
def test_ssh_destinations(dest: str) -> None:
    """Any destination string: parsed or a ConfigError, never another exception."""
    from coldwatch.errors import ConfigError
    from coldwatch.hosts.ssh import parse_destination

    with contextlib.suppress(ConfigError):
        user, host, port = parse_destination(dest)
        assert host and (port is None or 0 < port < 65536), (dest, user, host, port)


def _verdict_invariants(v: Verdict, res: dict[str, Any], events: list[dict[str, Any]]) -> None:
    assert v.outcome in set(Outcome), v.outcome
    assert OUTCOME_OF_CODE[int(v.exit_code)] == v.outcome or (v.outcome, v.exit_code) == ("incomplete", 124), v
    assert v.phase is None or v.phase in PHASES, v.phase
    assert v.failure_kind is None or v.failure_kind in FAILURE_KINDS, v.failure_kind
    ts = [e["t"] for e in events if isinstance(e.get("t"), (int, float))]
    assert ts == sorted(ts), "events in time order"
    assert res["event"] == "result" and res["schema"] == 1 and res["outcome"] == v.outcome
