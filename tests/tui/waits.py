"""Bounded waits for Pilot tests: poll the very condition a test needs, never a fixed sleep.

Under CI load (``pytest -n 6`` on two cores next to the cluster tests) a worker, a timer or a
chain of messages can take far longer than any fixed ``pilot.pause(0.2)``; ``pilot.pause()``
itself only waits until the process looks idle, which a starved process does early. These
helpers loop on the real condition with a generous bound, so a slow machine only makes a test
slower, never red, and a broken app still fails (with what was awaited in the message).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from textual.app import App
from textual.pilot import Pilot
from textual.screen import Screen

TIMEOUT = 30.0
"""Seconds before a wait gives up (only reached when the app is really broken).

15 s was reached at a load average of 8-10 on two cores: the composer's start estimate is one
round trip, but on the fake remote every SLURM command of it is a Python process of its own."""

STEP = 0.05
"""Seconds the app runs between two looks at the condition."""

ENDLESS_GROUPS = frozenset({"logs"})
"""Worker groups that never finish by design (log followers); :func:`settle` ignores them."""


async def wait_for(
    pilot: Pilot[Any],
    predicate: Callable[[], object],
    what: str = "the condition",
    timeout: float = TIMEOUT,
) -> None:
    """Let the app run until ``predicate()`` is true; fail naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            # An AssertionError, not pytest.fail: inside a snapshot's run_before, pytest's
            # BaseException ends the auto-pilot without ending the app, which then hangs.
            raise AssertionError(f"gave up waiting for {what} after {timeout:g} s")
        await pilot.pause(STEP)


def busy_workers(app: App[Any]) -> list[str]:
    """Names of the workers still pending or running, endless followers aside."""
    return [
        f"{worker.group}/{worker.name}"
        for worker in app.workers
        if not worker.is_finished and worker.group not in ENDLESS_GROUPS
    ]


async def settle(pilot: Pilot[Any], timeout: float = TIMEOUT) -> None:
    """Wait until no finite worker is pending or running, seen twice with the queues drained.

    Twice, because a finishing worker often starts the next one (a poll fills the table, the
    highlighted row loads its detail) through a message that is handled a moment later.
    """
    deadline = time.monotonic() + timeout
    quiet = 0
    while quiet < 2:
        await pilot.pause()
        busy = busy_workers(pilot.app)
        if not busy:
            quiet += 1
            continue
        quiet = 0
        if time.monotonic() > deadline:
            raise AssertionError(f"workers still busy after {timeout:g} s: {busy}")
        await pilot.pause(STEP)


@dataclass(frozen=True)
class Note:
    """One notification the app raised (kept even after its toast timed out)."""

    message: str
    title: str
    severity: str


def record_notifications(app: App[Any]) -> list[Note]:
    """Record every ``app.notify`` call (the toasts still show).

    ``app._notifications`` drops a toast once its timeout (2-5 s of wall time) has passed, so
    asserting on it races the clock under load; the record keeps every message.
    """
    notes: list[Note] = []
    original = app.notify

    def notify(message: str, *, title: str = "", severity: Any = "information", **kw: Any) -> None:
        notes.append(Note(str(message), title, str(severity)))
        original(message, title=title, severity=severity, **kw)

    app.notify = notify  # type: ignore[method-assign]
    return notes


async def shown(pilot: Pilot[Any], screen_type: type[Screen[Any]], timeout: float = TIMEOUT) -> Any:
    """Wait until a screen of ``screen_type`` is on top and mounted (composed); return it."""
    app = pilot.app
    await wait_for(
        pilot,
        lambda: isinstance(app.screen, screen_type) and app.screen.is_mounted,
        f"the {screen_type.__name__}",
        timeout,
    )
    return app.screen
