"""``tao-slurm-tui logs ID [--err] [--follow] [--tail N]``: main.out/main.err of the latest attempt.

Without options the whole file is printed, read in bounded chunks. ``--tail N`` reads only the
end remotely. ``--follow`` keeps printing new lines (by byte offset over the open connection),
across retries (a separator line marks a new attempt), until the job is finished; the monitor
ticks every ``poll_interval`` seconds meanwhile, so states and retries stay current.
"""

from __future__ import annotations

import argparse
import sys

from tao_slurm_tui.commands.context import CliContext
from tao_slurm_tui.core.shown import log_line, shown
from tao_slurm_tui.errors import BadInput, TaoError
from tao_slurm_tui.services.backend import Backend, LogStreamName


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``logs``."""
    parser.add_argument("id", metavar="ID", help="the job")
    parser.add_argument("--err", action="store_true", help="main.err instead of main.out")
    parser.add_argument("--follow", "-f", action="store_true", help="keep printing new lines")
    parser.add_argument("--tail", type=int, metavar="N", help="only the last N lines")


async def _logs(args: argparse.Namespace, ctx: CliContext, backend: Backend) -> int:
    stream: LogStreamName = "err" if args.err else "out"
    name = "main.err" if args.err else "main.out"
    if args.tail is not None and args.tail < 0:
        raise BadInput("--tail must be zero or a positive number of lines.")
    job = await backend.job_detail(args.id)
    if not job.attempts:
        ctx.err(f"{job.id} has not been submitted yet.")
        return 0
    out = ctx.stdout
    if args.follow:

        def refresh_failed(exc: TaoError) -> None:
            ctx.err(f"could not refresh the job state ({exc}).")

        follow = backend.follow_logs(
            job.id,
            stream,
            latest_only=True,
            tail_lines=args.tail,
            on_refresh_error=refresh_failed,
        )
        async for batch in follow:
            if batch.separator:
                out.write(f"──── {shown(batch.separator)} ────\n")
            if batch.lines:
                out.write(_text(batch.lines))
            out.flush()
        return 0
    if args.tail is not None:
        lines = await backend.tail_log(job.id, stream, args.tail)
        if lines is None:
            ctx.err(f"{name} of {job.id} does not exist yet.")
            return 0
        if lines:
            out.write(_text(lines))
        return 0
    async for chunk in backend.read_log(job.id, stream):
        out.write(_text(chunk))
    return 0


def _text(lines: list[str]) -> str:
    """Log lines as a log viewer shows them: escape sequences dropped, progress bars at their
    last state, other control characters spelled out (a job's output is data)."""
    return "".join(log_line(line) + "\n" for line in lines)


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    """Run ``logs``.

    Raises:
        BadInput: no job has this id, or --tail is negative.
        OperationFailed: the cluster could not be reached.
    """
    try:
        return ctx.run(lambda backend: _logs(args, ctx, backend))
    except BrokenPipeError:
        # `logs ID | head` closes the pipe early: not an error.
        sys.stderr.close()
        return 0
