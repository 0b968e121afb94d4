"""The home screen: the live job queue, a detail pane, and the actions on a job.

The screen's state is reactive and the widgets follow it: the job snapshot (:attr:`all_jobs`),
the filter, "finished hidden" and the collapsed pipelines make :attr:`QueueScreen.rows`, which
the table shows (data binding); the sort is the table's own, mirrored here by its ``Sorted``
message for the subtitle; the row under the cursor (:attr:`selected`, from the table's
``Highlighted`` message), the snapshot and what was fetched make the detail pane's
:attr:`detail_view` (computed, bound to the pane); :attr:`notice` is bound to the notice line.
Nothing calls a redraw: setting the state is enough.
"""

from __future__ import annotations

import asyncio

from textual import getters, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.notifications import Notification, Notify
from textual.reactive import var
from textual.timer import Timer
from textual.widgets import DataTable, Input

from tao_slurm_tui.core.accounting import Usage
from tao_slurm_tui.core.models import JobRecord
from tao_slurm_tui.core.pipelines import Pipeline, pipeline_spec, step_label
from tao_slurm_tui.core.shown import shown, shown_text
from tao_slurm_tui.core.words import plural
from tao_slurm_tui.errors import TaoError
from tao_slurm_tui.screens.context import UiContext
from tao_slurm_tui.screens.queue_cancel import QueueCancel
from tao_slurm_tui.services.backend import Transition, transitions
from tao_slurm_tui.widgets.app_footer import AppFooter
from tao_slurm_tui.widgets.app_header import AppHeader
from tao_slurm_tui.widgets.job_cells import job_plain_cells
from tao_slurm_tui.widgets.job_detail import DetailView, JobDetail
from tao_slurm_tui.widgets.job_table import JobTable, SortOrder
from tao_slurm_tui.widgets.live_column import LiveColumn
from tao_slurm_tui.widgets.pipeline_rows import PIPELINE_KEY, pipeline_id_of, queue_rows
from tao_slurm_tui.widgets.poll_notice import PollNotice, notice_text
from tao_slurm_tui.widgets.runs_panel import RunsPanel
from tao_slurm_tui.widgets.sort_setting import sort_from_setting, sort_setting

MAX_BACKOFF = 300.0
"""Longest wait between polls while the cluster cannot be reached (seconds)."""

_SEVERITY = {
    "finished": "information",
    "failed": "error",
    "canceled": "warning",
    "retried": "warning",
    "stalled": "warning",
    "started": "information",
    "walltime": "warning",
}


def matches_filter(job: JobRecord, text: str) -> bool:
    """True when every word of ``text`` appears in one of the job's columns (any case)."""
    haystack = " ".join(job_plain_cells(job).values()).lower()
    return all(word in haystack for word in text.lower().split())


def pipelines_of(jobs: dict[str, JobRecord]) -> dict[str, Pipeline]:
    """Every pipeline among ``jobs`` by its id, its steps in step order."""
    steps: dict[str, list[JobRecord]] = {}
    for job in jobs.values():
        if job.pipeline_id:
            steps.setdefault(job.pipeline_id, []).append(job)
    return {
        pipeline_id: Pipeline(pipeline_id, tuple(sorted(group, key=lambda j: j.pipeline_step)))
        for pipeline_id, group in steps.items()
    }


