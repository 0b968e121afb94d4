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
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import json
import logging
import posixpath
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol, cast

import asyncssh

from tao_slurm_tui.config import cache_dir
from tao_slurm_tui.core.models import HostKeyInfo
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.core.quoting import for_login_shell, home_path, join, quote
from tao_slurm_tui.errors import BadInput
from tao_slurm_tui.remote.dial import dial, within
from tao_slurm_tui.remote.errors import (
    AuthenticationFailed,
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
from tao_slurm_tui.remote.hostkeys import (
    fingerprint,
    keys_for_host,
    normalize_public_key,
    read_known_hosts,
    trust_host_key,
)
from tao_slurm_tui.remote.shell import RemoteShell, ShellLost, ShellTimeout, ShellUnavailable

__all__ = [
    "AuthenticationFailed",
    "CommandResult",
    "CommandTimeout",
    "ConnectError",
    "Connection",
    "ConnectionLost",
    "ConnectionState",
    "HostKeyChanged",
    "KeyLoadError",
    "KeyPermissionError",
    "RemoteError",
    "RemoteFileNotFound",
    "StateCallback",
    "UnknownHostKey",
    "check_key_permissions",
    "fetch_host_key",
    "fetch_profile_host_key",
    "fingerprint",
    "host_key_target",
    "trust_host_key",
]

log = logging.getLogger(__name__)

_REMEMBER_FILE = "login-hosts.json"


class Remote(Protocol):
    """What the services need of a :class:`Connection` (tests pass recorded stand-ins)."""

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


class ConnectionState(StrEnum):
    """Where a :class:`Connection` is; reported to ``on_state`` on every change."""

    DISCONNECTED = "disconnected"
    """Never connected, or closed on purpose."""
    CONNECTING = "connecting"
    """First connect in progress (trying the login hosts in order)."""
    CONNECTED = "connected"
    """Usable."""
    RECONNECTING = "reconnecting"
    """The connection dropped; reconnecting with backoff."""
    DOWN = "down"
    """Connecting failed (every host, or a problem only the user can fix); next command retries."""


StateCallback = Callable[[ConnectionState, str], None]
"""``(state, message)``: the message is one sentence for a status bar."""


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


class _Dropped(Exception):
    """Internal: the connection went away under a command."""

    def __init__(self, reason: str, *, started: bool = True) -> None:
        super().__init__(reason)
        self.started = started
        """False only when the command was surely never sent (safe to run again)."""


# ----------------------------------------------------------------------------------- keys


def check_key_permissions(path: str | Path) -> None:
    """Refuse a private key that group or others can access, as OpenSSH does.

    Raises:
        KeyPermissionError: group/others may access it; the message holds ``chmod 600 PATH``.
        KeyLoadError: the file does not exist or is not a regular file.
    """
    key = Path(path).expanduser()
    try:
        info = key.stat()
    except FileNotFoundError:
        raise KeyLoadError(
            f"The private key {key} does not exist; fix SSH_KEY_PATH (the profile's ssh_key_path) "
            "or leave it empty to use ssh-agent and the keys in ~/.ssh."
        ) from None
    except OSError as exc:
        raise KeyLoadError(f"Cannot read the private key {key} ({exc.strerror}).") from None
    if not stat.S_ISREG(info.st_mode):
        raise KeyLoadError(
            f"The private key {key} is not a regular file; point SSH_KEY_PATH at it."
        )
    if info.st_mode & 0o077:
        raise KeyPermissionError(str(key), stat.S_IMODE(info.st_mode))


def _config_identity_files(profile: Profile, host: str) -> list[Path]:
    """IdentityFile entries ``~/.ssh/config`` gives ``host`` (to check their permissions)."""
    config_file = Path("~/.ssh/config").expanduser()
    if not config_file.is_file():
        return []
    try:
        from asyncssh.config import SSHClientConfig

        config = SSHClientConfig.load(
            None,
            [config_file],
            False,
            False,
            False,
            getpass.getuser(),
            profile.user or (),
            host,
            profile.port if profile.port != 22 else (),
        )
        files = cast(Sequence[object], config.get("IdentityFile", ()) or ())
    except (OSError, ValueError, KeyError, TypeError, asyncssh.Error) as exc:
        # asyncssh reports a broken config itself when connecting; here it only
        # means we cannot pre-check permissions.
        log.debug("cannot pre-read ~/.ssh/config: %s", exc)
        return []
    return [Path(str(f)).expanduser() for f in files]


DEFAULT_IDENTITIES = (
    "id_ed25519_sk",
    "id_ecdsa_sk",
    "id_ed448",
    "id_ed25519",
    "id_ecdsa",
    "id_rsa",
)
"""Private keys in ``~/.ssh`` that asyncssh (like OpenSSH) offers when no key is configured."""


def _default_identity_files() -> list[Path]:
    ssh_dir = Path("~/.ssh").expanduser()
    return [ssh_dir / name for name in DEFAULT_IDENTITIES]


# ----------------------------------------------------------------------------------- host keys


_SSH_CONFIG_UNREADABLE = (
    "~/.ssh/config cannot be read ({exc}); fix that line, or set use_ssh_config = false in the "
    "profile."
)


def _config_port(profile: Profile) -> int | tuple[()]:
    """The port argument for asyncssh: ``()`` lets ~/.ssh/config decide (as ``_options`` does)."""
    return () if profile.use_ssh_config and profile.port == 22 else profile.port


async def host_key_target(profile: Profile, host: str) -> tuple[str, int]:
    """The (host, port) whose key the connection checks in known_hosts for one login host.

    With ``use_ssh_config`` a Host alias resolves like OpenSSH does (HostName, Port,
    HostKeyAlias), so the doctor looks up, fetches and trusts what the login will verify.

    Raises:
        BadInput: ~/.ssh/config cannot be parsed.
    """
    if not profile.use_ssh_config:
        return host, profile.port
    try:
        options = await asyncssh.SSHClientConnectionOptions.construct(
            config=(),
            host=host,
            port=_config_port(profile),
            known_hosts=None,
            client_keys=None,
            agent_path=None,
        )
    except asyncssh.ConfigParseError as exc:
        raise BadInput(_SSH_CONFIG_UNREADABLE.format(exc=exc)) from None
    alias = getattr(options, "host_key_alias", None)
    return str(alias or options.host or host), int(options.port or profile.port)


async def fetch_profile_host_key(profile: Profile, host: str) -> HostKeyInfo:
    """:func:`fetch_host_key` with the profile's SSH options (an ~/.ssh/config alias's HostName,
    Port and ProxyJump), reported under the name and port known_hosts must hold.

    Raises:
        ConnectError: the host could not be reached.
        BadInput: ~/.ssh/config cannot be parsed.
    """
    target, port = await host_key_target(profile, host)
    if not profile.use_ssh_config:
        return await fetch_host_key(host, profile.port, profile.connect_timeout)
    info = await fetch_host_key(
        host, _config_port(profile), profile.connect_timeout, config=(), shown=(host, port)
    )
    return HostKeyInfo(target, port, info.key_type, info.fingerprint, info.public_key)


async def fetch_host_key(
    host: str,
    port: int | tuple[()] = 22,
    timeout: float = 10,
    *,
    config: tuple[()] | None = None,
    shown: tuple[str, int] | None = None,
) -> HostKeyInfo:
    """Connect just far enough to read a server's host key (to show it before trusting it).

    ``config=()`` applies ~/.ssh/config (``port=()``: its Port); ``shown`` is the (host, port)
    named in messages.

    Raises:
        ConnectError: the host could not be reached or did not finish the key exchange.
        BadInput: ~/.ssh/config cannot be parsed.
    """
    where = "{}:{}".format(*shown) if shown else f"{host}:{port if port != () else 22}"
    key: asyncssh.SSHKey | None = None
    reason = ""
    try:
        key = await within(asyncssh.get_server_host_key(host, port, config=config), timeout)
    except asyncssh.ConfigParseError as exc:
        raise BadInput(_SSH_CONFIG_UNREADABLE.format(exc=exc)) from None
    except TimeoutError:
        reason = f"no answer within {timeout:g} s"
    except (OSError, asyncssh.Error) as exc:
        reason = _reason(exc)
    if reason:
        raise ConnectError(
            f"Could not read the host key of {where} ({reason}); check the host name and port.",
            [(host, reason)],
        )
    if key is None:
        raise ConnectError(
            f"{where} presented no host key; ask your cluster admins how to verify it.",
            [(host, "no host key")],
        )
    public = normalize_public_key(key.export_public_key("openssh").decode("ascii"))
    at_port = port if isinstance(port, int) else 22
    return HostKeyInfo(host, at_port, public.split()[0], fingerprint(public), public)


def _reason(exc: BaseException) -> str:
    """A short lower-case reason for one host's failure."""
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    if isinstance(exc, asyncssh.DisconnectError | asyncssh.ChannelOpenError) and exc.reason:
        reason = exc.reason.rstrip(".")
        # "Connection lost" reads better mid-sentence as "connection lost"; keep "SSH ...".
        return reason[:1].lower() + reason[1:] if reason[1:2].islower() else reason
    text = str(exc).strip().rstrip(".")
    return text or type(exc).__name__


# ----------------------------------------------------------------------------------- client


class _Client(asyncssh.SSHClient):
    """asyncssh callbacks: capture an untrusted host key and notice a dropped connection."""

    def __init__(self, owner: Connection) -> None:
        self.owner = owner
        self.presented: tuple[str, str | None, int, str] | None = None
        """(host, addr, port, public key) of a host key known_hosts did not trust."""

    def validate_host_public_key(
        self, host: str, addr: str, port: int, key: asyncssh.SSHKey
    ) -> bool:
        # Called only when known_hosts does not trust the key: remember it for the error, refuse.
        public = key.export_public_key("openssh").decode("ascii")
        self.presented = (host, addr, port, normalize_public_key(public))
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.owner._on_lost(self, exc)


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
        self.host: str | None = _remembered_host(profile)
        """The working login host (tried first on the next connect)."""
        self._password = password
        self._listeners: list[StateCallback] = [on_state] if on_state else []
        self._conn: asyncssh.SSHClientConnection | None = None
        self._client: _Client | None = None
        self._lock = asyncio.Lock()
        self._reconnect_task: asyncio.Task[None] | None = None
        self._last_error: Exception | None = None
        self._closing = False
        self._shell: RemoteShell | None = None
        self._shell_refused: asyncssh.SSHClientConnection | None = None
        """The connection whose login host did not allow the long-lived shell (plain exec)."""
        self._generation = 0
        """Bumped by :meth:`use_profile` when the login settings change: a dial that started
        before is to the old place and is not kept."""

    # ------------------------------------------------------------------ state

    def add_state_listener(self, callback: StateCallback) -> Callable[[], None]:
        """Also report state changes to ``callback``; returns a function that removes it."""
        self._listeners.append(callback)

        def remove() -> None:
            with contextlib.suppress(ValueError):
                self._listeners.remove(callback)

        return remove

    def _set_state(self, state: ConnectionState, message: str) -> None:
        changed = (state, message) != (self.state, self.state_message)
        self.state = state
        self.state_message = message
        if changed:
            log.info("%s: %s", state, message)
            for callback in list(self._listeners):
                callback(state, message)

    @property
    def connected(self) -> bool:
        """True when an open connection is ready for commands."""
        return self._usable() is not None

    @property
    def shell(self) -> RemoteShell | None:
        """The long-lived shell :meth:`run_framed` uses on the current connection; None before
        the first framed command, after a reconnect, or where the login host refused it."""
        shell, conn = self._shell, self._usable()
        if shell is None or conn is None or shell.conn is not conn or conn is self._shell_refused:
            return None
        return shell

    def _usable(self) -> asyncssh.SSHClientConnection | None:
        conn = self._conn
        if conn is None or conn.is_closed():
            return None
        return conn

    def _where(self) -> str:
        return ", ".join(self.profile.hostnames) or "(no login host)"

    # ------------------------------------------------------------------ connect

    async def connect(self) -> None:
        """Open the connection, trying the login hosts in order (remembered host first).

        Raises:
            ConnectError: every login host failed (``failures`` lists why).
            UnknownHostKey: the host is not in known_hosts (carries the fingerprint).
            HostKeyChanged: the host's key differs from known_hosts; refused.
            AuthenticationFailed: the server refused the key/agent/password.
            KeyPermissionError: the private key is accessible by group or others.
            KeyLoadError: the private key is missing, unreadable or encrypted.
        """
        self._closing = False
        if self._usable():
            return
        task = self._reconnect_task
        if task is not None and not task.done():
            await asyncio.shield(task)
            if self._usable():
                return
        async with self._lock:
            if self._usable():
                return
            self._set_state(ConnectionState.CONNECTING, f"connecting to {self._where()}")
            try:
                await self._open()
            except (RemoteError, BadInput) as exc:
                self._last_error = exc
                self._set_state(ConnectionState.DOWN, str(exc))
                raise
            self._set_state(ConnectionState.CONNECTED, f"connected to {self.host}")

    def use_profile(self, profile: Profile) -> bool:
        """Serve ``profile`` from now on (a saved edit of the profile).

        When it logs in elsewhere or otherwise (login hosts, port, user, key, known_hosts, see
        :meth:`Profile.logs_in_as`), the open connection, which went to the old place, is closed
        and the next command dials the new settings; otherwise the connection is kept as it is.

        Returns:
            True when the open connection (if any) was let go.
        """
        old, self.profile = self.profile, profile
        if old.logs_in_as(profile):
            return False
        self._generation += 1
        self.host = _remembered_host(profile)
        self._last_error = None
        # Commands still running on it see a drop and run again on the new one (see run()).
        self._let_go()
        self._set_state(ConnectionState.DISCONNECTED, "login settings changed; not connected yet")
        return True

    @classmethod
    def to_host(cls, profile: Profile, host: str, *, password: str | None = None) -> Connection:
        """A connection to ONE login host of ``profile``, without failover.

        The failover policy lives in :meth:`_host_order`; services that must ask every login
        host (reconciling a lost submission, installing a key, checking each login) use this.
        """
        return cls(profile.model_copy(update={"hostnames": [host]}), password=password)

    def _host_order(self) -> list[str]:
        hosts = list(dict.fromkeys(self.profile.hostnames))
        if self.host in hosts:
            hosts.remove(self.host)
            hosts.insert(0, self.host)
        return hosts

    def _known_hosts_path(self) -> Path:
        return self.profile.known_hosts_path

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
        if self.profile.ssh_key_path:
            check_key_permissions(self.profile.ssh_key_path)
        failures: list[tuple[str, str]] = []
        for host in self._host_order():
            try:
                conn, client = await self._open_host(host)
            except _HostFailed as failed:
                log.info("login host %s failed: %s", host, failed.reason)
                failures.append((host, failed.reason))
                continue
            self._conn, self._client = conn, client
            self._last_error = None
            if self.host != host:
                self.host = host
                _remember_host(self.profile, host)
            return
        detail = "; ".join(f"{h}: {r}" for h, r in failures)
        raise ConnectError(
            f"Could not connect to any login host on port {self.profile.port} ({detail}); check "
            "the host names, the port and your network or VPN.",
            failures,
        )

    def _options(self, host: str) -> dict[str, Any]:
        profile = self.profile
        kh_path = self._known_hosts_path()
        try:
            # Parsed from text we read ourselves so a missing file means "no keys" (asyncssh
            # would otherwise fall back to ~/.ssh/known_hosts) and our own unknown-vs-changed
            # check sees exactly what asyncssh saw.
            known_hosts = asyncssh.import_known_hosts(read_known_hosts(kh_path))
        except ValueError as exc:
            raise BadInput(
                f"The known_hosts file {kh_path} has a broken line ({exc}); fix or delete that "
                "line and try again."
            ) from None
        options: dict[str, Any] = {
            "known_hosts": known_hosts,
            "config": () if profile.use_ssh_config else None,
            "keepalive_interval": self.keepalive_interval,
            "keepalive_count_max": 3,
            "connect_timeout": profile.connect_timeout,
            "login_timeout": profile.connect_timeout,
        }
        # With ~/.ssh/config in use, a default port/empty user leave Port/User to the config
        # (an explicit profile value wins, like `ssh -p`).
        if profile.port != 22 or not profile.use_ssh_config:
            options["port"] = profile.port
        if profile.user:
            options["username"] = profile.user
        if profile.ssh_key_path:
            options["client_keys"] = [str(Path(profile.ssh_key_path).expanduser())]
        else:
            # asyncssh, like OpenSSH, offers the IdentityFiles of ~/.ssh/config and the default
            # ~/.ssh/id_* keys; OpenSSH refuses such a key when others can read it, so do we.
            identities = _config_identity_files(profile, host) if profile.use_ssh_config else []
            for identity in [*identities, *_default_identity_files()]:
                if identity.exists():
                    check_key_permissions(identity)
        if self._password is not None:
            options["password"] = self._password
        return options

    async def _open_host(self, host: str) -> tuple[asyncssh.SSHClientConnection, _Client]:
        client = _Client(self)
        options = self._options(host)
        timeout = self.profile.connect_timeout
        try:
            # asyncssh applies connect_timeout itself; this is the outer guard.
            conn = await dial(host, lambda: client, options, timeout + 1)
        except asyncssh.HostKeyNotVerifiable:
            raise self._host_key_error(host, client) from None
        except asyncssh.PermissionDenied:
            raise self._auth_error(host) from None
        except (asyncssh.KeyImportError, asyncssh.KeyEncryptionError) as exc:
            raise KeyLoadError(
                f"Cannot use the private key {self.profile.ssh_key_path or '(default)'} ({exc}); "
                "if it has a passphrase, add it to ssh-agent (ssh-add) and leave SSH_KEY_PATH "
                "empty."
            ) from None
        except FileNotFoundError as exc:
            raise KeyLoadError(
                f"Cannot read {exc.filename or 'a key file'}; fix SSH_KEY_PATH or the IdentityFile "
                "in ~/.ssh/config."
            ) from None
        except asyncssh.ConfigParseError as exc:
            raise BadInput(_SSH_CONFIG_UNREADABLE.format(exc=exc)) from None
        except TimeoutError:
            raise _HostFailed(f"no answer within {timeout:g} s") from None
        except (OSError, asyncssh.Error) as exc:
            raise _HostFailed(_reason(exc)) from None
        return conn, client

    def _host_key_error(self, host: str, client: _Client) -> RemoteError:
        kh = str(self._known_hosts_path())
        port = self.profile.port
        if client.presented is None:
            # Revoked key, or a certificate problem: never accepted, reported as a change.
            return HostKeyChanged(host, port, "an untrusted or revoked key", kh)
        key_host, addr, port, public = client.presented
        text = read_known_hosts(kh)
        if keys_for_host(text, key_host, port, addr):
            return HostKeyChanged(key_host, port, fingerprint(public), kh)
        return UnknownHostKey(key_host, port, public.split()[0], fingerprint(public), public, kh)

    def _auth_error(self, host: str) -> AuthenticationFailed:
        user = self.profile.user or "your user"
        key = self.profile.ssh_key_path
        how = (
            f"install the public key {key}.pub in ~/.ssh/authorized_keys of {user} on the cluster "
            "or check SSH_KEY_PATH"
            if key
            else "add your key to ssh-agent or set SSH_KEY_PATH, and make sure its public key is "
            f"in ~/.ssh/authorized_keys of {user} on the cluster"
        )
        if not self.profile.user:
            # The likeliest cause then: the local user name is not the cluster login.
            how += "; the profile sets no user, so set user (or SLURM_USER) to your cluster login"
        return AuthenticationFailed(f"{host} refused the SSH login as {user}: {how}.")

    # ------------------------------------------------------------------ drops and reconnect

    def _on_lost(self, client: _Client, exc: Exception | None) -> None:
        if client is not self._client:
            return  # a failed attempt or an already-replaced connection
        self._conn = self._client = None
        if self._closing:
            return
        why = _reason(exc) if exc else "closed by the server"
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
                # Host key, authentication or key problems do not heal by retrying.
                self._last_error = exc
                self._set_state(ConnectionState.DOWN, str(exc))
                return
            self._set_state(ConnectionState.CONNECTED, f"reconnected to {self.host}")
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
        reruns = 0
        while True:
            conn = await self._ensure()
            host = self.host or ""
            try:
                status, out, err = await self._exec(conn, cmd, data, limit)
            except _Dropped as dropped:
                self._mark_dropped(conn, str(dropped))
                if not retry_on_drop and dropped.started:
                    raise ConnectionLost(
                        f"The connection to {host} dropped while `{_short(cmd)}` was running, so "
                        "it may or may not have taken effect; check before running it again."
                    ) from None
                reruns += 1
                if reruns > 3:
                    raise ConnectionLost(
                        f"The connection to {host} keeps dropping while `{_short(cmd)}` runs; "
                        "check the network and try again."
                    ) from None
                continue
            return _result(cmd, status, out, err, host, check)

    async def run_framed(
        self, command: str | Sequence[str], *, timeout: float | None = None, check: bool = False
    ) -> CommandResult:
        """Run an idempotent command (no stdin) on the connection's long-lived shell.

        One network round trip instead of :meth:`run`'s two (channel open, then exec): see
        :mod:`tao_slurm_tui.remote.shell`. Commands run one at a time; after a drop or a lost
        shell the command runs again on a new shell (as ``run(retry_on_drop=True)``). Where the
        login host does not allow the shell, this is :meth:`run` (until the next reconnect).

        Raises:
            CommandTimeout: the command took longer than ``timeout`` (the shell is replaced).
            ConnectionLost: the connection or the shell keeps dropping.
            RemoteError: ``check`` and the command failed; or a connect error.
        """
        cmd = command if isinstance(command, str) else join(command)
        limit = self.profile.command_timeout if timeout is None else timeout
        for _ in range(4):
            conn = await self._ensure()
            if self._shell_refused is conn:
                return await self.run(cmd, timeout=limit, check=check)
            shell = self._shell
            if shell is None or shell.conn is not conn:
                if shell is not None:
                    shell.close()
                shell = self._shell = RemoteShell(conn)
            host = self.host or ""
            try:
                status, out, err = await shell.run(cmd, limit)
            except ShellUnavailable as exc:
                log.info("no long-lived shell on %s (%s); using one exec per command", host, exc)
                self._shell_refused = conn
                continue
            except ShellTimeout:
                raise CommandTimeout(
                    f"`{_short(cmd)}` on {host} did not finish within {limit:g} s; "
                    "raise the timeout or check the cluster."
                ) from None
            except ShellLost as exc:
                if conn.is_closed():
                    self._mark_dropped(conn, str(exc))
                continue
            return _result(cmd, status, out, err, host, check)
        raise ConnectionLost(
            f"The connection to {self.host} keeps dropping while `{_short(cmd)}` runs; "
            "check the network and try again."
        )

    async def _exec(
        self, conn: asyncssh.SSHClientConnection, cmd: str, data: bytes | None, limit: float
    ) -> tuple[int, bytes, bytes]:
        try:
            process = await asyncio.wait_for(
                conn.create_process(for_login_shell(cmd), encoding=None), limit
            )
        except TimeoutError:
            raise CommandTimeout(
                f"{self.host} did not start `{_short(cmd)}` within {limit:g} s; try again later."
            ) from None
        except asyncssh.ChannelOpenError as exc:
            if exc.code == asyncssh.OPEN_CONNECT_FAILED:
                # The session channel never opened, so the command was never sent.
                raise _Dropped(_reason(exc), started=False) from None
            if conn.is_closed():
                raise _Dropped(_reason(exc)) from None
            raise RemoteError(
                f"{self.host} refused to start a command ({exc.reason}); try again in a moment."
            ) from None
        except (asyncssh.DisconnectError, OSError) as exc:
            raise _Dropped(_reason(exc)) from None
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
                f"`{_short(cmd)}` on {self.host} did not finish within {limit:g} s; "
                "raise the timeout or check the cluster."
            ) from None
        except (asyncssh.DisconnectError, asyncssh.ChannelOpenError, OSError) as exc:
            raise _Dropped(_reason(exc)) from None
        finally:
            process.close()
        status = process.returncode
        if status is None:
            if conn.is_closed():
                raise _Dropped("the connection closed before the command finished")
            # The server closed the channel without reporting a status (rare; not a drop).
            status = -1
        assert isinstance(out, bytes) and isinstance(err, bytes)
        return status, out, err

    async def create_process(
        self, command: str | Sequence[str], **kwargs: Any
    ) -> asyncssh.SSHClientProcess[Any]:
        """Start a long-running remote process for streaming (e.g. ``tail -F``).

        The process ends when the connection drops; the caller starts a new one (after which
        this method waits for the reconnect).

        Raises:
            ConnectionLost: the connection dropped twice while opening the process.
            RemoteError: a connect error (see :meth:`connect`) or the server refused the channel.
        """
        cmd = command if isinstance(command, str) else join(command)
        for _ in range(2):
            conn = await self._ensure()
            try:
                return await conn.create_process(cmd, **kwargs)
            except asyncssh.ChannelOpenError as exc:
                if not conn.is_closed():
                    raise RemoteError(
                        f"{self.host} refused to start `{_short(cmd)}` ({exc.reason})."
                    ) from None
                self._mark_dropped(conn, _reason(exc))
            except (asyncssh.DisconnectError, OSError) as exc:
                self._mark_dropped(conn, _reason(exc))
        raise ConnectionLost(
            f"The connection to {self.host} dropped while starting `{_short(cmd)}`; try again."
        )

    # ------------------------------------------------------------------ files

    async def upload_text(self, path: str, content: str, *, mode: int = 0o644) -> None:
        """Write ``content`` to the remote ``path`` atomically.

        The text goes on stdin into a temp file in the same directory (parent directories are
        created), gets ``mode``, then is renamed over ``path``: readers never see half a file.

        Raises:
            RemoteError: the directory cannot be created or the file written.
        """
        parent = posixpath.dirname(path.rstrip("/")) or "."
        name = posixpath.basename(path.rstrip("/"))
        if not name:
            raise BadInput(f"Cannot upload to {path!r}: it names a directory, not a file.")
        qdir = home_path(parent)
        qpath = home_path(path)
        template = qdir + "/" + quote(f".{name}.XXXXXX")
        script = (
            f"mkdir -p -- {qdir} && tmp=$(mktemp {template}) || exit 1; "
            f'if cat > "$tmp" && chmod {mode:o} "$tmp" && mv -f -- "$tmp" {qpath}; '
            'then exit 0; else rm -f -- "$tmp"; exit 1; fi'
        )
        result = await self.run(script, input=content.encode("utf-8"))
        if not result.ok:
            last = next((ln for ln in reversed(result.stderr.splitlines()) if ln.strip()), "")
            raise RemoteError(
                f"Could not write {path} on {result.host}"
                + (f": {last.strip()}" if last else "")
                + "; check that the directory is writable."
            )

    async def read_file(
        self, path: str, *, offset: int = 0, max_bytes: int | None = None, missing_ok: bool = False
    ) -> bytes:
        """Read a remote file from byte ``offset`` on (for incremental log reads).

        Args:
            path: remote path (``~/`` allowed).
            offset: bytes to skip from the start.
            max_bytes: read at most this many bytes (None: to the end).
            missing_ok: return ``b""`` for a missing file instead of raising.

        Raises:
            RemoteFileNotFound: the file does not exist or is not readable (unless ``missing_ok``).
        """
        if offset < 0 or (max_bytes is not None and max_bytes < 0):
            raise ValueError("offset and max_bytes must not be negative")
        qpath = home_path(path)
        read = f"tail -c +{offset + 1} -- {qpath}"
        if max_bytes is not None:
            read += f" | head -c {max_bytes}"
        script = f"if test -r {qpath} && test -f {qpath}; then {read}; else exit 66; fi"
        conn_result = await self._run_bytes(script)
        status, out, err = conn_result
        if status == 66:
            if missing_ok:
                return b""
            raise RemoteFileNotFound(f"{path} does not exist on {self.host} (or is not readable).")
        if status != 0:
            raise RemoteError(
                f"Could not read {path} on {self.host}: "
                f"{err.decode('utf-8', 'replace').strip() or f'exit status {status}'}."
            )
        return out

    async def _run_bytes(self, cmd: str) -> tuple[int, bytes, bytes]:
        """Like :meth:`run` (idempotent, retried after a drop) but returning raw bytes."""
        for _ in range(4):
            conn = await self._ensure()
            try:
                return await self._exec(conn, cmd, None, self.profile.command_timeout)
            except _Dropped as dropped:
                self._mark_dropped(conn, str(dropped))
        raise ConnectionLost(
            f"The connection to {self.host} keeps dropping; check the network and try again."
        )

    # ------------------------------------------------------------------ close

    def _let_go(self) -> asyncssh.SSHClientConnection | None:
        """Close the current connection and its shell, forgotten first so that its
        ``connection_lost`` starts no reconnect; returns it (to wait for) or None."""
        if self._shell is not None:
            self._shell.close()
        self._shell = self._shell_refused = None
        conn, self._conn, self._client = self._conn, None, None
        if conn is not None:
            conn.close()
        return conn

    async def close(self) -> None:
        """Close the connection (no reconnect follows); state becomes ``DISCONNECTED``."""
        self._closing = True
        self._password = None  # a one-time onboarding password: not kept past this connection
        task = self._reconnect_task
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._reconnect_task = None
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


