"""Pilot tests of the log screen: attempts, separator, follow, new-lines hint, search, bounds."""

from __future__ import annotations

from typing import Any

from tao_slurm_tui.screens.logs import LogsScreen
from tao_slurm_tui.services.fake import FakeBackend
from tao_slurm_tui.widgets.log_view import LogView, clean_line
from tests.tui.conftest import SIZE, build_app


async def _open_logs(pilot: Any, job_id: str) -> LogsScreen:
    app = pilot.app
    screen = LogsScreen(app.ctx, job_id)
    await app.push_screen(screen)
    await pilot.pause(0.2)
    return screen


def test_clean_line_strips_escapes_and_carriage_returns() -> None:
    assert clean_line("\x1b[32mgreen\x1b[0m") == "green"
    assert clean_line("10%\r50%\r100% done") == "100% done"
    assert clean_line("a\tb") == "a       b"


async def test_both_attempts_with_a_separator(fake: FakeBackend) -> None:
    fake.log_lines = 50
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open_logs(pilot, "bert-retried")
        view = screen.pane("out").view
        # attempt 1 ends with its NCCL error line, then the separator, then attempt 2.
        assert view.line_count == 51 + 1 + 50
        assert view.lines[50].startswith("NCCL WARN")
        assert view.lines[51].startswith("attempt 2 · SLURM 1049")
        assert view._lines[51][1] is True  # drawn as a separator rule
        assert screen.pane("err").view.line_count == 101


async def test_follow_hint_and_toggle(fake: FakeBackend) -> None:
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open_logs(pilot, "dino-train-1")
        pane = screen.pane("out")
        view = pane.view
        assert view.follow
        assert view.scroll_y == view.max_scroll_y > 0
        await pilot.press("home")
        await pilot.pause()
        assert not view.follow
        view.write_lines([f"new {i}" for i in range(25)])
        await pilot.pause()
        assert view.scroll_y == 0
        assert view.new_lines == 25
        assert pane.hint.has_class("-visible")
        assert "25 new lines" in str(pane.hint.render())
        await pilot.press("f")
        await pilot.pause()
        assert view.follow and view.new_lines == 0
        assert not pane.hint.has_class("-visible")
        assert view.scroll_y == view.max_scroll_y


async def test_search_highlights_and_walks_matches(fake: FakeBackend) -> None:
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open_logs(pilot, "dino-train-1")
        view = screen.pane("out").view
        await pilot.press("slash", *"step  10", "enter")
        await pilot.pause()
        # "step  10" (two spaces) matches steps 100..109 only.
        assert view.match_count == 10
        assert view.current_match == 0
        assert not view.follow
        await pilot.press("n")
        assert view.current_match == 1
        await pilot.press("N", "N")
        assert view.current_match == 9  # wrapped around
        first = view._matches[0] - view.dropped
        assert view.scroll_y <= first < view.scroll_y + view.size.height


async def test_bounded_memory_drops_oldest() -> None:
    view = LogView(max_lines=100)
    view.write_lines([f"line {i}" for i in range(1000)])
    assert view.line_count == 100
    assert view.dropped == 900
    assert view.lines[0] == "line 900"


async def test_live_lines_arrive_in_batches(fake: FakeBackend) -> None:
    fake.live_log = (500, 0.01)
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open_logs(pilot, "dino-train-1")
        view = screen.pane("out").view
        await pilot.pause(0.3)
        assert view.line_count > 300 + 500
        assert view.follow
