"""The detail pane of the selected job: attempts (nodes, exit codes), paths, last message."""

from __future__ import annotations

from typing import NamedTuple

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.reactive import var
from textual.widgets import Static

from tao_slurm_tui.core.accounting import Usage
from tao_slurm_tui.core.models import JobRecord
from tao_slurm_tui.core.pipelines import Pipeline, step_label, step_words
from tao_slurm_tui.core.shown import shown
from tao_slurm_tui.core.slurm import explain_reason
from tao_slurm_tui.core.status_json import duration_words, status_words
from tao_slurm_tui.widgets.plain import plain, plain_line
from tao_slurm_tui.widgets.usage import usage_lines


def job_paths(job: JobRecord) -> dict[str, str]:
    """Remote paths of the job's latest attempt (the layout of :mod:`tao_slurm_tui.core.layout`)."""
    root = job.base_results_dir.rstrip("/")
    paths = {"results": f"{root}/results/{job.id}/"}
    if job.slurm_job_id:
        paths["logs"] = f"{root}/slurm-logs/{job.id}-{job.slurm_job_id}/"
    paths["sbatch"] = f"{root}/sbatch/job_{job.id}.sbatch"
    return paths


def pipeline_summary(job: JobRecord, pipeline: Pipeline) -> list[RenderableType]:
    """The pipeline ``job`` is a step of: its id and state, then each step with what it is
    doing in words, the shown job marked."""
    ids = [step.id for step in pipeline.steps]
    this = ids.index(job.id) if job.id in ids else -1
    head = Text(no_wrap=True, overflow="ellipsis")
    head.append(shown(f"Pipeline {pipeline.pipeline_id}  "), style="bold")
    head.append(shown(f"{pipeline.summary} · this job is step {this + 1} of {len(pipeline.steps)}"))
    # No column of blanks in front (SVG renderers drop a line's leading spaces): the step shown
    # is marked at the end of its line, and bold.
    table = Table(box=None, pad_edge=False, expand=False, show_header=False)
    table.add_column("step", no_wrap=True)
    table.add_column("action", no_wrap=True)
    table.add_column("state", no_wrap=True, overflow="ellipsis")
    for index, step in enumerate(pipeline.steps):
        mine = index == this
        table.add_row(
            plain_line(f"{index + 1}."),
            plain_line(step_label(step)),
            plain_line(step_words(pipeline, step) + ("  ◂ this job" if mine else "")),
            style="bold" if mine else None,
        )
    return [head, table]


def pending_line(reason: str) -> Text:
    """Why the job waits: the full sentence (the table's column has the short form), then
    SLURM's code unless it is squeue's "None" (no reason yet), which read as Python's."""
    code = reason.strip("()")
    said = f" ({code})" if code not in ("", "None") else ""
    return plain(f"Pending: {explain_reason(reason)}{said}", overflow="fold")


def progress_lines(job: JobRecord) -> list[Text]:
    """What TAO's status.json said: epochs done of the run's, time per epoch, time left, the
    latest KPIs; then TAO's last status word and message (every status value is shown, an
    unknown one as written)."""
    progress = job.progress
    lines: list[Text] = []
    if progress.epoch_text:
        line = f"Progress: epoch {progress.epoch_text}"
        if progress.time_per_epoch:
            line += f" · {duration_words(progress.time_per_epoch)} per epoch"
        if progress.eta and not job.status.terminal:
            # A finished job has nothing left to wait for.
            line += f" · eta {duration_words(progress.eta)}"
        if progress.kpi:
            line += " · " + ", ".join(f"{k}={_kpi(v)}" for k, v in sorted(progress.kpi.items()))
        lines.append(plain_line(line, overflow="fold"))
    words = status_words(progress.status)
    if words:
        said = f" · {progress.message}" if progress.message else ""
        lines.append(plain(f"TAO: {words}{said}", overflow="fold"))
    return lines


def _kpi(value: object) -> str:
    """A KPI as a number people read (TAO writes floats with 16 digits; DINO writes mAP as a
    string)."""
    try:
        number = float(str(value))
    except ValueError:
        return str(value)[:20]
    return f"{number:.4g}"


