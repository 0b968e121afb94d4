"""Pilot tests of the queue: keyed diff, filter, hide finished, cancel, notifications, poller."""

from __future__ import annotations

from typing import Any

from textual.coordinate import Coordinate

from tao_slurm_tui.core.models import Attempt, JobRecord, TaoStatus
from tao_slurm_tui.screens.confirm import ConfirmModal
from tao_slurm_tui.screens.logs import LogsScreen
from tao_slurm_tui.screens.queue import QueueScreen
from tao_slurm_tui.services.cluster import ClusterBackend
from tao_slurm_tui.services.fakecluster import seed
from tao_slurm_tui.services.fakecluster.seed import FROZEN_TIME
from tao_slurm_tui.services.fakecluster.world import World
from tao_slurm_tui.widgets.app_header import AppHeader
from tao_slurm_tui.widgets.job_table import JobTable
from tests.tui.conftest import SIZE, build_app, polls
from tests.tui.waits import record_notifications, settle, shown, wait_for


def _add_sweeps(fake: ClusterBackend) -> None:
    """40 finished jobs of an earlier sweep in the store (the table scrolls)."""
    for job in [
        JobRecord(
            id=f"sweep-{i:02d}",
            profile="fake",
            spec={"num_nodes": 1, "num_gpus": 1, "partition": "polar"},
            status=TaoStatus.COMPLETE,
            slurm_state="COMPLETED",
            attempts=[
                Attempt(
                    0, str(900 + i), state="COMPLETED", elapsed="00:10:00", time_limit="04:00:00"
                )
            ],
            created_at=FROZEN_TIME - 100_000 - i,
        )
        for i in range(40)
    ]:
        fake.store.create_job(job)


async def _poll(screen: QueueScreen) -> None:
    await screen.poll().wait()


async def _queue(pilot: Any) -> QueueScreen:
    """The queue once its first poll and the highlighted row's detail are done."""
    screen: QueueScreen = await shown(pilot, QueueScreen)
    await wait_for(pilot, lambda: screen.polled_ok or screen.failures, "the first poll")
    await settle(pilot)
    return screen


async def _down(pilot: Any, table: JobTable, rows: int) -> None:
    """Move the cursor ``rows`` rows down (from the top) and wait for the detail to load."""
    start = table.cursor_row
    await pilot.press(*["down"] * rows)
    await wait_for(pilot, lambda: table.cursor_row == start + rows, f"the cursor on row {rows}")
    await settle(pilot)


def _rows(table: JobTable) -> dict[str, list[Any]]:
    return {str(key.value): list(table.get_row(key)) for key in table.rows}


async def test_tick_changes_only_the_changed_row_and_keeps_cursor_and_scroll(
    fake: ClusterBackend, world: World
) -> None:
    _add_sweeps(fake)
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _queue(pilot)
        await _poll(screen)
        table = screen.table
        await _down(pilot, table, 30)
        # The table scrolls the cursor into view after a refresh.
        await wait_for(pilot, lambda: table.scroll_y > 0, "the table scrolled to the cursor")
        await settle(pilot)
        cursor_key = table.cursor_job_id
        scroll_y = table.scroll_y
        before = _rows(table)
        calls: list[str] = []
        for name in ("clear", "add_row", "remove_row"):
            original = getattr(table, name)

            def spy(*args: Any, _name: str = name, _original: Any = original, **kw: Any) -> Any:
                calls.append(_name)
                return _original(*args, **kw)

            setattr(table, name, spy)
        world.train("dino-train-1")  # the one job that writes an epoch (the clock stands still)
        await _poll(screen)
        await settle(pilot)
        after = _rows(table)
        changed = {key for key in before if before[key] != after[key]}
        assert changed == {"dino-train-1"}
        assert calls == []
        assert table.cursor_job_id == cursor_key
        assert table.scroll_y == scroll_y
        column = [key.value for key in table.columns].index("progress")
        epoch_before = before["dino-train-1"][column].plain.split()[-1]
        epoch_after = after["dino-train-1"][column].plain.split()[-1]
        assert int(epoch_after.split("/")[0]) == int(epoch_before.split("/")[0]) + 1


