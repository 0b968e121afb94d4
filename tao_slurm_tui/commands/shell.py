"""``tao-slurm-tui shell ID [--node N]``: an interactive shell inside a running job.

One monitor tick first (the job's state and nodes as SLURM has them now), then a shell on the
job's node (its first, or ``--node``) inside its allocation (``srun --overlap --jobid``) and,
for a Pyxis job, inside its container; the terminal is the user's (a pty of its type and size,
raw, resized with it). The exit status is the shell's, as with ``ssh``.
"""

from __future__ import annotations

import argparse

from tao_slurm_tui.commands.context import CliContext
from tao_slurm_tui.services.backend import Backend
from tao_slurm_tui.services.job_shell import LocalTerminal


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``shell``."""
    parser.add_argument("id", metavar="ID", help="the running job")
    parser.add_argument("--node", metavar="N", help="one of the job's nodes (default: its first)")


async def _shell(args: argparse.Namespace, ctx: CliContext, backend: Backend) -> int:
    await backend.job_detail(args.id)  # an unknown id is bad input before any round trip
    await backend.refresh(connect=False)
    target = backend.shell_target(args.id, args.node)
    where = "inside its container" if target.container else "in its allocation"
    others = f" (nodes: {', '.join(target.nodes)})" if len(target.nodes) > 1 else ""
    ctx.err(
        f"a shell in {target.job_id} (SLURM {target.slurm_job_id}) on {target.node}{others}, "
        f"{where}; exit it to come back."
    )
    ctx.stderr.flush()
    return await backend.open_shell(target, LocalTerminal())


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    """Run ``shell``.

    Raises:
        BadInput: not a terminal, an unknown job, a job not running, or not one of its nodes.
    """
    LocalTerminal().check()
    return ctx.run(lambda backend: _shell(args, ctx, backend))
