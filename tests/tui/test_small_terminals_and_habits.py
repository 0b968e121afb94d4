"""What a researcher trying the app for the first time ran into (issue 11): small terminals,
k9s/lazygit key habits, a queue that tells what it shows, an unreachable cluster, logs."""

from __future__ import annotations

from typing import Any

import pytest
from textual.widgets.data_table import ColumnKey

from tao_slurm_tui.core.models import TaoStatus
from tao_slurm_tui.screens.confirm import ConfirmModal
from tao_slurm_tui.screens.logs import LogsScreen
from tao_slurm_tui.screens.queue import MAX_BACKOFF, QueueScreen
from tao_slurm_tui.services.cluster import ClusterBackend
from tao_slurm_tui.services.fakecluster.demo import Demo
from tao_slurm_tui.services.fakecluster.world import World
from tao_slurm_tui.widgets.job_table import JobTable
from tests.tui.conftest import build_app
from tests.tui.waits import record_notifications, settle, shown, wait_for

SMALL = (80, 24)
WIDE = (160, 45)


async def _queue(pilot: Any) -> QueueScreen:
    screen: QueueScreen = await shown(pilot, QueueScreen)
    await wait_for(pilot, lambda: screen.polled_ok or screen.failures, "the first poll")
    await settle(pilot)
    return screen


# ---------------------------------------------------------------------- layout
async def test_queue_rows_are_not_crowded_out_at_80x24(fake: ClusterBackend) -> None:
    app = build_app(fake)
    async with app.run_test(size=SMALL) as pilot:
        screen = await _queue(pilot)
        box = screen.query_one("#detail-box")
        # Two thirds for the table: at least 10 rows of jobs, not the 7 a fixed pane left.
        assert screen.table.size.height >= 2 * box.size.height - 1
        assert screen.table.scrollable_content_region.height >= 10
        rows_before = screen.table.size.height
        await pilot.press("i")
        await wait_for(pilot, lambda: not box.display, "the details pane hidden")
        await wait_for(pilot, lambda: screen.table.size.height > rows_before, "a taller table")
        await pilot.press("i")
        await wait_for(pilot, lambda: box.display, "the details pane back")


async def test_status_words_are_never_cut_at_160_columns(
    fake: ClusterBackend, world: World
) -> None:
    app = build_app(fake)
    async with app.run_test(size=WIDE) as pilot:
        screen = await _queue(pilot)
        # The fixed widths cover the longest status words from the start: nothing shifts later.
        before = {key: screen.table.columns[ColumnKey(key)].width for key in ("status", "state")}
        assert before["status"] >= max(len(s) for s in TaoStatus)
        assert before["state"] >= len("CANCELLED")
        # dino-train-1 goes Running -> Complete (its last epochs): the word grows by a letter.
        world.train("dino-train-1", 13)
        for _ in range(20):  # squeue says COMPLETED at once; sacct agrees a poll later
            if (await fake.job_detail("dino-train-1")).status is not TaoStatus.RUNNING:
                break
            screen.poll()  # not .wait(): a poll the follow-up armed may take its place
            await settle(pilot)
        await settle(pilot)
        cell = screen.table.get_cell
        assert cell("dino-train-1", "status").plain == "Complete"
        assert cell("dino-train-1", "state").plain == "COMPLETED"
        for key, word in (("status", "Complete"), ("state", "COMPLETED")):
            column = screen.table.columns[ColumnKey(key)]
            assert column.get_render_width(screen.table) >= len(word) + 2  # + cell padding
            assert column.width == before[key]


async def test_running_and_pending_look_different_in_both_themes(fake: ClusterBackend) -> None:
    app = build_app(fake)
    async with app.run_test(size=SMALL) as pilot:
        screen = await _queue(pilot)
        table: JobTable = screen.table
        for theme in ("tao-dark", "tao-light"):
            app.theme = theme
            await pilot.pause()
            table.notify_style_update()
            running, pending = table._style("running"), table._style("pending")
            assert running.color != pending.color, theme
            assert running.bold and not pending.bold, theme


