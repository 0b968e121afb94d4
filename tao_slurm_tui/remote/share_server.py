"""The dashboard's end of a shared connection: it serves its logged-in connection's channels to
the CLI verbs and dashboards of the same login (:mod:`~tao_slurm_tui.remote.share` has the
design and the client end; ``docs/MFA.md`` the reasons).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import socket
import struct
from pathlib import Path
from typing import Any

import asyncssh

from tao_slurm_tui.errors import TaoError
from tao_slurm_tui.remote.connection import Connection, ConnectionLost, ConnectionState
from tao_slurm_tui.remote.share import (
    CLOSE,
    EOF,
    ERR_EOF,
    EXIT,
    FORWARDED_OPTIONS,
    HELLO,
    HELLO_TIMEOUT,
    OPEN,
    OPEN_FAILED,
    OPENED,
    OUT_EOF,
    PROTOCOL,
    REFUSED,
    RESIZE,
    SIGNAL,
    STDERR,
    STDIN,
    STDOUT,
    WELCOME,
    ShareUnavailable,
    control,
    fields,
    frame,
    login_identity,
    read_frame,
    share_dir,
    socket_path,
)

log = logging.getLogger(__name__)

READ_SIZE = 64 * 1024

_GONE = (ConnectionState.RECONNECTING, ConnectionState.DOWN, ConnectionState.DISCONNECTED)
"""States in which the served channels are dead: every link is closed, clients re-attach."""


def peer_uid(sock: Any) -> int | None:
    """The uid of the process at the other end of a Unix socket, where the system tells it
    (Linux); None elsewhere (the 0700 runtime dir is then the only check, as for ssh-agent)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None or sock is None:
        return None
    size = struct.calcsize("3i")
    try:
        _, uid, _ = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, option, size))
    except OSError:
        return None
    return int(uid)


class ShareServer:
    """Serves ``connection`` on the login's socket while the dashboard runs."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        """The dashboard's connection (it may not be open yet: the first command opens it)."""
        self.path: Path | None = None
        """The socket, while serving."""
        self.welcomed = 0
        """Clients welcomed so far."""
        self._server: asyncio.Server | None = None
        self._lock_fd: int | None = None
        self._inode = 0
        self._links: set[_ServedLink] = set()
        self._unlisten: Any = None

    @property
    def serving(self) -> bool:
        """True while the socket accepts clients."""
        return self._server is not None

    async def start(self) -> bool:
        """Serve, unless another dashboard already serves this login or the runtime dir is not
        safe (then nothing is shared and every front logs in itself). True when serving."""
        if self._server is not None:
            return True
        # At once, before any await: a connect of this very connection running meanwhile must
        # not attach to the socket about to serve it (it would wait on itself).
        self.connection.login.serving = True
        try:
            directory = share_dir()
            path = socket_path(self.connection.profile, directory)
            if not self._lock(path.with_suffix(".lock")):
                log.info("another dashboard shares the connection at %s", path)
                self.connection.login.serving = False
                return False
            await self._listen(directory, path)
        except (OSError, ShareUnavailable) as exc:
            log.warning("the connection is not shared: %s", exc)
            self.connection.login.serving = False
            self._unlock()
            return False
        self._unlisten = self.connection.add_state_listener(self._on_state)
        log.info("sharing the connection at %s", path)
        return True

    def _lock(self, lock_path: Path) -> bool:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self._lock_fd = fd
        return True

    def _unlock(self) -> None:
        fd, self._lock_fd = self._lock_fd, None
        if fd is not None:
            os.close(fd)  # releases the flock; the empty lock file stays for the next one

    async def _listen(self, directory: Path, path: Path) -> None:
        # We hold the lock: a socket file there is a dead dashboard's. Bind under a temporary
        # name and rename into place once listening, so the socket never exists unanswered.
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        temporary = directory / f".{os.getpid()}-{id(self) % 100000}.sock"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        old = os.umask(0o177)
        try:
            server = await asyncio.start_unix_server(self._serve, path=str(temporary))
        finally:
            os.umask(old)
        try:
            os.chmod(temporary, 0o600)
            os.rename(temporary, path)
        except OSError:
            server.close()
            raise
        self._server, self.path, self._inode = server, path, os.lstat(path).st_ino

    async def close(self) -> None:
        """Stop serving: clients see a drop and log in themselves (or attach elsewhere)."""
        server, self._server = self._server, None
        if self._unlisten is not None:
            self._unlisten()
            self._unlisten = None
        self.connection.login.serving = False
        if server is None:
            return
        server.close()
        self._drop_links()
        path, self.path = self.path, None
        if path is not None:
            with contextlib.suppress(OSError):
                if os.lstat(path).st_ino == self._inode:
                    os.unlink(path)
        self._unlock()
        with contextlib.suppress(OSError):
            await asyncio.wait_for(server.wait_closed(), 5)

    async def restart(self) -> bool:
        """Serve under the connection's current login (its profile changed)."""
        await self.close()
        return await self.start()

    def _on_state(self, state: ConnectionState, _message: str) -> None:
        if state in _GONE:
            self._drop_links()

    def _drop_links(self) -> None:
        for link in list(self._links):
            link.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        uid = peer_uid(writer.get_extra_info("socket"))
        if uid is not None and uid != os.getuid():
            writer.close()
            return
        try:
            async with asyncio.timeout(HELLO_TIMEOUT):
                kind, _, payload = await read_frame(reader)
        except (OSError, TimeoutError, asyncio.IncompleteReadError, ValueError):
            writer.close()
            return
        hello = fields(payload)
        reason = ""
        if kind != HELLO or hello.get("version") != PROTOCOL:
            reason = f"protocol {PROTOCOL} only"
        elif hello.get("login") != login_identity(self.connection.profile):
            reason = "the dashboard logs in elsewhere now"
        if reason:
            writer.write(control(REFUSED, reason=reason))
            writer.close()
            return
        host = self.connection.host or (self.connection.profile.hostnames or [""])[0]
        owner = f"the dashboard's connection (pid {os.getpid()})"
        writer.write(control(WELCOME, host=host, owner=owner))
        self.welcomed += 1
        log.info("pid %s uses the shared connection", hello.get("pid", "?"))
        link = _ServedLink(self.connection, reader, writer)
        self._links.add(link)
        try:
            await link.run()
        finally:
            self._links.discard(link)


