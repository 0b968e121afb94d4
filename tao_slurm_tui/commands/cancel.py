"""``tao-slurm-tui cancel ID``: scancel every attempt of a job (and its pending SQSH conversion).

A job SLURM no longer knows, or one that already finished, counts as success.
"""

from __future__ import annotations

import argparse
import asyncio

from tao_slurm_tui.commands.context import CliContext
from tao_slurm_tui.config import state_db_path
from tao_slurm_tui.core.models import JobRecord, TaoStatus
from tao_slurm_tui.remote.connection import Connection
from tao_slurm_tui.services.monitor import Monitor, ensure_job
from tao_slurm_tui.services.store import JobStore


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``cancel``."""
    parser.add_argument("id", metavar="ID", help="the job to cancel")


async def _cancel(args: argparse.Namespace, ctx: CliContext) -> JobRecord:
    store = JobStore(state_db_path())
    conn = Connection(ctx.profile)
    try:
        ensure_job(store, ctx.profile_name, args.id)
        monitor = Monitor(conn, store, ctx.profile_name, ctx.profile)
        return await monitor.cancel(args.id)
    finally:
        store.close()
        await conn.close()


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    """Run ``cancel``.

    Raises:
        BadInput: no job has this id.
        OperationFailed: SLURM refused, or the cluster could not be reached.
    """
    job = asyncio.run(_cancel(args, ctx))
    if job.status is TaoStatus.CANCELED:
        ctx.out(f"{job.id} canceled.")
    else:
        ctx.out(f"{job.id} had already finished ({job.status}); nothing to cancel.")
    return 0