# ---------------------------------------------------------------------- keys
async def test_vim_and_home_end_keys_move_the_cursor(fake: ClusterBackend) -> None:
    app = build_app(fake)
    async with app.run_test(size=SMALL) as pilot:
        table = (await _queue(pilot)).table
        last = table.row_count - 1
        for key, row in (("j", 1), ("j", 2), ("k", 1), ("G", last), ("g", 0), ("end", last)):
            await pilot.press(key)
            await wait_for(pilot, lambda row=row: table.cursor_row == row, f"{key} -> row {row}")
        await pilot.press("home")
        await wait_for(pilot, lambda: table.cursor_row == 0, "home -> row 0")


@pytest.mark.parametrize("size", [SMALL, (120, 36)])
async def test_y_copies_the_slurm_id(fake: ClusterBackend, size: tuple[int, int]) -> None:
    """What scontrol, sacct and seff take (it copied the name, issue 26)."""
    app = build_app(fake)
    async with app.run_test(size=size) as pilot:
        screen = await _queue(pilot)
        await pilot.press("j", "y")
        assert screen.table.cursor_job_id == "yolo-finetune"
        job = next(j for j in fake.jobs() if j.id == "yolo-finetune")
        assert job.slurm_job_id.isdigit()
        await wait_for(pilot, lambda: app.clipboard == job.slurm_job_id, "the SLURM id copied")


@pytest.mark.parametrize("size", [SMALL, (120, 36)])
async def test_q_asks_before_quitting_so_two_presses_from_the_logs_stay(
    fake: ClusterBackend, size: tuple[int, int]
) -> None:
    """``q`` is "back" in the logs: a second press used to leave the app."""
    app = build_app(fake)
    async with app.run_test(size=size) as pilot:
        await _logs(pilot)
        await pilot.press("q", "q")
        await shown(pilot, ConfirmModal)
        await pilot.press("n")
        await shown(pilot, QueueScreen)
        assert app.is_running and fake.conn.connected
        await pilot.press("q", "y")
        await wait_for(pilot, lambda: not app.is_running, "the app quit after a yes")
    # As ctrl+q: the back end closed its connection (and with it TensorBoards and sharing).
    assert not fake.conn.connected


async def test_sort_and_finished_toggle_say_what_the_table_shows(fake: ClusterBackend) -> None:
    app = build_app(fake)
    async with app.run_test(size=WIDE) as pilot:
        screen = await _queue(pilot)
        table = screen.table
        assert "sort submitted ↓ (s)" in str(table.border_subtitle)
        assert "finished shown" in str(table.border_subtitle)
        await pilot.press("s")  # the next column: Job, ascending
        await wait_for(pilot, lambda: table.sort_column == "id", "sorted by job")
        await wait_for(pilot, lambda: "sort Job ↑" in str(table.border_subtitle), "the subtitle")
        assert str(table.columns[ColumnKey("id")].label) == "Job ↑"
        await pilot.press(*"s" * 6)  # Retry: a header as wide as its column, arrow shown whole
        await wait_for(pilot, lambda: table.sort_column == "retries", "sorted by retry")
        assert table.columns[ColumnKey("retries")].width >= len("Retry ↑")
        table.sort_by("id")
        table.sort_by("id")  # the same column again: descending
        await wait_for(pilot, lambda: "sort Job ↓" in str(table.border_subtitle), "descending")
        assert str(table.columns[ColumnKey("id")].label) == "Job ↓"
        await pilot.press("f")
        await wait_for(
            pilot, lambda: "finished hidden" in str(table.border_subtitle), "finished hidden"
        )


@pytest.mark.parametrize("size", [SMALL, (120, 36)])
async def test_cycling_the_sort_gives_the_columns_back_and_shift_s_reverses(
    fake: ClusterBackend, size: tuple[int, int]
) -> None:
    """Back at "submitted", every column was ~2 cells wider for good (the sort arrow's); and
    each press stacked a toast saying what the subtitle says."""
    app = build_app(fake)
    async with app.run_test(size=size) as pilot:
        screen = await _queue(pilot)
        notes = record_notifications(app)
        table = screen.table
        before = {key: column.width for key, column in table.columns.items()}
        await pilot.press(*"s" * (len(table.columns) + 1))  # every column, then submitted
        await wait_for(pilot, lambda: table.sort_column == "created", "back at submitted")
        await settle(pilot)
        assert {key: column.width for key, column in table.columns.items()} == before
        assert not notes  # the subtitle says it: no toast per press
        await pilot.press("s", "S")
        await wait_for(pilot, lambda: "sort Job ↓" in str(table.border_subtitle), "reversed")
        assert table.columns[ColumnKey("id")].width >= len("Job ↓")


