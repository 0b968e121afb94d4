"""``tao-slurm-tui cancel ID`` / ``cancel --pipeline ID``: scancel every attempt of a job (and
its pending SQSH conversion), or every remaining step of a pipeline.

Cancelling one step of a pipeline cancels the steps after it too (they could never start); they
end Canceled with the reason. A job SLURM no longer knows, or one that already finished, counts
as success.
"""

from __future__ import annotations

import argparse

from tao_slurm_tui.commands.context import CliContext
from tao_slurm_tui.core.models import JobRecord, TaoStatus
from tao_slurm_tui.errors import BadInput
from tao_slurm_tui.services.backend import Backend


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``cancel``."""
    parser.add_argument("id", nargs="?", metavar="ID", help="the job (or pipeline step) to cancel")
    parser.add_argument(
        "--pipeline",
        metavar="ID",
        help="cancel every step of this pipeline that has not ended (ID: its first step's id)",
    )


def _line(job: JobRecord, before: TaoStatus | None = None) -> str:
    if job.status is TaoStatus.CANCELED and (before is None or not before.terminal):
        return f"{job.id} canceled." + (
            f" ({job.message})" if "previous step" in job.message else ""
        )
    return f"{job.id} had already finished ({job.status}); nothing to cancel."


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    """Run ``cancel``.

    Raises:
        BadInput: no job (or pipeline) has this id, or neither or both were given.
        OperationFailed: SLURM refused, or the cluster could not be reached.
    """
    if bool(args.id) == bool(args.pipeline):
        raise BadInput(
            "Give either a job id ('cancel ID') or a pipeline ('cancel --pipeline ID'), "
            "not both or neither."
        )
    lines = ctx.run(lambda backend: _cancel(args, backend))
    for line in lines:
        ctx.out(line)
    return 0


async def _cancel(args: argparse.Namespace, backend: Backend) -> list[str]:
    before = {job.id: job.status for job in backend.jobs()}
    if args.pipeline:
        steps = await backend.cancel_pipeline(args.pipeline)
        return [_line(step, before.get(step.id)) for step in steps]
    job = await backend.cancel(args.id)
    lines = [_line(job, before.get(job.id))]
    if job.pipeline_id:
        # The steps after it could never start: they were cancelled with it.
        for step in reversed(backend.jobs()):
            if step.pipeline_id == job.pipeline_id and step.pipeline_step > job.pipeline_step:
                lines.append(_line(step, before.get(step.id)))
    return lines
