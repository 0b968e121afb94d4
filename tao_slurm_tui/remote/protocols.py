"""The seam between the services and the cluster: what a service may ask of a connection.

The services (submit, monitor, logs, history, capacity) take a :class:`Remote` (or one of its
extensions), never a :class:`~tao_slurm_tui.remote.connection.Connection` by name, so tests and
the demo mode can hand them a stand-in that answers from recorded output. This module imports no
SSH library: a stand-in needs nothing but these types.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class CommandResult:
    """The outcome of one remote command."""

    command: str
    """The command line as sent (never contains secrets: those go on stdin)."""
    exit_status: int
    """Exit status; the negated signal number when a signal killed it."""
    stdout: str
    """Standard output (UTF-8, undecodable bytes replaced)."""
    stderr: str
    """Standard error (UTF-8, undecodable bytes replaced)."""
    host: str
    """Login host that ran it."""

    @property
    def ok(self) -> bool:
        """True when the command exited with status 0."""
        return self.exit_status == 0


class Remote(Protocol):
    """What the services need of a :class:`~tao_slurm_tui.remote.connection.Connection` (tests
    and the demo pass stand-ins)."""

    async def run(
        self,
        command: str | Sequence[str],
        *,
        input: str | bytes | None = None,
        timeout: float | None = None,
        check: bool = False,
        retry_on_drop: bool = True,
    ) -> CommandResult: ...


class RemoteFiles(Remote, Protocol):
    """A :class:`Remote` that also writes files (staging)."""

    async def upload_text(self, path: str, content: str, *, mode: int = 0o644) -> None: ...


class FramedRemote(Remote, Protocol):
    """A :class:`Remote` that also runs idempotent commands in one round trip (the monitor)."""

    async def run_framed(
        self, command: str | Sequence[str], *, timeout: float | None = None, check: bool = False
    ) -> CommandResult: ...
