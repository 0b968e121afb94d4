"""``tao-slurm-tui render SPEC.toml``: print the batch script of a spec, with no network.

Partition limits come from the cached (or packaged) list; partition/account fallbacks, the wall
time, timeout and requeue defaults, the container runtime and the results root come from the
selected profile. A bad spec exits 2 naming the field.
"""

from __future__ import annotations

import argparse

from tao_slurm_tui.commands.context import CliContext
from tao_slurm_tui.core.spec import ResolvedJob, SpecDraft
from tao_slurm_tui.errors import BadInput


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``render``."""
    parser.add_argument("spec", metavar="SPEC.toml", help="job spec file")
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument(
        "--entrypoint",
        action="store_true",
        help="print the staged entrypoint (the spec's command) instead of the batch script",
    )
    shown.add_argument(
        "--experiment",
        action="store_true",
        help="print a [tao] job's checked experiment spec (the YAML staged as TAO's -e file)",
    )


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    """Run ``render``.

    Raises:
        BadInput: the spec is missing, not TOML, invalid, or asks for more than its partition
            allows.
    """
    # A render opens no state DB, so the name is not checked against the jobs submitted.
    job = ctx.backend.resolve(SpecDraft.from_file(args.spec), names=False).require()
    if args.experiment:
        ctx.stdout.write(experiments(job, args.spec))
        return 0
    ctx.stdout.write(ctx.backend.render(job, entrypoint=args.entrypoint))
    return 0


def experiments(job: ResolvedJob, source: str) -> str:
    """The experiment spec every TAO step stages (a pipeline's under a header line each).

    Raises:
        BadInput: no step of the job is a ``[tao]`` job.
    """
    texts = [(s, s.spec.tao.experiment) for s in job.steps if s.spec.tao is not None]
    if not texts:
        raise BadInput(f"{source}: has no [tao] table, so it stages no experiment spec.")
    if len(job.steps) == 1:
        return texts[0][1]
    return "\n".join(
        f"# ===== {step.name}: {step.plan.paths.tao_spec_yaml} =====\n{text}"
        for step, text in texts
    )