async def test_details_c_and_l_act_on_the_highlighted_row_after_filter_and_sort(
    fake: ClusterBackend,
) -> None:
    app = build_app(fake)
    async with app.run_test(size=WIDE) as pilot:
        screen = await _queue(pilot)
        table = screen.table
        await pilot.press("j", "j", "j")
        await settle(pilot)
        await pilot.press("slash", *"running")  # the highlighted pending job leaves the view
        await wait_for(pilot, lambda: screen.filter_text == "running", "the filter")
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("s", "s")  # sort by status, then by SLURM state
        await settle(pilot)
        cursor = table.cursor_job_id
        assert cursor in table.jobs
        assert screen.detail.job_id == cursor
        await pilot.press("c")
        modal = await shown(pilot, ConfirmModal)
        assert f"Cancel {cursor}?" in modal.question
        await pilot.press("escape")
        await shown(pilot, QueueScreen)
        await pilot.press("l")
        logs = await shown(pilot, LogsScreen)
        assert logs.job_id == cursor


# ---------------------------------------------------------------------- unreachable
async def test_unreachable_refresh_shows_one_toast_and_r_keeps_the_backoff(
    fake: ClusterBackend, world: World
) -> None:
    world.link = "down"  # no login host answers
    app = build_app(fake)
    app.ctx.settings.poll_interval = 100  # long enough that no automatic poll interferes
    async with app.run_test(size=SMALL) as pilot:
        screen = await _queue(pilot)
        assert screen.failures == 1 and screen._delay == 200

        def toasts() -> list[str]:
            return [n.message for n in app._notifications if n.severity == "error"]

        await wait_for(pilot, lambda: len(toasts()) == 1, "the toast")
        assert "Could not connect to any login host" in toasts()[0] and "press r" in toasts()[0]
        for _ in range(3):
            await pilot.press("r")
            await settle(pilot)
        assert screen.failures == 1 and screen._delay == 200  # r did not double the wait
        assert len(toasts()) == 1  # replaced, not stacked
        await screen.poll().wait()  # an automatic retry does back off
        await settle(pilot)
        assert screen.failures == 2 and screen._delay == MAX_BACKOFF  # 400, capped
        assert len(toasts()) == 1
        world.link = "up"
        await screen.poll(manual=True).wait()
        await settle(pilot)
        assert toasts() == [] and screen.failures == 0


# ---------------------------------------------------------------------- logs
async def _logs(pilot: Any, job_id: str = "dino-train-1") -> LogsScreen:
    app = pilot.app
    await _queue(pilot)
    screen = LogsScreen(app.ctx, job_id)
    await app.push_screen(screen)
    view = screen.pane("out").view
    await wait_for(pilot, lambda: view.line_count > 100 and view.has_focus, "the log lines")
    await settle(pilot)
    return screen


async def test_logs_search_is_per_tab_and_n_never_steals_the_next_key(fake: ClusterBackend) -> None:
    app = build_app(fake)
    async with app.run_test(size=SMALL) as pilot:
        screen = await _logs(pilot)
        await pilot.press("slash", *"NCCL", "enter")
        out = screen.pane("out").view
        await wait_for(pilot, lambda: out.search_term == "NCCL", "the search in main.out")
        await pilot.press("e")  # main.err has no search of its own
        err = screen.pane("err").view
        await wait_for(pilot, lambda: err.has_focus, "main.err")
        assert not screen.search_input.has_class("-visible")
        await pilot.press("n", "o")  # n: a hint, not the search bar; o is a key again
        await wait_for(pilot, lambda: out.has_focus, "back on main.out")
        assert screen.search_input.value == "NCCL" and err.search_term == ""
        assert screen.search_input.has_class("-visible")


async def test_q_leaves_the_logs_like_help(fake: ClusterBackend) -> None:
    app = build_app(fake)
    async with app.run_test(size=SMALL) as pilot:
        await _logs(pilot)
        await pilot.press("q")
        await shown(pilot, QueueScreen)
        assert app.is_running


