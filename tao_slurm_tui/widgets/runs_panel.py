"""The selected training's runs in the queue's details: the current run, the forecast of its
slice, a run that restarted without progress, and the KPI curves across every run.

Bound to the queue's detail view; it fetches the training's runs from the back end whenever
the job shown (or its record) changes: a local read for a training the poll follows, one
command for one it does not. Hidden for jobs that are no TAO training.
"""

from __future__ import annotations

from rich.console import Group
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.reactive import var
from textual.widget import Widget
from textual.widgets import Static

from tao_slurm_tui.core.job_runs import JobRuns, is_training
from tao_slurm_tui.core.shown import shown
from tao_slurm_tui.services.backend import Backend
from tao_slurm_tui.widgets.job_detail import DetailView
from tao_slurm_tui.widgets.kpi_plot import KpiPlot


def runs_text(runs: JobRuns, tensorboard: str | None = None) -> Group:
    """The training's sentences, one a line, label in bold (plain text: no markup parsed),
    and the URL of its TensorBoard while one runs."""
    lines = []
    extra = [("TensorBoard", f"{tensorboard} (t stops it)")] if tensorboard else []
    for label, sentence in [*runs.lines(), *extra]:
        line = Text(overflow="fold")
        line.append(f"{label}: ", style="bold")
        line.append(shown(sentence), style="bold" if label in ("Resume", "Stopped") else "")
        lines.append(line)
    return Group(*lines)


class RunsPanel(Widget):
    """Shows the runs of :attr:`view`'s job (bound to the queue's detail view)."""

    DEFAULT_CSS = """
    RunsPanel {
        height: auto;
        padding: 0 1;
    }
    RunsPanel > #runs-text {
        height: auto;
    }
    """

    view: var[DetailView] = var(DetailView(), init=False)
    """The job in the details pane."""
    runs: var[JobRuns | None] = var(None, init=False)
    """Its runs, once fetched."""

    def __init__(self, backend: Backend, *, id: str | None = None) -> None:
        """Create the panel (hidden until a training is shown).

        Args:
            backend: Where the runs are fetched from.
            id: Widget id.
        """
        super().__init__(id=id)
        self.backend = backend
        self.display = False

    def compose(self) -> ComposeResult:
        """The sentences, then the curves."""
        yield Static(id="runs-text", markup=False)
        yield KpiPlot(compact=True)

    def watch_view(self, view: DetailView) -> None:
        """Another job, or a new record of it: fetch its runs (hide for other jobs)."""
        job = view.job
        if job is None or not is_training(job):
            self.runs = None
            return
        if self.runs is not None and self.runs.job_id != job.id:
            self.runs = None  # never the curves of the job shown before
        self.fetch(job.id)

    @work(exclusive=True, group="runs-panel", exit_on_error=False)
    async def fetch(self, job_id: str) -> None:
        """The job's runs from the back end (dropped when another job is shown meanwhile)."""
        found = (await self.backend.job_runs([job_id]))[job_id]
        shown = self.view.job
        if shown is not None and shown.id == job_id:
            self.runs = found

    def watch_runs(self, runs: JobRuns | None) -> None:
        """Show ``runs`` (None: hidden)."""
        self.display = runs is not None and bool(runs.points or runs.ledger.runs)
        if runs is None:
            return
        url = self.backend.tensorboard_url(runs.job_id)
        self.query_one("#runs-text", Static).update(runs_text(runs, url))
        self.query_one(KpiPlot).runs = runs
