"""Pipelines in the TUI: the queue groups a pipeline's steps under one row (expand/collapse,
the step in progress), cancel on a step asks "this step / the whole pipeline", and the composer
adds follow-up actions whose every step's sbatch the preview shows."""

from __future__ import annotations

from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Button, Input

from tao_slurm_tui.app import TaoSlurmApp
from tao_slurm_tui.core.models import TaoStatus
from tao_slurm_tui.screens.composer import ComposerScreen
from tao_slurm_tui.screens.path_modal import PathModal
from tao_slurm_tui.screens.pipeline_cancel import PipelineCancelModal
from tao_slurm_tui.screens.queue import QueueScreen
from tao_slurm_tui.services.fake import FakeBackend, seed_jobs, seed_pipeline
from tao_slurm_tui.widgets.steps_editor import StepsEditor
from tests.tui.conftest import build_app, frozen
from tests.tui.test_composer import GOOD
from tests.tui.test_composer import _open as open_composer
from tests.tui.waits import record_notifications, settle, shown, wait_for
from tests.unit.test_pipeline import PIPELINE_TOML

STEPS = ["rtdetr", "rtdetr-evaluate", "rtdetr-export"]


def pipeline_app() -> TaoSlurmApp:
    """The app on the fake back end with a three-step pipeline besides the seeded jobs."""
    return build_app(FakeBackend(clock=frozen, jobs=[*seed_pipeline(), *seed_jobs()]))


async def queue(pilot: Pilot[Any]) -> QueueScreen:
    screen = await shown(pilot, QueueScreen)
    await wait_for(pilot, lambda: screen.polled_ok, "the first poll")
    await settle(pilot)
    return screen  # type: ignore[no-any-return]


def rows(screen: QueueScreen) -> list[str]:
    """Row keys in display order."""
    table = screen.table
    return [str(table.coordinate_to_cell_key((i, 0))[0].value) for i in range(table.row_count)]


async def cursor_to(pilot: Pilot[Any], screen: QueueScreen, key: str) -> None:
    screen.table.move_cursor(row=screen.table.get_row_index(key))
    await wait_for(pilot, lambda: screen.table.cursor_job_id == key, f"the cursor on {key}")
    await settle(pilot)


async def test_the_queue_groups_a_pipeline_and_toggles_it() -> None:
    app = pipeline_app()
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await queue(pilot)
        order = rows(screen)
        at = order.index("pipeline:rtdetr")
        assert order[at : at + 4] == ["pipeline:rtdetr", *STEPS]
        label = str(screen.table.get_cell("pipeline:rtdetr", "id"))
        assert label == "▾ rtdetr · 2/3 evaluate"  # the step in progress
        assert str(screen.table.get_cell("pipeline:rtdetr", "status")) == "Running"
        # On the pipeline's row the details are the running step's.
        await cursor_to(pilot, screen, "pipeline:rtdetr")
        assert screen.detail.job_id == "rtdetr-evaluate"
        await pilot.press("space")
        await wait_for(pilot, lambda: "rtdetr-export" not in rows(screen), "collapsed")
        assert "pipeline:rtdetr" in rows(screen)
        assert str(screen.table.get_cell("pipeline:rtdetr", "id")).startswith("▸ rtdetr")
        await pilot.press("enter")
        await wait_for(pilot, lambda: "rtdetr-export" in rows(screen), "expanded again")
        # Any sort keeps the steps under their row, in step order.
        for _ in range(3):
            await pilot.press("s")
            await settle(pilot)
            order = rows(screen)
            at = order.index("pipeline:rtdetr")
            assert order[at : at + 4] == ["pipeline:rtdetr", *STEPS]


async def test_cancel_on_a_step_asks_this_step_or_the_whole_pipeline() -> None:
    app = pipeline_app()
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await queue(pilot)
        await cursor_to(pilot, screen, "rtdetr-evaluate")
        await pilot.press("c")
        modal = await shown(pilot, PipelineCancelModal)
        question = str(modal.query_one("#question").render())
        assert "step 2 of 3 of pipeline rtdetr" in question and "1 step after it" in question
        await pilot.press("escape")  # keep: nothing cancelled
        await shown(pilot, QueueScreen)
        assert screen.all_jobs["rtdetr-evaluate"].status is TaoStatus.RUNNING
        await pilot.press("c")
        await shown(pilot, PipelineCancelModal)
        await pilot.press("s")  # this step: the later one is cancelled with it
        await wait_for(
            pilot,
            lambda: screen.all_jobs["rtdetr-export"].status is TaoStatus.CANCELED,
            "the later step cancelled",
        )
        assert screen.all_jobs["rtdetr-evaluate"].status is TaoStatus.CANCELED
        assert "previous step was canceled" in screen.all_jobs["rtdetr-export"].message
        assert screen.all_jobs["rtdetr"].status is TaoStatus.COMPLETE


async def test_cancel_the_whole_pipeline_from_its_row() -> None:
    app = pipeline_app()
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await queue(pilot)
        await cursor_to(pilot, screen, "pipeline:rtdetr")
        await pilot.press("c")
        await shown(pilot, PipelineCancelModal)
        await pilot.press("p")
        await wait_for(
            pilot,
            lambda: screen.all_jobs["rtdetr-evaluate"].status is TaoStatus.CANCELED,
            "the pipeline cancelled",
        )
        assert screen.all_jobs["rtdetr-export"].status is TaoStatus.CANCELED
        assert screen.all_jobs["rtdetr"].status is TaoStatus.COMPLETE
        assert str(screen.table.get_cell("pipeline:rtdetr", "status")) == "Canceled"


