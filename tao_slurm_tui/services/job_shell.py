"""An interactive shell inside a running job, on the user's own terminal.

:func:`open_shell` opens a channel on the profile's connection with a pty of the user's
terminal type and size (asyncssh ``term_type``/``term_size``) running
:func:`~tao_slurm_tui.core.job_shell.shell_command`, puts the local terminal in raw mode (every
key, ``ctrl+c`` included, goes to the remote shell), copies bytes both ways and passes every
window-size change on (``SIGWINCH`` → ``change_terminal_size``) until the shell exits; then the
terminal is as it was. The CLI's ``shell`` verb runs it directly; the TUI inside
``App.suspend()``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import termios
import tty
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from tao_slurm_tui.core.job_shell import ShellTarget, shell_command
from tao_slurm_tui.core.quoting import for_login_shell
from tao_slurm_tui.errors import BadInput

if TYPE_CHECKING:
    from tao_slurm_tui.remote.connection import Connection

CHUNK = 65536


class LocalTerminal:
    """The user's terminal: where keys come from and output goes (standard in and out)."""

    def __init__(self, stdin_fd: int = 0, stdout_fd: int = 1) -> None:
        self.stdin_fd = stdin_fd
        self.stdout_fd = stdout_fd

    def check(self) -> None:
        """Refuse anything but a terminal on both sides.

        Raises:
            BadInput: standard input or output is not a terminal.
        """
        if not (os.isatty(self.stdin_fd) and os.isatty(self.stdout_fd)):
            raise BadInput(
                "a shell needs an interactive terminal: run 'tao-slurm-tui shell' in one, "
                "not with its input or output redirected."
            )

    @property
    def term_type(self) -> str:
        """``TERM`` (what the remote pty is told it is)."""
        return os.environ.get("TERM") or "xterm-256color"

    def size(self) -> tuple[int, int]:
        """(columns, rows) of the terminal now."""
        try:
            size = os.get_terminal_size(self.stdout_fd)
        except OSError:
            size = shutil.get_terminal_size()
        return size.columns, size.lines

    @contextlib.contextmanager
    def raw(self) -> Iterator[None]:
        """Raw mode while inside; the terminal's settings as they were afterwards."""
        saved = termios.tcgetattr(self.stdin_fd)
        try:
            tty.setraw(self.stdin_fd, termios.TCSANOW)
            yield
        finally:
            termios.tcsetattr(self.stdin_fd, termios.TCSAFLUSH, saved)

    def write(self, data: bytes) -> None:
        """Write all of ``data`` to the terminal."""
        view = memoryview(data)
        while view:
            try:
                written = os.write(self.stdout_fd, view)
            except BlockingIOError:
                continue
            view = view[written:]

    async def wait_key(self) -> None:
        """Wait for one key press (in raw mode)."""
        loop = asyncio.get_running_loop()
        pressed: asyncio.Future[None] = loop.create_future()

        def read() -> None:
            with contextlib.suppress(OSError):
                os.read(self.stdin_fd, CHUNK)
            if not pressed.done():
                pressed.set_result(None)

        with self.raw():
            loop.add_reader(self.stdin_fd, read)
            try:
                await pressed
            finally:
                loop.remove_reader(self.stdin_fd)


async def _copy_out(stream: Any, terminal: LocalTerminal) -> None:
    while True:
        data = await stream.read(CHUNK)
        if not data:
            return
        terminal.write(data)


async def open_shell(conn: Connection, target: ShellTarget, terminal: LocalTerminal) -> int:
    """Run the shell on ``target`` on this terminal until it exits; its exit status.

    Raises:
        BadInput: the terminal is not one.
        OperationFailed: the cluster could not be reached or refused the channel.
    """
    import asyncssh  # on use: the UI that offers a shell starts without it

    terminal.check()
    process = await conn.create_process(
        for_login_shell(shell_command(target)),
        term_type=terminal.term_type,
        term_size=terminal.size(),
        request_pty="force",
        encoding=None,
    )
    loop = asyncio.get_running_loop()

    def key_in() -> None:
        try:
            data = os.read(terminal.stdin_fd, CHUNK)
        except OSError:
            data = b""
        if data:
            process.stdin.write(data)
        else:
            loop.remove_reader(terminal.stdin_fd)
            process.stdin.write_eof()

    def resized() -> None:
        with contextlib.suppress(OSError, AttributeError):
            process.change_terminal_size(*terminal.size())

    with terminal.raw():
        loop.add_reader(terminal.stdin_fd, key_in)
        loop.add_signal_handler(signal.SIGWINCH, resized)
        try:
            await asyncio.gather(
                _copy_out(process.stdout, terminal), _copy_out(process.stderr, terminal)
            )
            await process.wait_closed()
        except (OSError, EOFError, asyncssh.Error):
            pass  # the connection went away under the shell: it is over
        finally:
            loop.remove_signal_handler(signal.SIGWINCH)
            loop.remove_reader(terminal.stdin_fd)
            process.close()
    status = process.returncode
    return status if isinstance(status, int) and status >= 0 else 1
