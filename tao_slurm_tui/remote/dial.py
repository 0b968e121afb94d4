"""Opening one SSH connection with an outer time bound, safe to cancel, that stops counting while
the user types a one-time code.

``asyncio.wait_for(asyncssh.connect(...))`` is not used, for two reasons:

- When the caller is cancelled mid-connect (the user quits while the doctor still dials an
  unreachable host), or the bound expires, the connect task may end with its own error
  (``ConnectionLost``, ``gaierror``) as it is cancelled. Python 3.11's ``wait_for`` then raised
  ``CancelledError`` / ``TimeoutError``; from 3.12 on (``wait_for`` became ``asyncio.timeout``)
  it raises the task's own error instead, so a cancelled dial looked like a lost connection and
  a timed-out one like anything but a timeout. :func:`within` owns the task, waits with
  ``asyncio.wait`` (which never takes on the task's outcome), and gives the same answer on every
  Python: ``CancelledError`` when the caller was cancelled, ``TimeoutError`` when the bound
  expired; a late outcome of the cancelled task is consumed, never printed as "Task exception
  was never retrieved".
- A login that asks for a one-time code waits on a person. A :class:`Deadline` is paused while
  the user is asked (:meth:`Deadline.asking`), so a slow typist is not cut off by a bound meant
  for the network.

:func:`failure_reason` says in a few lower-case words why a host failed, for the messages that
list every login host tried.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import asyncssh

T = TypeVar("T")


class Deadline:
    """A time bound in seconds that does not count the time spent waiting for the user."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = seconds
        """The bound, not counting pauses."""
        self._clock = clock
        self._start = clock()
        self._paused_for = 0.0
        self._paused_since: float | None = None
        self._changed = asyncio.Event()

    @property
    def paused(self) -> bool:
        """True while the user is being asked something."""
        return self._paused_since is not None

    def remaining(self) -> float | None:
        """Seconds left (may be <= 0); None while paused."""
        if self._paused_since is not None:
            return None
        return self.seconds - (self._clock() - self._start - self._paused_for)

    @contextlib.contextmanager
    def asking(self) -> Iterator[None]:
        """Stop the clock while the body waits for the user (nested uses are not expected)."""
        self._paused_since = self._clock()
        self._changed.set()
        try:
            yield
        finally:
            self._paused_for += self._clock() - self._paused_since
            self._paused_since = None
            self._changed.set()

    async def wait_changed(self, limit: float | None) -> None:
        """Return when the deadline is paused or resumed, or after ``limit`` seconds."""
        self._changed.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(limit):
                await self._changed.wait()


def _consume(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()  # retrieved: the caller has its answer already (or was cancelled)


async def dial(
    host: str,
    client_factory: Callable[[], asyncssh.SSHClient],
    options: dict[str, Any],
    timeout: float | Deadline,
) -> asyncssh.SSHClientConnection:
    """``asyncssh.connect(host, ...)`` within ``timeout`` (``TimeoutError`` after)."""
    return await within(asyncssh.connect(host, client_factory=client_factory, **options), timeout)


async def within(awaitable: Awaitable[T], timeout: float | Deadline) -> T:
    """Await an asyncssh handshake (connect, host-key fetch) within ``timeout``.

    Raises:
        TimeoutError: the bound expired (the handshake is cancelled; its late error consumed).
        asyncio.CancelledError: the caller was cancelled (likewise).
    """
    deadline = timeout if isinstance(timeout, Deadline) else Deadline(timeout)
    task: asyncio.Future[T] = asyncio.ensure_future(awaitable)
    task.add_done_callback(_consume)
    try:
        while not task.done():
            left = deadline.remaining()
            if left is not None and left <= 0:
                break
            # Wake up when the task ends, the time is up, or the user starts/stops typing.
            changed: asyncio.Future[Any] = asyncio.ensure_future(deadline.wait_changed(left))
            try:
                await asyncio.wait((task, changed), return_when=asyncio.FIRST_COMPLETED)
            finally:
                changed.cancel()
    except asyncio.CancelledError:
        task.cancel()
        raise
    if not task.done():
        task.cancel()
        raise TimeoutError(f"no answer within {deadline.seconds:g} s")
    return task.result()


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