def render_detail(
    job: JobRecord, usage: Usage | None = None, pipeline: Pipeline | None = None
) -> RenderableType:
    """A renderable describing ``job`` (plain text only; no markup is parsed), with what it
    used once it finished (``usage``, from accounting) and, for a pipeline's step, the
    pipeline's steps and where each one is (``pipeline``). What SLURM and the job's
    ``status.json`` said (states, reasons, message, eta, KPIs, nodes) is shown spelled out."""
    head = Text(no_wrap=True, overflow="ellipsis")
    # Spaces end the styled piece instead of starting the next: SVG renderers (rsvg, used for
    # the screenshots) drop leading spaces of a <text>, gluing "job-idRunning" together.
    head.append(f"{job.id}  ", style="bold")
    head.append(shown(f"{job.status}  ·  SLURM {job.slurm_state or '-'}"))
    if job.slurm_job_id:
        head.append(shown(f" ({job.slurm_job_id})"))
    parts: list[RenderableType] = [head]
    if job.reason and job.status.value == "Pending":
        parts.append(pending_line(job.reason))
    if job.message and not (job.progress.status and job.message == job.progress.message):
        # (TAO's own last message is on the TAO line below.)
        parts.append(plain(f"Message: {job.message}", overflow="fold"))
    parts.extend(progress_lines(job))
    if pipeline is not None and len(pipeline.steps) > 1:
        parts.extend(pipeline_summary(job, pipeline))
    if usage is not None:
        parts.extend(usage_lines(usage))
    for label, path in job_paths(job).items():
        parts.append(plain_line(f"{label + ':':9}{path}", no_wrap=True, overflow="ellipsis"))
    if job.attempts:
        parts.append(attempts_table(job))
    return Group(*parts)


def attempts_table(job: JobRecord) -> Table:
    """One row per SLURM attempt: its id, state, exit code, nodes, times and why it was
    retried (SLURM's words and the retry rules', one line each)."""
    table = Table(box=None, pad_edge=False, expand=False, header_style="bold")
    for column in (
        "#",
        "SLURM id",
        "State",
        "Exit",
        "Nodes",
        "Start",
        "End",
        "Retried because",
    ):
        table.add_column(column, no_wrap=True)
    for attempt in job.attempts:
        table.add_row(
            str(attempt.number + 1),
            *(
                plain_line(value)
                for value in (
                    attempt.slurm_job_id,
                    attempt.state,
                    attempt.exit_code,
                    attempt.nodes,
                    attempt.start_time,
                    attempt.end_time,
                    attempt.retry_reason,
                )
            ),
        )
    return table


class DetailView(NamedTuple):
    """What the detail pane shows: a job (None: nothing selected), what it used, its pipeline."""

    job: JobRecord | None = None
    """The job (None: the hint to compose one)."""
    usage: Usage | None = None
    """What the job used, once accounting told (finished jobs)."""
    pipeline: Pipeline | None = None
    """The pipeline the job is a step of (None for a single job)."""


class JobDetail(Static):
    """Shows :attr:`view` (the queue screen binds its selected job's view here)."""

    DEFAULT_CSS = """
    JobDetail {
        height: auto;
        padding: 0 1;
    }
    """

    view: var[DetailView] = var(DetailView(), init=False)
    """What is shown; the same again draws nothing (a quiet poll must not re-render and
    re-lay-out the pane)."""

    def __init__(self, *, id: str | None = None) -> None:
        """Create the pane (empty until :attr:`view` is set).

        Args:
            id: Widget id.
        """
        super().__init__(id=id)
        self._drawn: DetailView | None = None

    @property
    def job_id(self) -> str | None:
        """Id of the job shown (None: the hint)."""
        job = self.view.job
        return job.id if job is not None else None

    def watch_view(self, view: DetailView) -> None:
        """Draw ``view`` (a data binding sets it again and again: only a new one is drawn)."""
        if view == self._drawn:
            return
        self._drawn = view
        job, usage, pipeline = view
        if job is None:
            self.update(Text("No job selected. Press n to compose one.", style="italic"))
        else:
            self.update(render_detail(job, usage, pipeline))
