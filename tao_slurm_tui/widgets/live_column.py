"""What the details ask live about the job they show: its GPUs while it runs (:class:`GpuPane`),
why it waits while it is pending (:class:`WaitPane`); and the queue's word on running jobs whose
GPUs sit idle.

The queue binds its detail view to :attr:`LiveColumn.view` (the panes take it from here) and
calls :meth:`LiveColumn.check_idle_gpus` after each poll; every sample the GPU pane posts and
every sweep set :attr:`LiveColumn.idle_gpus`, whose words go to the queue's table
(``JobTable.notes``: the Reason column of a running job).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.css.query import NoMatches
from textual.reactive import var

from tao_slurm_tui.core.gpu_usage import idle_words
from tao_slurm_tui.core.job_runs import is_training
from tao_slurm_tui.core.models import TaoStatus
from tao_slurm_tui.errors import TaoError
from tao_slurm_tui.services.backend import Backend
from tao_slurm_tui.widgets.gpu_pane import GpuPane, flag_idle
from tao_slurm_tui.widgets.job_detail import DetailView
from tao_slurm_tui.widgets.job_table import JobTable
from tao_slurm_tui.widgets.wait_pane import WaitPane


class LiveColumn(Vertical):
    """The live panes of the shown job, and the idle-GPU flags of the running ones."""

    view: var[DetailView] = var(DetailView(), init=False)
    """The queue's detail view (bound)."""
    idle_gpus: var[dict[str, float]] = var(dict, init=False)
    """Running jobs whose GPUs sat idle at least the settings' limit: seconds idle by id."""

    def __init__(self, backend: Callable[[], Backend], every: float, *, id: str | None = None):
        """Create the column.

        Args:
            backend: The back end now (the app's may change: a profile switch).
            every: Seconds between GPU samples while a running job is shown.
            id: Widget id.
        """
        super().__init__(id=id)
        self.backend = backend
        self.every = every

    def compose(self) -> ComposeResult:
        """The GPU pane and the wait pane, each shown for the jobs it is about."""
        yield GpuPane(
            lambda job_id: self.backend().gpu_report(job_id), self.every, id="gpus"
        ).data_bind(view=LiveColumn.view)
        yield WaitPane(lambda job_id: self.backend().why_pending(job_id), id="wait").data_bind(
            view=LiveColumn.view
        )

    def watch_view(self, view: DetailView) -> None:
        """Mark the column (and the details box) when a running training's GPUs and its runs
        panel both show: the queue's style puts the GPUs above the details then, so the
        details keep their width, and lets the box grow by those rows on a wide screen."""
        job = view.job
        both = job is not None and job.status is TaoStatus.RUNNING and is_training(job)
        self.set_class(both, "-beside-runs")
        with contextlib.suppress(NoMatches):
            self.query_ancestor("#detail-box").set_class(both, "-gpus-and-runs")

    def on_gpu_pane_sampled(self, event: GpuPane.Sampled) -> None:
        """New figures of a job's GPUs: flag it idle or take its flag down."""
        self.idle_gpus = flag_idle(self.idle_gpus, event.report)

    @work(exclusive=True, group="idle-gpus", exit_on_error=False)
    async def check_idle_gpus(self) -> None:
        """Flag running jobs whose GPUs sit idle (a sweep when due; a failure keeps the flags)."""
        with contextlib.suppress(TaoError):
            self.idle_gpus = await self.backend().idle_gpu_jobs()

    def watch_idle_gpus(self, idle: dict[str, float]) -> None:
        """'GPUs idle 42 min' on each flagged job in the queue's table."""
        notes = {job_id: f"GPUs idle {idle_words(seconds)}" for job_id, seconds in idle.items()}
        for table in self.screen.query(JobTable):
            table.notes = notes
