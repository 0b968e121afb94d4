"""``tao-slurm-tui submit SPEC.toml [--dry-run] [--json]``: validate, stage and submit a job.

Prints the job id (``--json``: ``{"id", "slurm_job_id", "job_dir"}``); a pipeline spec (with
``[[then]]`` steps) prints every step's id, one a line (``--json`` adds ``pipeline_id`` and
``steps``: every step's id, slurm_job_id and job_dir); progress lines and
warnings go to stderr. ``--dry-run`` validates (including the remote path checks and the
partition's real MaxTime), prints the batch script and stages nothing. Exit codes: 0 submitted,
1 the operation failed (SLURM refused, connection), 2 bad input (spec, missing input paths).
"""

from __future__ import annotations

import argparse
import contextlib
import json

from tao_slurm_tui.commands.context import CliContext
from tao_slurm_tui.core.models import SubmitResult
from tao_slurm_tui.core.spec import SpecDraft
from tao_slurm_tui.errors import OperationFailed
from tao_slurm_tui.services.backend import Backend, SubmitStage


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``submit``."""
    parser.add_argument("spec", metavar="SPEC.toml", help="job spec file")
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="validate (remote paths too) and print the batch script; stage and submit nothing",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help='print {"id", "slurm_job_id", "job_dir"} instead of the id',
    )


async def _submit(args: argparse.Namespace, ctx: CliContext, backend: Backend) -> SubmitResult:
    draft = SpecDraft.from_file(args.spec)

    def progress(stage: SubmitStage, detail: str) -> None:
        print(f"[{stage}] {detail}", file=ctx.stderr, flush=True)

    # The rules judge against what the cluster says, as the composer's do: its own MaxTime (a
    # cached table for an hour; offline the cached or packaged one) and, when a GPU type is
    # asked for, its nodes' GPU types. Then the spec is resolved once.
    await backend.partition_limits()
    if draft.asks_for_gpu_type():
        with contextlib.suppress(OperationFailed):  # unknown: SLURM judges it at submit
            await backend.capacity()
    job = backend.resolve(draft).require()
    return await backend.submit(job, progress, dry_run=args.dry_run)


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    """Run ``submit``.

    Raises:
        BadInput: invalid spec, wall time above MaxTime, missing input paths, name taken.
        OperationFailed: SLURM refused the job, or the cluster could not be reached.
    """
    result = ctx.run(lambda backend: _submit(args, ctx, backend))
    for warning in result.warnings:
        print(f"tao-slurm-tui: warning: {warning}", file=ctx.stderr)
    steps = [result, *result.steps]
    if result.dry_run:
        if args.json:
            data = {**result.to_json(), "dry_run": True, "script": result.script}
            if result.steps:
                data["steps"] = [{"id": r.id, "script": r.script} for r in steps]
            ctx.out(json.dumps(data))
        else:
            for index, step in enumerate(steps):
                if result.steps:
                    after = f", after {steps[index - 1].id} completed" if index else ""
                    ctx.out(f"# ===== step {index + 1} of {len(steps)}: {step.id}{after} =====")
                ctx.stdout.write(step.script)
        return 0
    if args.json:
        ctx.out(json.dumps(result.to_json()))
    else:
        # A pipeline: every step's id, in order (one per line).
        for step in steps:
            ctx.out(step.id)
    return 0
