"""Cluster capacity over the profile's one connection: one round trip per refresh.

The command and every rule live in :mod:`tao_slurm_tui.core.capacity` and
:mod:`tao_slurm_tui.core.capacity_report`; this module only sends the command and turns a
missing answer into one sentence for the user.
"""

from __future__ import annotations

import asyncio
import logging

from tao_slurm_tui.core.capacity import CapacityUnavailable, parse_capacity_output
from tao_slurm_tui.core.capacity_command import capacity_command
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
from tao_slurm_tui.services.capacity_cache import CapacityCache

log = logging.getLogger(__name__)


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
