"""One long-lived POSIX shell per SSH connection, so a command costs one network round trip.

``Connection.run`` opens a session channel and then asks the server to exec the command: two
round trips before the first byte of output. A shell kept open on its own channel needs one:
the command line goes down the shell's stdin and the output comes back, framed.

- Nothing is installed on the cluster: the channel runs ``exec sh`` (any login shell, csh
  included, can exec it) and every command runs as ``( eval 'CMD' ) </dev/null`` -- in a
  subshell, so ``exit``, ``cd`` or variables cannot change the shell, and with stdin from
  /dev/null, so no command can eat the next command lines.
- Framing: after the command the shell prints ``\\n<marker> <exit status>\\n`` on stdout and
  ``\\n<marker>\\n`` on stderr. stdout and stderr stay apart (two SSH streams, each read up to
  its marker). The marker is random per shell plus a sequence number, so no output can forge it.
- One command at a time (a lock): two commands never interleave.
- A command that does not finish in time kills the shell (:class:`ShellTimeout`); the next
  command starts a new one, so whatever the old one prints later cannot pollute it. A cancelled
  caller does the same.
- A shell belongs to one asyncssh connection; the caller makes a new one after a reconnect.
- Where the login host does not let us start ``sh`` (a ForceCommand, a restricted shell, no
  more session channels), or the shell never answers its first handshake,
  :class:`ShellUnavailable` tells the caller to use a plain exec instead.

The first command on a new shell is sent together with the handshake (which skips whatever a
login rc file prints), so starting the shell costs the channel's round trips only once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Awaitable
from typing import Any, TypeVar

import asyncssh

from tao_slurm_tui.core.quoting import quote

__all__ = ["RemoteShell", "ShellLost", "ShellSlot", "ShellTimeout", "ShellUnavailable"]

log = logging.getLogger(__name__)

A = TypeVar("A")
B = TypeVar("B")

SHELL_COMMAND = "exec sh"
"""What the shell's channel runs (through the user's login shell, whatever it is)."""
WINDOW = 64 * 1024 * 1024
"""The shell channel's receive window. asyncssh's default (2 MiB) makes a command printing more
than that (squeue over a queue of ~10,000 jobs) stall for window adjustments, each a round
trip; the window is flow-control credit, not a buffer (output is read as it arrives)."""


class ShellUnavailable(Exception):
    """The login host does not allow a long-lived ``sh`` on this connection; use a plain exec."""


class ShellLost(Exception):
    """The shell (or the connection under it) went away while a command was sent or running."""


class ShellTimeout(Exception):
    """The command did not finish in time; the shell was killed (the next command starts one)."""


class RemoteShell:
    """A long-lived ``sh`` on one asyncssh connection that runs framed commands one at a time."""

    def __init__(self, conn: asyncssh.SSHClientConnection) -> None:
        """Prepare (but do not start) a shell on ``conn``; the first :meth:`run` starts it."""
        self.conn = conn
        """The asyncssh connection this shell lives on."""
        self.starts = 0
        """Shells started so far (a new one after every timeout or loss)."""
        self.commands = 0
        """Commands run so far."""
        self._process: asyncssh.SSHClientProcess[bytes] | None = None
        self._token = secrets.token_hex(8)
        self._seq = 0
        self._lock = asyncio.Lock()
        self._closed = False

    @property
    def running(self) -> bool:
        """True while a shell process is open (between commands it waits on stdin)."""
        process = self._process
        return process is not None and not process.is_closing()

    async def run(self, command: str, timeout: float) -> tuple[int, bytes, bytes]:
        """Run ``command`` (a shell command line) and return ``(exit status, stdout, stderr)``.

        Raises:
            ShellUnavailable: the shell could not be started or never answered its handshake.
            ShellLost: the shell or the connection went away; whether the command ran is unknown.
            ShellTimeout: no answer within ``timeout`` seconds; the shell was killed.
        """
        async with self._lock:
            if self._closed:
                raise ShellLost("the shell was closed")
            fresh = not self.running
            if fresh:
                process = await self._start(timeout)
            else:
                assert self._process is not None
                process = self._process
            self._seq += 1
            mark = f"@@tao-sh:{self._token}:{self._seq}".encode("ascii")
            hello = f"@@tao-sh:{self._token}:hello".encode("ascii")
            text = frame(command, mark.decode("ascii"))
            if fresh:
                text = _hello_line(hello.decode("ascii")) + text
            try:
                process.stdin.write(text.encode("utf-8"))
            except (OSError, asyncssh.Error) as exc:
                self._kill()
                error = ShellUnavailable if fresh else ShellLost
                raise error(str(exc) or "write failed") from None
            greeted = not fresh
            try:
                async with asyncio.timeout(timeout):
                    if fresh:
                        await _both(
                            process.stdout.readuntil(hello + b"\n"),
                            process.stderr.readuntil(hello + b"\n"),
                        )
                        greeted = True
                    result = await _read_framed(process, mark)
            except TimeoutError:
                self._kill()
                if not greeted:
                    raise ShellUnavailable("no answer to the handshake") from None
                raise ShellTimeout(f"no answer within {timeout:g} s") from None
            except (asyncio.IncompleteReadError, asyncssh.Error, OSError, ValueError) as exc:
                self._kill()
                why = _why(exc)
                if not greeted:
                    raise ShellUnavailable(why) from None
                raise ShellLost(why) from None
            except BaseException:
                # Cancelled mid-command: the shell's state is unknown, start over next time.
                self._kill()
                raise
            self.commands += 1
            return result

    async def _start(self, timeout: float) -> asyncssh.SSHClientProcess[bytes]:
        try:
            process = await asyncio.wait_for(
                self.conn.create_process(SHELL_COMMAND, encoding=None, window=WINDOW), timeout
            )
        except TimeoutError:
            raise ShellUnavailable(f"the shell did not start within {timeout:g} s") from None
        except asyncssh.ChannelOpenError as exc:
            if self.conn.is_closed():
                raise ShellLost(_why(exc)) from None
            raise ShellUnavailable(_why(exc)) from None
        except (asyncssh.Error, OSError) as exc:
            raise ShellLost(_why(exc)) from None
        self._process = process
        self.starts += 1
        return process

    def _kill(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        # Ask the server to stop it (ignored where signals are not supported); closing the
        # channel ends the shell anyway once its command writes or exits.
        with contextlib.suppress(OSError, asyncssh.Error):
            process.send_signal("KILL")
        process.close()

    def close(self) -> None:
        """Stop the shell; later :meth:`run` calls raise :class:`ShellLost`."""
        self._closed = True
        self._kill()


def frame(command: str, mark: str) -> str:
    """The line sent for one command: run it in a subshell, then print the markers."""
    return (
        f"( eval {quote(command)} ) </dev/null; "
        f"printf '\\n%s %s\\n' {quote(mark)} \"$?\"; printf '\\n%s\\n' {quote(mark)} >&2\n"
    )


def _hello_line(hello: str) -> str:
    # Marks the end of anything a login rc file printed on either stream.
    return f"printf '%s\\n' {quote(hello)}; printf '%s\\n' {quote(hello)} >&2\n"


async def _read_framed(
    process: asyncssh.SSHClientProcess[Any], mark: bytes
) -> tuple[int, bytes, bytes]:
    out_sep = b"\n" + mark + b" "
    err_sep = b"\n" + mark + b"\n"

    async def stdout() -> tuple[int, bytes]:
        data: bytes = await process.stdout.readuntil(out_sep)
        status_line: bytes = await process.stdout.readuntil(b"\n")
        return int(status_line.strip() or b"-1"), data[: -len(out_sep)]

    async def stderr() -> bytes:
        data: bytes = await process.stderr.readuntil(err_sep)
        return data[: -len(err_sep)]

    (status, out), err = await _both(stdout(), stderr())
    return status, out, err


async def _both(first: Awaitable[A], second: Awaitable[B]) -> tuple[A, B]:
    """Await both (stdout and stderr are read at once so neither stream can stall the other);
    if one fails the other is cancelled."""
    one, two = asyncio.ensure_future(first), asyncio.ensure_future(second)
    try:
        a, b = await asyncio.gather(one, two)
    finally:
        for task in (one, two):
            task.cancel()
    return a, b


def _why(exc: BaseException) -> str:
    if isinstance(exc, asyncio.IncompleteReadError):
        return "the shell ended"
    reason = getattr(exc, "reason", "") or str(exc)
    return str(reason).strip().rstrip(".") or type(exc).__name__


class ShellSlot:
    """The one long-lived shell of a connection: replaced after a reconnect, and none at all on
    a connection whose login host refused it (plain exec there, until the next reconnect)."""

    def __init__(self) -> None:
        self._shell: RemoteShell | None = None
        self._refused: asyncssh.SSHClientConnection | None = None

    def current(self, conn: asyncssh.SSHClientConnection | None) -> RemoteShell | None:
        """The shell already running on ``conn``, if any."""
        shell = self._shell
        if shell is None or conn is None or shell.conn is not conn or conn is self._refused:
            return None
        return shell

    def for_connection(self, conn: asyncssh.SSHClientConnection) -> RemoteShell | None:
        """The shell of ``conn`` (a new one replaces a shell of an earlier connection); None
        where ``conn``'s login host refused it."""
        if self._refused is conn:
            return None
        shell = self._shell
        if shell is None or shell.conn is not conn:
            if shell is not None:
                shell.close()
            shell = self._shell = RemoteShell(conn)
        return shell

    def refuse(self, conn: asyncssh.SSHClientConnection) -> None:
        """``conn``'s login host does not allow the shell."""
        self._refused = conn

    def close(self) -> None:
        """Close the shell and forget the refusal (a new connection may allow it)."""
        if self._shell is not None:
            self._shell.close()
        self._shell = self._refused = None