async def add_action(
    pilot: Pilot[Any], screen: ComposerScreen, action: str, command: str, gpus: str = ""
) -> None:
    """Press "+ Follow-up action" and fill the new row."""
    editor = screen.query_one(StepsEditor)
    before = len(editor.rows)
    editor.query_one("#add-step", Button).press()
    await wait_for(pilot, lambda: len(editor.rows) == before + 1, "a new action row")
    row = editor.rows[-1]
    for key, text in (("action", action), ("command", command), ("num_gpus", gpus)):
        if text:
            row.query_one(f".step-{key}", Input).value = text
    await settle(pilot)


async def test_the_composer_adds_follow_up_actions_and_previews_every_step() -> None:
    fake = FakeBackend(clock=frozen)
    app = build_app(fake)
    notes = record_notifications(app)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await open_composer(pilot, GOOD)
        await add_action(pilot, screen, "evaluate", "dino evaluate -e /specs/eval.yaml", "1")
        await add_action(pilot, screen, "export", "dino export -e /specs/export.yaml")
        spec = screen.current_spec()
        assert spec["then"] == [
            {"action": "evaluate", "command": "dino evaluate -e /specs/eval.yaml", "num_gpus": 1},
            {"action": "export", "command": "dino export -e /specs/export.yaml"},
        ]
        await wait_for(
            pilot,
            lambda: screen.preview.text.count("#!/bin/bash") == 3,
            "every step's script in the preview",
        )
        text = screen.preview.text
        assert "# ===== step 2 of 3: compose-test-evaluate, after compose-test completed" in text
        assert "#SBATCH --dependency=afterok:<SLURM id of the previous step>" in text
        assert "TAO_PREVIOUS_RESULTS_DIR" in text
        # A bad number in a row is named with its step.
        row = screen.query_one(StepsEditor).rows[0]
        row.query_one(".step-num_gpus", Input).value = "two"
        await wait_for(pilot, lambda: "then" in screen.errors, "the step's problem")
        assert screen.errors["then"].startswith("step 2: GPUs/node must be a whole number")
        row.query_one(".step-num_gpus", Input).value = "1"
        await wait_for(pilot, lambda: "then" not in screen.errors, "fixed")
        # Remove the last action, put it back, submit: three jobs of one pipeline.
        await pilot.click(f"#{screen.query_one(StepsEditor).rows[-1].id} .step-remove")
        await wait_for(pilot, lambda: len(screen.query_one(StepsEditor).rows) == 1, "removed")
        await add_action(pilot, screen, "export", "dino export -e /specs/export.yaml")
        await pilot.press("ctrl+s")
        queue_screen: QueueScreen = await shown(pilot, QueueScreen)
        await wait_for(
            pilot, lambda: "compose-test-export" in queue_screen.table.jobs, "the steps' rows"
        )
        steps = [j for j in fake.jobs() if j.pipeline_id == "compose-test"]
        assert sorted((j.pipeline_step, j.id) for j in steps) == [
            (0, "compose-test"),
            (1, "compose-test-evaluate"),
            (2, "compose-test-export"),
        ]
        assert any("Pipeline compose-test submitted: 3 steps" in n.message for n in notes)


async def test_a_loaded_pipeline_fills_the_editor(tmp_path: Any) -> None:
    path = tmp_path / "pipe.toml"
    path.write_text(PIPELINE_TOML, "utf-8")
    app = build_app(FakeBackend(clock=frozen))
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await open_composer(pilot)
        await pilot.press("ctrl+o")
        modal = await shown(pilot, PathModal)
        modal.query_one(Input).value = str(path)
        await pilot.press("enter")
        editor = screen.query_one(StepsEditor)
        await wait_for(pilot, lambda: len(editor.rows) == 2, "two action rows")
        await settle(pilot)
        assert [s["action"] for s in screen.current_spec()["then"]] == ["evaluate", "export"]
        assert not screen.form.extra  # "then" is no unknown key
        assert screen.current_spec()["then"][0]["env"] == {"SPLIT": "val"}  # kept as loaded


SIZES = {"80x24": (80, 24), "160x45": (160, 45)}


@pytest.fixture(params=list(SIZES.values()), ids=list(SIZES))
def size(request: pytest.FixtureRequest) -> tuple[int, int]:
    """Every snapshot at both sizes."""
    return request.param  # type: ignore[no-any-return]


def test_snapshot_queue_with_a_grouped_pipeline(snap_compare: Any, size: tuple[int, int]) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        screen = await queue(pilot)
        await cursor_to(pilot, screen, "pipeline:rtdetr")

    assert snap_compare(pipeline_app(), terminal_size=size, run_before=run_before)


def test_snapshot_pipeline_cancel_modal(snap_compare: Any, size: tuple[int, int]) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        screen = await queue(pilot)
        await cursor_to(pilot, screen, "rtdetr-evaluate")
        await pilot.press("c")
        await shown(pilot, PipelineCancelModal)
        await settle(pilot)

    assert snap_compare(pipeline_app(), terminal_size=size, run_before=run_before)


def test_snapshot_composer_with_follow_up_actions(snap_compare: Any, size: tuple[int, int]) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        screen = await open_composer(pilot, GOOD)
        await add_action(pilot, screen, "evaluate", "dino evaluate -e /specs/eval.yaml", "1")
        await add_action(pilot, screen, "export", "dino export -e /specs/export.yaml")
        await wait_for(
            pilot, lambda: screen.preview.text.count("#!/bin/bash") == 3, "the three scripts"
        )
        await wait_for(
            pilot, lambda: "As is" in str(screen.estimate.render()), "the start estimate"
        )
        screen.form.scroll_end(animate=False)  # the actions are at the end of the form
        await settle(pilot)

    assert snap_compare(
        build_app(FakeBackend(clock=frozen)), terminal_size=size, run_before=run_before
    )
