"""Errors the user sees as one plain sentence, with the CLI's exit code.

Exit codes: 0 success, 1 operation failed, 2 bad input.
"""

from __future__ import annotations


class TaoError(Exception):
    """An error meant for the user: ``str(error)`` is one plain sentence saying what to do."""

    exit_code = 1


class BadInput(TaoError):
    """The user's input (a flag, a spec file, a form field) is wrong; exit code 2."""

    exit_code = 2


class OperationFailed(TaoError):
    """The operation could not be done (remote failure, SLURM refusal); exit code 1."""

    exit_code = 1


class ConfigError(BadInput):
    """A configuration problem (file, profile, environment override), in one sentence; exit 2."""
