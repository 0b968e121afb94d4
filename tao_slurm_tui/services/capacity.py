"""Cluster capacity over the profile's one connection: one round trip per refresh.

The command and every rule live in :mod:`tao_slurm_tui.core.capacity` and
:mod:`tao_slurm_tui.core.capacity_report`; this module only sends the command and turns a
missing answer into one sentence for the user.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from tao_slurm_tui.core.capacity import (
    CapacityUnavailable,
    capacity_command,
    parse_capacity_output,
)
from tao_slurm_tui.core.capacity_report import CapacityReport, build_report
from tao_slurm_tui.core.start_estimate import (
    StartEstimate,
    estimate_command,
    parse_estimates,
    script_request,
    start_estimate_of,
    variants,
)
from tao_slurm_tui.errors import OperationFailed
from tao_slurm_tui.remote.connection import Remote

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


async def fetch_capacity(
    conn: Remote, *, user: str = "", timeout: float | None = None
) -> CapacityReport:
    """One capacity refresh: one remote command, parsed and added up.

    Args:
        conn: the profile's connection.
        user: the login user (used if the remote ``id -un`` did not answer).
        timeout: seconds for the command; default the connection's command timeout.

    Raises:
        OperationFailed: SLURM did not list its nodes (the sentence says what it said).
        TaoError: the connection failed (its own sentence).
    """
    result = await conn.run(capacity_command(), timeout=timeout)
    try:
        raw = parse_capacity_output(result.stdout, user=user)
    except CapacityUnavailable as exc:
        raise OperationFailed(
            f"Could not read the cluster's capacity: {exc} Check that SLURM is up with "
            "'tao-slurm-tui doctor'."
        ) from exc
    for note in raw.notes:
        log.info("capacity: %s", note)
    return build_report(raw)


async def estimate_start(
    conn: Remote,
    script: str,
    allowed_partitions: list[str],
    *,
    capacity: CapacityReport | CapacityCache | None = None,
    timeout: float | None = None,
) -> StartEstimate:
    """SLURM's start estimate for a rendered script, and what would start sooner; no job made.

    One round trip: the script on stdin, ``sbatch --test-only`` on it as it is and with each
    variant (:func:`~tao_slurm_tui.core.start_estimate.variants`).

    Args:
        conn: the profile's connection.
        script: the sbatch script exactly as it would be submitted.
        allowed_partitions: the profile's partitions (tried one by one).
        capacity: the capacity for the free-block hint: a report, or the cluster's cache
            (its report while fresh, else a refresh sent alongside the estimate, so the hint
            costs no extra wait).
        timeout: seconds for the command.
    """
    request = script_request(script)
    runs = variants(
        request.partition,
        allowed_partitions,
        request.gpus_per_node,
        request.time_seconds,
        request.gpu_type,
    )
    run = conn.run(estimate_command(runs), input=script, timeout=timeout)
    if isinstance(capacity, CapacityCache):
        result, report = await asyncio.gather(run, capacity.get_or_none())
    else:
        result, report = await run, capacity
    return start_estimate_of(parse_estimates(result.stdout, runs), request, report)
