"""The remote layer against the real sandbox sshd (127.0.0.1:2222).

Covers: run + stdin, failover, host-key trust/refusal, key permissions, drop + reconnect, atomic
upload, timeouts, incremental reads, ~/.ssh/config and ssh-agent.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.remote.connection import (
    AuthenticationFailed,
    CommandTimeout,
    ConnectError,
    Connection,
    ConnectionLost,
    ConnectionState,
    HostKeyChanged,
    KeyPermissionError,
    RemoteError,
    RemoteFileNotFound,
    UnknownHostKey,
)
from tao_slurm_tui.remote.hostkeys import fetch_host_key, trust_host_key
from tests import sandbox
from tests.ready import ssh_banner, wait_until

pytestmark = pytest.mark.usefixtures("cluster")


def _ssh_keygen_fingerprint(pub: Path) -> str:
    out = subprocess.run(
        ["ssh-keygen", "-lf", str(pub)], check=True, capture_output=True, text=True
    )
    return out.stdout.split()[1]


def _profile(**overrides: object) -> Profile:
    return sandbox.sandbox_profile(**overrides)


@pytest.fixture
async def conn() -> AsyncIterator[Connection]:
    connection = Connection(_profile())
    try:
        yield connection
    finally:
        await connection.close()


@pytest.fixture
def scratch() -> str:
    """A unique remote directory path (not created) under the sandbox results root."""
    return f"{sandbox.RESULTS}/test-remote-{uuid.uuid4().hex[:12]}"


# ----------------------------------------------------------------------------------- commands


async def test_connect_and_run(conn: Connection) -> None:
    states: list[ConnectionState] = []
    conn.add_state_listener(lambda state, _msg: states.append(state))
    result = await conn.run(["echo", "it's a $HOME test"])
    assert result.ok
    assert result.stdout == "it's a $HOME test\n"  # the vector was quoted, not expanded
    assert result.host == sandbox.HOST
    assert states == [ConnectionState.CONNECTING, ConnectionState.CONNECTED]
    assert conn.state is ConnectionState.CONNECTED

    who = await conn.run("whoami; echo err >&2; exit 3")
    assert (who.stdout, who.stderr, who.exit_status, who.ok) == (
        f"{sandbox.USER}\n",
        "err\n",
        3,
        False,
    )


async def test_one_mib_on_stdin_arrives_byte_identical(conn: Connection) -> None:
    data = os.urandom(1024 * 1024)
    result = await conn.run("sha256sum", input=data, check=True)
    assert result.stdout.split()[0] == hashlib.sha256(data).hexdigest()
    # str input is sent as UTF-8.
    text = "sécret ✓\n"
    echoed = await conn.run("cat", input=text, check=True)
    assert echoed.stdout == text


async def test_commands_reuse_one_connection(conn: Connection) -> None:
    # Every command's shell has the same sshd session process as parent: one connection.
    parents = {(await conn.run("echo $PPID")).stdout for _ in range(3)}
    assert len(parents) == 1


async def test_check_raises_with_the_last_stderr_line(conn: Connection) -> None:
    with pytest.raises(RemoteError) as err:
        await conn.run("echo first >&2; echo 'the real reason' >&2; exit 4", check=True)
    message = str(err.value)
    assert "the real reason" in message and "exit status 4" in message
    assert message.endswith("exit status 4: the real reason.")


async def test_timeout_raises_and_connection_stays_usable(conn: Connection) -> None:
    with pytest.raises(CommandTimeout, match="did not finish within 1 s"):
        await conn.run("sleep 20", timeout=1)
    assert (await conn.run("echo still here")).stdout == "still here\n"


# ----------------------------------------------------------------------------------- failover


async def test_failover_to_the_second_host_and_remember_it() -> None:
    # 127.0.0.2 is loopback too, but the sandbox sshd listens only on 127.0.0.1: refused.
    profile = _profile(hostnames=["127.0.0.2", "127.0.0.1"], connect_timeout=5)
    first = Connection(profile)
    try:
        result = await first.run("echo ok")
        assert result.stdout == "ok\n" and result.host == "127.0.0.1"
        assert first.host == "127.0.0.1"
    finally:
        await first.close()
    # A new connection (even in a new process: it is kept in the cache dir) tries it first.
    second = Connection(profile)
    try:
        assert second.host == "127.0.0.1"
        messages: list[str] = []
        second.add_state_listener(lambda _s, msg: messages.append(msg))
        await second.connect()
        assert second.host == "127.0.0.1"
        assert messages[-1] == "connected to 127.0.0.1"
    finally:
        await second.close()


async def test_every_host_down_is_one_clear_error() -> None:
    profile = _profile(hostnames=["127.0.0.2", "127.0.0.3"], connect_timeout=5)
    states: list[ConnectionState] = []
    connection = Connection(profile, on_state=lambda s, _m: states.append(s))
    with pytest.raises(ConnectError) as err:
        await connection.connect()
    assert [h for h, _ in err.value.failures] == ["127.0.0.2", "127.0.0.3"]
    assert all("refused" in why for _, why in err.value.failures)
    assert "127.0.0.2" in str(err.value) and "port 2222" in str(err.value)
    assert states[-1] is ConnectionState.DOWN
    await connection.close()


# ----------------------------------------------------------------------------------- host keys


async def test_unknown_host_key_then_trust(tmp_path: Path) -> None:
    known_hosts = tmp_path / "ssh" / "known_hosts"
    expected = _ssh_keygen_fingerprint(sandbox.HOST_KEY_PUB)
    connection = Connection(_profile(known_hosts=str(known_hosts)))
    with pytest.raises(UnknownHostKey) as err:
        await connection.connect()
    unknown = err.value
    assert unknown.fingerprint == expected
    assert (unknown.host, unknown.port, unknown.key_type) == ("127.0.0.1", 2222, "ssh-ed25519")
    assert expected in str(unknown)
    assert unknown.public_key.split()[:2] == sandbox.HOST_KEY_PUB.read_text().split()[:2]

    # fetch_host_key (used by onboarding before connecting) shows the same key.
    info = await fetch_host_key("127.0.0.1", 2222)
    assert (info.fingerprint, info.public_key) == (expected, unknown.public_key)

    trust_host_key(known_hosts, unknown.host, unknown.port, unknown.public_key)
    assert known_hosts.read_text().startswith("[127.0.0.1]:2222 ssh-ed25519 ")
    assert known_hosts.stat().st_mode & 0o777 == 0o600
    try:
        assert (await connection.run("echo trusted")).stdout == "trusted\n"
    finally:
        await connection.close()


async def test_changed_host_key_in_known_hosts_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    known_hosts = tmp_path / "known_hosts"
    trust_host_key(known_hosts, "127.0.0.1", 2222, Path(f"{other}.pub").read_text())
    connection = Connection(_profile(known_hosts=str(known_hosts)))
    with pytest.raises(HostKeyChanged) as err:
        await connection.connect()
    assert err.value.fingerprint == _ssh_keygen_fingerprint(sandbox.HOST_KEY_PUB)
    assert "WARNING" in str(err.value) and "ssh-keygen -R" in str(err.value)
    assert connection.state is ConnectionState.DOWN
    await connection.close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class SecondSshd:
    """A second real sshd on a free port with a freshly generated host key."""

    def __init__(self, workdir: Path, extra_config: str = "") -> None:
        self.port = _free_port()
        self.host_key = workdir / "host_ed25519"
        self.public_key = Path(f"{self.host_key}.pub")
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.host_key)], check=True
        )
        self.config = workdir / "sshd_config"
        self.config.write_text(
            f"Port {self.port}\nListenAddress 127.0.0.1\nHostKey {self.host_key}\n"
            f"PidFile {workdir / 'sshd.pid'}\nUsePAM no\nPasswordAuthentication no\n"
            f"KbdInteractiveAuthentication no\nAllowUsers {sandbox.USER}\n{extra_config}"
        )
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start sshd in the foreground (-D) and wait until it greets as an SSH server."""
        sshd = shutil.which("sshd") or "/usr/sbin/sshd"
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        self.proc = subprocess.Popen(
            [sshd, "-D", "-e", "-f", str(self.config)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        proc = self.proc
        wait_until(
            lambda: ssh_banner("127.0.0.1", self.port),
            f"the second sshd on port {self.port}",
            alive=lambda: proc.poll() is None,
        )

    def stop(self) -> None:
        """Stop the listening sshd we started (its sessions live on until killed)."""
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None


@pytest.fixture
def second_sshd(tmp_path: Path) -> Iterator[SecondSshd]:
    """A started :class:`SecondSshd`, stopped after the test."""
    server = SecondSshd(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()


async def test_server_with_a_new_host_key_is_refused(
    tmp_path: Path, second_sshd: SecondSshd
) -> None:
    port, new_pub = second_sshd.port, second_sshd.public_key
    # known_hosts still holds the sandbox's key for this [host]:port: the server "changed" keys.
    known_hosts = tmp_path / "known_hosts"
    trust_host_key(known_hosts, "127.0.0.1", port, sandbox.HOST_KEY_PUB.read_text())
    connection = Connection(_profile(port=port, known_hosts=str(known_hosts)))
    with pytest.raises(HostKeyChanged) as err:
        await connection.run("echo never")
    assert err.value.fingerprint == _ssh_keygen_fingerprint(new_pub)
    assert (err.value.host, err.value.port) == ("127.0.0.1", port)
    assert f"127.0.0.1:{port}" in str(err.value)
    # Refused, never accepted: known_hosts is unchanged.
    assert known_hosts.read_text().count("\n") == 1
    await connection.close()


# ----------------------------------------------------------------------------------- keys and auth


async def test_world_readable_private_key_is_refused(tmp_path: Path) -> None:
    key = tmp_path / "id_ed25519"
    shutil.copyfile(sandbox.SSH_KEY, key)
    key.chmod(0o644)
    connection = Connection(_profile(ssh_key_path=str(key)))
    with pytest.raises(KeyPermissionError) as err:
        await connection.connect()
    assert f"chmod 600 {key}" in str(err.value)
    assert err.value.exit_code == 2
    # After the fix the same profile connects.
    key.chmod(0o600)
    try:
        assert (await connection.run("echo fixed")).stdout == "fixed\n"
    finally:
        await connection.close()


async def test_wrong_key_is_an_authentication_error(tmp_path: Path) -> None:
    key = tmp_path / "id_other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    connection = Connection(_profile(ssh_key_path=str(key)))
    with pytest.raises(AuthenticationFailed) as err:
        await connection.connect()
    assert "127.0.0.1" in str(err.value) and "authorized_keys" in str(err.value)
    await connection.close()


async def test_ssh_config_alias_port_user_identityfile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True, mode=0o700)
    (home / ".ssh" / "config").write_text(
        "Host tao-sandbox-alias\n"
        "  HostName 127.0.0.1\n"
        "  Port 2222\n"
        f"  User {sandbox.USER}\n"
        f"  IdentityFile {sandbox.SSH_KEY}\n"
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    profile = Profile(
        hostnames=["tao-sandbox-alias"], known_hosts=str(sandbox.KNOWN_HOSTS), use_ssh_config=True
    )
    async with Connection(profile) as connection:
        result = await connection.run("whoami")
    assert result.stdout == f"{sandbox.USER}\n"
    assert result.host == "tao-sandbox-alias"


async def test_ssh_agent_when_no_key_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ssh_agent: str
) -> None:
    # An empty HOME: no ~/.ssh keys or config, so only the agent can log in.
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("SSH_AUTH_SOCK", ssh_agent)
    async with Connection(_profile(ssh_key_path="", use_ssh_config=True)) as connection:
        assert (await connection.run("whoami")).stdout == f"{sandbox.USER}\n"


# ----------------------------------------------------------------------------------- drop


def _kill(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)


async def test_dropped_connection_reconnects_and_is_observable() -> None:
    seen: list[ConnectionState] = []
    connection = Connection(_profile(), on_state=lambda s, _m: seen.append(s))
    try:
        # The shell's parent is the sshd process serving this connection.
        session = int((await connection.run("echo $PPID")).stdout)
        assert "sshd" in Path(f"/proc/{session}/cmdline").read_text()
        seen.clear()
        _kill(session)
        result = await connection.run("echo $PPID")
        assert result.ok and int(result.stdout) != session
        assert ConnectionState.RECONNECTING in seen
        assert seen[-1] is ConnectionState.CONNECTED
        assert seen.index(ConnectionState.RECONNECTING) < len(seen) - 1
        assert connection.state is ConnectionState.CONNECTED
    finally:
        await connection.close()


async def test_command_never_sent_is_run_even_without_retry() -> None:
    # The session dies before the next command: its channel never opens, so even a
    # non-idempotent command (retry_on_drop=False) is safe to send after reconnecting.
    connection = Connection(_profile())
    try:
        session = int((await connection.run("echo $PPID")).stdout)
        _kill(session)
        result = await connection.run("echo $PPID", retry_on_drop=False)
        assert result.ok and int(result.stdout) != session
    finally:
        await connection.close()


async def test_reconnect_backs_off_goes_down_and_recovers(
    tmp_path: Path, second_sshd: SecondSshd
) -> None:
    known_hosts = tmp_path / "known_hosts"
    trust_host_key(known_hosts, "127.0.0.1", second_sshd.port, second_sshd.public_key.read_text())
    seen: list[tuple[ConnectionState, str]] = []
    connection = Connection(
        _profile(port=second_sshd.port, known_hosts=str(known_hosts), connect_timeout=5),
        on_state=lambda s, m: seen.append((s, m)),
        max_backoff=0.1,
    )
    connection.reconnect_attempts = 3
    try:
        session = int((await connection.run("echo $PPID")).stdout)
        # The whole server goes away: the listener, then this connection's session.
        second_sshd.stop()
        seen.clear()
        _kill(session)
        with pytest.raises(ConnectError, match="connection refused"):
            await connection.run("echo unreachable")
        states = [s for s, _ in seen]
        assert states[0] is ConnectionState.RECONNECTING
        assert states[-1] is ConnectionState.DOWN
        assert any("retrying in" in m for _, m in seen)
        # The server comes back: the next command connects again.
        second_sshd.start()
        assert (await connection.run("echo back")).stdout == "back\n"
        assert connection.state is ConnectionState.CONNECTED
    finally:
        await connection.close()


async def _kill_once_started(marker: str, pid: int) -> None:
    """SIGKILL ``pid`` as soon as the remote command has created ``marker`` (read locally)."""
    path = Path(marker)
    for _ in range(600):
        if path.exists():
            _kill(pid)
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"the remote command never created {marker}")


async def test_drop_mid_command_without_retry_raises_connection_lost(scratch: str) -> None:
    connection = Connection(_profile())
    try:
        session = int((await connection.run("echo $PPID")).stdout)
        marker = f"{scratch}/started"
        killer = asyncio.create_task(_kill_once_started(marker, session))
        with pytest.raises(ConnectionLost, match="may or may not have taken effect"):
            await connection.run(
                f"mkdir -p {scratch} && touch {marker} && sleep 30", retry_on_drop=False
            )
        await killer
        # The connection heals for the next command.
        assert (await connection.run("echo back")).stdout == "back\n"
        await connection.run(["rm", "-rf", scratch], check=True)
    finally:
        await connection.close()


async def test_drop_mid_command_with_retry_runs_it_again(scratch: str) -> None:
    connection = Connection(_profile())
    try:
        session = int((await connection.run("echo $PPID")).stdout)
        marker = f"{scratch}/runs"
        killer = asyncio.create_task(_kill_once_started(marker, session))
        # The first run is killed right after appending its line (and sleeps long enough for
        # the kill to land); the re-run sees two lines and does not sleep.
        cmd = (
            f"mkdir -p {scratch} && echo x >> {marker} && "
            f'if [ "$(wc -l < {marker})" = 1 ]; then sleep 30; fi; wc -l < {marker}'
        )
        result = await connection.run(cmd, timeout=60)
        await killer
        assert result.stdout.strip() == "2"
        await connection.run(["rm", "-rf", scratch], check=True)
    finally:
        await connection.close()


# ----------------------------------------------------------------------------------- files


async def test_upload_text_is_atomic_with_mode(conn: Connection, scratch: str) -> None:
    path = f"{scratch}/deep/dir/job's spec.json"
    await conn.upload_text(path, '{"a": "ünïcode"}\n', mode=0o640)
    got = await conn.run(["cat", path], check=True)
    assert got.stdout == '{"a": "ünïcode"}\n'
    mode = await conn.run(["stat", "-c", "%a", path], check=True)
    assert mode.stdout.strip() == "640"
    # Replacing keeps no temp files behind and applies the new mode.
    await conn.upload_text(path, "#!/bin/bash\necho hi\n", mode=0o755)
    listing = await conn.run(["ls", "-A", f"{scratch}/deep/dir"], check=True)
    assert listing.stdout.splitlines() == ["job's spec.json"]
    run = await conn.run(["bash", "-c", f"{scratch}/deep/dir/job\\'s\\ spec.json"])
    assert run.stdout == "hi\n"
    await conn.run(["rm", "-rf", scratch], check=True)


async def test_upload_text_to_home_relative_path(conn: Connection) -> None:
    name = f"~/.tao-test-{uuid.uuid4().hex[:8]}/f.txt"
    await conn.upload_text(name, "home\n", mode=0o600)
    assert (await conn.run(f"cat {name}")).stdout == "home\n"
    await conn.run(f"rm -rf {name.rsplit('/', 1)[0]}", check=True)


async def test_upload_text_into_unwritable_dir_fails_clearly(conn: Connection) -> None:
    with pytest.raises(RemoteError, match=r"Could not write /etc/tao-nope\.txt"):
        await conn.upload_text("/etc/tao-nope.txt", "x")


async def test_read_file_by_offset(conn: Connection, scratch: str) -> None:
    path = f"{scratch}/main.out"
    await conn.upload_text(path, "line1\nline2\nline3\n")
    assert await conn.read_file(path) == b"line1\nline2\nline3\n"
    assert await conn.read_file(path, offset=6) == b"line2\nline3\n"
    assert await conn.read_file(path, offset=6, max_bytes=6) == b"line2\n"
    assert await conn.read_file(path, offset=18) == b""
    assert await conn.read_file(f"{scratch}/nope", missing_ok=True) == b""
    with pytest.raises(RemoteFileNotFound):
        await conn.read_file(f"{scratch}/nope")
    await conn.run(["rm", "-rf", scratch], check=True)


async def test_create_process_streams(conn: Connection) -> None:
    process = await conn.create_process(["printf", "a\\nb\\n"])
    lines = [await process.stdout.readline(), await process.stdout.readline()]
    await process.wait()
    assert lines == ["a\n", "b\n"]
