"""A command on a pseudo-terminal, as sshd runs one for a channel that asked for a pty.

:func:`start_on_terminal` is what the fake connection's ``create_process`` does when asked
for ``term_type`` (a shell in a job, TensorBoard's step): the command gets a new session whose
controlling terminal is a fresh pty of the client's size. :class:`PtyProcess` is the part of
asyncssh's ``SSHClientProcess`` the callers use, with a channel's semantics:

- stdout is read as an ``SSHReader`` (``read``, ``readuntil``); stderr is empty, since under a
  pty the program writes both to the terminal.
- The terminal is read as soon as the process starts, into a buffer (as sshd forwards output
  whether or not the client reads yet), until every process on it is gone (EIO): then EOF.
- :meth:`PtyProcess.close` hangs up as sshd does on a closed channel: the session's processes
  get SIGHUP, readers waiting on the channel see EOF, and the pty's file descriptor is let go
  only after the event loop stopped watching it (a closed descriptor still registered would
  leave a reader waiting forever, or be watched again under the number's next owner).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import signal
import struct
import termios


def _set_size(fd: int, width: int, height: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", height, width, 0, 0))


class _PtyReader:
    """The master side of the terminal, read as asyncssh's stdout is (world paths mapped back)."""

    def __init__(self, master: int, root: str) -> None:
        self._master = master
        self._root = root.encode()
        self._buffer = bytearray()
        self._eof = False
        self._changed = asyncio.Event()
        asyncio.get_running_loop().add_reader(master, self._readable)

    def _readable(self) -> None:
        try:
            data = os.read(self._master, 65536)
        except OSError:  # EIO: every process on the terminal is gone
            data = b""
        if not data:
            self.end()
            return
        self._buffer += data.replace(self._root + b"/", b"/") if self._root in data else data
        self._changed.set()

    def end(self) -> None:
        """No more output: the loop stops watching the terminal; waiting readers see EOF."""
        if not self._eof:
            self._eof = True
            asyncio.get_running_loop().remove_reader(self._master)
        self._changed.set()

    async def _more(self) -> None:
        self._changed.clear()
        await self._changed.wait()

    async def read(self, n: int = -1) -> bytes:
        """Up to ``n`` bytes (every byte until EOF for ``n < 0``); b'' at EOF."""
        while not self._buffer or (n < 0 and not self._eof):
            if self._eof:
                break
            await self._more()
        size = len(self._buffer) if n < 0 else min(n, len(self._buffer))
        data = bytes(self._buffer[:size])
        del self._buffer[:size]
        return data

    async def readuntil(self, separator: bytes) -> bytes:
        """Everything up to and with ``separator``.

        Raises:
            asyncio.IncompleteReadError: EOF came first (``partial``: what was left).
        """
        while (at := self._buffer.find(separator)) < 0:
            if self._eof:
                partial = bytes(self._buffer)
                self._buffer.clear()
                raise asyncio.IncompleteReadError(partial, None)
            await self._more()
        data = bytes(self._buffer[: at + len(separator)])
        del self._buffer[: at + len(separator)]
        return data


class _EmptyReader:
    """stderr of a process on a terminal (it writes to the terminal, as under a remote pty)."""

    async def read(self, n: int = -1) -> bytes:
        return b""


class _PtyWriter:
    def __init__(self, process: PtyProcess) -> None:
        self._process = process

    def write(self, data: bytes) -> None:
        if not self._process.closed:
            os.write(self._process.master, data)

    def write_eof(self) -> None:
        with contextlib.suppress(OSError):
            self.write(b"\x04")


class PtyProcess:
    """A command on a pseudo-terminal: what callers use of asyncssh's ``SSHClientProcess``."""

    def __init__(self, process: asyncio.subprocess.Process, master: int, root: str) -> None:
        self._process = process
        self.master = master
        self.closed = False
        self.stdin = _PtyWriter(self)
        self.stdout = _PtyReader(master, root)
        self.stderr = _EmptyReader()

    @property
    def returncode(self) -> int | None:
        return self._process.returncode

    def change_terminal_size(self, width: int, height: int) -> None:
        if not self.closed:
            _set_size(self.master, width, height)

    async def wait_closed(self) -> None:
        await self._process.wait()

    async def wait(self) -> None:
        await self._process.wait()

    def is_closing(self) -> bool:
        return self.closed or self._process.returncode is not None

    def close(self) -> None:
        """Hang up: SIGHUP to the session, EOF to readers, then the descriptor goes."""
        if self.closed:
            return
        self.closed = True
        if self._process.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._process.pid, signal.SIGHUP)
        self.stdout.end()
        os.close(self.master)


async def start_on_terminal(
    argv: list[str],
    *,
    env: dict[str, str],
    cwd: str,
    term_type: str,
    size: tuple[int, int],
    root: str,
) -> PtyProcess:
    """``argv`` in a new session on a new pty of ``term_type`` and ``size`` (columns, rows)."""
    master, slave = os.openpty()
    _set_size(slave, *size)
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            env={**env, "TERM": term_type},
            cwd=cwd,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
            # The terminal becomes the new session's own, as sshd makes it (job control).
            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
        )
    except BaseException:
        os.close(master)
        raise
    finally:
        os.close(slave)
    return PtyProcess(process, master, root)
