"""Opening one SSH connection with an outer time bound, safe to cancel.

``asyncio.wait_for(asyncssh.connect(...))`` wraps the connect in a task of its own. When the caller
is cancelled mid-connect (the user quits while the doctor still dials an unreachable host), that
task may still end with its own error (``ConnectionLost``, ``gaierror``) after the cancellation,
and asyncio then prints "Task exception was never retrieved" with a traceback on the user's
terminal. :func:`dial` owns that task and consumes such a late outcome.

:func:`failure_reason` says in a few lower-case words why a host failed, for the messages that
list every login host tried.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import asyncssh

T = TypeVar("T")


def _consume(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()  # retrieved: the caller has its answer already (or was cancelled)


async def dial(
    host: str,
    client_factory: Callable[[], asyncssh.SSHClient],
    options: dict[str, Any],
    timeout: float,
) -> asyncssh.SSHClientConnection:
    """``asyncssh.connect(host, ...)`` within ``timeout`` seconds (``TimeoutError`` after)."""
    return await within(asyncssh.connect(host, client_factory=client_factory, **options), timeout)


async def within(awaitable: Awaitable[T], timeout: float) -> T:
    """Await an asyncssh handshake (connect, host-key fetch) within ``timeout`` seconds; when the
    caller is cancelled, a late error of the handshake is consumed, not logged."""
    task: asyncio.Future[T] = asyncio.ensure_future(awaitable)
    task.add_done_callback(_consume)
    return await asyncio.wait_for(task, timeout)


def failure_reason(exc: BaseException) -> str:
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
