"""``tao-slurm-tui cancel ID``: scancel every attempt of a job (and its pending SQSH conversion).

A job SLURM no longer knows, or one that already finished, counts as success.
"""

from __future__ import annotations

import argparse

from tao_slurm_tui.commands.context import CliContext
from tao_slurm_tui.core.models import TaoStatus


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``cancel``."""
    parser.add_argument("id", metavar="ID", help="the job to cancel")


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    """Run ``cancel``.

    Raises:
        BadInput: no job has this id.
        OperationFailed: SLURM refused, or the cluster could not be reached.
    """
    job = ctx.run(lambda backend: backend.cancel(args.id))
    if job.status is TaoStatus.CANCELED:
        ctx.out(f"{job.id} canceled.")
    else:
        ctx.out(f"{job.id} had already finished ({job.status}); nothing to cancel.")
    return 0
