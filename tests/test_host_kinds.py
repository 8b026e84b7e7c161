"""Host kinds are chosen by the destination's scheme and built from a host spec."""

from __future__ import annotations

from conftest import coldwatch

from coldwatch.hosts import HOSTS, HostSpec, open_host, register, scheme_of
from coldwatch.settings import Settings
from coldwatch.testing import FakeHost


def test_scheme_picks_the_kind() -> None:
    """No HOST is this machine, a bare destination or alias is SSH, SCHEME://… is that kind."""
    assert [scheme_of(d) for d in (None, "", "gpu1", "me@gpu1:2222", "k8s://ns/pod")] == ["local", "local", "ssh", "ssh", "k8s"]


def test_a_registered_kind_is_built_from_the_spec_alone() -> None:
    """A kind gets the destination and how to reach it, not the whole configuration."""
    seen: list[HostSpec] = []

    def fake(spec: HostSpec) -> FakeHost:
        seen.append(spec)
        return FakeHost(spec.destination or "")

    register("fake", fake)
    try:
        s = Settings(host="fake://rack3/gpu7", connect_timeout=3.0)
        host = open_host(s)
        assert host.name == "fake://rack3/gpu7"
        assert seen == [HostSpec("fake://rack3/gpu7", connect_timeout=3.0)]
    finally:
        HOSTS.pop("fake")


def test_an_unknown_scheme_is_a_usage_error() -> None:
    """A destination with a scheme no host kind serves: one line, exit 2, no traceback."""
    r = coldwatch("status", "nosuch://x/y", "--log-cmd", "true", "-o", "json")
    err = r.stderr.decode()
    assert r.returncode == 2, err
    assert "no host kind for nosuch://" in err and "Traceback" not in err
