"""The queue's state is reactive: setting it redraws the table, the subtitle and the detail pane,
keeping the cursor on its job and the scroll where it was; the table's facts (sorted, another
row under the cursor) reach the screen as messages."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from textual.coordinate import Coordinate
from textual.message import Message
from textual.widgets.data_table import ColumnKey

from tao_slurm_tui.core.models import Progress, TaoStatus
from tao_slurm_tui.services.cluster import ClusterBackend
from tao_slurm_tui.widgets.job_table import JobTable, SortOrder
from tests.tui.conftest import SIZE, build_app, open_demo
from tests.tui.test_queue import _add_sweeps, _queue
from tests.tui.waits import settle, wait_for


def _order(table: JobTable) -> list[str]:
    """Row keys from top to bottom."""
    return [
        str(table.coordinate_to_cell_key(Coordinate(i, 0)).row_key.value)
        for i in range(table.row_count)
    ]


async def test_a_new_snapshot_redraws_only_its_rows_and_keeps_cursor_and_scroll(
    fake: ClusterBackend,
) -> None:
    _add_sweeps(fake)
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _queue(pilot)
        table = screen.table
        await pilot.press(*["down"] * 30)
        await wait_for(pilot, lambda: table.cursor_row == 30, "the cursor on row 30")
        await wait_for(pilot, lambda: table.scroll_y > 0, "the table scrolled to the cursor")
        await settle(pilot)
        cursor, scroll = table.cursor_job_id, table.scroll_y
        assert screen.detail.job_id == cursor
        job = screen.all_jobs["dino-train-1"]
        newer = replace(job, progress=Progress(epoch=18, max_epoch=19, status="RUNNING"))
        gone = next(key for key in _order(table)[:5] if key != "dino-train-1")

        # State, not a redraw call: a new snapshot with one job changed and one above the
        # cursor gone.
        snapshot = {key: value for key, value in screen.all_jobs.items() if key != gone}
        screen.all_jobs = {**snapshot, "dino-train-1": newer}
        await settle(pilot)

        assert gone not in table.jobs and gone not in _order(table)
        assert table.get_cell("dino-train-1", "progress").plain.endswith("19/20")
        assert table.cursor_job_id == cursor  # the cursor stayed on its job, a row higher
        assert table.cursor_row == 29
        assert table.scroll_y == scroll
        assert screen.detail.job_id == cursor
        assert f"{len(snapshot)} jobs" in str(table.border_subtitle)


async def test_filter_finished_and_collapse_are_state_the_table_follows(tmp_path: Path) -> None:
    demo = open_demo(tmp_path / "pipeline", pipeline=True)
    app = build_app(demo.backend())
    async with app.run_test(size=SIZE) as pilot:
        screen = await _queue(pilot)
        table = screen.table
        total = len(screen.all_jobs)

        screen.filter_text = "pending"
        await settle(pilot)
        jobs = screen.all_jobs.values()
        steps = {job.id for job in jobs if job.pipeline_id == "rtdetr"}
        pending = {job.id for job in jobs if job.status is TaoStatus.PENDING}
        assert pending & steps  # a pending step shows its whole pipeline
        shown_jobs = (pending - steps) | steps
        assert set(table.jobs) == shown_jobs | {"pipeline:rtdetr"}
        assert str(table.border_subtitle).startswith(f"{len(shown_jobs)} of {total} jobs")

        screen.filter_text = ""
        screen.show_finished = False
        await settle(pilot)
        singles = {key: job for key, job in table.jobs.items() if not job.pipeline_id}
        assert singles and all(not job.status.terminal for job in singles.values())
        assert steps <= set(table.jobs)  # a pipeline still running shows its finished step too
        assert "finished hidden (f)" in str(table.border_subtitle)

        screen.show_finished = True
        screen.collapsed = frozenset({"rtdetr"})
        await settle(pilot)
        assert "pipeline:rtdetr" in table.jobs
        assert not [key for key in table.jobs if key.startswith("rtdetr-")]
        assert str(table.get_cell("pipeline:rtdetr", "id")).startswith("▸ rtdetr")

        screen.collapsed = frozenset()
        await settle(pilot)
        at = _order(table).index("pipeline:rtdetr")
        assert _order(table)[at + 1].startswith("rtdetr")
        assert f"{total} jobs ·" in str(table.border_subtitle)


async def test_sorting_is_the_tables_state_and_the_screen_hears_it(fake: ClusterBackend) -> None:
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _queue(pilot)
        table = screen.table
        await pilot.press("down", "down")
        await settle(pilot)
        cursor = table.cursor_job_id

        table.sorted_by = SortOrder("id")
        await wait_for(pilot, lambda: screen.sorted_by == SortOrder("id"), "the Sorted fact")
        await settle(pilot)
        assert _order(table) == sorted(_order(table))
        assert table.cursor_job_id == cursor
        assert str(table.columns[ColumnKey("id")].label) == "Job ↑"
        assert "sort Job ↑ (s)" in str(table.border_subtitle)

        table.sorted_by = SortOrder("id", reverse=True)
        await wait_for(pilot, lambda: "sort Job ↓ (s)" in str(table.border_subtitle), "↓")
        assert _order(table) == sorted(_order(table), reverse=True)
        assert table.cursor_job_id == cursor
        assert screen.detail.job_id == cursor


async def test_another_job_under_a_still_cursor_is_a_highlight(fake: ClusterBackend) -> None:
    """The highlighted job leaves the snapshot: the cursor keeps its row, where another job now
    is. DataTable's own event says nothing (the cursor did not move); the table's Highlighted
    does, and the pane follows."""
    app = build_app(fake)
    highlights: list[str | None] = []

    def hear(message: Message) -> None:
        if isinstance(message, JobTable.Highlighted):
            highlights.append(message.row_key)

    async with app.run_test(size=SIZE, message_hook=hear) as pilot:
        screen = await _queue(pilot)
        table = screen.table
        await pilot.press("down", "down", "down")
        await wait_for(pilot, lambda: table.cursor_row == 3, "the cursor on row 3")
        await settle(pilot)
        before = table.cursor_job_id
        assert before is not None and screen.detail.job_id == before
        below = _order(table)[4]
        highlights.clear()

        screen.all_jobs = {key: job for key, job in screen.all_jobs.items() if key != before}
        await settle(pilot)
        assert table.cursor_row == 3 and table.cursor_job_id == below
        assert set(highlights) == {below}  # (the hook hears it at every node it bubbles to)
        assert screen.selected == below
        assert screen.detail.job_id == below
