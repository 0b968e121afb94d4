"""One code per working session: a dashboard's connection lent to the commands beside it.

The owner is a real :class:`Connection` logged in with a one-time code (tests/codesshd.py); the
clients are real connections with ``attach`` set and no prompter, so any login of their own
would fail with ``CodeRequired``: a command that works proves it ran over the shared one.
"""

from __future__ import annotations

import asyncio
import socket
import stat
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tao_slurm_tui.config import runtime_dir
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.remote import share
from tao_slurm_tui.remote.connection import CodeRequired, Connection, ConnectionState
from tao_slurm_tui.remote.share_server import ShareServer
from tests.codesshd import CodeServer, code_site
from tests.unit.test_code_login import Typist


@pytest.fixture
async def site(tmp_path: Path) -> AsyncIterator[tuple[CodeServer, Profile]]:
    async with code_site(tmp_path) as running:
        yield running


@pytest.fixture
async def owner(site: tuple[CodeServer, Profile]) -> AsyncIterator[tuple[Connection, ShareServer]]:
    server, profile = site
    conn = Connection(profile, max_backoff=0.2)
    conn.login.prompter = Typist(server.issue())
    sharing = ShareServer(conn)
    assert await sharing.start()
    await conn.connect()
    yield conn, sharing
    await sharing.close()
    await conn.close()


def client(profile: Profile) -> Connection:
    conn = Connection(profile, max_backoff=0.2)
    conn.login.attach = True
    return conn


async def test_commands_run_over_the_dashboards_connection_without_a_login(
    site: tuple[CodeServer, Profile], owner: tuple[Connection, ShareServer]
) -> None:
    server, profile = site
    cli = client(profile)
    try:
        result = await cli.run("echo out; echo err >&2; exit 3")
        assert (result.stdout, result.stderr, result.exit_status) == ("out\n", "err\n", 3)
        piped = await cli.run("cat", input=b"\x00secret bytes\xff")
        assert piped.stdout == "\x00secret bytes\ufffd"
        framed = await cli.run_framed("echo framed; echo e >&2")
        assert (framed.stdout, framed.stderr, framed.ok) == ("framed\n", "e\n", True)
        process = await cli.create_process("for i in 1 2 3; do echo $i; sleep 0.05; done")
        lines = [line async for line in process.stdout]
        await process.wait()
        assert lines == ["1\n", "2\n", "3\n"] and process.returncode == 0
        assert cli.login.shared_from.startswith("the dashboard's connection")
        assert "over the dashboard's connection" in cli.state_message
    finally:
        await cli.close()
    assert server.logins == 1 and owner[1].welcomed == 1


async def test_files_travel_both_ways(
    site: tuple[CodeServer, Profile], owner: tuple[Connection, ShareServer], tmp_path: Path
) -> None:
    _, profile = site
    cli = client(profile)
    target = tmp_path / "up" / "spec.yaml"
    try:
        await cli.upload_text(str(target), "epochs: 3\n", mode=0o640)
        assert target.read_text() == "epochs: 3\n"
        assert stat.S_IMODE(target.stat().st_mode) == 0o640
        assert await cli.read_file(str(target), offset=8) == b"3\n"
    finally:
        await cli.close()


async def test_the_socket_is_private(owner: tuple[Connection, ShareServer]) -> None:
    path = owner[1].path
    assert path is not None and path.parent == runtime_dir()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_ISSOCK(path.stat().st_mode)
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


async def test_a_second_dashboard_does_not_serve_the_same_login(
    site: tuple[CodeServer, Profile], owner: tuple[Connection, ShareServer]
) -> None:
    _, profile = site
    other = ShareServer(Connection(profile))
    assert not await other.start()
    await owner[1].close()
    assert await other.start()  # the first one gone, the next may serve
    await other.close()


async def test_a_stale_socket_file_is_not_a_share(site: tuple[CodeServer, Profile]) -> None:
    """Readiness is an answer, not a file: a dead dashboard's socket (no listener), a socket
    that never answers, and a plain file are all passed over; the command logs in itself."""
    _, profile = site
    path = share.socket_path(profile, share.share_dir())
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    silent.bind(str(path))
    silent.listen(1)  # accepts, never answers
    try:
        cli = client(profile)
        with pytest.raises(CodeRequired):
            await cli.connect()
        await cli.close()
    finally:
        silent.close()
    path.unlink()
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(path))
    dead.close()  # a socket file with no listener
    cli = client(profile)
    with pytest.raises(CodeRequired):
        await cli.connect()
    await cli.close()


async def test_a_stale_socket_is_replaced_by_the_next_dashboard(
    site: tuple[CodeServer, Profile],
) -> None:
    server, profile = site
    path = share.socket_path(profile, share.share_dir())
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(path))
    dead.close()
    conn = Connection(profile)
    conn.login.prompter = Typist(server.issue())
    sharing = ShareServer(conn)
    try:
        assert await sharing.start()
        cli = client(profile)
        assert (await cli.run("echo ok")).stdout == "ok\n"
        await cli.close()
    finally:
        await sharing.close()
        await conn.close()
    assert not path.exists()


class _Deaf:
    def connection_lost(self, exc: Exception | None) -> None:
        pass


async def test_another_login_is_refused(
    site: tuple[CodeServer, Profile],
    owner: tuple[Connection, ShareServer],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, profile = site
    other = profile.model_copy(update={"user": "bob"})
    assert share.socket_path(other) != share.socket_path(profile)
    # Even at the same socket (forced here), a hello naming another login is refused.
    real = share.socket_path
    monkeypatch.setattr(share, "socket_path", lambda _p, d=None: real(profile, d))
    assert await share.attach(other, _Deaf()) is None
    link = await share.attach(profile, _Deaf())
    assert link is not None
    link.close()


async def test_a_drop_of_the_dashboards_connection_waits_for_its_one_new_code(
    site: tuple[CodeServer, Profile], owner: tuple[Connection, ShareServer]
) -> None:
    server, profile = site
    conn, _ = owner
    typist = conn.login.prompter
    assert isinstance(typist, Typist)
    typist.answers.append(server.issue())
    typist.delay = 0.3
    cli = client(profile)
    try:
        assert (await cli.run("echo before")).stdout == "before\n"
        server.drop_all()
        # The command waits while the dashboard reconnects and asks its user, once.
        assert (await cli.run("echo after")).stdout == "after\n"
    finally:
        await cli.close()
    assert len(typist.asked) == 2 and server.logins == 2


async def test_the_dashboard_closing_leaves_the_command_to_log_in_itself(
    site: tuple[CodeServer, Profile], owner: tuple[Connection, ShareServer]
) -> None:
    _, profile = site
    cli = client(profile)
    try:
        await cli.run("true")
        await owner[1].close()
        for _ in range(100):
            if cli.state is not ConnectionState.CONNECTED:
                break
            await asyncio.sleep(0.02)
        with pytest.raises(CodeRequired):
            await cli.run("true")
    finally:
        await cli.close()
