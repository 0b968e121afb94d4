"""One code per working session: a dashboard lends its logged-in connection to the commands
started beside it.

At a site that asks for a one-time code on every SSH login, each new connection costs the user a
code. The dashboard (the TUI) holds one connection for hours; :class:`~tao_slurm_tui.remote.
share_server.ShareServer` lets every CLI verb (and a second dashboard) of the **same login** run
its remote commands over it, so the user types one code for all of them. Design and reasons:
``docs/MFA.md``.

- **Where**: one Unix socket per login (user, hosts, port, key, known_hosts... -
  :data:`~tao_slurm_tui.core.profile.LOGIN_FIELDS`) in the user's runtime dir
  (:func:`~tao_slurm_tui.config.runtime_dir`): the dir is the user's own and closed to others
  (0700, checked), the socket 0600. That is the authentication, as for OpenSSH's ControlMaster
  socket and ssh-agent's; the server also checks the peer's uid where the system tells it.
- **Readiness is an answer, not a file**: a client counts a share as there only after the
  server answered its hello within :data:`HELLO_TIMEOUT`. A socket file left by a crashed
  dashboard, one that does not answer, or one of another login is not used: the client logs
  in itself. The server binds under a temporary name and renames the socket into place only
  when it listens, and it holds a lock file for as long as it serves, so two dashboards never
  serve the same login at once and a stale socket is replaced safely.
- **What travels**: SSH *channels*. The client side (:class:`ShareLink`) looks like an
  asyncssh connection to the rest of the remote layer: ``create_process`` opens a channel on
  the dashboard's connection (exec, the long-lived shell, ``tail -F``, a pty), and stdin,
  stdout, stderr, EOF, signals, window size and the exit status are forwarded as frames. So
  :class:`~tao_slurm_tui.remote.connection.Connection` keeps all its own logic (reruns after a
  drop, ``sbatch`` not rerun, time bounds) and only the transport differs. Bytes on stdin (the
  NGC key) cross the socket and are never logged.
- **Drops**: when the dashboard's connection drops, its channels die and every link is closed;
  the client's connection sees a drop as from SSH and re-attaches, and its commands wait while
  the dashboard reconnects (and asks the user for the next code, once).

Frames: a header ``!BII`` (kind, channel, length) then ``length`` bytes; control payloads are JSON.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import re
import stat
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast

import asyncssh

from tao_slurm_tui.config import runtime_dir
from tao_slurm_tui.core.profile import LOGIN_FIELDS, Profile

log = logging.getLogger(__name__)

PROTOCOL = 1
"""Bumped when the frames change: a client and server of different versions do not share."""

HELLO_TIMEOUT = 3.0
"""Seconds a client waits for the server's answer before logging in itself."""

HEADER = struct.Struct("!BII")
MAX_FRAME = 1 << 20
"""Largest payload accepted (a longer one is a broken peer: the link is closed)."""

# Client -> server
HELLO, OPEN, STDIN, EOF, SIGNAL, RESIZE, CLOSE = range(1, 8)
# Server -> client
WELCOME, REFUSED, OPENED, OPEN_FAILED, STDOUT, STDERR, OUT_EOF, ERR_EOF, EXIT = range(16, 25)

FORWARDED_OPTIONS = ("term_type", "term_size", "term_modes", "window", "env")
"""``create_process`` options that travel to the dashboard's connection (JSON values)."""


class ShareUnavailable(Exception):
    """The runtime dir cannot hold a share safely (not the user's, open to others)."""


# ----------------------------------------------------------------------------- places


def login_identity(profile: Profile) -> dict[str, Any]:
    """What decides where and how a connection logs in, as JSON values."""
    identity: dict[str, Any] = {}
    for name in LOGIN_FIELDS:
        value = getattr(profile, name)
        identity[name] = list(value) if isinstance(value, list | tuple) else value
    return json.loads(json.dumps(identity, default=str))  # type: ignore[no-any-return]


def share_dir() -> Path:
    """The runtime dir, created 0700 and checked to be the user's own and closed to others.

    Raises:
        ShareUnavailable: it belongs to someone else, is a symlink, or others can enter it.
    """
    path = runtime_dir()
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise ShareUnavailable(f"{path} is not a directory of your own")
    if info.st_mode & 0o077:
        os.chmod(path, 0o700)
    return path


