"""``tao-slurm-tui submit SPEC.toml [--dry-run] [--json]``: validate, stage and submit a job.

Prints the job id (``--json``: ``{"id", "slurm_job_id", "job_dir"}``); progress lines and
warnings go to stderr. ``--dry-run`` validates (including the remote path checks and the
partition's real MaxTime), prints the batch script and stages nothing. Exit codes: 0 submitted,
1 the operation failed (SLURM refused, connection), 2 bad input (spec, missing input paths).
"""

from __future__ import annotations

import argparse
import json

from tao_slurm_tui.commands.context import CliContext
from tao_slurm_tui.core.models import SubmitResult
from tao_slurm_tui.core.spec import load_spec
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
    spec = load_spec(args.spec)

    def progress(stage: SubmitStage, detail: str) -> None:
        print(f"[{stage}] {detail}", file=ctx.stderr, flush=True)

    return await backend.submit(spec, progress, dry_run=args.dry_run)


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    """Run ``submit``.

    Raises:
        BadInput: invalid spec, wall time above MaxTime, missing input paths, name taken.
        OperationFailed: SLURM refused the job, or the cluster could not be reached.
    """
    result = ctx.run(lambda backend: _submit(args, ctx, backend))
    for warning in result.warnings:
        print(f"tao-slurm-tui: warning: {warning}", file=ctx.stderr)
    if result.dry_run:
        if args.json:
            ctx.out(json.dumps({**result.to_json(), "dry_run": True, "script": result.script}))
        else:
            ctx.stdout.write(result.script)
        return 0
    if args.json:
        ctx.out(json.dumps(result.to_json()))
    else:
        ctx.out(result.id)
    return 0