class _HostFailed(Exception):
    """Internal: one login host failed in a way the next host may not share."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _result(cmd: str, status: int, out: bytes, err: bytes, host: str, check: bool) -> CommandResult:
    """The decoded result; with ``check`` a failure raises :class:`RemoteError`."""
    result = CommandResult(
        cmd, status, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), host
    )
    if check and not result.ok:
        last = next((ln for ln in reversed(result.stderr.splitlines()) if ln.strip()), "")
        detail = f": {last.strip()}" if last else ""
        raise RemoteError(f"`{_short(cmd)}` failed on {host} with exit status {status}{detail}.")
    return result


def _short(cmd: str, limit: int = 60) -> str:
    """The start of a command line for messages."""
    first = cmd.strip().splitlines()[0] if cmd.strip() else cmd
    return first if len(first) <= limit else first[: limit - 3] + "..."


# ----------------------------------------------------------------------------------- remembering


def _remember_key(profile: Profile) -> str:
    return f"{profile.user}@{','.join(profile.hostnames)}:{profile.port}"


def _remembered_host(profile: Profile) -> str | None:
    """The login host that worked last time for this profile (any process), if still listed."""
    try:
        data = json.loads((cache_dir() / _REMEMBER_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # a cache: missing or broken just means "no preference"
    host = data.get(_remember_key(profile)) if isinstance(data, dict) else None
    return host if isinstance(host, str) and host in profile.hostnames else None


def _remember_host(profile: Profile, host: str) -> None:
    path = cache_dir() / _REMEMBER_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            data = {}
    except (OSError, ValueError):
        data = {}
    data[_remember_key(profile)] = host
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        # Only a speed-up for the next run; the connection itself is fine.
        log.warning("cannot remember the login host in %s: %s", path, exc)
