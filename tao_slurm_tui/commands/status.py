"""``tao-slurm-tui status [ID] [--json] [--watch]``: jobs with their status.

One monitor tick first (states updated, due retries performed), then the jobs are printed. With
``--json`` a list of ``{"id","status","slurm_state","slurm_job_id","retries","reason",
"message","usage","kpi","runs","forecast"}``, plus ``pipeline_id`` and ``pipeline_step``
(1-based) for a pipeline's steps (``usage``: what a finished job used, one sacct call for all
of them; null otherwise; ``kpi``: the latest KPIs; ``runs``: a TAO training's runs across
wall-time slices, whether each resumed and why it was stopped, null for other jobs;
``forecast``: whether the running slice finishes it) (one list per tick with ``--watch``, one
per line). ``--watch`` ticks again every ``poll_interval`` seconds until every listed job is
terminal, and sends a desktop notification when a job starts, ends, fails, is retried or runs
out of wall time (the config's ``[notify]``; written to the terminal, never into stdout). If
the cluster cannot be reached the last known state is printed and the exit code is 1.
"""

from __future__ import annotations

import argparse
import asyncio
import json

from tao_slurm_tui.commands.context import CliContext
from tao_slurm_tui.core import pipelines
from tao_slurm_tui.core.accounting import Usage
from tao_slurm_tui.core.job_runs import JobRuns, is_training
from tao_slurm_tui.core.kpi_series import clean_kpis
from tao_slurm_tui.core.models import JobRecord
from tao_slurm_tui.core.shown import shown
from tao_slurm_tui.core.status_json import duration_words
from tao_slurm_tui.errors import TaoError
from tao_slurm_tui.services.backend import Backend, transitions
from tao_slurm_tui.services.monitor import MIN_INTERVAL
from tao_slurm_tui.services.notify import Notifier, terminal_writer


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``status``."""
    parser.add_argument("id", nargs="?", metavar="ID", help="only this job")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument(
        "--watch", action="store_true", help="repeat until the listed jobs are finished"
    )


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def format_table(jobs: list[JobRecord]) -> str:
    """The human-readable job table; the steps of a pipeline are grouped under one line that
    names the step in progress."""
    if not jobs:
        return "No jobs yet; submit one with 'tao-slurm-tui submit SPEC.toml'."
    rows = [("ID", "STATUS", "SLURM STATE", "SLURM ID", "RETRIES", "PROGRESS", "MESSAGE")]
    for item in pipelines.group(jobs):
        if isinstance(item, pipelines.Pipeline):
            rows.append(
                (f"pipeline {item.pipeline_id}", str(item.status), "", "", "", "", item.summary)
            )
            for step in item.steps:
                rows.append(_row(step, f"  {step.pipeline_step + 1}/{len(item.steps)} {step.id}"))
        else:
            rows.append(_row(item, item.id))
    # One line per job whatever the cluster wrote: its words spelled out, never obeyed.
    cells = [[shown(cell) for cell in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(cells[0]) - 1)]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(r[:-1], widths, strict=True)) + "  " + r[-1]
        for r in cells
    ).rstrip()


def _row(job: JobRecord, label: str) -> tuple[str, str, str, str, str, str, str]:
    progress = ""
    if job.progress.epoch_text:
        progress = f"epoch {job.progress.epoch_text}"
        if job.progress.eta and not job.status.terminal:
            progress += f" eta {duration_words(job.progress.eta)}"
    return (
        label,
        str(job.status),
        job.slurm_state,
        job.slurm_job_id,
        str(job.retries),
        progress,
        _short(shown(job.message), 70),
    )


def _job_json(
    job: JobRecord, usage: dict[str, Usage], runs: dict[str, JobRuns]
) -> dict[str, object]:
    data: dict[str, object] = dict(job.status_json())
    found = usage.get(job.id)
    # Added keys (the contract only grows): what a finished job used, None until then; the
    # latest KPIs; a TAO training's runs across slices and its forecast (None for other jobs).
    data["usage"] = found.to_json() if found else None
    data["kpi"] = clean_kpis(job.progress.kpi)
    training = runs.get(job.id)
    data["runs"] = training.to_json() if training else None
    data["forecast"] = training.forecast.to_json() if training and training.forecast else None
    return data


async def _add_runs(backend: Backend, jobs: list[JobRecord]) -> dict[str, JobRuns]:
    trainings = [j.id for j in jobs if is_training(j)]
    return await backend.job_runs(trainings) if trainings else {}


async def _add_usage(backend: Backend, jobs: list[JobRecord], usage: dict[str, Usage]) -> str:
    """Fetch (one sacct call) the usage of finished jobs not fetched yet; '' or the error."""
    missing = [j.id for j in jobs if j.status.terminal and j.id not in usage]
    if not missing:
        return ""
    try:
        usage.update(await backend.job_usage(missing))
    except TaoError as exc:
        return str(exc)
    return ""


async def _status(args: argparse.Namespace, ctx: CliContext, backend: Backend) -> int:
    if args.id:
        await backend.job_detail(args.id)  # an unknown id is bad input (exit 2)
    interval = max(MIN_INTERVAL, backend.poll_interval)
    usage: dict[str, Usage] = {}
    last = ""
    # --watch: desktop notifications of what happens (to the terminal, never into stdout).
    notifier = Notifier(ctx.config.settings.notify, terminal_writer()) if args.watch else None
    seen: dict[str, JobRecord] = {}
    while True:
        error = ""
        try:
            jobs = await backend.refresh(connect=False)
            if await backend.followup():  # sacct's answer about jobs squeue no longer lists
                jobs = await backend.refresh(connect=False)
        except TaoError as exc:
            error = str(exc).rstrip(".")
            jobs = backend.jobs()
        else:
            # SLURM answered, but not usably (sacct down, garbage lines): the states shown may
            # be stale, and a script must be able to tell.
            error = backend.poll_warning
        jobs = list(reversed(jobs))  # oldest first, like the store
        if args.id:
            jobs = [j for j in jobs if j.id == args.id]
        if notifier is not None:
            notifier.send(transitions(seen, jobs) + notifier.wall_time(jobs))
            seen = {job.id: job for job in jobs}
        runs: dict[str, JobRuns] = {}
        if args.json and not error:
            error = await _add_usage(backend, jobs, usage)
            runs = await _add_runs(backend, jobs)
        if args.json:
            text = json.dumps([_job_json(j, usage, runs) for j in jobs])
        else:
            text = format_table(jobs)
        if text != last or not args.watch:
            ctx.out(text)
            ctx.stdout.flush()
            last = text
        if error:
            ctx.err(f"could not refresh from the cluster ({error}); showing the last known state.")
            if not args.watch:
                return 1
        if not args.watch or all(j.status.terminal for j in jobs):
            return 0
        await asyncio.sleep(interval)


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    """Run ``status``.

    Raises:
        BadInput: no job has the given id.
    """
    return ctx.run(lambda backend: _status(args, ctx, backend))
