"""The exit codes of the contract: one table for every command."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    READY = 0
    USAGE = 2
    FAILED = 3
    UNREACHABLE = 4
    STALLED = 5
    TIMEOUT = 124
    INTERRUPTED = 130
    TERMINATED = 143


MEANING: dict[ExitCode, str] = {
    ExitCode.READY: "ready (and every requested --check passed)",
    ExitCode.USAGE: "usage or configuration error",
    ExitCode.FAILED: "the server failed (fatal log error, process/unit died, restart loop, failed --check)",
    ExitCode.UNREACHABLE: "the host could not be reached or authenticated (SSH, host key)",
    ExitCode.STALLED: "stalled: no liveness evidence for --stall-after",
    ExitCode.TIMEOUT: "not ready by the end: the deadline passed (wait) or the log ended (replay)",
    ExitCode.INTERRUPTED: "interrupted (Ctrl-C); 143 on SIGTERM",
}
