"""Pilot tests of the queue: keyed diff, filter, hide finished, cancel, notifications, poller."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from tao_slurm_tui.core.models import Attempt, JobRecord, TaoStatus
from tao_slurm_tui.screens.confirm import ConfirmModal
from tao_slurm_tui.screens.logs import LogsScreen
from tao_slurm_tui.screens.queue import QueueScreen
from tao_slurm_tui.services.fake import FROZEN_TIME, FakeBackend, seed_jobs
from tao_slurm_tui.widgets.job_table import JobTable
from tests.tui.conftest import SIZE, build_app, frozen


def _many_jobs() -> list[JobRecord]:
    extra = [
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
    ]
    return seed_jobs(FROZEN_TIME) + extra


async def _poll(screen: QueueScreen) -> None:
    await screen.poll().wait()


def _rows(table: JobTable) -> dict[str, list[Any]]:
    return {str(key.value): list(table.get_row(key)) for key in table.rows}


async def test_tick_changes_only_the_changed_row_and_keeps_cursor_and_scroll() -> None:
    fake = FakeBackend(clock=frozen, jobs=_many_jobs())
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, QueueScreen)
        await _poll(screen)
        table = screen.table
        for _ in range(30):
            await pilot.press("down")
        await pilot.pause()
        cursor_key = table.cursor_job_id
        scroll_y = table.scroll_y
        assert scroll_y > 0, "the table must be scrolled for this test to mean something"
        before = _rows(table)
        calls: list[str] = []
        for name in ("clear", "add_row", "remove_row"):
            original = getattr(table, name)

            def spy(*args: Any, _name: str = name, _original: Any = original, **kw: Any) -> Any:
                calls.append(_name)
                return _original(*args, **kw)

            setattr(table, name, spy)
        await _poll(screen)
        await pilot.pause()
        after = _rows(table)
        changed = {key for key in before if before[key] != after[key]}
        assert changed == {"dino-train-1"}
        assert calls == []
        assert table.cursor_job_id == cursor_key
        assert table.scroll_y == scroll_y
        epoch_before = before["dino-train-1"][-1].plain.split()[-1]
        epoch_after = after["dino-train-1"][-1].plain.split()[-1]
        assert int(epoch_after.split("/")[0]) == int(epoch_before.split("/")[0]) + 1


async def test_new_and_removed_jobs_keep_the_cursor_on_its_job(fake: FakeBackend) -> None:
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, QueueScreen)
        for _ in range(3):
            await pilot.press("down")
        selected = screen.table.cursor_job_id
        fake.put_job(replace(seed_jobs()[0], id="brand-new", created_at=FROZEN_TIME + 10))
        await _poll(screen)
        await pilot.pause()
        assert "brand-new" in screen.table.jobs
        assert screen.table.get_row_index("brand-new") == 0  # newest first
        assert screen.table.cursor_job_id == selected


async def test_filter_and_hide_finished(app: Any, fake: FakeBackend) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        await pilot.press("slash", *"pending")
        await pilot.pause()
        pending = {j.id for j in fake.jobs() if j.status is TaoStatus.PENDING}
        assert set(screen.table.jobs) == pending
        await pilot.press("escape")
        await pilot.pause()
        assert len(screen.table.jobs) == len(fake.jobs())
        await pilot.press("f")
        await pilot.pause()
        assert all(not j.status.terminal for j in screen.table.jobs.values())
        await pilot.press("f")
        await pilot.pause()
        assert len(screen.table.jobs) == len(fake.jobs())


async def test_sort_by_column_keeps_cursor_job(app: Any) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = app.screen.table
        await pilot.press("down", "down")
        selected = table.cursor_job_id
        table.sort_by("id")
        await pilot.pause()
        ids = [str(k.value) for k in table.rows]
        ordered = [table.coordinate_to_cell_key((i, 0)).row_key.value for i in range(len(ids))]
        assert ordered == sorted(ordered)
        assert table.cursor_job_id == selected


async def test_cancel_asks_first_then_cancels_and_notifies(fake: FakeBackend) -> None:
    app = build_app(fake)
    bells: list[int] = []
    app.bell = lambda: bells.append(1)  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, QueueScreen)
        await pilot.press("down")  # yolo-finetune, pending
        assert screen.table.cursor_job_id == "yolo-finetune"
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmModal)
        await pilot.press("n")
        await pilot.pause()
        assert (await fake.job_detail("yolo-finetune")).status is TaoStatus.PENDING
        await pilot.press("c")
        await pilot.pause()
        await pilot.press("y")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert (await fake.job_detail("yolo-finetune")).status is TaoStatus.CANCELED
        assert screen.table.jobs["yolo-finetune"].status is TaoStatus.CANCELED
        assert any("yolo-finetune was canceled" in n.message for n in app._notifications)
        assert bells


async def test_finished_job_notifies_and_rings(fake: FakeBackend) -> None:
    job = seed_jobs()[0]
    job.progress.epoch = 19
    fake.put_job(job)
    app = build_app(fake)
    bells: list[int] = []
    app.bell = lambda: bells.append(1)  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert any("dino-train-1 finished" in n.message for n in app._notifications)
        assert bells == [1]


async def test_poll_failure_backs_off_and_shows_down(fake: FakeBackend) -> None:
    fake.refresh_error = "Cannot reach login1.example.org; check the network."
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, QueueScreen)
        assert screen.failures == 1
        assert fake.connection_state == "down"
        assert any(
            n.severity == "error" and "Cannot reach" in n.message for n in app._notifications
        )
        assert screen._timer is not None  # still polling, later


async def test_poller_pauses_while_hidden(fake: FakeBackend) -> None:
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        queue = app.screen
        assert isinstance(queue, QueueScreen)
        count = fake.refresh_count
        await pilot.press("l")
        await pilot.pause()
        assert isinstance(app.screen, LogsScreen)
        assert queue._timer is None
        assert fake.refresh_count == count
        await pilot.press("escape")
        await pilot.pause()
        await app.workers.wait_for_complete()
        current: object = app.screen  # mypy narrowed app.screen to LogsScreen above
        assert current is queue
        assert fake.refresh_count == count + 1  # polled again on return