async def test_new_and_removed_jobs_keep_the_cursor_on_its_job(
    fake: ClusterBackend, world: World
) -> None:
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _queue(pilot)
        await _down(pilot, screen.table, 3)
        selected = screen.table.cursor_job_id
        # Submitted meanwhile from another terminal.
        brand_new = seed.Seeded(
            "brand-new", TaoStatus.PENDING, [seed.Run(1099, "PENDING", reason="Priority")]
        )
        seed.add_job(world, fake.store, "fake", brand_new, FROZEN_TIME + 10)
        await _poll(screen)
        await settle(pilot)
        assert "brand-new" in screen.table.jobs
        assert screen.table.get_row_index("brand-new") == 0  # newest first
        assert screen.table.cursor_job_id == selected


async def test_filter_and_hide_finished(app: Any, fake: ClusterBackend) -> None:
    async with app.run_test(size=SIZE) as pilot:
        screen = await _queue(pilot)
        table = screen.table
        await pilot.press("slash", *"pending")
        await wait_for(pilot, lambda: screen.filter_text == "pending", "the whole filter typed")
        pending = {j.id for j in fake.jobs() if j.status is TaoStatus.PENDING}
        assert pending and set(table.jobs) == pending
        await pilot.press("escape")
        await wait_for(pilot, lambda: screen.filter_text == "", "the filter cleared")
        await wait_for(pilot, lambda: table.has_focus, "the table focused")
        assert len(table.jobs) == len(fake.jobs())
        await pilot.press("f")
        await wait_for(pilot, lambda: not screen.show_finished, "finished jobs hidden")
        assert all(not j.status.terminal for j in table.jobs.values())
        assert len(table.jobs) < len(fake.jobs())
        await pilot.press("f")
        await wait_for(pilot, lambda: screen.show_finished, "finished jobs shown")
        assert len(table.jobs) == len(fake.jobs())


async def test_sort_by_column_keeps_cursor_job(app: Any) -> None:
    async with app.run_test(size=SIZE) as pilot:
        table = (await _queue(pilot)).table
        await _down(pilot, table, 2)
        selected = table.cursor_job_id
        table.sort_by("id")
        await settle(pilot)
        ids = [str(k.value) for k in table.rows]
        ordered = [
            str(table.coordinate_to_cell_key(Coordinate(i, 0)).row_key.value)
            for i in range(len(ids))
        ]
        assert ordered == sorted(ordered)
        assert table.cursor_job_id == selected


async def test_cancel_asks_first_then_cancels_and_notifies(
    fake: ClusterBackend, world: World
) -> None:
    app = build_app(fake)
    bells: list[int] = []
    app.bell = lambda: bells.append(1)  # type: ignore[method-assign]
    notes = record_notifications(app)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _queue(pilot)
        await _down(pilot, screen.table, 1)  # yolo-finetune, pending
        assert screen.table.cursor_job_id == "yolo-finetune"
        await pilot.press("c")
        await shown(pilot, ConfirmModal)
        await pilot.press("n")
        await shown(pilot, QueueScreen)
        await settle(pilot)  # a cancel, had "n" started one, would be done by now
        assert (await fake.job_detail("yolo-finetune")).status is TaoStatus.PENDING
        await pilot.press("c")
        await shown(pilot, ConfirmModal)
        await pilot.press("y")
        await wait_for(
            pilot,
            lambda: any("yolo-finetune was canceled" in n.message for n in notes),
            "the cancel notification",
        )
        assert (await fake.job_detail("yolo-finetune")).status is TaoStatus.CANCELED
        assert screen.table.jobs["yolo-finetune"].status is TaoStatus.CANCELED
        assert world.job("1052")["state"] == "CANCELLED"  # scancel reached the cluster
        assert bells


async def test_finished_job_notifies_and_rings(fake: ClusterBackend, world: World) -> None:
    world.train("dino-train-1", 12)  # epoch 19 of 20
    app = build_app(fake)
    bells: list[int] = []
    app.bell = lambda: bells.append(1)  # type: ignore[method-assign]
    notes = record_notifications(app)
    async with app.run_test(size=SIZE) as pilot:
        await _queue(pilot)
        world.train("dino-train-1")  # the last epoch: the job completes
        await _poll(app.screen)  # type: ignore[arg-type]
        await wait_for(
            pilot, lambda: any("dino-train-1 finished" in n.message for n in notes), "the toast"
        )
        await settle(pilot)
        assert bells == [1]


