"""Who answers on the probed port, and where the log says the server listens.

A stale server still holding the port would answer for this start: its completions never count as
ready. A process outside the server's tree that serves the port (a proxy) is probed through. A ready
answer that comes before the first process sample is held until that sample says who answered.
"""

from __future__ import annotations

import re

from coldwatch.evidence import ProbeNow, ProcSample
from coldwatch.judging.outbox import Outbox

SERVER_NAMES = (
    "python",
    "sglang",
    "vllm",
    "VLLM",
    "uvicorn",
    "ray::",
    "trtllm",
    "text-generation",
    "lmdeploy",
    "tritonserver",
    "llama-server",
)
"""Process names of inference servers: one of these holding the probed port is another server."""
LISTEN = re.compile(r"(?:Uvicorn running on|API server(?: \d+)? on) https?://(\[[0-9a-fA-F:]+\]|[\w.-]+):(\d{1,5})\b")
"""Where the server says it listens (uvicorn's line, vLLM's API server line)."""


class PortRule:
    """The port-holder rule and the listen-port note."""

    def __init__(self, out: Outbox, port: int | None, listen_port: int | None) -> None:
        self.out = out
        self.port = port
        """The probed port when the host can see who holds it (``ServedAt`` moves it)."""
        self.listen_port = listen_port
        self.foreign: tuple[int, str] | None = None
        """(pid, name) of another server holding the port, as the last process sample saw it."""
        self.held = False
        """A ready answer is held back until a process sample says who answered."""
        self.note = ""
        """The log says the server listens on another port than the probed one (said at once, and in the verdict)."""

    def line(self, text: str, t: float) -> None:
        """A log line: say once when the server logs that it listens on another port than the probed one."""
        if not self.listen_port or ("running on" not in text and "server" not in text):
            return
        m = LISTEN.search(text)
        if m is None or int(m.group(2)) == self.listen_port:
            return
        self.note = f"the log says the server listens on port {m.group(2)} ({m.group(0)[-60:]}), but port {self.listen_port} is probed"
        self.out.warn(f"listen{m.group(2)}", self.note + ": check --url or --port", t)

    def holder(self, pid: int, sample: ProcSample, t: float) -> None:
        """Who listens on the probed port, by a live process sample of the server ``pid``."""
        self.foreign = None
        if sample.port == "other" and sample.owner_pid is not None:
            name = sample.owner_name or "?"
            # a server listening since before this start began (a container this start launched,
            # e.g. `docker run --network host`, is younger than the server's root process)
            if name.startswith(SERVER_NAMES) and sample.owner_older:
                self.foreign = (sample.owner_pid, name)
                self.out.warn(
                    f"foreign{sample.owner_pid}",
                    f"port {self.port} is held by {name} (pid {sample.owner_pid}), not by the server (pid {pid}): "
                    "its answers do not count as ready, and the server will fail to bind the port",
                    t,
                )
            else:
                self.out.warn(
                    f"front{sample.owner_pid}",
                    f"port {self.port} is served by {name} (pid {sample.owner_pid}), outside the server's process tree; probing through it",
                    t,
                )
        if self.held and self.foreign is None:
            self.held = False
            self.out.act(ProbeNow())  # an answer held back can count now: probe again at once

    def holds(self, pid: int | None, sampled: bool, t: float) -> bool:
        """Whether a completion served now must be held back (``sampled``: a process sample came, or
        none can): another server answered, or who answered is not known yet."""
        if self.foreign is not None:
            fpid, fname = self.foreign
            self.out.warn(f"foreign-answer{fpid}", f"the URL answered a completion, but from {fname} (pid {fpid}), not the server", t)
            self.held = True
            return True
        if self.port is not None and pid is not None and not sampled:
            self.held = True  # who holds the port is not known yet; the first process sample comes at once
            return True
        return False
