"""Cancelling a connect in flight leaves no stray task error (issue 11: quitting during the
doctor printed "Task exception was never retrieved" and a traceback on the terminal)."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import asyncssh
import pytest

from tao_slurm_tui.remote.dial import dial


async def test_cancel_mid_connect_consumes_the_late_connection_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """asyncssh's connect may end with its own error when cancelled (the connection was lost in
    the same instant: asyncio's wait_for then returns that error instead of the cancellation)."""
    started = asyncio.Event()

    async def connect_lost_on_cancel(*_: Any, **__: Any) -> asyncssh.SSHClientConnection:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            raise asyncssh.ConnectionLost("Connection lost") from None
        raise AssertionError("not cancelled")

    monkeypatch.setattr(asyncssh, "connect", connect_lost_on_cancel)
    loop = asyncio.get_running_loop()
    reported: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    caller = asyncio.ensure_future(dial("login.invalid", asyncssh.SSHClient, {}, 30))
    await asyncio.wait_for(started.wait(), 10)
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    await asyncio.sleep(0)
    gc.collect()
    await asyncio.sleep(0)
    assert not reported, [c.get("message") for c in reported]


async def test_dial_times_out_with_timeout_error() -> None:
    # A server that accepts and never speaks. It keeps its writers: from Python 3.13 on a
    # StreamWriter closes its socket when it is garbage-collected, and the dial would see a
    # reset instead of silence.
    silent: list[asyncio.StreamWriter] = []
    server = await asyncio.start_server(lambda r, w: silent.append(w), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    options = {"port": port, "known_hosts": None, "config": None, "username": "x"}
    with pytest.raises(TimeoutError):
        await dial("127.0.0.1", asyncssh.SSHClient, options, 0.3)
    for writer in silent:
        writer.close()
    server.close()


async def test_a_cancelled_host_key_fetch_leaves_no_stray_task_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The doctor's host-key fetch is the other handshake cancelled when the user quits."""
    from tao_slurm_tui.remote.hostkeys import fetch_host_key

    started = asyncio.Event()

    async def fetch_lost_on_cancel(*_: Any, **__: Any) -> None:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            raise asyncssh.ConnectionLost("Connection lost") from None

    monkeypatch.setattr(asyncssh, "get_server_host_key", fetch_lost_on_cancel)
    reported: list[dict[str, Any]] = []
    asyncio.get_running_loop().set_exception_handler(lambda _l, c: reported.append(c))
    caller = asyncio.ensure_future(fetch_host_key("login.invalid", 22, 30))
    await asyncio.wait_for(started.wait(), 10)
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    await asyncio.sleep(0)
    gc.collect()
    await asyncio.sleep(0)
    assert not reported, [c.get("message") for c in reported]
