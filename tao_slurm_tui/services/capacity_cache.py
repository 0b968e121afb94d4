"""The last capacity report of one cluster, shared by the GPUs screen and the composer.

No SSH and no Textual here (the fake back end uses it too): the cache only holds a report and
the one fetch on its way.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from tao_slurm_tui.core.capacity_report import CapacityReport

log = logging.getLogger(__name__)

CAPACITY_MAX_AGE = 60.0
"""Seconds a capacity report stays good enough for the composer's free-block hint."""


class CapacityCache:
    """The last capacity report of one cluster, shared by the GPUs screen and the composer.

    :meth:`refresh` always asks the cluster (the GPUs screen, its timer, ``r``); :meth:`get`
    answers from the last report while it is younger than ``max_age`` seconds and asks
    otherwise (the composer's block hint on first open). Callers that ask while a refresh is
    on its way share it: never two capacity commands at once for one cluster.
    """

    def __init__(
        self,
        fetch: Callable[[], Awaitable[CapacityReport]],
        *,
        max_age: float = CAPACITY_MAX_AGE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._fetch = fetch
        self.max_age = max_age
        self._clock = clock
        self.report: CapacityReport | None = None
        """The last report (None before the first)."""
        self.fetched_at: float | None = None
        self.fetches = 0
        """Capacity commands sent (what the cache saved is visible in tests)."""
        self._inflight: asyncio.Future[CapacityReport] | None = None

    def fresh(self) -> CapacityReport | None:
        """The last report if it is younger than ``max_age``."""
        if self.report is None or self.fetched_at is None:
            return None
        return self.report if self._clock() - self.fetched_at < self.max_age else None

    async def refresh(self) -> CapacityReport:
        """A new report from the cluster (or the one already on its way).

        Raises whatever the fetch raises (``OperationFailed``, ``TaoError``).
        """
        if self._inflight is None:
            self._inflight = asyncio.ensure_future(self._fetch_once())
            # Its failure is every waiter's; mark it seen even if all of them gave up.
            self._inflight.add_done_callback(lambda f: f.cancelled() or f.exception())
        inflight = self._inflight
        # shield: one caller giving up (a screen closed) does not cancel the others' answer.
        return await asyncio.shield(inflight)

    async def _fetch_once(self) -> CapacityReport:
        try:
            self.fetches += 1
            report = await self._fetch()
            self.report, self.fetched_at = report, self._clock()
            return report
        finally:
            self._inflight = None

    def clear(self) -> None:
        """Forget the last report (the profile now points at another cluster)."""
        self.report = self.fetched_at = None

    async def get(self) -> CapacityReport:
        """The last report while fresh, else a new one."""
        return self.fresh() or await self.refresh()

    async def get_or_none(self) -> CapacityReport | None:
        """:meth:`get`, or None when the cluster could not say (a hint, never an error)."""
        try:
            return await self.get()
        except Exception as exc:
            log.info("capacity for the start estimate: %s", exc)
            return None
