"""One TAO training at full size: its runs across wall-time slices, the forecast of the running
slice, and the KPI curves of every run (``o`` on the queue).

The queue stops polling while it is hidden, so this screen reads the training itself every poll
interval (the back end's ``job_runs``: one command for this job, only what it wrote since).
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.reactive import var
from textual.screen import Screen
from textual.widgets import Static

from tao_slurm_tui.core.job_runs import JobRuns
from tao_slurm_tui.core.models import JobRecord
from tao_slurm_tui.core.shown import shown
from tao_slurm_tui.screens.context import UiContext
from tao_slurm_tui.screens.tensorboard_toggle import toggle_tensorboard
from tao_slurm_tui.widgets.app_footer import AppFooter
from tao_slurm_tui.widgets.app_header import AppHeader
from tao_slurm_tui.widgets.kpi_plot import KpiPlot
from tao_slurm_tui.widgets.plain import plain_line
from tao_slurm_tui.widgets.runs_panel import runs_text


def runs_table(runs: JobRuns) -> Table:
    """One row per run: where it took up the training, what it trained, the verdict."""
    table = Table(box=None, pad_edge=False, header_style="bold", expand=False)
    for column in ("Run", "From epoch", "Epochs", "s/epoch", "Resumed from", "Verdict"):
        table.add_column(column, no_wrap=column != "Verdict", overflow="fold")
    for run in runs.ledger.runs:
        verdict = "" if run.progress is None else ("resumed" if run.progress else run.verdict)
        seconds = f"{run.epoch_seconds:.0f}" if run.epoch_seconds else ""
        start = "" if run.start is None else str(run.start)
        source = run.resumed_from.rsplit("/", 1)[-1] if run.resumed_from else ""
        table.add_row(
            str(run.number),
            start,
            str(run.epochs),
            seconds,
            plain_line(source),
            plain_line(verdict),
        )
    return table


def head_text(job: JobRecord) -> Text:
    """The job's id, status and SLURM id, as plain text."""
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(shown(f"{job.id}  "), style="bold")
    text.append(shown(f"{job.status}  ·  SLURM {job.slurm_state or '-'}"))
    if job.slurm_job_id:
        text.append(f" ({job.slurm_job_id})")
    return text


class JobViewScreen(Screen[None]):
    """A training's runs and curves, read again every poll interval."""

    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back", id="job_view.back"),
        Binding("q", "app.pop_screen", "Back", show=False, id="job_view.close"),
        Binding("r", "reload", "Refresh", id="job_view.refresh"),
        Binding("t", "tensorboard", "TensorBoard", id="job_view.tensorboard"),
    ]

    job: var[JobRecord | None] = var(None, init=False)
    """The job's record, as last fetched."""
    runs: var[JobRuns | None] = var(None, init=False)
    """Its runs, as last fetched."""

    def __init__(self, ctx: UiContext, job_id: str) -> None:
        """Create the screen.

        Args:
            ctx: Back end, settings and clock.
            job_id: The training to show.
        """
        super().__init__()
        self.ctx = ctx
        self.job_id = job_id

    def compose(self) -> ComposeResult:
        """Header, the job and its runs, the curves, footer."""
        yield AppHeader(self.ctx.backend, self.ctx.clock, f"runs of {self.job_id}")
        with VerticalScroll(id="job-view-text"):
            yield Static(id="job-view-head", markup=False)
            yield Static(id="job-view-lines", markup=False)
            yield Static(id="job-view-runs", markup=False)
        yield KpiPlot(id="job-view-plot")
        yield AppFooter()

    def on_mount(self) -> None:
        """Fetch now, then every poll interval."""
        self.reload()
        self.set_interval(max(2.0, self.ctx.settings.poll_interval), self.reload)

    def action_tensorboard(self) -> None:
        """Start (or stop) TensorBoard for this training."""
        if self.job is not None:
            toggle_tensorboard(self, self.ctx.backend, self.job)

    def action_reload(self) -> None:
        """Read the training again now."""
        self.reload()

    @work(exclusive=True, group="job-view", exit_on_error=False)
    async def reload(self) -> None:
        """The record and the runs from the back end."""
        job = await self.ctx.backend.job_detail(self.job_id)
        runs = (await self.ctx.backend.job_runs([self.job_id]))[self.job_id]
        self.job, self.runs = job, runs

    def watch_job(self, job: JobRecord | None) -> None:
        """Show the job's head line."""
        if job is not None:
            self.query_one("#job-view-head", Static).update(head_text(job))

    def watch_runs(self, runs: JobRuns | None) -> None:
        """Show the runs, the sentences and the curves."""
        if runs is None:
            return
        lines = self.query_one("#job-view-lines", Static)
        lines.update(runs_text(runs, self.ctx.backend.tensorboard_url(runs.job_id)))
        table = self.query_one("#job-view-runs", Static)
        table.display = bool(runs.ledger.runs)
        table.update(runs_table(runs))
        self.query_one(KpiPlot).runs = runs
