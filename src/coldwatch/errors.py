"""Errors that stop observation. Each maps to one exit code in cli.py; normal cold-start states
(connection refused, 503, silence) are events, never exceptions."""

from __future__ import annotations


class ColdwatchError(Exception):
    """Base: a one-line message for the user."""

    exit_code = 2


class ConfigError(ColdwatchError):
    """Bad usage, flag, config or rules file (exit 2)."""

    exit_code = 2


class UnreachableError(ColdwatchError):
    """The host could not be reached or authenticated (exit 4)."""

    exit_code = 4


class Terminated(BaseException):
    """SIGTERM arrived; raised in the main thread so every resource is closed (exit 143)."""