class _ServedLink:
    """One client: its channels, opened on the dashboard's connection."""

    def __init__(
        self, connection: Connection, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.connection = connection
        self._reader = reader
        self._writer = writer
        self._processes: dict[int, asyncssh.SSHClientProcess[bytes]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed: set[int] = set()

    def send(self, data: bytes) -> None:
        if not self._writer.is_closing():
            self._writer.write(data)

    async def run(self) -> None:
        """Handle the client's frames until it goes."""
        try:
            while True:
                kind, channel, payload = await read_frame(self._reader)
                self._handle(kind, channel, payload)
        except (OSError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            self.close()

    def _handle(self, kind: int, channel: int, payload: bytes) -> None:
        if kind == OPEN:
            task = asyncio.get_running_loop().create_task(self._open(channel, fields(payload)))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            return
        process = self._processes.get(channel)
        if kind == CLOSE:
            self._closed.add(channel)
        if process is None:
            return
        with contextlib.suppress(OSError, asyncssh.Error, ValueError, TypeError):
            if kind == STDIN:
                process.stdin.write(payload)
            elif kind == EOF:
                process.stdin.write_eof()
            elif kind == SIGNAL:
                process.send_signal(str(fields(payload).get("signal", "TERM")))
            elif kind == RESIZE:
                process.change_terminal_size(*fields(payload).get("size", [80, 24, 0, 0]))
            elif kind == CLOSE:
                process.close()

    async def _open(self, channel: int, request: dict[str, Any]) -> None:
        options = {
            k: v for k, v in (request.get("options") or {}).items() if k in FORWARDED_OPTIONS
        }
        if isinstance(options.get("term_size"), list):
            options["term_size"] = tuple(options["term_size"])
        try:
            process = await self.connection.create_process(
                str(request.get("command", "")), encoding=None, **options
            )
        except ConnectionLost as exc:
            self.send(control(OPEN_FAILED, channel, failure="dropped", reason=str(exc)))
            return
        except (TaoError, OSError, asyncssh.Error) as exc:
            self.send(control(OPEN_FAILED, channel, failure="error", reason=str(exc)))
            return
        if channel in self._closed or self._writer.is_closing():
            process.close()
            return
        self._processes[channel] = process
        self.send(frame(OPENED, channel))
        try:
            await asyncio.gather(
                self._pump(process.stdout, channel, STDOUT, OUT_EOF),
                self._pump(process.stderr, channel, STDERR, ERR_EOF),
            )
            await process.wait_closed()
        finally:
            self._processes.pop(channel, None)
        signal = process.exit_signal
        # No exit status, not closed by the client, and the connection gone: a drop (asyncssh
        # ends the channels, then reports the lost connection, before this wakes up).
        dropped = (
            process.returncode is None
            and channel not in self._closed
            and not self.connection.connected
        )
        self.send(
            control(
                EXIT,
                channel,
                exit_status=process.exit_status,
                exit_signal=list(signal) if signal else None,
                returncode=process.returncode,
                dropped=dropped,
            )
        )

    async def _pump(
        self, stream: asyncssh.SSHReader[bytes], channel: int, kind: int, eof: int
    ) -> None:
        with contextlib.suppress(OSError, asyncssh.Error):
            while data := await stream.read(READ_SIZE):
                self.send(frame(kind, channel, data))
                await self._writer.drain()
        self.send(frame(eof, channel))

    def close(self) -> None:
        """Close the link and every channel it opened."""
        for process in list(self._processes.values()):
            process.close()
        for task in list(self._tasks):
            task.cancel()
        self._writer.close()
