"""One command on its own SSH channel: exec, stdin, a time bound, and telling a drop apart.

:class:`~tao_slurm_tui.remote.connection.Connection` decides what to do when the connection
drops under a command (run it again, or not for ``sbatch``); :func:`exec_command` only reports
it, as :class:`Dropped`, saying whether the command may have been sent.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import asyncssh

from tao_slurm_tui.core.quoting import for_login_shell
from tao_slurm_tui.remote.dial import failure_reason
from tao_slurm_tui.remote.errors import CommandTimeout, RemoteError
from tao_slurm_tui.remote.protocols import CommandResult


class Dropped(Exception):
    """The connection went away under a command."""

    def __init__(self, reason: str, *, started: bool = True) -> None:
        super().__init__(reason)
        self.started = started
        """False only when the command was surely never sent (safe to run again)."""


def short_command(cmd: str, limit: int = 60) -> str:
    """The start of a command line for messages."""
    first = cmd.strip().splitlines()[0] if cmd.strip() else cmd
    return first if len(first) <= limit else first[: limit - 3] + "..."


async def exec_command(
    conn: asyncssh.SSHClientConnection, host: str, cmd: str, data: bytes | None, limit: float
) -> tuple[int, bytes, bytes]:
    """Run ``cmd`` through the login shell on a new channel of ``conn``: (status, out, err).

    ``data`` goes on stdin, then EOF (a command reading stdin must not wait for more).

    Raises:
        CommandTimeout: it did not start, or finish, within ``limit`` seconds (the remote side
            is asked to stop it).
        Dropped: the connection dropped (``started`` False when the channel never opened).
        RemoteError: the server refused to open a channel on a live connection.
    """
    try:
        process = await asyncio.wait_for(
            conn.create_process(for_login_shell(cmd), encoding=None), limit
        )
    except TimeoutError:
        raise CommandTimeout(
            f"{host} did not start `{short_command(cmd)}` within {limit:g} s; try again later."
        ) from None
    except asyncssh.ChannelOpenError as exc:
        if exc.code == asyncssh.OPEN_CONNECT_FAILED:
            # The session channel never opened, so the command was never sent.
            raise Dropped(failure_reason(exc), started=False) from None
        if conn.is_closed():
            raise Dropped(failure_reason(exc)) from None
        raise RemoteError(
            f"{host} refused to start a command ({exc.reason}); try again in a moment."
        ) from None
    except (asyncssh.DisconnectError, OSError) as exc:
        raise Dropped(failure_reason(exc)) from None
    out, err = await _communicate(process, host, cmd, data, limit)
    status = process.returncode
    if status is None:
        if conn.is_closed():
            raise Dropped("the connection closed before the command finished")
        # The server closed the channel without reporting a status (rare; not a drop).
        status = -1
    return status, out, err


async def open_process(
    conn: asyncssh.SSHClientConnection, host: str, cmd: str, **kwargs: Any
) -> asyncssh.SSHClientProcess[Any]:
    """Start a long-running process (``tail -F``) on a new channel of ``conn``, as it is (not
    through :func:`~tao_slurm_tui.core.quoting.for_login_shell`).

    Raises:
        Dropped: the connection dropped while opening the channel.
        RemoteError: the server refused the channel on a live connection.
    """
    try:
        return await conn.create_process(cmd, **kwargs)
    except asyncssh.ChannelOpenError as exc:
        if not conn.is_closed():
            raise RemoteError(
                f"{host} refused to start `{short_command(cmd)}` ({exc.reason})."
            ) from None
        raise Dropped(failure_reason(exc)) from None
    except (asyncssh.DisconnectError, OSError) as exc:
        raise Dropped(failure_reason(exc)) from None


async def _communicate(
    process: asyncssh.SSHClientProcess[bytes],
    host: str,
    cmd: str,
    data: bytes | None,
    limit: float,
) -> tuple[bytes, bytes]:
    try:
        if data:
            process.stdin.write(data)
        # Always send EOF: a command reading stdin must not wait for more.
        process.stdin.write_eof()
        out, err = await asyncio.wait_for(process.communicate(), limit)
    except TimeoutError:
        # Ask the remote side to stop it too (ignored by servers without signal support).
        with contextlib.suppress(OSError, asyncssh.Error):
            process.send_signal("TERM")
        process.close()
        raise CommandTimeout(
            f"`{short_command(cmd)}` on {host} did not finish within {limit:g} s; "
            "raise the timeout or check the cluster."
        ) from None
    except (asyncssh.DisconnectError, asyncssh.ChannelOpenError, OSError) as exc:
        raise Dropped(failure_reason(exc)) from None
    finally:
        process.close()
    assert isinstance(out, bytes) and isinstance(err, bytes)
    return out, err


def decode_result(
    cmd: str, status: int, out: bytes, err: bytes, host: str, check: bool
) -> CommandResult:
    """The decoded result; with ``check`` a failure raises :class:`RemoteError`."""
    result = CommandResult(
        cmd, status, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), host
    )
    if check and not result.ok:
        last = next((ln for ln in reversed(result.stderr.splitlines()) if ln.strip()), "")
        detail = f": {last.strip()}" if last else ""
        raise RemoteError(
            f"`{short_command(cmd)}` failed on {host} with exit status {status}{detail}."
        )
    return result