def socket_path(profile: Profile, directory: Path | None = None) -> Path:
    """The socket of ``profile``'s login: ``<user>@<host>-<digest>.sock`` (the digest covers
    every login field), shortened to the digest where the path would be too long."""
    base = directory if directory is not None else runtime_dir()
    digest = hashlib.sha256(
        json.dumps(login_identity(profile), sort_keys=True).encode()
    ).hexdigest()[:16]
    first = profile.hostnames[0] if profile.hostnames else "nohost"
    label = re.sub(r"[^A-Za-z0-9_.@-]", "_", f"{profile.user or 'me'}@{first}")[:40]
    path = base / f"{label}-{digest}.sock"
    if len(os.fsencode(path)) > 100:  # sun_path holds 104 (macOS) to 108 (Linux) bytes
        path = base / f"{digest}.sock"
    return path


# ----------------------------------------------------------------------------- frames


def frame(kind: int, channel: int = 0, payload: bytes = b"") -> bytes:
    """One frame."""
    return HEADER.pack(kind, channel, len(payload)) + payload


def control(kind: int, channel: int = 0, **fields: Any) -> bytes:
    """One frame with a JSON payload."""
    return frame(kind, channel, json.dumps(fields).encode())


async def read_frame(reader: asyncio.StreamReader) -> tuple[int, int, bytes]:
    """The next frame: (kind, channel, payload).

    Raises:
        asyncio.IncompleteReadError: the peer closed the socket.
        ValueError: an oversized frame (a broken peer).
    """
    kind, channel, length = HEADER.unpack(await reader.readexactly(HEADER.size))
    if length > MAX_FRAME:
        raise ValueError(f"frame of {length} bytes")
    return kind, channel, await reader.readexactly(length) if length else b""