async def test_scrolling_back_to_the_bottom_follows_again(fake: ClusterBackend) -> None:
    app = build_app(fake)
    async with app.run_test(size=SMALL) as pilot:
        screen = await _logs(pilot)
        view = screen.pane("out").view
        await wait_for(pilot, lambda: view.scroll_y == view.max_scroll_y, "at the end")
        await pilot.press("up", "up")
        await wait_for(pilot, lambda: not view.follow, "following paused")
        await pilot.press("down", "down")
        await wait_for(pilot, lambda: view.follow, "following again")
        assert "following" in str(screen.pane("out").status.render())


async def test_a_pending_job_has_no_log_lines_yet(fake: ClusterBackend) -> None:
    app = build_app(fake)
    async with app.run_test(size=SMALL) as pilot:
        await _queue(pilot)
        screen = LogsScreen(app.ctx, "yolo-finetune")
        await app.push_screen(screen)
        await settle(pilot)
        await pilot.pause(0.2)
        assert screen.pane("out").view.line_count == 0
        assert "no lines yet" in str(screen.pane("out").status.render())


# ---------------------------------------------------------------------- fake plausibility
async def test_a_training_on_the_fake_cluster_counts_down_and_completes(
    fake: ClusterBackend, world: World
) -> None:
    etas = []
    await fake.refresh()
    while (job := await fake.job_detail("dino-train-1")).status is TaoStatus.RUNNING:
        etas.append(job.progress.eta)
        world.train("dino-train-1")
        await fake.refresh()
        if await fake.followup():  # sacct's word on a job squeue says ended
            await fake.refresh()
    assert etas == sorted(etas, reverse=True) and len(set(etas)) == len(etas) == 13
    assert job.status is TaoStatus.COMPLETE and job.progress.epoch_text == "20/20"
    assert job.message == "Train finished successfully."  # TAO 7.3 writes no SUCCESS line


def _inside(widget: Any, screen: Any) -> bool:
    """The widget is drawn whole: its region lies inside the screen and its parent."""
    region, parent = widget.region, widget.parent.region
    return (
        bool(region.area)
        and screen.region.contains_region(region)
        and (parent.contains_region(region))
    )


async def test_composer_fits_80x24(fake: ClusterBackend) -> None:
    from textual.widgets import Button, Input

    from tao_slurm_tui.screens.composer import ComposerScreen
    from tao_slurm_tui.widgets.spec_form import SpecForm

    app = build_app(fake)
    async with app.run_test(size=SMALL) as pilot:
        await _queue(pilot)
        await pilot.press("n")
        screen = await shown(pilot, ComposerScreen)
        await settle(pilot)
        for button in screen.query(Button):
            # "Remove unknown keys" shows only after loading such a file; the follow-up actions'
            # buttons scroll with the form's fields (the end of the form, like its last field).
            in_form = any(isinstance(a, SpecForm) for a in button.ancestors)
            if button.display and not in_form:
                assert _inside(button, screen), button.id
        name = screen.query_one("#f-name", Input)
        assert name.size.width >= 30  # a readable field, not a 10-column strip


async def test_doctor_fix_texts_wrap_at_80x24(fake: ClusterBackend) -> None:
    from tao_slurm_tui.screens.onboarding import OnboardingScreen
    from tao_slurm_tui.widgets.check_row import CheckRow

    app = build_app(fake)
    async with app.run_test(size=SMALL) as pilot:
        await _queue(pilot)
        await pilot.press("d")
        screen = await shown(pilot, OnboardingScreen)
        await wait_for(pilot, lambda: len(screen.query(CheckRow)) > 5, "the checks")
        await settle(pilot)
        for row in screen.query(CheckRow):
            for label in row.query(".fix, .detail"):
                text = str(label.render())
                assert label.size.width <= row.size.width
                # Every character of a long text is shown, on as many lines as it needs.
                assert label.size.height * label.size.width >= len(text), text


async def test_the_chosen_theme_is_saved(fake: ClusterBackend, tmp_path: Any) -> None:
    from tao_slurm_tui.app import make_app
    from tao_slurm_tui.config import Config, load_settings

    config = Config.load(tmp_path / "config.toml")
    app = make_app(fake, settings=config.settings, save_settings=lambda _s: config.save())
    async with app.run_test(size=SMALL) as pilot:
        await _queue(pilot)
        app.theme = "tao-light"  # what the palette's "Change theme" does
        await wait_for(pilot, lambda: config.path.exists(), "the config written")
    assert load_settings(config.path).theme == "tao-light"


