"""The home screen: the live job queue, a detail pane, and the actions on a job."""

from __future__ import annotations

import asyncio
import re

from rich.text import Text
from textual import getters, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.notifications import Notification, Notify
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import DataTable, Input, Static

from tao_slurm_tui.core.accounting import Usage
from tao_slurm_tui.core.models import JobRecord
from tao_slurm_tui.core.pipelines import Pipeline, pipeline_spec, step_label
from tao_slurm_tui.errors import TaoError
from tao_slurm_tui.screens.composer import ComposerScreen
from tao_slurm_tui.screens.confirm import ConfirmModal
from tao_slurm_tui.screens.context import UiContext
from tao_slurm_tui.screens.logs import LogsScreen
from tao_slurm_tui.screens.pipeline_cancel import CancelChoice, PipelineCancelModal
from tao_slurm_tui.services.backend import Transition, transitions
from tao_slurm_tui.widgets.app_footer import AppFooter
from tao_slurm_tui.widgets.app_header import AppHeader
from tao_slurm_tui.widgets.job_detail import JobDetail
from tao_slurm_tui.widgets.job_table import JobTable, job_plain_cells
from tao_slurm_tui.widgets.pipeline_rows import pipeline_id_of, queue_rows

MAX_BACKOFF = 300.0
"""Longest wait between polls while the cluster cannot be reached (seconds)."""
FIRST_ROWS = 200
"""Rows the first frame gets (more than any terminal shows); the rest follow right after."""

_SEVERITY = {
    "finished": "information",
    "failed": "error",
    "canceled": "warning",
    "retried": "warning",
}


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]+")


def notice_text(warning: str, next_poll: float) -> str:
    """The queue's one-line notice for a poll that SLURM answered only in part (``squeue
    failed: ...``, sacct printing lines that are no job rows): what is wrong first (a narrow
    terminal cuts the end), then when it is tried again. Control characters (a remote banner's
    escape sequences) become spaces."""
    what = " ".join(_CONTROL.sub(" ", warning).split()).rstrip(".")
    return (
        f"⚠ Not fully refreshed: {what}. Rows may be out of date; "
        f"next poll in {next_poll:.0f} s (r: now)."
    )


def matches_filter(job: JobRecord, text: str) -> bool:
    """True when every word of ``text`` appears in one of the job's columns (any case)."""
    haystack = " ".join(job_plain_cells(job).values()).lower()
    return all(word in haystack for word in text.lower().split())


