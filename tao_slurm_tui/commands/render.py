"""``tao-slurm-tui render SPEC.toml``: print the batch script of a spec, with no network.

Partition limits come from the cached (or packaged) list; partition/account fallbacks, the wall
time, timeout and requeue defaults, the container runtime and the results root come from the
selected profile. A bad spec exits 2 naming the field.
"""

from __future__ import annotations

import argparse

from tao_slurm_tui.commands.context import CliContext
from tao_slurm_tui.core.spec import SpecDraft


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``render``."""
    parser.add_argument("spec", metavar="SPEC.toml", help="job spec file")
    parser.add_argument(
        "--entrypoint",
        action="store_true",
        help="print the staged entrypoint (the spec's command) instead of the batch script",
    )


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    """Run ``render``.

    Raises:
        BadInput: the spec is missing, not TOML, invalid, or asks for more than its partition
            allows.
    """
    # A render opens no state DB, so the name is not checked against the jobs submitted.
    job = ctx.backend.resolve(SpecDraft.from_file(args.spec), names=False).require()
    ctx.stdout.write(ctx.backend.render(job, entrypoint=args.entrypoint))
    return 0
