"""Pilot tests of the log screen: attempts, separator, follow, new-lines hint, search, bounds."""

from __future__ import annotations

import asyncio
from typing import Any

from textual.app import App, ComposeResult

from tao_slurm_tui.core.shown import log_line
from tao_slurm_tui.screens.logs import LogsScreen
from tao_slurm_tui.services.cluster import ClusterBackend
from tao_slurm_tui.services.fakecluster.seed import LOG_LINES
from tao_slurm_tui.services.fakecluster.world import World
from tao_slurm_tui.services.logs import log_path
from tao_slurm_tui.widgets.log_pane import LogPane
from tao_slurm_tui.widgets.log_view import LogView
from tests.tui.conftest import SIZE, build_app
from tests.tui.waits import wait_for


async def _open_logs(
    pilot: Any, job_id: str, out_lines: int, err_lines: int, *, live: bool = False
) -> LogsScreen:
    """Open the job's logs and wait until both followers delivered every seeded line.

    A job with 1 attempt of n lines has n + 1 lines in main.out (its NCCL line) and n in
    main.err; with ``live`` more lines keep coming, so at least that many.
    """
    app = pilot.app
    screen = LogsScreen(app.ctx, job_id)
    await app.push_screen(screen)
    out, err = screen.pane("out").view, screen.pane("err").view

    def loaded() -> bool:
        if live:
            return out.line_count >= out_lines and err.line_count >= err_lines
        return (out.line_count, err.line_count) == (out_lines, err_lines)

    await wait_for(pilot, loaded, f"{out_lines} + {err_lines} log lines")
    await wait_for(pilot, lambda: out.has_focus, "the focused main.out")
    return screen


class OneView(App[None]):
    """A bare app with one log view."""

    def compose(self) -> ComposeResult:
        """The view."""
        yield LogView()


def _followed_to_the_end(view: LogView) -> bool:
    # scroll_end runs after the refresh that lays out the new lines: wait for both.
    return view.max_scroll_y > 0 and view.scroll_y == view.max_scroll_y


def test_log_line_strips_escapes_and_carriage_returns() -> None:
    assert log_line("\x1b[32mgreen\x1b[0m") == "green"
    assert log_line("10%\r50%\r100% done") == "100% done"
    assert log_line("a\tb") == "a       b"


async def test_both_attempts_with_a_separator(fake: ClusterBackend) -> None:
    n = LOG_LINES  # each attempt's main.out and main.err on the cluster
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open_logs(pilot, "bert-retried", n + 1 + 1 + n, 2 * n + 1)
        view = screen.pane("out").view
        # attempt 1 ends with its NCCL error line, then the separator, then attempt 2.
        assert view.line_count == n + 1 + 1 + n
        assert view.lines[n].startswith("NCCL WARN")
        assert view.lines[n + 1].startswith("attempt 2 · SLURM job 1049")
        assert view._lines[n + 1][1] is True  # drawn as a separator rule
        assert screen.pane("err").view.line_count == 2 * n + 1


async def test_follow_hint_and_toggle(fake: ClusterBackend) -> None:
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open_logs(pilot, "dino-train-1", 301, 300)
        pane = screen.pane("out")
        view = pane.view
        assert view.follow
        await wait_for(pilot, lambda: _followed_to_the_end(view), "the view at the end")
        await pilot.press("home")
        await wait_for(pilot, lambda: view.scroll_y == 0, "the view at the top")
        assert not view.follow
        end_before = view.max_scroll_y
        view.write_lines([f"new {i}" for i in range(25)])
        await wait_for(pilot, lambda: view.max_scroll_y == end_before + 25, "the lines laid out")
        await wait_for(pilot, lambda: pane.hint.has_class("-visible"), "the new-lines hint")
        assert view.scroll_y == 0  # not following: the reader stays where they were
        assert view.new_lines == 25
        assert "25 new lines" in str(pane.hint.render())
        await pilot.press("f")
        await wait_for(pilot, lambda: view.follow, "following again")
        await wait_for(pilot, lambda: _followed_to_the_end(view), "the view at the end again")
        assert view.new_lines == 0
        await wait_for(pilot, lambda: not pane.hint.has_class("-visible"), "the hint hidden")


async def test_search_highlights_and_walks_matches(fake: ClusterBackend) -> None:
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open_logs(pilot, "dino-train-1", 301, 300)
        view = screen.pane("out").view
        await pilot.press("slash", *"step  10", "enter")
        # "step  10" (two spaces) matches steps 100..109 only.
        await wait_for(pilot, lambda: view.search_term == "step  10", "the search")
        assert view.match_count == 10
        assert view.current_match == 0
        assert not view.follow
        await wait_for(pilot, lambda: view.has_focus, "the view focused again")
        await pilot.press("n")
        await wait_for(pilot, lambda: view.current_match == 1, "the next match")
        await pilot.press("N", "N")
        await wait_for(pilot, lambda: view.current_match == 9, "the wrap to the last match")
        first = view._matches[0] - view.dropped
        await wait_for(
            pilot,
            lambda: view.scroll_y <= first < view.scroll_y + view.size.height,
            "the first match scrolled into view",
        )


