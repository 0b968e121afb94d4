"""The text of the queue's cells: one line per column of a job, no styling.

What SLURM said (state, partition, times, reason) is data: :func:`job_plain_cells` passes each
through :func:`~tao_slurm_tui.core.shown.shown`. The table (:mod:`.job_table`) styles these,
the queue's filter searches them.
"""

from __future__ import annotations

from tao_slurm_tui.core.models import JobRecord, TaoStatus
from tao_slurm_tui.core.partitions import format_slurm_time
from tao_slurm_tui.core.shown import Shown, shown
from tao_slurm_tui.core.slurm import explain_reason
from tao_slurm_tui.core.slurm_text import parse_duration
from tao_slurm_tui.core.start_estimate import short_time
from tao_slurm_tui.widgets.pipeline_rows import row_label

BAR_WIDTH = 6
_EIGHTHS = " ▏▎▍▌▋▊▉"


def reason_in_words(reason: str) -> str:
    """SLURM's pending reason in a few words ('' when there is none); the detail pane shows
    the full explanation."""
    return explain_reason(reason, short=True)


def progress_bar(job: JobRecord) -> str:
    """A text bar of the epochs done out of the run's, e.g. ``██░░░░ 7/20`` (TAO writes the
    0-based ``epoch`` 6 and ``max_epoch`` 19 then)."""
    fraction = job.progress.fraction
    if fraction is None:
        return ""
    filled = round(fraction * BAR_WIDTH)
    return f"{'█' * filled}{'░' * (BAR_WIDTH - filled)} {job.progress.epoch_text}"


def _shape(job: JobRecord) -> str:
    nodes, gpus = job.spec.get("num_nodes"), job.spec.get("num_gpus")
    if nodes is None or gpus is None:
        return ""
    return f"{nodes}×{gpus}"  # noqa: RUF001


def compact_limit(limit: str) -> str:
    """SLURM's time limit, short: ``04:00:00`` → 4h, ``2-00:00:00`` → 2d, ``00:30:00`` → 30m."""
    days_text, _, clock = limit.rpartition("-")
    parts = clock.split(":")
    if not (days_text.isdigit() or not days_text) or not all(p.isdigit() for p in parts):
        return limit  # UNLIMITED, N/A, ...
    hours, minutes, seconds = ([0, 0, 0] + [int(p) for p in parts])[-3:]
    days = int(days_text or 0)
    if seconds:
        return limit
    if days and not hours and not minutes:
        return f"{days}d"
    hours += days * 24
    if not hours:
        return f"{minutes}m"
    return f"{hours}h{minutes:02d}" if minutes else f"{hours}h"


def _clock(elapsed: str) -> str:
    # squeue prints 0:20 while sacct prints 00:00:20: one form in the column.
    seconds = parse_duration(elapsed)
    return elapsed if seconds is None else format_slurm_time(seconds)


def _elapsed_of_limit(elapsed: str, limit: str, pending: bool) -> str:
    elapsed = _clock(elapsed) if elapsed else ""
    if not limit:
        return elapsed
    return f"{'-' if pending or not elapsed else elapsed}/{compact_limit(limit)}"


def job_plain_cells(job: JobRecord, note: str = "") -> dict[str, Shown]:
    """The text of every column for ``job`` (no styling), one line each: what SLURM said
    (state, partition, times, reason) is data, its control characters spelled out; ``note``
    goes in the reason column of a job that is not pending (its GPUs sit idle)."""
    latest = job.latest
    elapsed = latest.elapsed if latest else ""
    limit = latest.time_limit if latest else ""
    pending = job.status is TaoStatus.PENDING
    return {
        "id": shown(row_label(job)),
        "status": shown(job.status),
        "state": shown(job.slurm_state),
        "slurm_id": shown(job.slurm_job_id),
        "partition": shown(
            (latest.partition if latest else "") or str(job.spec.get("partition", ""))
        ),
        "shape": shown(_shape(job)),
        "time": shown(_elapsed_of_limit(elapsed, limit, pending)),
        "reason": shown(reason_in_words(job.reason) if pending else note),
        "start": shown(short_time(latest.est_start) if latest and pending else ""),
        "retries": shown(job.retries or ""),
        "progress": shown(progress_bar(job)),
    }
