"""One persistent SSH connection per cluster profile, built on asyncssh.

What the rest of the program relies on:

- **Failover**: the profile's login hosts are tried in order, each with ``connect_timeout``; the one
  that worked is remembered (also across runs, in the cache dir) and tried first next time.
- **Keepalive and reconnect**: asyncssh keepalives detect a dead link; after a drop the connection
  reconnects in the background with exponential backoff. Every state change
  (:class:`ConnectionState`) is reported to ``on_state`` listeners so the UI can show it.
- **Commands**: :meth:`Connection.run` with a per-command timeout, bytes on stdin (secrets travel
  only there, never in argv or logs), and re-running after a drop only when the caller says it is
  safe (``retry_on_drop``; ``sbatch`` is not). :meth:`Connection.run_framed` runs an idempotent
  command on a long-lived shell of the connection in ONE network round trip (``run`` needs two:
  open a channel, then exec), falling back to ``run`` where the login host refuses a shell
  (:mod:`tao_slurm_tui.remote.shell`).
- **Host keys** are verified against the profile's known_hosts: an unknown host raises
  :class:`UnknownHostKey` carrying the SHA256 fingerprint, a changed key raises
  :class:`HostKeyChanged` and is never accepted.
- **Keys**: a private key readable by group or others is refused before connecting
  (:class:`KeyPermissionError`, with the ``chmod 600`` fix). ``~/.ssh/config`` and ssh-agent work.
- **One-time codes and sharing**: :attr:`Connection.login` asks for a code at most once per
  (re)connect, holds a declined one, and first looks for a dashboard lending its connection.

This module is the connection: state, failover, reconnect, and the commands; its parts (logging
in, channels, files, keys, host keys, codes, sharing) are listed in :mod:`tao_slurm_tui.remote`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any

import asyncssh

from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.core.quoting import join
from tao_slurm_tui.errors import BadInput
from tao_slurm_tui.remote.channel import (
    Dropped,
    decode_result,
    exec_command,
    open_process,
    short_command,
)
from tao_slurm_tui.remote.dial import failure_reason
from tao_slurm_tui.remote.errors import (
    AuthenticationFailed,
    CodeNotGiven,
    CodeRequired,
    CommandTimeout,
    ConnectError,
    ConnectionLost,
    HostKeyChanged,
    KeyLoadError,
    KeyPermissionError,
    RemoteError,
    RemoteFileNotFound,
    UnknownHostKey,
)
from tao_slurm_tui.remote.keys import check_key_permissions
from tao_slurm_tui.remote.login import HostFailed, LoginClient, connect_options, open_host
from tao_slurm_tui.remote.login_policy import LoginPolicy
from tao_slurm_tui.remote.protocols import CommandResult, FramedRemote, Remote, RemoteFiles
from tao_slurm_tui.remote.remembered import remember_host, remembered_host
from tao_slurm_tui.remote.shell import (
    RemoteShell,
    ShellLost,
    ShellSlot,
    ShellTimeout,
    ShellUnavailable,
)
from tao_slurm_tui.remote.state import ConnectionState, StateCallback, StateListeners
from tao_slurm_tui.remote.transfer import Transfer

# The remote layer's errors, protocols, results and states reach the services through the
# connection module: they import them from here (a stand-in may use remote.protocols alone).
__all__ = [
    "AuthenticationFailed",
    "CodeNotGiven",
    "CodeRequired",
    "CommandResult",
    "CommandTimeout",
    "ConnectError",
    "Connection",
    "ConnectionLost",
    "ConnectionState",
    "FramedRemote",
    "HostKeyChanged",
    "KeyLoadError",
    "KeyPermissionError",
    "Remote",
    "RemoteError",
    "RemoteFileNotFound",
    "RemoteFiles",
    "StateCallback",
    "UnknownHostKey",
]

log = logging.getLogger(__name__)


class Connection:
    """A persistent SSH connection to one cluster profile.

    Use it as an async context manager or call :meth:`connect` / :meth:`close`. Every method
    connects on demand, so :meth:`run` on a fresh object just works.
    """

    reconnect_attempts = 8
    """Background reconnect attempts after a drop before the state becomes ``DOWN``."""

    def __init__(
        self,
        profile: Profile,
        *,
        password: str | None = None,
        on_state: StateCallback | None = None,
        keepalive_interval: float = 15.0,
        max_backoff: float = 60.0,
    ) -> None:
        """Prepare (but do not open) a connection.

        Args:
            profile: the cluster profile (hosts, port, user, key, known_hosts, timeouts).
            password: a one-time password for password/keyboard-interactive login (onboarding,
                to install a key); kept in memory only, never logged.
            on_state: called with ``(state, message)`` on every state change.
            keepalive_interval: seconds between SSH keepalives (3 missed = dropped).
            max_backoff: cap in seconds of the delay between reconnect attempts.
        """
        self.profile = profile
        """The profile this connection serves."""
        self.keepalive_interval = keepalive_interval
        """Seconds between keepalives."""
        self.max_backoff = max_backoff
        """Longest wait between reconnect attempts."""
        self.state = ConnectionState.DISCONNECTED
        """Current state."""
        self.state_message = "not connected"
        """Sentence describing the current state (what the UI shows)."""
        self.host: str | None = remembered_host(profile)
        """The working login host (tried first on the next connect)."""
        self._password = password
        self._listeners = StateListeners(on_state)
        self._conn: asyncssh.SSHClientConnection | None = None
        self._client: LoginClient | None = None
        self._lock = asyncio.Lock()
        self._reconnect_task: asyncio.Task[None] | None = None
        self._dialing: asyncio.Future[None] | None = None
        self._last_error: Exception | None = None
        self._closing = False
        self._shells = ShellSlot()
        self._generation = 0
        """Bumped by :meth:`use_profile` when the login settings change: a dial that started
        before is to the old place and is not kept."""
        self.transfer = Transfer(self)
        """File uploads and reads over this connection's commands."""
        self.login = LoginPolicy(self._set_state, lambda: (self.state, self.state_message))
        """Who is asked for a one-time code, a held refusal, the shared connection."""

    # ------------------------------------------------------------------ state

    def add_state_listener(self, callback: StateCallback) -> Callable[[], None]:
        """Also report state changes to ``callback``; returns a function that removes it."""
        return self._listeners.add(callback)

    def _set_state(self, state: ConnectionState, message: str) -> None:
        changed = (state, message) != (self.state, self.state_message)
        self.state = state
        self.state_message = message
        if changed:
            self._listeners.tell(state, message)

    @property
    def connected(self) -> bool:
        """True when an open connection is ready for commands."""
        return self._usable() is not None

    @property
    def shell(self) -> RemoteShell | None:
        """The long-lived shell :meth:`run_framed` uses on the current connection; None before
        the first framed command, after a reconnect, or where the login host refused it."""
        return self._shells.current(self._usable())

    def _usable(self) -> asyncssh.SSHClientConnection | None:
        conn = self._conn
        if conn is None or conn.is_closed():
            return None
        return conn

    def _where(self) -> str:
        return ", ".join(self.profile.hostnames) or "(no login host)"

    # ------------------------------------------------------------------ connect

    async def connect(self) -> None:
        """Open the connection, trying the login hosts in order (remembered host first). A
        caller cancelled meanwhile (a poll replaced by the next) does not cancel the login: a
        one-time code typed for it is not wasted; :meth:`close` does.

        Raises:
            RemoteError: ConnectError (every host, ``failures`` says why), UnknownHostKey,
                HostKeyChanged, AuthenticationFailed (CodeRequired, CodeNotGiven).
            BadInput: KeyPermissionError, KeyLoadError (the private key).
        """
        self._closing = False
        if self._usable():
            return
        self.login.check()
        task = self._reconnect_task
        if task is not None and not task.done():
            await asyncio.shield(task)
            if self._usable():
                return
        dial = self._dialing
        if dial is None or dial.done():
            dial = self._dialing = asyncio.ensure_future(self._connect())
            dial.add_done_callback(lambda done: done.cancelled() or done.exception())
        await asyncio.shield(dial)

    async def _connect(self) -> None:
        async with self._lock:
            if self._usable():
                return
            self.login.check()  # again: a reconnect waited for may have stopped at the code
            self._set_state(ConnectionState.CONNECTING, f"connecting to {self._where()}")
            try:
                await self._open()
            except (RemoteError, BadInput) as exc:
                self._failed(exc)
                raise
            self._set_state(ConnectionState.CONNECTED, self.login.connected("connected", self.host))

    def _failed(self, exc: Exception) -> None:
        """A connect or reconnect failed for good: DOWN, and a stop at the code is held."""
        self._last_error = exc
        self.login.failed(exc)
        self._set_state(ConnectionState.DOWN, str(exc))

    def use_profile(self, profile: Profile) -> bool:
        """Serve ``profile`` from now on (a saved edit of the profile). When it logs in elsewhere
        or otherwise (:meth:`Profile.logs_in_as`), the open connection (to the old place) is let
        go and the next command dials the new settings: then True; else it is kept: False."""
        old, self.profile = self.profile, profile
        if old.logs_in_as(profile):
            return False
        self._generation += 1
        self.host = remembered_host(profile)
        self._last_error = None
        self.login.release()
        # Commands still running on it see a drop and run again on the new one (see run()).
        self._let_go()
        self._set_state(ConnectionState.DISCONNECTED, "login settings changed; not connected yet")
        return True

    @classmethod
    def to_host(cls, profile: Profile, host: str, *, password: str | None = None) -> Connection:
        """A connection to ONE login host of ``profile``, without failover (:meth:`_host_order`),
        for services that must ask every login host (reconcile, install a key, check logins)."""
        return cls(profile.model_copy(update={"hostnames": [host]}), password=password)

    def _host_order(self) -> list[str]:
        hosts = list(dict.fromkeys(self.profile.hostnames))
        if self.host in hosts:
            hosts.remove(self.host)
            hosts.insert(0, self.host)
        return hosts

    async def _open(self) -> None:
        """Try every login host once; on success make it the current connection."""
        while True:
            generation = self._generation
            await self._dial()
            if generation == self._generation:
                return
            # use_profile() changed the login settings while this dial ran: it went to the old
            # place, so it is dropped and the new settings are dialled.
            self._let_go()

    async def _dial(self) -> None:
        """One pass over the login hosts; on success make it the current connection."""
        if not self.profile.hostnames:
            raise ConnectError(
                "The profile has no login host; set hostnames (or SLURM_HOSTNAME) and try again.",
                [],
            )
        shared = LoginClient(self._on_lost)
        link = await self.login.shared(self.profile, shared)  # a dashboard's: no new login
        if link is not None:
            self._conn, self._client, self.host = link.as_connection(), shared, link.host
            self._last_error = None
            return
        if self.profile.ssh_key_path:
            check_key_permissions(self.profile.ssh_key_path)
        failures: list[tuple[str, str]] = []
        for host in self._host_order():
            answering = self.login.answering(host, self.profile.user, self._password)
            client = LoginClient(self._on_lost, answering)
            options = connect_options(
                self.profile,
                host,
                keepalive_interval=self.keepalive_interval,
                password=self._password,
            )
            try:
                conn = await self._login(host, client, options)
            except HostFailed as failed:
                log.info("login host %s failed: %s", host, failed.reason)
                failures.append((host, failed.reason))
                continue
            self._conn, self._client = conn, client
            self._last_error = None
            self.login.logged_in(answering)
            if self.host != host:
                self.host = host
                remember_host(self.profile, host)
            return
        detail = "; ".join(f"{h}: {r}" for h, r in failures)
        raise ConnectError(
            f"Could not connect to any login host on port {self.profile.port} ({detail}); check "
            "the host names, the port and your network or VPN.",
            failures,
        )

    async def _login(
        self, host: str, client: LoginClient, options: dict[str, Any]
    ) -> asyncssh.SSHClientConnection:
        """Log in to one login host (:func:`~tao_slurm_tui.remote.login.open_host`): the seam the
        fake cluster replaces, keeping failover, states, reconnect and the shell above it."""
        return await open_host(self.profile, host, client, options)

    # ------------------------------------------------------------------ drops and reconnect

    def _on_lost(self, client: LoginClient, exc: Exception | None) -> None:
        if client is not self._client:
            return  # a failed attempt or an already-replaced connection
        self._conn = self._client = None
        if self._closing:
            return
        why = failure_reason(exc) if exc else "closed by the server"
        self._set_state(
            ConnectionState.RECONNECTING, f"connection to {self.host} lost ({why}); reconnecting"
        )
        self._start_reconnect()

    def _mark_dropped(self, conn: asyncssh.SSHClientConnection, why: str) -> None:
        """A command saw the connection die before asyncssh reported it: act as if it had."""
        if self._conn is conn and self._client is not None:
            client = self._client
            conn.abort()
            self._on_lost(client, ConnectionResetError(why))
        elif not self._closing and self._usable() is None:
            self._start_reconnect()

    def _start_reconnect(self) -> None:
        if self._reconnect_task is None or self._reconnect_task.done():
            self._reconnect_task = asyncio.get_running_loop().create_task(self._reconnect())

    async def _reconnect(self) -> None:
        """Reconnect with exponential backoff; ends CONNECTED or DOWN (never raises)."""
        delay = min(1.0, self.max_backoff)
        lost = self.host
        for attempt in range(1, self.reconnect_attempts + 1):
            try:
                async with self._lock:
                    if self._closing:
                        return
                    if self._usable() is None:
                        await self._open()
            except ConnectError as exc:
                self._last_error = exc
                if attempt == self.reconnect_attempts:
                    self._set_state(ConnectionState.DOWN, str(exc))
                    return
                self._set_state(
                    ConnectionState.RECONNECTING,
                    f"no login host answers; retrying in {delay:g} s "
                    f"(attempt {attempt + 1} of {self.reconnect_attempts})",
                )
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.max_backoff)
                continue
            except (RemoteError, BadInput) as exc:
                # Host key, authentication or key problems do not heal by retrying; a login
                # that stopped at the one-time code asks nobody again (held).
                self._failed(exc)
                return
            self._set_state(
                ConnectionState.CONNECTED, self.login.connected("reconnected", self.host, lost)
            )
            return

    async def _ensure(self) -> asyncssh.SSHClientConnection:
        """The open connection, after waiting for a reconnect or connecting as needed."""
        conn = self._usable()
        if conn is not None:
            return conn
        task = self._reconnect_task
        if task is not None and not task.done():
            # Shielded: a cancelled command must not cancel the shared reconnect.
            await asyncio.shield(task)
            conn = self._usable()
            if conn is not None:
                return conn
            if self._last_error is not None and self.state is ConnectionState.DOWN:
                # The reconnect just gave up: report why instead of trying all over again.
                raise self._last_error
        await self.connect()
        conn = self._usable()
        if conn is None:
            raise ConnectionLost(
                f"The connection to {self.host or self._where()} closed right after connecting; "
                "try again."
            )
        return conn

    # ------------------------------------------------------------------ commands

    async def run(
        self,
        command: str | Sequence[str],
        *,
        input: str | bytes | None = None,
        timeout: float | None = None,
        check: bool = False,
        retry_on_drop: bool = True,
    ) -> CommandResult:
        """Run one command on the login host over the shared connection.

        Args:
            command: a shell command line used as-is, or an argument vector quoted here.
            input: sent on stdin (str is UTF-8 encoded); the only channel for secrets.
            timeout: seconds before :class:`CommandTimeout`; default the profile's command_timeout.
            check: raise :class:`RemoteError` (with stderr's last line) on a non-zero exit.
            retry_on_drop: after a dropped connection, reconnect and run the command again;
                with False, raise :class:`ConnectionLost` instead (for non-idempotent commands).

        Raises:
            CommandTimeout: the command took longer than ``timeout``.
            ConnectionLost: the connection dropped and ``retry_on_drop`` is False.
            RemoteError: ``check`` and the command failed; or a connect error (see :meth:`connect`).
        """
        cmd = command if isinstance(command, str) else join(command)
        data = input.encode("utf-8") if isinstance(input, str) else input
        limit = self.profile.command_timeout if timeout is None else timeout
        status, out, err = await self._exec(cmd, data, limit, retry_on_drop)
        return decode_result(cmd, status, out, err, self.host or "", check)

    async def _exec(
        self, cmd: str, data: bytes | None, limit: float, retry_on_drop: bool
    ) -> tuple[int, bytes, bytes]:
        """Run ``cmd`` on its own channel, again after a drop (up to 3 times) when allowed."""
        reruns = 0
        while True:
            conn = await self._ensure()
            host = self.host or ""
            try:
                return await exec_command(conn, host, cmd, data, limit)
            except Dropped as dropped:
                self._mark_dropped(conn, str(dropped))
                if not retry_on_drop and dropped.started:
                    raise ConnectionLost(
                        f"The connection to {host} dropped while `{short_command(cmd)}` was "
                        "running, so it may or may not have taken effect; check before running "
                        "it again."
                    ) from None
                reruns += 1
                if reruns > 3:
                    raise ConnectionLost(
                        f"The connection to {host} keeps dropping while `{short_command(cmd)}` "
                        "runs; check the network and try again."
                    ) from None

    async def run_framed(
        self, command: str | Sequence[str], *, timeout: float | None = None, check: bool = False
    ) -> CommandResult:
        """Run an idempotent command (no stdin) on the connection's long-lived shell.

        One network round trip instead of :meth:`run`'s two (:mod:`tao_slurm_tui.remote.shell`).
        One at a time; after a drop or a lost shell it runs again on a new shell. Where the login
        host does not allow the shell, this is :meth:`run` (until the next reconnect).

        Raises:
            CommandTimeout: the command took longer than ``timeout`` (the shell is replaced).
            ConnectionLost: the connection or the shell keeps dropping.
            RemoteError: ``check`` and the command failed; or a connect error.
        """
        cmd = command if isinstance(command, str) else join(command)
        limit = self.profile.command_timeout if timeout is None else timeout
        for _ in range(4):
            conn = await self._ensure()
            shell = self._shells.for_connection(conn)
            if shell is None:  # the login host refused the shell: plain exec
                return await self.run(cmd, timeout=limit, check=check)
            host = self.host or ""
            try:
                status, out, err = await shell.run(cmd, limit)
            except ShellUnavailable as exc:
                log.info("no long-lived shell on %s (%s); using one exec per command", host, exc)
                self._shells.refuse(conn)
                continue
            except ShellTimeout:
                raise CommandTimeout(
                    f"`{short_command(cmd)}` on {host} did not finish within {limit:g} s; "
                    "raise the timeout or check the cluster."
                ) from None
            except ShellLost as exc:
                if conn.is_closed():
                    self._mark_dropped(conn, str(exc))
                continue
            return decode_result(cmd, status, out, err, host, check)
        raise ConnectionLost(
            f"The connection to {self.host} keeps dropping while `{short_command(cmd)}` runs; "
            "check the network and try again."
        )

    async def create_process(
        self, command: str | Sequence[str], **kwargs: Any
    ) -> asyncssh.SSHClientProcess[Any]:
        """Start a long-running remote process for streaming (e.g. ``tail -F``); it ends when
        the connection drops, and the caller starts a new one (this waits for the reconnect).

        Raises:
            ConnectionLost: the connection dropped twice while opening the process.
            RemoteError: a connect error (see :meth:`connect`) or the server refused the channel.
        """
        cmd = command if isinstance(command, str) else join(command)
        for _ in range(2):
            conn = await self._ensure()
            try:
                return await open_process(conn, self.host or "", cmd, **kwargs)
            except Dropped as dropped:
                self._mark_dropped(conn, str(dropped))
        raise ConnectionLost(
            f"The connection to {self.host} dropped while starting `{short_command(cmd)}`; "
            "try again."
        )

    # ------------------------------------------------------------------ files

    async def upload_text(self, path: str, content: str, *, mode: int = 0o644) -> None:
        """Write ``content`` to the remote ``path`` atomically: :meth:`Transfer.upload_text`."""
        await self.transfer.upload_text(path, content, mode=mode)

    async def read_file(
        self, path: str, *, offset: int = 0, max_bytes: int | None = None, missing_ok: bool = False
    ) -> bytes:
        """Read a remote file from byte ``offset`` on: :meth:`Transfer.read_file`."""
        return await self.transfer.read_file(
            path, offset=offset, max_bytes=max_bytes, missing_ok=missing_ok
        )

    async def run_bytes(self, cmd: str) -> tuple[int, bytes, bytes]:
        """:meth:`run` for an idempotent command (run again after a drop), returning the exit
        status and raw bytes (for :class:`Transfer`); raises as :meth:`run`."""
        return await self._exec(cmd, None, self.profile.command_timeout, True)

    # ------------------------------------------------------------------ close

    def _let_go(self) -> asyncssh.SSHClientConnection | None:
        """Close the current connection and its shell, forgotten first so that its
        ``connection_lost`` starts no reconnect; returns it (to wait for) or None."""
        self._shells.close()
        conn, self._conn, self._client = self._conn, None, None
        if conn is not None:
            conn.close()
        return conn

    async def close(self) -> None:
        """Close the connection (no reconnect follows); state becomes ``DISCONNECTED``."""
        self._closing = True
        self._password = None  # a one-time onboarding password: not kept past this connection
        for task in (self._reconnect_task, self._dialing):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, RemoteError, BadInput):
                    await task
        self._reconnect_task = self._dialing = None
        conn = self._let_go()
        if conn is not None:
            with contextlib.suppress(OSError, asyncssh.Error):
                await conn.wait_closed()
        self._set_state(ConnectionState.DISCONNECTED, "disconnected")

    async def __aenter__(self) -> Connection:
        await self.connect()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