async def test_poll_failure_backs_off_and_shows_down(fake: ClusterBackend, world: World) -> None:
    world.link = "down"  # no login host answers
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _queue(pilot)
        assert screen.failures == 1
        assert fake.connection_state == "down"
        # The failure toast is replaced by the next one, so it is posted, not app.notify'd.
        await wait_for(
            pilot,
            lambda: any(
                n.severity == "error" and "Could not connect to any login host" in n.message
                for n in app._notifications
            ),
            "the failure toast",
        )
        assert screen._timer is not None  # still polling, later


async def test_poller_pauses_while_hidden(fake: ClusterBackend, world: World) -> None:
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        queue = await _queue(pilot)
        count = polls(world)
        await pilot.press("l")
        await shown(pilot, LogsScreen)
        await settle(pilot)
        assert queue._timer is None
        assert polls(world) == count
        await pilot.press("escape")
        await shown(pilot, QueueScreen)
        assert app.screen is queue
        await wait_for(pilot, lambda: polls(world) > count, "the poll on return")
        await settle(pilot)
        assert polls(world) == count + 1  # polled again on return, once


async def test_a_changed_row_is_drawn_again_with_its_new_cells(
    fake: ClusterBackend, world: World
) -> None:
    # Only the changed rows' rendering is dropped (not DataTable's whole cache): the row on
    # screen must still show the new values, and the other rows stay as they were.
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _queue(pilot)
        await _poll(screen)
        table = screen.table
        ids = list(table.jobs)
        lines = {job_id: table.get_row_index(job_id) + 1 for job_id in ids}  # +1: the header

        def drawn() -> dict[str, str]:
            return {job_id: table.render_line(y).text for job_id, y in lines.items()}

        before = drawn()
        progress = table.get_cell("dino-train-1", "progress").plain
        assert progress and progress in before["dino-train-1"]
        world.train("dino-train-1")
        await _poll(screen)
        await settle(pilot)
        after = drawn()
        new_progress = table.get_cell("dino-train-1", "progress").plain
        assert new_progress != progress and new_progress in after["dino-train-1"]
        assert {k for k in ids if before[k] != after[k]} == {"dino-train-1"}


async def test_the_header_follows_the_connection_as_the_network_goes_and_comes_back(
    fake: ClusterBackend, world: World
) -> None:
    """The states come from the real Connection through its listeners: a drop is heard as
    'reconnecting', a network that stays away ends 'down', the next poll connects again."""
    app = build_app(fake)
    seen: list[str] = []
    fake.add_listener(seen.append)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _queue(pilot)

        def header() -> str:
            return app.screen.query_one(AppHeader).render().plain

        assert "● connected" in header()
        world.link = "down"
        world.drop()
        await wait_for(pilot, lambda: fake.connection_state == "down", "the reconnects given up")
        assert "reconnecting" in seen and seen[-1] == "down"
        await wait_for(pilot, lambda: "○ down" in header(), "the header saying down")
        world.link = "up"
        await screen.poll(manual=True).wait()
        await wait_for(pilot, lambda: fake.connection_state == "connected", "connected again")
        await wait_for(pilot, lambda: "● connected" in header(), "the header saying so")
        assert seen[-1] == "connected"


async def test_a_job_selected_before_the_queue_is_composed_is_selected_when_it_is(
    fake: ClusterBackend,
) -> None:
    """Opened with --spec, the composer covers the queue from the start: a submit can come
    before the queue is composed (it raised NoMatches in the app's handler, on a loaded CI)."""
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await _queue(pilot)
        later = QueueScreen(app.ctx)
        later.select_job("yolo-finetune")  # not composed: nothing to query yet
        await app.push_screen(later)
        screen = await shown(pilot, QueueScreen)
        assert screen is later
        await wait_for(
            pilot, lambda: later.table.cursor_job_id == "yolo-finetune", "the job selected"
        )
