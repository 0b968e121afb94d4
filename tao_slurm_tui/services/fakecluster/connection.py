"""The real :class:`~tao_slurm_tui.remote.connection.Connection` over a local transport.

:class:`FakeConnection` changes ONE thing of the real connection: how a login host is dialled
(``_open_host``). Failover, states and their listeners, reconnect with backoff, the long-lived
shell and its framing (:mod:`tao_slurm_tui.remote.shell`), ``run``, ``upload_text`` and
``read_file`` are the real code. The "SSH connection" it gets (:class:`LocalLink`) runs each
command as sshd does, through ``sh -c``, on this machine, in the world's environment (fake
SLURM tools first on ``PATH``, ``HOME`` in the world). The login checks are the cluster's:
the host key must be in the profile's known_hosts, and the key (or the password) must be
authorized in the world's ``~/.ssh/authorized_keys``.

Cluster paths are mapped into the world both ways, as a mount would: ``/lustre/...`` and
``/home/...`` in a command run under ``<world>/fs``, and the prefix is taken off what comes
back. A command the real connection base64-wraps for the login shell
(:func:`~tao_slurm_tui.core.quoting.for_login_shell`) is unwrapped first.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import re
import shlex
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import asyncssh

from tao_slurm_tui.core.models import HostKeyInfo
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.remote.authprobe import AuthProbe
from tao_slurm_tui.remote.connection import ConnectError, Connection, StateCallback
from tao_slurm_tui.remote.hostkeys import (
    fingerprint,
    keys_for_host,
    normalize_public_key,
    read_known_hosts,
)
from tao_slurm_tui.remote.login import HostFailed, LoginClient, auth_error, host_key_error
from tao_slurm_tui.remote.shell import SHELL_COMMAND
from tao_slurm_tui.services.fakecluster import engine
from tao_slurm_tui.services.fakecluster.pty_process import PtyProcess, start_on_terminal
from tao_slurm_tui.services.fakecluster.world import World

_WRAPPED = re.compile(r'eval "\$\(echo ([A-Za-z0-9+/=]+) \| base64 -d\)"')
_MOUNT = re.compile(r"(?<![\w.~/$-])(" + "|".join(engine.MOUNTS) + r")(?=/|\Z|[\s'\"`;|&()<>:,=])")
OUTPUT_LIMIT = 32 * 1024 * 1024
"""Longest answer a fake command may give (asyncio's readers need a bound)."""
_DEFAULT_KEYS = ("~/.ssh/id_ed25519", "~/.ssh/id_ecdsa", "~/.ssh/id_rsa")


def unwrap(command: str) -> str:
    """The command sshd's login shell would run (``for_login_shell``'s wrapping undone)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return command
    if len(words) == 3 and words[:2] == ["sh", "-c"]:
        match = _WRAPPED.fullmatch(words[2])
        if match:
            return base64.b64decode(match.group(1)).decode("utf-8")
    return command


class _Reader:
    """One output stream of a :class:`LocalProcess`, world paths mapped back to cluster ones."""

    def __init__(self, stream: asyncio.StreamReader, root: str) -> None:
        self._stream = stream
        self._root = root.encode()

    def _back(self, data: bytes) -> bytes:
        return data.replace(self._root + b"/", b"/") if self._root in data else data

    async def readuntil(self, separator: bytes) -> bytes:
        return self._back(await self._stream.readuntil(separator))

    async def read(self, n: int = -1) -> bytes:
        return self._back(await self._stream.read(n))


class _Writer:
    """stdin of a :class:`LocalProcess` (a shell's command lines get their paths mapped)."""

    def __init__(self, process: asyncio.subprocess.Process, link: LocalLink, commands: bool):
        assert process.stdin is not None
        self._stdin = process.stdin
        self._link = link
        self._commands = commands

    def write(self, data: bytes) -> None:
        if self._commands:
            self._link.world.move_on()
            text = data.decode("utf-8")
            self._link.world.commands.append(text)
            data = self._link.map_in(text).encode("utf-8")
        self._stdin.write(data)

    def write_eof(self) -> None:
        self._stdin.close()


class LocalProcess:
    """The part of asyncssh's ``SSHClientProcess`` the connection and the shell use."""

    def __init__(self, process: asyncio.subprocess.Process, link: LocalLink, shell: bool):
        assert process.stdout is not None and process.stderr is not None
        self._process = process
        self.stdin = _Writer(process, link, shell)
        self.stdout = _Reader(process.stdout, link.world.root)
        self.stderr = _Reader(process.stderr, link.world.root)
        self._closed = False

    @property
    def returncode(self) -> int | None:
        return self._process.returncode

    async def communicate(self) -> tuple[bytes, bytes]:
        out, err = await asyncio.gather(self.stdout.read(), self.stderr.read())
        await self._process.wait()
        return out, err

    def is_closing(self) -> bool:
        return self._closed or self._process.returncode is not None

    def send_signal(self, name: str) -> None:
        if self._process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._process.send_signal(getattr(signal, f"SIG{name}"))

    def close(self) -> None:
        self._closed = True
        # sshd hangs up the channel's whole session: what the command started goes too (a
        # step srun started on a node, TensorBoard), not only its shell.
        if self._process.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._process.pid, signal.SIGKILL)
        self.send_signal("KILL")
        # Close the pipes now, while the loop runs (a test's loop may close right after).
        transport = getattr(self._process, "_transport", None)
        if transport is not None:
            transport.close()

    async def wait_closed(self) -> None:
        await self._process.wait()


class LocalListener:
    """The part of asyncssh's ``SSHListener`` a forward uses."""

    def __init__(self, server: asyncio.Server) -> None:
        self._server = server

    def get_port(self) -> int:
        return int(self._server.sockets[0].getsockname()[1])

    def close(self) -> None:
        self._server.close()

    async def wait_closed(self) -> None:
        await self._server.wait_closed()


def _relay(port: int) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]:
    """A connection handler copying bytes both ways to 127.0.0.1:``port``."""

    async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        try:
            while data := await source.read(65536):
                sink.write(data)
                await sink.drain()
        finally:
            sink.close()

    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            far_reader, far_writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            writer.close()
            return
        await asyncio.gather(
            pipe(reader, far_writer), pipe(far_reader, writer), return_exceptions=True
        )

    return relay


