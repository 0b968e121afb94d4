"""``tao-slurm-tui logs ID [--err] [--follow] [--tail N]``: main.out/main.err of the latest attempt.

Without options the whole file is printed, read in bounded chunks. ``--tail N`` reads only the
end remotely. ``--follow`` keeps printing new lines (by byte offset over the open connection),
across retries (a separator line marks a new attempt), until the job is finished; the monitor
ticks every ``poll_interval`` seconds meanwhile, so states and retries stay current.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from tao_slurm_tui.commands.context import CliContext
from tao_slurm_tui.config import state_db_path
from tao_slurm_tui.core.models import JobRecord
from tao_slurm_tui.errors import BadInput, TaoError
from tao_slurm_tui.remote.connection import Connection
from tao_slurm_tui.services.logs import LogStream, LogTailer, read_whole, tail
from tao_slurm_tui.services.monitor import MIN_INTERVAL, Monitor, ensure_job
from tao_slurm_tui.services.store import JobStore
from tao_slurm_tui.services.submit import Submitter


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``logs``."""
    parser.add_argument("id", metavar="ID", help="the job")
    parser.add_argument("--err", action="store_true", help="main.err instead of main.out")
    parser.add_argument("--follow", "-f", action="store_true", help="keep printing new lines")
    parser.add_argument("--tail", type=int, metavar="N", help="only the last N lines")


async def _logs(args: argparse.Namespace, ctx: CliContext) -> int:
    stream: LogStream = "err" if args.err else "out"
    name = "main.err" if args.err else "main.out"
    if args.tail is not None and args.tail < 0:
        raise BadInput("--tail must be zero or a positive number of lines.")
    store = JobStore(state_db_path())
    conn = Connection(ctx.profile)
    try:
        job = ensure_job(store, ctx.profile_name, args.id)
        if not job.attempts:
            print(f"tao-slurm-tui: {job.id} has not been submitted yet.", file=ctx.stderr)
            return 0
        out = ctx.stdout
        if args.tail is not None and not args.follow:
            lines = await tail(conn, job, stream, args.tail)
            if lines is None:
                print(f"tao-slurm-tui: {name} of {job.id} does not exist yet.", file=ctx.stderr)
                return 0
            for line in lines:
                out.write(line + "\n")
            return 0
        if not args.follow:
            async for chunk in read_whole(conn, job, stream):
                out.write("\n".join(chunk) + "\n")
            return 0
        return await _follow(args, ctx, conn, store, job, stream)
    finally:
        store.close()
        await conn.close()


async def _follow(
    args: argparse.Namespace,
    ctx: CliContext,
    conn: Connection,
    store: JobStore,
    job: JobRecord,
    stream: LogStream,
) -> int:
    submitter = Submitter(conn, store, ctx.profile_name, ctx.profile)
    monitor = Monitor(conn, store, ctx.profile_name, ctx.profile, resubmit=submitter.resubmit)
    tailer = LogTailer(conn, job, stream, from_attempt=None)
    if args.tail is not None:
        # Print the last N lines, then follow from the size measured first: a line written in
        # between may show twice, but none is lost.
        size = await _file_size(conn, tailer.path)
        lines = await tail(conn, job, stream, args.tail)
        for line in lines or []:
            ctx.stdout.write(line + "\n")
        tailer.skip_to(size if lines is not None else 0)

    async def refresh() -> JobRecord:
        try:
            await monitor.tick()
        except TaoError as exc:
            print(f"tao-slurm-tui: could not refresh the job state ({exc}).", file=ctx.stderr)
        return ensure_job(store, ctx.profile_name, job.id)

    interval = max(MIN_INTERVAL, ctx.config.settings.poll_interval)
    async for batch in tailer.follow(refresh=refresh, refresh_every=interval):
        if batch.separator:
            ctx.stdout.write(f"──── {batch.separator} ────\n")
        if batch.lines:
            ctx.stdout.write("\n".join(batch.lines) + "\n")
        ctx.stdout.flush()
    return 0


async def _file_size(conn: Connection, path: str | None) -> int:
    if path is None:
        return 0
    result = await conn.run(["stat", "-c", "%s", "--", path])
    text = result.stdout.strip()
    return int(text) if result.ok and text.isdigit() else 0


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    """Run ``logs``.

    Raises:
        BadInput: no job has this id, or --tail is negative.
        OperationFailed: the cluster could not be reached.
    """
    try:
        return asyncio.run(_logs(args, ctx))
    except BrokenPipeError:
        # `logs ID | head` closes the pipe early: not an error.
        sys.stderr.close()
        return 0