def fields(payload: bytes) -> dict[str, Any]:
    """A control frame's JSON payload (an empty dict for an empty or broken one)."""
    try:
        value = json.loads(payload or b"{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


# ----------------------------------------------------------------------------- client


class _Lost(Protocol):
    def connection_lost(self, exc: Exception | None) -> None: ...


async def attach(profile: Profile, client: _Lost) -> ShareLink | None:
    """The shared connection of ``profile``'s login, if a dashboard serves one and answers.

    ``client.connection_lost`` hears when the link goes (as asyncssh's client would). Any doubt
    (no socket, not ours, no answer in time, another login, another protocol) is None: the
    caller logs in itself.
    """
    try:
        path = socket_path(profile, share_dir())
        info = os.lstat(path)
    except (OSError, ShareUnavailable):
        return None
    if not stat.S_ISSOCK(info.st_mode) or info.st_uid != os.getuid():
        return None
    writer: asyncio.StreamWriter | None = None
    try:
        async with asyncio.timeout(HELLO_TIMEOUT):
            reader, writer = await asyncio.open_unix_connection(str(path))
            writer.write(
                control(HELLO, version=PROTOCOL, login=login_identity(profile), pid=os.getpid())
            )
            await writer.drain()
            kind, _, payload = await read_frame(reader)
    except (OSError, TimeoutError, asyncio.IncompleteReadError, ValueError) as exc:
        log.info("no shared connection at %s (%s)", path, exc or type(exc).__name__)
        if writer is not None:
            writer.close()
        return None
    answer = fields(payload)
    if kind != WELCOME:
        log.info("the shared connection at %s declined: %s", path, answer.get("reason", kind))
        writer.close()
        return None
    link = ShareLink(reader, writer, client, str(answer.get("host", "")), str(answer["owner"]))
    link.start()
    log.info("using %s (%s)", link.owner, path)
    return link


@dataclass
class Completed:
    """What :meth:`ForwardedProcess.wait` returns (asyncssh's ``SSHCompletedProcess`` fields)."""

    returncode: int | None
    exit_status: int | None
    exit_signal: tuple[str, bool, str, str] | None
    stdout: Any
    stderr: Any


class _Stdin:
    """A forwarded process's stdin: what is written goes to the dashboard's channel."""

    def __init__(self, process: ForwardedProcess) -> None:
        self._process = process

    def write(self, data: bytes | str) -> None:
        raw = data.encode("utf-8") if isinstance(data, str) else data
        if raw:
            self._process.send(STDIN, raw)

    def writelines(self, lines: list[bytes]) -> None:
        for line in lines:
            self.write(line)

    def write_eof(self) -> None:
        self._process.send(EOF)

    def can_write_eof(self) -> bool:
        return True

    async def drain(self) -> None:
        await self._process.link.drain()

    def close(self) -> None:
        self.write_eof()

    def is_closing(self) -> bool:
        return self._process.is_closing()


class _TextReader:
    """A text view of a byte stream (a process opened with an ``encoding``)."""

    def __init__(self, stream: asyncio.StreamReader, encoding: str, errors: str) -> None:
        self._stream = stream
        self._encoding = encoding
        self._errors = errors

    def _text(self, data: bytes) -> str:
        return data.decode(self._encoding, self._errors)

    async def read(self, n: int = -1) -> str:
        return self._text(await self._stream.read(n))

    async def readline(self) -> str:
        return self._text(await self._stream.readline())

    async def readuntil(self, separator: str) -> str:
        return self._text(await self._stream.readuntil(separator.encode(self._encoding)))

    async def readexactly(self, n: int) -> str:
        return self._text(await self._stream.readexactly(n))

    def at_eof(self) -> bool:
        return self._stream.at_eof()

    def __aiter__(self) -> _TextReader:
        return self

    async def __anext__(self) -> str:
        line = await self.readline()
        if not line:
            raise StopAsyncIteration
        return line


class ForwardedProcess:
    """A process on the dashboard's connection, as an asyncssh ``SSHClientProcess`` is used."""

    def __init__(self, link: ShareLink, channel: int, encoding: str | None, errors: str) -> None:
        self.link = link
        self.channel = channel
        self._out = asyncio.StreamReader(limit=MAX_FRAME * 4)
        self._err = asyncio.StreamReader(limit=MAX_FRAME * 4)
        self.stdin = _Stdin(self)
        self.stdout: Any = (
            self._out if encoding is None else _TextReader(self._out, encoding, errors)
        )
        self.stderr: Any = (
            self._err if encoding is None else _TextReader(self._err, encoding, errors)
        )
        self.returncode: int | None = None
        self.exit_status: int | None = None
        self.exit_signal: tuple[str, bool, str, str] | None = None
        self.opened: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._exited = asyncio.Event()
        self._closing = False

    # frames from the server
    def receive(self, kind: int, payload: bytes) -> None:
        if kind == STDOUT:
            self._out.feed_data(payload)
        elif kind == STDERR:
            self._err.feed_data(payload)
        elif kind == OUT_EOF:
            self._out.feed_eof()
        elif kind == ERR_EOF:
            self._err.feed_eof()
        elif kind in (OPENED, OPEN_FAILED) and not self.opened.done():
            self.opened.set_result({"ok": kind == OPENED, **fields(payload)})
        elif kind == EXIT:
            answer = fields(payload)
            if answer.get("dropped"):
                # The dashboard's connection dropped under it: the link is as good as gone.
                self.link.lost(ConnectionResetError("the dashboard's connection dropped"))
                return
            self.exit_status = answer.get("exit_status")
            signal = answer.get("exit_signal")
            self.exit_signal = (
                (str(signal[0]), bool(signal[1]), str(signal[2]), str(signal[3]))
                if signal
                else None
            )
            self.returncode = answer.get("returncode")
            self.ended()

    def ended(self) -> None:
        """The channel is over (exit, or the link went): readers see EOF, waiters wake."""
        for stream in (self._out, self._err):
            if not stream.at_eof():
                stream.feed_eof()
        if not self.opened.done():
            self.opened.set_result({"ok": False, "failure": "dropped", "reason": "Connection lost"})
        self._exited.set()

    def send(self, kind: int, payload: bytes = b"") -> None:
        self.link.send(frame(kind, self.channel, payload))

    # the asyncssh process interface the remote layer uses
    async def wait(self, check: bool = False, timeout: float | None = None) -> Completed:
        async with asyncio.timeout(timeout):
            await self._exited.wait()
        return Completed(self.returncode, self.exit_status, self.exit_signal, None, None)

    async def wait_closed(self) -> None:
        await self._exited.wait()

    async def communicate(self, input: bytes | str | None = None) -> tuple[Any, Any]:
        if input:
            self.stdin.write(input)
            self.stdin.write_eof()
        out, err = await asyncio.gather(self.stdout.read(), self.stderr.read())
        await self._exited.wait()
        return out, err

    def change_terminal_size(
        self, width: int, height: int, pixwidth: int = 0, pixheight: int = 0
    ) -> None:
        self.link.send(control(RESIZE, self.channel, size=[width, height, pixwidth, pixheight]))

    def send_signal(self, signal: str) -> None:
        self.link.send(control(SIGNAL, self.channel, signal=signal))

    def terminate(self) -> None:
        self.send_signal("TERM")

    def kill(self) -> None:
        self.send_signal("KILL")

    def close(self) -> None:
        if not self._closing:
            self._closing = True
            self.link.send(frame(CLOSE, self.channel))

    def is_closing(self) -> bool:
        return self._closing or self._exited.is_set()

    async def __aenter__(self) -> ForwardedProcess:
        return self

    async def __aexit__(self, *_: object) -> None:
        self.close()
        await self.wait_closed()


class ShareLink:
    """The client end of a shared connection: used where an asyncssh connection would be."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        client: _Lost,
        host: str,
        owner: str,
    ) -> None:
        self.host = host
        """The login host the dashboard's connection is on."""
        self.owner = owner
        """Whose connection this is, for messages (``the dashboard's connection (pid 123)``)."""
        self._reader = reader
        self._writer = writer
        self._client = client
        self._channels: dict[int, ForwardedProcess] = {}
        self._next = 1
        self._closed = False
        self._done = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start reading the server's frames."""
        self._task = asyncio.get_running_loop().create_task(self._read())

    def as_connection(self) -> asyncssh.SSHClientConnection:
        """This link where the remote layer types an asyncssh connection (it has what that
        layer uses: ``create_process``, ``is_closed``, ``close``, ``abort``, ``wait_closed``)."""
        return cast(asyncssh.SSHClientConnection, self)

    async def _read(self) -> None:
        why: Exception | None = None
        try:
            while True:
                kind, channel, payload = await read_frame(self._reader)
                process = self._channels.get(channel)
                if process is not None:
                    process.receive(kind, payload)
                    if kind == EXIT:
                        self._channels.pop(channel, None)
        except asyncio.IncompleteReadError:
            why = ConnectionResetError("the dashboard's connection went away")
        except (OSError, ValueError) as exc:
            why = exc
        except asyncio.CancelledError:
            pass
        self.lost(why)

    def lost(self, why: Exception | None) -> None:
        """The link is gone: every channel ends, the client hears a lost connection."""
        if self._done.is_set():
            return
        was_open = not self._closed
        self._closed = True  # first: a reader woken below must see a closed connection
        self._writer.close()
        for process in list(self._channels.values()):
            process.ended()
        self._channels.clear()
        self._done.set()
        if was_open:
            self._client.connection_lost(why)

    def send(self, data: bytes) -> None:
        if not self._closed:
            self._writer.write(data)

    async def drain(self) -> None:
        if not self._closed:
            with contextlib.suppress(OSError):
                await self._writer.drain()

    async def create_process(
        self,
        command: str,
        *,
        encoding: str | None = "utf-8",
        errors: str = "strict",
        **options: Any,
    ) -> ForwardedProcess:
        """Open a channel running ``command`` on the dashboard's connection.

        Raises:
            asyncssh.ChannelOpenError: ``OPEN_CONNECT_FAILED`` when the link or the dashboard's
                connection dropped (nothing ran); otherwise the dashboard's reason.
        """
        if self._closed:
            raise asyncssh.ChannelOpenError(asyncssh.OPEN_CONNECT_FAILED, "Connection lost")
        channel, self._next = self._next, self._next + 1
        process = ForwardedProcess(self, channel, encoding, errors)
        self._channels[channel] = process
        forwarded = {k: v for k, v in options.items() if k in FORWARDED_OPTIONS and v is not None}
        self.send(control(OPEN, channel, command=command, options=forwarded))
        answer = await process.opened
        if not answer.get("ok"):
            self._channels.pop(channel, None)
            dropped = answer.get("failure") == "dropped"
            code = (
                asyncssh.OPEN_CONNECT_FAILED
                if dropped
                else asyncssh.OPEN_ADMINISTRATIVELY_PROHIBITED
            )
            raise asyncssh.ChannelOpenError(code, str(answer.get("reason", "refused")))
        return process

    def is_closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        self.lost(None)
        if self._task is not None:
            self._task.cancel()

    def abort(self) -> None:
        self.close()

    async def wait_closed(self) -> None:
        await self._done.wait()