class LocalLink:
    """The part of asyncssh's ``SSHClientConnection`` the connection uses: commands as sshd
    runs them, on this machine, inside the world."""

    def __init__(self, world: World, host: str, client: LoginClient) -> None:
        self.world = world
        self.host = host
        self._client = client
        self._closed = False
        self._processes: list[LocalProcess | PtyProcess] = []
        world.on_dial.append(self)

    def map_in(self, command: str) -> str:
        """``command`` with the cluster's paths moved into the world."""
        return _MOUNT.sub(lambda m: self.world.root + m.group(1), command)

    def is_closed(self) -> bool:
        return self._closed

    async def forward_local_port(
        self, listen_host: str, listen_port: int, dest_host: str, dest_port: int
    ) -> LocalListener:
        """``ssh -L``: every fake node is this machine, so ``dest_host`` is 127.0.0.1."""
        if self._closed or self.world.link == "down":
            raise OSError("connection lost")
        server = await asyncio.start_server(_relay(dest_port), listen_host, listen_port)
        return LocalListener(server)

    async def create_process(self, command: str, **options: Any) -> LocalProcess | PtyProcess:
        if self._closed or self.world.link == "down":
            self.drop()
            raise asyncssh.ChannelOpenError(asyncssh.OPEN_CONNECT_FAILED, "connection lost")
        if self.world.delay:
            await asyncio.sleep(self.world.delay)
        shell = command == SHELL_COMMAND
        if not shell:
            self.world.move_on()
            command = unwrap(command)
            self.world.commands.append(command)
            for pattern, event in list(self.world.holds):
                if pattern in command:
                    await event.wait()
        env = self.world.env()
        if options.get("term_type"):
            return await self._on_terminal(command, env, options)
        process = await asyncio.create_subprocess_exec(
            "/bin/sh",
            "-c",
            # A pty (term_type) merges stderr into stdout, as sshd's does.
            "exec sh"
            if shell
            else ("exec 2>&1; " if options.get("term_type") else "") + self.map_in(command),
            env=env,
            cwd=env["HOME"],
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            # asyncssh's readers have no line limit; asyncio's default (64 KiB) would cut an
            # answer the real connection delivers (a training's status.json read, a big tail).
            limit=OUTPUT_LIMIT,
        )
        local = LocalProcess(process, self, shell)
        self._processes = [p for p in self._processes if not p.is_closing()] + [local]
        return local

    async def _on_terminal(
        self, command: str, env: dict[str, str], options: dict[str, Any]
    ) -> PtyProcess:
        """``command`` on a new pseudo-terminal of the client's type and size."""
        process = await start_on_terminal(
            ["/bin/sh", "-c", self.map_in(command)],
            env=env,
            cwd=env["HOME"],
            term_type=str(options["term_type"]),
            size=options.get("term_size") or (80, 24),
            root=self.world.root,
        )
        self._processes = [p for p in self._processes if not p.is_closing()] + [process]
        return process

    def _end(self) -> bool:
        if self._closed:
            return False
        self._closed = True
        for process in self._processes:
            process.close()
        with contextlib.suppress(ValueError):
            self.world.on_dial.remove(self)
        return True

    def close(self) -> None:
        if self._end():
            self._client.connection_lost(None)

    def abort(self) -> None:
        self.close()

    def drop(self) -> None:
        """The network dropped the connection (the client hears it as a reset)."""
        if self._end():
            self._client.connection_lost(ConnectionResetError("Connection reset by peer"))

    async def wait_closed(self) -> None:
        for process in self._processes:
            with contextlib.suppress(ProcessLookupError):
                await process.wait_closed()


