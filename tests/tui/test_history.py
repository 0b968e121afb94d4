"""Pilot tests of the history view, the job output screen and usage in the queue's details."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from textual.widgets import DataTable, Input, Log

from tao_slurm_tui.screens.history import HistoryScreen
from tao_slurm_tui.screens.job_output import JobOutputScreen
from tao_slurm_tui.screens.logs import LogsScreen
from tao_slurm_tui.screens.queue import QueueScreen
from tao_slurm_tui.services.cluster import ClusterBackend
from tao_slurm_tui.services.fakecluster.world import World
from tests.tui.conftest import SIZE, build_app, history_pages
from tests.tui.waits import record_notifications, settle, shown, wait_for


async def _history(pilot: Any) -> HistoryScreen:
    screen: QueueScreen = await shown(pilot, QueueScreen)
    await wait_for(pilot, lambda: screen.polled_ok, "the first poll")
    await pilot.press("h")
    history: HistoryScreen = await shown(pilot, HistoryScreen)
    await wait_for(pilot, lambda: history.page is not None, "the first page")
    await settle(pilot)
    return history


def _ids(screen: HistoryScreen) -> list[str]:
    return [e.raw_id for e in screen.entries.values()]


def _plain(renderable: Any) -> str:
    console = Console(width=200, record=True)
    console.print(renderable)
    return console.export_text()


async def test_pages_older_and_newer_one_call_each(fake: ClusterBackend, world: World) -> None:
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _history(pilot)
        first = _ids(screen)
        assert len(first) == 200 and screen.table.row_count == 200
        assert screen.page is not None and screen.page.summary is not None
        assert "last 7 days: 520 jobs" in str(screen.summary.render())
        assert history_pages(world) == 1
        await pilot.press("right_square_bracket")
        await wait_for(pilot, lambda: history_pages(world) == 2 and not screen.fetching, "page 2")
        second = _ids(screen)
        assert int(second[0]) < int(first[-1])  # older, no overlap
        assert "page 2 · jobs 201-400 of 520" in str(screen.table.border_subtitle)
        await pilot.press("left_square_bracket")
        await wait_for(pilot, lambda: history_pages(world) == 3 and not screen.fetching, "page 1")
        assert _ids(screen) == first
        notes = record_notifications(app)
        await pilot.press("left_square_bracket")
        await wait_for(pilot, lambda: bool(notes), "the newest-page notice")
        assert notes[0].message == "This is the newest page."


async def test_filters_state_name_and_a_bad_since(fake: ClusterBackend, world: World) -> None:
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _history(pilot)
        await pilot.press("slash")
        await wait_for(pilot, lambda: screen.query_one("#h-since", Input).has_focus, "focus")
        screen.query_one("#h-state", Input).value = "failed,timeout"
        screen.query_one("#h-name", Input).value = "EXPORT"
        await pilot.press("enter")
        await wait_for(pilot, lambda: history_pages(world) == 2 and not screen.fetching, "filtered")
        entries = list(screen.entries.values())
        assert entries and all(e.state in {"FAILED", "TIMEOUT"} for e in entries)
        assert all("export" in e.name for e in entries)
        notes = record_notifications(app)
        screen.query_one("#h-since", Input).value = "last tuesday"
        screen.query_one("#h-since", Input).focus()
        await pilot.press("enter")
        await wait_for(pilot, lambda: bool(notes), "the error toast")
        assert "is not a date or a span" in notes[0].message
        assert history_pages(world) == 2  # nothing fetched for a bad filter


async def test_l_opens_logs_of_ours_and_output_of_foreign_jobs(fake: ClusterBackend) -> None:
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _history(pilot)
        # The newest rows are the seeded TAO jobs (the pending ones SLURM found eligible
        # too, as sacct lists them): linked, so l opens their TAO logs.
        await pilot.press("l")
        logs: LogsScreen = await shown(pilot, LogsScreen)
        assert logs.job_id == "classify-long"
        await pilot.press("escape")
        await shown(pilot, HistoryScreen)
        rows = list(screen.entries.values())
        foreign = next(i for i, e in enumerate(rows) if e.raw_id == "1000")
        screen.table.move_cursor(row=foreign)
        await settle(pilot)
        assert "Not submitted by tao-slurm-tui" in _plain(screen.detail.content)
        await pilot.press("l")
        output: JobOutputScreen = await shown(pilot, JobOutputScreen)
        await wait_for(pilot, lambda: output.output is not None, "the output")
        await settle(pilot)
        log = output.query_one(Log)
        assert log.line_count == 40 and "step 39/40" in log.lines[-1]
        assert "slurm-1000.out" in str(output.where.render())
        await pilot.press("e")
        await wait_for(pilot, lambda: log.line_count == 1, "the StdErr note")
        assert "same file as StdOut" in log.lines[0]


async def test_slow_history_keeps_the_app_responsive(fake: ClusterBackend, world: World) -> None:
    gate = world.hold("page count=")  # the cluster answers the history when the test says
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await shown(pilot, QueueScreen)
        await pilot.press("h")
        screen: HistoryScreen = await shown(pilot, HistoryScreen)
        await wait_for(pilot, lambda: screen.fetching, "the fetch started")
        assert screen.table.border_subtitle == "loading…"
        # Keys are handled while the page is on its way (the fetch is a worker).
        await pilot.press("slash")
        await wait_for(
            pilot, lambda: screen.query_one("#h-since", Input).has_focus, "the filter focused"
        )
        assert screen.fetching and screen.table.row_count == 0
        gate.set()
        await wait_for(pilot, lambda: not screen.fetching, "the page")
        assert screen.query_one(DataTable).row_count == 200


async def test_queue_detail_shows_usage_of_a_finished_job(fake: ClusterBackend) -> None:
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        screen: QueueScreen = await shown(pilot, QueueScreen)
        await wait_for(pilot, lambda: screen.polled_ok, "the first poll")
        row = screen.table.get_row_index("detect-ok")
        screen.table.move_cursor(row=row)
        await wait_for(pilot, lambda: "detect-ok" in screen.usage, "the usage")
        await settle(pilot)
        text = _plain(screen.detail.content)
        assert "Elapsed 3:10:00 of 4:00:00 (79%)" in text
        assert "CPU efficiency 62% of 16 CPUs · peak memory 21.0 GiB" in text
        assert "12.67 GPU-hours (4 GPUs x elapsed)" in text
