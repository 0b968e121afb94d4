"""The site's reservations and out-of-service nodes, fetched in the background: the words behind
``ReqNodeNotAvail`` for the monitor, and the announced maintenance window for an unreachable
cluster.

Asked (one ``scontrol show reservation`` + ``sinfo -R`` on its own channel, never awaited by a
tick) at most every :data:`REFRESH_SECONDS` while jobs are active, every :data:`URGENT_SECONDS`
while one waits for a reason only the site's state explains.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable

from tao_slurm_tui.core.models import JobRecord, TaoStatus
from tao_slurm_tui.core.site_state import (
    WAIT_PREFIX,
    Reservation,
    SiteState,
    explain_wait,
    is_site_wait,
    maintenance_now,
    parse_site,
    site_command,
)
from tao_slurm_tui.errors import TaoError
from tao_slurm_tui.remote.connection import Remote
from tao_slurm_tui.services.store import JobStore

REFRESH_SECONDS = 600.0
URGENT_SECONDS = 60.0


class SiteWatch:
    """The last known site state of one profile's cluster."""

    def __init__(
        self, conn: Remote, *, timeout: Callable[[], float], clock: Callable[[], float]
    ) -> None:
        self.conn = conn
        self.timeout = timeout
        self.clock = clock
        self.state: SiteState | None = None
        """None until the first answer."""
        self._fetched = -1e18
        self._task: asyncio.Task[None] | None = None

    def send(self, jobs: Iterable[JobRecord]) -> None:
        """Start a background fetch when one is due for these (active) jobs."""
        urgent = any(j.status is TaoStatus.PENDING and is_site_wait(j.reason) for j in jobs)
        due = URGENT_SECONDS if urgent else REFRESH_SECONDS
        if self.clock() - self._fetched < due or (self._task and not self._task.done()):
            return
        self._fetched = self.clock()
        self._task = asyncio.get_running_loop().create_task(self._fetch())

    async def _fetch(self) -> None:
        with contextlib.suppress(TaoError):
            result = await self.conn.run(site_command(), timeout=self.timeout())
            self.state = parse_site(result.stdout)

    async def close(self) -> None:
        """Stop a fetch under way, while the loop still runs (the back end closes next)."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def wait(self) -> None:
        """Wait for a fetch under way (tests; the app never waits)."""
        if self._task is not None:
            await asyncio.shield(self._task)

    def maintenance(self) -> Reservation | None:
        """The maintenance reservation under way now, if the site announced one."""
        return maintenance_now(self.state, self.clock())

    def explain(self, store: JobStore, profile: str, jobs: Iterable[JobRecord]) -> list[str]:
        """Write the waiting sentence into each pending job's message (and take it away once
        the job no longer waits for the site); the ids changed."""
        changed = []
        for job in jobs:
            words = ""
            if job.status is TaoStatus.PENDING and self.state is not None:
                words = explain_wait(job.reason, self.state, self.clock())
            if words and words != job.message and not job.message.startswith("Retry "):
                store.update_job(profile, job.id, message=words)
                changed.append(job.id)
            elif not words and job.message.startswith(WAIT_PREFIX):
                store.update_job(profile, job.id, message="")
                changed.append(job.id)
        return changed