class FakeConnection(Connection):
    """:class:`Connection` whose login hosts are the world's (see the module docstring)."""

    reconnect_attempts = 3
    """A fake network fails fast: three tries (not eight) before ``down``."""

    def __init__(
        self,
        world: World,
        profile: Profile,
        *,
        password: str | None = None,
        on_state: StateCallback | None = None,
    ) -> None:
        super().__init__(profile, password=password, on_state=on_state, max_backoff=0.05)
        self.world = world
        self._password_given = password

    async def _login(
        self, host: str, client: LoginClient, options: dict[str, Any]
    ) -> asyncssh.SSHClientConnection:
        await asyncio.sleep(0)
        public = self.world.host_keys.get(host)
        if self.world.link == "down" or public is None:
            raise HostFailed(f"no answer within {self.profile.connect_timeout:g} s")
        port = self.profile.port
        known = read_known_hosts(self.profile.known_hosts_path)
        if public not in keys_for_host(known, host, port):
            client.presented = (host, None, port, public)
            raise host_key_error(self.profile, host, client.presented)
        if not self._authorized():
            raise auth_error(self.profile, host)
        link: Any = LocalLink(self.world, host, client)
        return link  # type: ignore[no-any-return]

    def _authorized(self) -> bool:
        if self._password_given is not None:
            return self._password_given == self.world.password
        authorized = self.world.local(f"{self.world.home}/.ssh/authorized_keys")
        try:
            allowed = {
                normalize_public_key(" ".join(line.split()[:2]))
                for line in authorized.read_text(encoding="utf-8").splitlines()
                if len(line.split()) >= 2
            }
        except (OSError, ValueError):
            return False
        paths = [self.profile.ssh_key_path] if self.profile.ssh_key_path else list(_DEFAULT_KEYS)
        for path in paths:
            key = Path(path).expanduser()
            try:
                public = asyncssh.read_private_key(key).export_public_key("openssh").decode()
            except (OSError, asyncssh.KeyImportError, asyncssh.KeyEncryptionError):
                continue
            if normalize_public_key(public) in allowed:
                return True
        return False


class FakeCluster:
    """:class:`~tao_slurm_tui.remote.access.ClusterAccess` to a :class:`World`."""

    def __init__(self, world: World) -> None:
        self.world = world
        """The cluster every connection reaches."""

    @property
    def jobs_write_events(self) -> bool:
        """A world whose jobs move on their own (demo mode) writes run events and is watched
        at the pace a real cluster is; a test's world moves when the test (or a SLURM tool)
        says, so a monitor over it runs squeue every tick."""
        return self.world.paced

    def connection(
        self, profile: Profile, *, on_state: StateCallback | None = None
    ) -> FakeConnection:
        """The profile's connection to the world's login hosts."""
        return FakeConnection(self.world, profile, on_state=on_state)

    def to_host(
        self, profile: Profile, host: str, *, password: str | None = None
    ) -> FakeConnection:
        """A connection to one of the world's login hosts."""
        single = profile.model_copy(update={"hostnames": [host]})
        return FakeConnection(self.world, single, password=password)

    async def host_key(self, profile: Profile, host: str) -> HostKeyInfo:
        """The host key the world's login host presents."""
        await asyncio.sleep(0)
        public = self.world.host_keys.get(host)
        if self.world.link == "down" or public is None:
            reason = f"no answer within {profile.connect_timeout:g} s"
            raise ConnectError(
                f"Could not read the host key of {host}:{profile.port} ({reason}); check the "
                "host name and port.",
                [(host, reason)],
            )
        return HostKeyInfo(host, profile.port, public.split()[0], fingerprint(public), public)

    async def probe_login(
        self, profile: Profile, host: str, *, password: str | None = None
    ) -> AuthProbe:
        """The world's login hosts take keys and passwords, never a one-time code."""
        await asyncio.sleep(0)
        return AuthProbe(host, False, ("publickey", "password"), ())