class QueueScreen(Screen[None]):
    """Jobs of the profile, polled in the background while this screen is visible."""

    BINDINGS = [
        Binding("slash", "filter", "Filter", id="queue.filter"),
        Binding("escape", "clear_filter", "Clear filter", show=False, id="queue.clear_filter"),
        Binding("l", "logs", "Logs", id="queue.logs"),
        Binding("c", "cancel_job", "Cancel", id="queue.cancel"),
        Binding(
            "space", "toggle_pipeline", "Expand/collapse", show=False, id="queue.toggle_pipeline"
        ),
        Binding("e", "clone", "Clone", show=False, id="queue.clone"),
        Binding("r", "refresh", "Refresh", id="queue.refresh"),
        Binding("f", "toggle_finished", "Finished", show=False, id="queue.toggle_finished"),
        Binding("y", "copy_id", "Copy id", show=False, id="queue.copy_id"),
        Binding("i", "toggle_detail", "Details", show=False, id="queue.toggle_detail"),
        Binding("q", "app.quit", "Quit", show=False, id="queue.quit"),
    ]

    table = getters.query_one("#jobs", JobTable)
    detail = getters.query_one("#detail", JobDetail)
    filter_input = getters.query_one("#filter", Input)

    def __init__(self, ctx: UiContext) -> None:
        """Create the screen.

        Args:
            ctx: Back end, settings and clock.
        """
        super().__init__()
        self.ctx = ctx
        self.all_jobs: dict[str, JobRecord] = {}
        """Every job of the last snapshot (before filtering), by id."""
        self.filter_text = ""
        self.show_finished = True
        self.collapsed: set[str] = set()
        self._shown_jobs = 0
        """Jobs the table shows (rows of single jobs and pipelines' steps, collapsed or not)."""
        """Pipelines shown as their one row (space or enter on the row toggles)."""
        self.failures = 0
        """Consecutive failed polls (drives the backoff)."""
        self.polled_ok = False
        """True once a poll reached the cluster."""
        self.usage: dict[str, Usage] = {}
        """What finished jobs used (fetched once per job, when its detail is shown)."""
        self._select: str | None = None
        self._timer: Timer | None = None
        self._suspended = True
        self._delay = self.poll_interval
        """Wait before the next automatic poll (grows while the cluster is unreachable)."""
        self._toast: Notification | None = None
        """The 'Queue not refreshed' toast on screen, replaced rather than stacked."""

    @property
    def poll_interval(self) -> float:
        """Seconds between polls (settings.poll_interval, at least 2)."""
        return max(2.0, self.ctx.settings.poll_interval)

    def compose(self) -> ComposeResult:
        """Header, filter, table, detail, footer."""
        yield AppHeader(self.ctx.backend, self.ctx.clock, "queue")
        yield Input(placeholder="filter: words matching any column", id="filter", compact=True)
        yield Static(id="poll-notice", markup=False)
        yield JobTable(id="jobs")
        with VerticalScroll(id="detail-box"):
            yield JobDetail(id="detail")
        yield AppFooter()

    def on_mount(self) -> None:
        """Show what the store has at once; the first poll follows on resume.

        A big queue shows its first screenful of rows in the first frame and the rest right
        after it (adding 2,000 DataTable rows takes a while; nobody sees row 2,000 first).
        """
        self.query_one("#detail-box").border_title = "Details"
        self.all_jobs = {job.id: job for job in self.ctx.backend.jobs()}
        self._show(limit=FIRST_ROWS)
        if len(self.table.jobs) < len(self._visible()):
            self.call_after_refresh(self._show)
        self.table.focus()

    # ------------------------------------------------------------------ poller
    def on_screen_resume(self) -> None:
        """Visible again: poll as soon as this frame is drawn, and keep polling."""
        self._suspended = False
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
            jobs = await self.ctx.backend.refresh()
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
            self._apply(jobs)
            self._show_notice()
            # The screen is up to date; if the poll asked sacct in the background (jobs that
            # ended), poll again as soon as its answer is in rather than a whole interval later.
            # (Once: the interval and the back-off stay as they are.)
            soon = await self.ctx.backend.followup()
            self._show_notice()  # what the follow-up could not read, if anything
        finally:
            self.query_one(AppHeader).refresh()
            if rearm:
                self._arm(0.05 if soon else self._delay)

    def _show_notice(self) -> None:
        """Show what the last poll could not read in the notice line above the table (it stays
        while the condition lasts); hide the line once a poll is complete again."""
        warning = self.ctx.backend.poll_warning
        notice = self.query_one("#poll-notice", Static)
        notice.set_class(bool(warning), "-visible")
        if warning:
            text = notice_text(warning, self._delay)
            notice.update(Text(text))
            notice.tooltip = text  # the whole sentence, where the line is cut short

    def _show_toast(self, message: str, title: str) -> None:
        """Show the failure toast, replacing the previous one (one toast, not a stack)."""
        self._clear_toast()
        # Built here rather than by app.notify so it can be taken down again (Textual's
        # notify returns nothing); it lasts until the next poll replaces or clears it.
        self._toast = Notification(
            message, title, "error", timeout=max(self._delay, self.poll_interval) + 5
        )
        self.app.post_message(Notify(self._toast))

    def _clear_toast(self) -> None:
        toast, self._toast = self._toast, None
        if toast is not None and toast in self.app._notifications:
            self.app._unnotify(toast)

    # ------------------------------------------------------------------ table
    def _wanted(self, jobs: list[JobRecord]) -> bool:
        """Show these jobs (one job, or every step of a pipeline: shown or hidden together)?"""
        return (self.show_finished or any(not job.status.terminal for job in jobs)) and (
            not self.filter_text or any(matches_filter(job, self.filter_text) for job in jobs)
        )

    def _visible(self) -> list[JobRecord]:
        """The rows to show: single jobs, and each pipeline as its row with its steps under
        it (unless collapsed)."""
        steps: dict[str, list[JobRecord]] = {}
        for job in self.all_jobs.values():
            if job.pipeline_id:
                steps.setdefault(job.pipeline_id, []).append(job)
        wanted = {pid for pid, group in steps.items() if self._wanted(group)}
        jobs = [
            job
            for job in self.all_jobs.values()
            if (job.pipeline_id in wanted if job.pipeline_id else self._wanted([job]))
        ]
        self._shown_jobs = len(jobs)
        return queue_rows(jobs, self.collapsed)

    def _row_job(self, row_key: str | None) -> JobRecord | None:
        """The job a row stands for: a pipeline's row stands for its step in progress."""
        if row_key is None:
            return None
        pipeline = self._pipeline(pipeline_id_of(row_key))
        if pipeline is not None:
            return pipeline.current
        return self.all_jobs.get(row_key)

    def _pipeline(self, pipeline_id: str) -> Pipeline | None:
        """The pipeline ``pipeline_id`` from the last snapshot (None if there is none)."""
        if not pipeline_id:
            return None
        steps = sorted(
            (job for job in self.all_jobs.values() if job.pipeline_id == pipeline_id),
            key=lambda job: job.pipeline_step,
        )
        return Pipeline(pipeline_id, tuple(steps)) if steps else None

    def _pipeline_of(self, job: JobRecord | None) -> Pipeline | None:
        """The pipeline ``job`` is a step of, for the details pane (None for a single job)."""
        return self._pipeline(job.pipeline_id) if job is not None else None

    def _apply(self, jobs: list[JobRecord], *, announce: bool = True) -> None:
        events = transitions(self.all_jobs, jobs) if announce else []
        self.all_jobs = {job.id: job for job in jobs}
        self._show()
        self._announce(events)

    def select_job(self, job_id: str) -> None:
        """Put the cursor on ``job_id`` as soon as it is shown (a job just submitted)."""
        self._select = job_id
        self._show()

    def _show(self, limit: int | None = None) -> None:
        self.table.apply(self._visible()[:limit])
        if self._select is not None and self._select in self.table.jobs:
            self.table.move_cursor(row=self.table.get_row_index(self._select))
            self._select = None
        self._show_detail()
        self._subtitle()

    def _subtitle(self) -> None:
        """Counts, the sort and whether finished jobs are shown, under the table."""
        # Jobs, not rows: a pipeline's own row is no job, a collapsed one hides its steps.
        shown, total = self._shown_jobs, len(self.all_jobs)
        count = f"{shown} of {total} jobs" if shown != total else f"{total} jobs"
        finished = "finished shown (f)" if self.show_finished else "finished hidden (f)"
        self.table.border_subtitle = f"{count} · sort {self.table.sort_label} (s) · {finished}"

    @on(JobTable.Sorted)
    def _sorted(self) -> None:
        self._subtitle()
        self._show_detail()

    def _announce(self, events: list[Transition]) -> None:
        for event in events:
            self.notify(event.message, title=f"Job {event.kind}", severity=_SEVERITY[event.kind])  # type: ignore[arg-type]
        if events:
            self.app.bell()

    def _show_detail(self) -> None:
        job = self._row_job(self.table.cursor_job_id)
        job_id = job.id if job else None
        moved = job_id != self.detail.job_id
        self.detail.show(job, self.usage.get(job_id or ""), self._pipeline_of(job))
        if moved and job_id is not None:
            self.load_detail(job_id)  # the row under the cursor changed without a highlight

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """Show the highlighted job and fetch its full attempt history."""
        # The cursor, not the event's row: after a filter or a sort the event may name a row
        # that has moved or gone, and the pane, c and l must all act on the row under the cursor.
        job = self._row_job(self.table.cursor_job_id)
        if job is not None:
            if self.detail.job_id != job.id:
                self.detail.show(job, self.usage.get(job.id), self._pipeline_of(job))
            self.load_detail(job.id)

    @work(exclusive=True, group="detail", exit_on_error=False)
    async def load_detail(self, job_id: str) -> None:
        """Replace the pane's content with the job's full history (if still selected), and
        for a finished job what it used (one accounting call, remembered)."""
        job = await self.ctx.backend.job_detail(job_id)
        if job.status.terminal and job_id not in self.usage:
            try:
                self.usage.update(await self.ctx.backend.job_usage([job_id]))
            except TaoError as error:
                # The figures are extra: say why they are missing, keep the pane.
                self.notify(f"No usage figures for {job_id}: {error}", severity="warning")
        shown = self._row_job(self.table.cursor_job_id)
        if shown is not None and shown.id == job_id:
            self.detail.show(job, self.usage.get(job_id), self._pipeline_of(job))

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
        self._select = f"pipeline:{pipeline_id}"
        self._show()

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
        self._show()

    @on(Input.Submitted, "#filter")
    def _filter_done(self, event: Input.Submitted) -> None:
        self.table.focus()

    def action_toggle_finished(self) -> None:
        """Hide or show jobs that are Complete, Error or Canceled."""
        self.show_finished = not self.show_finished
        self._show()
        self.notify(
            "Finished jobs shown." if self.show_finished else "Finished jobs hidden.", timeout=2
        )

    def action_refresh(self) -> None:
        """Poll now (a failure does not lengthen the back-off)."""
        self.poll(manual=True)

    def action_copy_id(self) -> None:
        """Copy the selected job's id to the clipboard (OSC 52: works over SSH too)."""
        job = self._selected()
        if job is not None:
            self.app.copy_to_clipboard(job.id)
            self.notify(f"Copied {job.id}.", timeout=2)

    def action_toggle_detail(self) -> None:
        """Hide or show the details pane (more rows on a small terminal)."""
        box = self.query_one("#detail-box")
        box.display = not box.display

    def action_logs(self) -> None:
        """Open the selected job's logs."""
        job = self._selected()
        if job is not None:
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
        self.app.push_screen(ComposerScreen(self.ctx, spec))
        if pipeline is not None:
            self.notify(
                f"Cloned the whole pipeline {pipeline.pipeline_id} ({len(pipeline.steps)} steps: "
                f"{', '.join(step_label(step) for step in pipeline.steps)}): a step works on the "
                "results of the one before it. Remove follow-up actions to run fewer.",
                title="Clone pipeline",
                timeout=8,
            )

    def action_cancel_job(self) -> None:
        """Cancel the selected job after confirmation."""
        job = self._selected()
        if job is None:
            return
        if job.status.terminal:
            self.notify(f"{job.id} already ended ({job.status}).", severity="warning")
            return

        pipeline = self._pipeline(job.pipeline_id)
        if pipeline is not None and len(pipeline.steps) > 1:

            def chosen(choice: CancelChoice | None) -> None:
                if choice == "step":
                    self.cancel_job(job.id)
                elif choice == "pipeline":
                    self.cancel_pipeline(job.pipeline_id)

            self.app.push_screen(PipelineCancelModal(job, pipeline), chosen)
            return

        def confirmed(yes: bool | None) -> None:
            if yes:
                self.cancel_job(job.id)

        question = f"Cancel {job.id}? Every SLURM attempt of it will be scancelled."
        self.app.push_screen(ConfirmModal(question, "Cancel job", danger=True), confirmed)

    @work(group="cancel", exit_on_error=False)
    async def cancel_job(self, job_id: str) -> None:
        """scancel through the back end, then show the result (a pipeline's step takes the
        steps after it along)."""
        job = await self.ctx.backend.cancel(job_id)
        self._after_cancel([job])

    @work(group="cancel", exit_on_error=False)
    async def cancel_pipeline(self, pipeline_id: str) -> None:
        """scancel every step of the pipeline that has not ended."""
        self._after_cancel(await self.ctx.backend.cancel_pipeline(pipeline_id))

    def _after_cancel(self, jobs: list[JobRecord]) -> None:
        before = dict(self.all_jobs)
        changed = {job.id: job for job in jobs}
        pipelines = {job.pipeline_id for job in jobs if job.pipeline_id}
        if pipelines:
            # The later steps changed too: take every step as the back end has it now.
            changed |= {j.id: j for j in self.ctx.backend.jobs() if j.pipeline_id in pipelines}
        self.all_jobs.update(changed)
        self._show()
        self._announce(transitions(before, list(changed.values())))