async def test_bounded_memory_drops_oldest() -> None:
    view = LogView(max_lines=100)
    view.write_lines([f"line {i}" for i in range(1000)])
    assert view.line_count == 100
    assert view.dropped == 900
    assert view.lines[0] == "line 900"


async def test_live_lines_arrive_in_batches(fake: ClusterBackend, world: World) -> None:
    app = build_app(fake)
    main_out = world.local(
        log_path(
            fake.store.require("fake", "dino-train-1"),
            fake.store.require("fake", "dino-train-1").attempts[-1],
        )
    )

    async def training() -> None:
        # The job prints 500 lines every 10 ms into its main.out on the cluster.
        n = 0
        while True:
            with open(main_out, "a", encoding="utf-8") as handle:
                handle.write("".join(f"live line {n + i}\n" for i in range(500)))
            n += 500
            await asyncio.sleep(0.01)

    async with app.run_test(size=SIZE) as pilot:
        writer = asyncio.get_running_loop().create_task(training())
        try:
            screen = await _open_logs(pilot, "dino-train-1", 301, 300, live=True)
            view = screen.pane("out").view
            # More than one batch after the seeded lines proves appends go on.
            await wait_for(pilot, lambda: view.line_count > 300 + 500, "two live batches")
            assert view.follow
        finally:
            writer.cancel()


async def test_following_survives_a_scrollbar_appearing() -> None:
    """A scrollbar that appears after the lines were laid out sends no Resize: the view must
    still end on the last line (it used to stop one line short, the last line hidden)."""

    app = OneView()
    async with app.run_test(size=(60, 20)) as pilot:
        view = app.query_one(LogView)
        view.write_lines([f"line {i}" for i in range(100)])
        await wait_for(pilot, lambda: _followed_to_the_end(view), "the view at the end")
        view.styles.overflow_x = "scroll"  # a horizontal scrollbar takes one row
        await wait_for(pilot, lambda: view.show_horizontal_scrollbar, "the scrollbar")
        await wait_for(pilot, lambda: _followed_to_the_end(view), "the view at the end again")
        view.styles.height = 10
        await wait_for(pilot, lambda: view.size.height == 10, "the smaller view")
        await wait_for(pilot, lambda: _followed_to_the_end(view), "the end after a resize")


async def test_a_search_that_lands_on_the_end_does_not_follow() -> None:
    """A match among the last lines scrolls the view to its end: the reader is reading it, so
    new lines must not move the view (the end of the view is not 'following')."""

    app = OneView()
    async with app.run_test(size=(60, 20)) as pilot:
        view = app.query_one(LogView)
        view.write_lines([f"line {i}" for i in range(100)] + ["needle"])
        await wait_for(pilot, lambda: _followed_to_the_end(view), "the view at the end")
        assert view.search("needle") == 1
        await wait_for(pilot, lambda: view.scroll_y == view.max_scroll_y, "the match at the end")
        assert not view.follow
        at = view.scroll_y
        view.write_lines([f"more {i}" for i in range(50)])
        await wait_for(pilot, lambda: view.max_scroll_y >= at + 50, "the new lines laid out")
        await pilot.pause()
        assert view.scroll_y == at and view.new_lines == 50
        view.action_follow()
        await wait_for(pilot, lambda: _followed_to_the_end(view), "following again")


async def test_the_status_line_follows_the_view_by_message() -> None:
    """The pane's status line hears the view's Changed facts: lines, drops and the search,
    without anyone asking it to redraw."""

    class Pane(App[None]):
        def compose(self) -> ComposeResult:
            yield LogPane("out", max_lines=100)

    app = Pane()
    async with app.run_test(size=(100, 20)) as pilot:
        pane = app.query_one(LogPane)

        def status() -> str:
            return str(pane.status.render())

        await wait_for(pilot, lambda: "no lines yet" in status(), "the empty status")
        for start in range(0, 150, 10):  # a flood of batches: coalesced, never lost
            pane.view.write_lines([f"line {i}" for i in range(start, start + 10)])
        await wait_for(pilot, lambda: "100 lines · 50 older dropped" in status(), "the count")
        pane.view.search("line 14")
        await wait_for(pilot, lambda: "'line 14': 1/10 matches" in status(), "the search")
        pane.view.next_match()
        await wait_for(pilot, lambda: "'line 14': 2/10 matches" in status(), "the next match")