class QueueScreen(QueueCancel):
    """Jobs of the profile, polled in the background while this screen is visible."""

    BINDINGS = [
        Binding("slash", "filter", "Filter", id="queue.filter"),
        Binding("escape", "clear_filter", "Clear filter", show=False, id="queue.clear_filter"),
        Binding("l", "logs", "Logs", id="queue.logs"),
        Binding("exclamation_mark", "app.shell", "Shell in job", show=False, id="queue.shell"),
        Binding("c", "cancel_job", "Cancel", id="queue.cancel"),
        Binding(
            "space", "toggle_pipeline", "Expand/collapse", show=False, id="queue.toggle_pipeline"
        ),
        Binding("e", "clone", "Clone", show=False, id="queue.clone"),
        Binding("r", "refresh", "Refresh", id="queue.refresh"),
        Binding("f", "toggle_finished", "Finished", show=False, id="queue.toggle_finished"),
        Binding("y", "copy_id", "Copy SLURM id", show=False, id="queue.copy_id"),
        Binding("i", "toggle_detail", "Details", show=False, id="queue.toggle_detail"),
        Binding("o", "job_view", "Curves", show=False, id="queue.job_view"),
        Binding("t", "tensorboard", "TensorBoard", show=False, id="queue.tensorboard"),
        Binding("v", "compare", "Compare", show=False, id="queue.compare"),
        Binding("q", "ask_quit", "Quit", show=False, id="queue.quit"),
    ]

    class Refreshed(Message):
        """A poll reached the cluster (a fact: every header shows when)."""

        def __init__(self, screen: QueueScreen, polled_at: float | None) -> None:
            """Create the message.

            Args:
                screen: The queue that polled.
                polled_at: The back end's time of the poll (``time.time()``).
            """
            super().__init__()
            self.screen = screen
            self.polled_at = polled_at

        @property
        def control(self) -> QueueScreen:
            """The queue that polled."""
            return self.screen

    # The app's breakpoints, and one more: from 150 columns a training's curves fit beside
    # the job's details without squeezing its attempts table.
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-wide"), (150, "-very-wide")]

    table = getters.query_one("#jobs", JobTable)
    detail = getters.query_one("#detail", JobDetail)
    filter_input = getters.query_one("#filter", Input)

    # The state. `var`s: the screen itself draws nothing; the widgets bound to them do.
    all_jobs: var[dict[str, JobRecord]] = var(dict, init=False, always_update=True)
    """Every job of the last snapshot (before filtering), by id; a new dict redraws."""
    filter_text: var[str] = var("", init=False)
    """Words every shown job matches (in any column)."""
    collapsed: var[frozenset[str]] = var(frozenset(), init=False)
    """Pipelines shown as their one row (space or enter on the row toggles)."""
    sorted_by: var[SortOrder] = var(SortOrder(), init=False)
    """How the table sorts (the table's own; mirrored from its ``Sorted`` message)."""
    selected: var[str | None] = var(None, init=False)
    """Key of the row under the table's cursor (from its ``Highlighted`` message)."""
    usage: var[dict[str, Usage]] = var(dict, init=False)
    """What finished jobs used (fetched once per job, when its detail is shown)."""
    fetched: var[JobRecord | None] = var(None, init=False)
    """The selected job's record as fetched for the pane (until the next snapshot)."""
    notice: var[str] = var("", init=False)
    """What the last poll could not read, as the notice line says it ('' hides the line)."""

    # Derived from the state.
    pipelines: var[dict[str, Pipeline]] = var(dict, init=False)
    """The snapshot's pipelines by id."""
    rows: var[tuple[JobRecord, ...]] = var(tuple, init=False)
    """The rows to show (bound to the table): single jobs, and each pipeline as its row with
    its steps under it unless collapsed."""
    shown_count: var[int] = var(0, init=False)
    """Jobs the rows show (a pipeline's row is no job; a collapsed one hides its steps)."""
    subtitle: var[str] = var("", init=False)
    """Counts, sort and finished shown or not (computed; bound to the table's border)."""
    detail_view: var[DetailView] = var(DetailView(), init=False)
    """The detail pane's content (computed; bound to the pane)."""

    def __init__(self, ctx: UiContext) -> None:
        """Create the screen.

        Args:
            ctx: Back end, settings and clock.
        """
        super().__init__()
        self.ctx = ctx
        self.failures = 0
        """Consecutive failed polls (drives the backoff)."""
        self.polled_ok = False
        """True once a poll reached the cluster."""
        self._timer: Timer | None = None
        self._suspended = True
        self._delay = self.poll_interval
        """Wait before the next automatic poll (grows while the cluster is unreachable)."""
        self._toast: Notification | None = None
        """The 'Queue not refreshed' toast on screen, replaced rather than stacked."""
        self._select_when_composed: str | None = None
        """A job to select that came before the table (see :meth:`select_job`)."""

    @property
    def poll_interval(self) -> float:
        """Seconds between polls (settings.poll_interval, at least 2)."""
        return max(2.0, self.ctx.settings.poll_interval)

    def compose(self) -> ComposeResult:
        """Header, filter, notice, table, detail, footer (bound to the screen's state)."""
        yield AppHeader(self.ctx.backend, self.ctx.clock, "queue")
        yield Input(placeholder="filter: words matching any column", id="filter", compact=True)
        yield PollNotice(id="poll-notice").data_bind(text=QueueScreen.notice)
        yield JobTable(id="jobs").data_bind(
            job_rows=QueueScreen.rows, subtitle=QueueScreen.subtitle
        )
        with VerticalScroll(id="detail-box"), Horizontal(id="detail-row"):
            live = LiveColumn(lambda: self.ctx.backend, self.ctx.settings.gpu_refresh, id="live")
            yield live.data_bind(view=QueueScreen.detail_view)
            yield JobDetail(id="detail").data_bind(view=QueueScreen.detail_view)
            # A TAO training's runs, forecast and KPI curves: beside the details when wide.
            yield RunsPanel(self.ctx.backend, id="runs").data_bind(view=QueueScreen.detail_view)
        yield AppFooter()

    def on_mount(self) -> None:
        """Show what the store has at once; the first poll follows on resume."""
        self.query_one("#detail-box").border_title = "Details"
        self.all_jobs = {job.id: job for job in self.ctx.backend.jobs()}
        # The view as it was left (finished hidden, the sort), kept in the settings.
        self.show_finished = self.ctx.settings.show_finished
        order = sort_from_setting(self.ctx.settings.queue_sort)
        if order != self.table.sorted_by:
            self.table.sorted_by = order
        self.table.focus()
        if self._select_when_composed is not None:
            self.table.reveal(self._select_when_composed)
            self._select_when_composed = None

    # ------------------------------------------------------------------ derived state
    def _wanted(self, jobs: list[JobRecord], finished: bool, text: str) -> bool:
        """Show these jobs (one, or a pipeline's steps: together) by ``finished`` and ``text``?"""
        return (finished or any(not job.status.terminal for job in jobs)) and (
            not text or any(matches_filter(job, text) for job in jobs)
        )

    def _update_rows(self) -> None:
        """The rows for the snapshot, the filter, finished shown or not, collapsed pipelines."""
        f, t = self.show_finished, self.filter_text  # read once: a reactive's read costs
        wanted = {pid for pid, p in self.pipelines.items() if self._wanted(list(p.steps), f, t)}
        jobs = [
            job
            for job in self.all_jobs.values()
            if (job.pipeline_id in wanted if job.pipeline_id else self._wanted([job], f, t))
        ]
        self.shown_count = len(jobs)
        self.rows = tuple(queue_rows(jobs, self.collapsed))

    def watch_all_jobs(self) -> None:
        """A new snapshot: its pipelines and rows (what was fetched for the pane is older)."""
        self.pipelines = pipelines_of(self.all_jobs)
        self.fetched = None
        self._update_rows()

    def watch_filter_text(self) -> None:
        """Show the jobs matching the filter."""
        self._update_rows()

    def watch_show_finished(self) -> None:
        """Show or hide finished jobs."""
        self._update_rows()

    def watch_collapsed(self) -> None:
        """Show or hide pipelines' steps."""
        self._update_rows()

    def compute_subtitle(self) -> str:
        """Counts, the sort and whether finished jobs are shown, under the table."""
        # Jobs, not rows: a pipeline's own row is no job, a collapsed one hides its steps.
        shown, total = self.shown_count, len(self.all_jobs)
        count = f"{shown} of {plural(total, 'job')}" if shown != total else plural(total, "job")
        finished = "finished shown (f)" if self.show_finished else "finished hidden (f)"
        return f"{count} · sort {self.sorted_by.label} (s) · {finished}"

    def compute_detail_view(self) -> DetailView:
        """The selected row's job (a pipeline's row: its step in progress) as fetched for the
        pane if it was, with what it used and its pipeline."""
        job = self._row_job(self.selected)
        if job is None:
            return DetailView()
        fetched = self.fetched
        if fetched is not None and fetched.id == job.id:
            job = fetched
        pipeline = self.pipelines.get(job.pipeline_id) if job.pipeline_id else None
        return DetailView(job, self.usage.get(job.id), pipeline)

    def watch_detail_view(self, old: DetailView, new: DetailView) -> None:
        """Another job in the pane: fetch its full history (and what it used, if finished)."""
        if new.job is not None and (old.job is None or old.job.id != new.job.id):
            self.load_detail(new.job.id)

    def _row_job(self, row_key: str | None) -> JobRecord | None:
        """The job a row stands for: a pipeline's row stands for its step in progress."""
        if row_key is None:
            return None
        pipeline = self.pipelines.get(pipeline_id_of(row_key))
        if pipeline is not None:
            return pipeline.current
        return self.all_jobs.get(row_key)

    def _pipeline(self, pipeline_id: str) -> Pipeline | None:
        """The pipeline ``pipeline_id`` from the last snapshot (None if there is none)."""
        return self.pipelines.get(pipeline_id) if pipeline_id else None

    @on(JobTable.Sorted)
    def _sorted(self, event: JobTable.Sorted) -> None:
        self.sorted_by = event.order
        self._remember(queue_sort=sort_setting(event.order))

    @on(JobTable.Highlighted)
    def _highlighted(self, event: JobTable.Highlighted) -> None:
        self.selected = event.row_key

    # ------------------------------------------------------------------ poller
    def on_screen_resume(self) -> None:
        """Visible again: poll as soon as this frame is drawn, and keep polling."""
        self._suspended = False
        # Back from another screen, the rows start at their Job column again (a table left
        # scrolled right showed rows without their names).
        self.table.scroll_to(x=0, animate=False, immediate=True)
        # After the refresh: a poll that answers at once (a big queue, a fast cluster) must
        # not hold up the first frame with the rows the store already has.
        self.call_after_refresh(self.poll)

    def on_screen_suspend(self) -> None:
        """Hidden: stop polling (a poll in flight finishes but is not re-armed)."""
        self._suspended = True
        self._stop_timer()

    def _stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None

    def _arm(self, delay: float) -> None:
        # Re-armed only after a poll finished, so polls never overlap.
        self._stop_timer()
        if not self._suspended:
            self._timer = self.set_timer(delay, self.poll, name="queue-poll")

    @work(exclusive=True, group="poll", exit_on_error=False)
    async def poll(self, manual: bool = False) -> None:
        """One refresh, then arm the next (backing off while the cluster is unreachable).

        Args:
            manual: Asked for with ``r``: a failure keeps the current back-off instead of
                doubling it (the user's impatience is not evidence the cluster is further away).
        """
        self._stop_timer()
        rearm = True
        soon = False
        try:
            jobs = await self.ctx.backend.refresh(full=manual)
        except asyncio.CancelledError:
            rearm = False  # a newer poll replaced this one and arms its own timer
            raise
        except TaoError as error:
            if not manual or not self.failures:
                self.failures += 1
            self._delay = min(MAX_BACKOFF, self.poll_interval * 2**self.failures)
            # Never reached the cluster this session: the profile itself may be the problem.
            hint = "" if self.polled_ok else " Press d for the set-up checks."
            tries = f" (failed {self.failures}x)" if self.failures > 1 else ""
            self._show_toast(
                f"{error} Next try in {self._delay:.0f} s, or press r now.{hint}",
                f"Queue not refreshed{tries}",
            )
        else:
            self.failures = 0
            self._delay = self.poll_interval
            self.polled_ok = True
            self._clear_toast()
            self._take(jobs)
            self._take_warning()
            self.post_message(self.Refreshed(self, self.ctx.backend.last_poll))
            self.query_one(LiveColumn).check_idle_gpus()
            # The screen is up to date; if the poll asked sacct in the background (jobs that
            # ended), poll again as soon as its answer is in rather than a whole interval later.
            # (Once: the interval and the back-off stay as they are.)
            soon = await self.ctx.backend.followup()
            self._take_warning()  # what the follow-up could not read, if anything
        finally:
            for notice in self.ctx.backend.take_notices():
                self.notify(notice, title="Cluster", severity="information", timeout=20)
            if rearm:
                self._arm(0.05 if soon else self._delay)

    def _take(self, jobs: list[JobRecord]) -> None:
        """A new snapshot from the back end: shown, and what changed announced."""
        before = self.all_jobs
        if len(jobs) == len(before) and all(before.get(job.id) is job for job in jobs):
            return  # the very records shown (a quiet tick): nothing to redraw
        self.all_jobs = {job.id: job for job in jobs}
        notifier = self.ctx.notifier
        self._announce(transitions(before, jobs) + (notifier.wall_time(jobs) if notifier else []))

    def _take_warning(self) -> None:
        """What the last poll could not read stays in the notice line while the condition lasts
        (a failed poll leaves it: it is still what is known about the rows)."""
        warning = self.ctx.backend.poll_warning
        self.notice = notice_text(warning, self._delay) if warning else ""

    def _show_toast(self, message: str, title: str) -> None:
        """Show the failure toast, replacing the previous one (one toast, not a stack)."""
        self._clear_toast()
        # Built here rather than by app.notify so it can be taken down again (Textual's
        # notify returns nothing); it lasts until the next poll replaces or clears it.
        self._toast = Notification(
            shown_text(message),  # quotes the cluster's error: data, never markup
            shown(title),
            "error",
            timeout=max(self._delay, self.poll_interval) + 5,
        )
        self.app.post_message(Notify(self._toast))

    def _clear_toast(self) -> None:
        toast, self._toast = self._toast, None
        if toast is not None:
            # Textual 8.2 has no public way to withdraw one notification: `clear_notifications`
            # would also take down the job-finished toasts. `_unnotify` is what its own toasts
            # call when clicked (a toast not shown any more is ignored).
            self.app._unnotify(toast)

    def _announce(self, events: list[Transition]) -> None:
        for event in events:
            self.notify(event.message, title=f"Job {event.kind}", severity=_SEVERITY[event.kind])  # type: ignore[arg-type]
        if events:
            self.app.bell()
        if self.ctx.notifier is not None:
            self.ctx.notifier.send(events)

    @work(exclusive=True, group="detail", exit_on_error=False)
    async def load_detail(self, job_id: str) -> None:
        """Fetch the job's full history for the pane (if still selected), and for a finished
        job what it used (one accounting call, remembered)."""
        job = await self.ctx.backend.job_detail(job_id)
        if job.status.terminal and job_id not in self.usage:
            try:
                self.usage = {**self.usage, **await self.ctx.backend.job_usage([job_id])}
            except TaoError as error:
                # The figures are extra: say why they are missing, keep the pane.
                self.notify(f"No usage figures for {job_id}: {error}", severity="warning")
        shown = self._row_job(self.selected)
        if shown is not None and shown.id == job_id:
            self.fetched = job

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """Enter opens the logs (on a pipeline's row: expands or collapses it)."""
        if pipeline_id_of(self.table.cursor_job_id or ""):
            self.action_toggle_pipeline()
        else:
            self.action_logs()

    def action_toggle_pipeline(self) -> None:
        """Show or hide the steps of the pipeline under the cursor (its row or a step)."""
        key = self.table.cursor_job_id or ""
        job = self._row_job(key)
        pipeline_id = pipeline_id_of(key) or (job.pipeline_id if job else "")
        if not pipeline_id:
            return
        self.collapsed ^= {pipeline_id}
        self.table.reveal(f"{PIPELINE_KEY}{pipeline_id}")

    def select_job(self, job_id: str) -> None:
        """Put the cursor on ``job_id`` as soon as it is shown (a job just submitted). Opened
        with ``--spec``, the composer covers the queue from the start: a submit may come
        before the queue is composed (seen on a loaded machine), and :meth:`on_mount` takes
        the id then."""
        table = self.query_one_optional("#jobs", JobTable)
        if table is None:
            self._select_when_composed = job_id
        else:
            table.reveal(job_id)

    # ------------------------------------------------------------------ actions
    def _selected(self) -> JobRecord | None:
        job = self._row_job(self.table.cursor_job_id)
        if job is None:
            self.notify("Select a job first.", severity="warning")
        return job

    def action_filter(self) -> None:
        """Show and focus the filter."""
        self.filter_input.add_class("-visible")
        self.filter_input.focus()

    def action_clear_filter(self) -> None:
        """Clear and hide the filter."""
        self.filter_input.value = ""
        self.filter_input.remove_class("-visible")
        self.table.focus()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value.strip()

    @on(Input.Submitted, "#filter")
    def _filter_done(self, event: Input.Submitted) -> None:
        self.table.focus()

    def action_refresh(self) -> None:
        """Poll now (a failure does not lengthen the back-off); after a declined or refused
        one-time code, this is what asks for one again."""
        self.ctx.backend.ask_again()
        self.poll(manual=True)

    def action_toggle_detail(self) -> None:
        """Hide or show the details pane (more rows on a small terminal)."""
        box = self.query_one("#detail-box")
        box.display = not box.display

    def action_job_view(self) -> None:
        """Open the selected training's runs and KPI curves at full size."""
        job = self._selected()
        if job is not None:
            from tao_slurm_tui.screens.job_view import JobViewScreen

            self.app.push_screen(JobViewScreen(self.ctx, job.id))

    def action_tensorboard(self) -> None:
        """Start (or stop) TensorBoard for the selected running training."""
        job = self._selected()
        if job is not None:
            from tao_slurm_tui.screens.tensorboard_toggle import toggle_tensorboard

            toggle_tensorboard(self, self.ctx.backend, job)

    def action_compare(self) -> None:
        """Compare TAO trainings side by side (the selected one picked first)."""
        job = self._row_job(self.table.cursor_job_id)
        jobs = sorted(self.all_jobs.values(), key=lambda j: -j.created_at)
        from tao_slurm_tui.screens.compare import CompareScreen

        self.app.push_screen(CompareScreen(self.ctx, jobs, [job.id] if job else []))

    def action_logs(self) -> None:
        """Open the selected job's logs."""
        job = self._selected()
        if job is not None:
            from tao_slurm_tui.screens.logs import LogsScreen

            self.app.push_screen(LogsScreen(self.ctx, job.id))

    def action_clone(self) -> None:
        """Open the composer with a copy of the selected job's spec under a new name.

        A pipeline's step (or its row) clones the whole pipeline, every step in order in the
        composer's follow-up actions: a later step works on the results of the one before it
        (``TAO_PREVIOUS_RESULTS_DIR``), so a step alone would not run as it did. Removing
        actions in the composer runs fewer.
        """
        job = self._selected()
        if job is None:
            return
        pipeline = self._pipeline(job.pipeline_id)
        if pipeline is not None and len(pipeline.steps) > 1:
            spec = pipeline_spec(pipeline.steps)
            base = pipeline.pipeline_id
        else:
            pipeline = None
            spec = {key: value for key, value in job.spec.items() if key != "then"}
            base = job.id
        actions = [str(step["action"]) for step in spec.get("then", [])]
        n = 2
        while any(
            name in self.all_jobs
            for name in (f"{base}-{n}", *(f"{base}-{n}-{action}" for action in actions))
        ):
            n += 1
        spec["name"] = f"{base}-{n}"[:64]
        from tao_slurm_tui.screens.composer import ComposerScreen

        self.app.push_screen(ComposerScreen(self.ctx, spec))
        if pipeline is not None:
            self.notify(
                f"Cloned the whole pipeline {pipeline.pipeline_id} ({len(pipeline.steps)} steps: "
                f"{', '.join(step_label(step) for step in pipeline.steps)}): a step works on the "
                "results of the one before it. Remove follow-up actions to run fewer.",
                title="Clone pipeline",
                timeout=8,
            )
