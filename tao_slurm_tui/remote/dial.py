"""Opening one SSH connection with an outer time bound, safe to cancel.

``asyncio.wait_for(asyncssh.connect(...))`` wraps the connect in a task of its own. When the caller
is cancelled mid-connect (the user quits while the doctor still dials an unreachable host), that
task may still end with its own error (``ConnectionLost``, ``gaierror``) after the cancellation,
and asyncio then prints "Task exception was never retrieved" with a traceback on the user's
terminal. :func:`dial` owns that task and consumes such a late outcome.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import asyncssh


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
    task: asyncio.Future[asyncssh.SSHClientConnection] = asyncio.ensure_future(
        asyncssh.connect(host, client_factory=client_factory, **options)
    )
    task.add_done_callback(_consume)
    return await asyncio.wait_for(task, timeout)