@pytest.mark.parametrize("size", [SMALL, (120, 36)])
async def test_finished_hidden_and_the_sort_are_kept_for_the_next_start(
    demo: Demo, fake: ClusterBackend, tmp_path: Any, size: tuple[int, int]
) -> None:
    from tao_slurm_tui.app import make_app
    from tao_slurm_tui.config import Config, load_settings

    config = Config.load(tmp_path / "config.toml")
    app = make_app(fake, settings=config.settings, save_settings=lambda _s: config.save())
    async with app.run_test(size=size) as pilot:
        screen = await _queue(pilot)
        await pilot.press("f", "s", "s", "S")  # finished hidden; sorted by Status, descending
        await wait_for(pilot, lambda: "sort Status ↓" in str(screen.table.border_subtitle))
    kept = load_settings(config.path)
    assert (kept.show_finished, kept.queue_sort) == (False, "-status")
    # The next start: a back end of its own (the app closed the first one on its way out).
    again = make_app(demo.backend(), settings=kept, save_settings=lambda _s: None)
    async with again.run_test(size=size) as pilot:
        screen = await _queue(pilot)
        subtitle = str(screen.table.border_subtitle)
        assert "sort Status ↓" in subtitle and "finished hidden" in subtitle
        assert not screen.show_finished and screen.table.sort_column == "status"


# ---------------------------------------------------------------------- queue layout (issue 26)
def _in_view(table: JobTable, key: str) -> bool:
    """The column is whole on screen with the table scrolled to its left edge."""
    x = 0
    for column_key, column in table.columns.items():
        width = column.get_render_width(table)
        if column_key == ColumnKey(key):
            return x + width <= table.scrollable_content_region.width
        x += width
    raise AssertionError(f"no column {key}")


@pytest.mark.parametrize("size", [SMALL, (120, 36)])
async def test_the_columns_a_researcher_reads_come_first(
    fake: ClusterBackend, world: World, size: tuple[int, int]
) -> None:
    """Progress and Pending reason fell off at 120 columns and took ~50 presses of → at 80,
    behind Part. and NxG; a long name (or a pipeline's row) widened the Job column for good."""
    from tao_slurm_tui.services.fakecluster import seed

    long_name = "dino-train-coco-2017-full-res-lr3e-4-bs64"
    job = seed.Seeded(long_name, TaoStatus.PENDING, [seed.Run(1098, "PENDING", reason="Priority")])
    seed.add_job(world, fake.store, "fake", job, seed.FROZEN_TIME + 10)
    app = build_app(fake)
    async with app.run_test(size=size) as pilot:
        screen = await _queue(pilot)
        table = screen.table
        await wait_for(pilot, lambda: long_name in table.jobs, "the long-named job")
        wanted = ["id", "status", "progress"] + (["reason", "time"] if size[0] >= 120 else [])
        assert all(_in_view(table, key) for key in wanted), [
            (k, _in_view(table, k)) for k in wanted
        ]
        keys = [key.value for key in table.columns]
        assert keys.index("reason") < keys.index("partition") < keys.index("shape")
        assert table.columns[ColumnKey("id")].width == 24  # not the name's 41
        assert "dino-train-coco-2017-fu…" in app.export_screenshot()


@pytest.mark.parametrize("size", [SMALL, (120, 36)])
async def test_the_queue_comes_back_scrolled_to_its_left_edge(
    fake: ClusterBackend, size: tuple[int, int]
) -> None:
    app = build_app(fake)
    async with app.run_test(size=size) as pilot:
        screen = await _queue(pilot)
        table = screen.table
        if table.max_scroll_x == 0:  # 120 columns: every column in view, nothing to scroll
            assert size[0] >= 120
            return
        await pilot.press(*["right"] * 30)
        await wait_for(pilot, lambda: table.scroll_x > 0, "scrolled right")
        await pilot.press("question_mark")
        await pilot.press("escape")
        await shown(pilot, QueueScreen)
        await wait_for(pilot, lambda: table.scroll_x == 0, "back at the left edge")
