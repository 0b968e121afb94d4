"""Pipelines in the TUI: the queue groups a pipeline's steps under one row (expand/collapse,
the step in progress), cancel on a step asks "this step / the whole pipeline", and the composer
adds follow-up actions whose every step's sbatch the preview shows."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
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
from tao_slurm_tui.services.cluster import ClusterBackend
from tao_slurm_tui.services.fakecluster.demo import Demo
from tao_slurm_tui.services.fakecluster.engine import now as world_now
from tao_slurm_tui.widgets.steps_editor import StepsEditor
from tests.tui.conftest import build_app, open_demo
from tests.tui.test_composer import GOOD
from tests.tui.test_composer import _open as open_composer
from tests.tui.waits import record_notifications, settle, shown, wait_for
from tests.unit.test_pipeline import PIPELINE_TOML

STEPS = ["rtdetr", "rtdetr-evaluate", "rtdetr-export"]


def pipeline_demo(folder: Path) -> Demo:
    """The fake cluster with a three-step pipeline besides the seeded jobs."""
    return open_demo(folder / "pipeline", pipeline=True)


def pipeline_app(folder: Path) -> TaoSlurmApp:
    """The app on the fake cluster with a three-step pipeline besides the seeded jobs."""
    return build_app(pipeline_demo(folder).backend())


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


async def test_the_queue_groups_a_pipeline_and_toggles_it(tmp_path: Path) -> None:
    app = pipeline_app(tmp_path)
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


async def test_cancel_on_a_step_asks_this_step_or_the_whole_pipeline(tmp_path: Path) -> None:
    app = pipeline_app(tmp_path)
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


async def test_cancel_the_whole_pipeline_from_its_row(tmp_path: Path) -> None:
    app = pipeline_app(tmp_path)
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


async def test_the_composer_adds_follow_up_actions_and_previews_every_step(
    fake: ClusterBackend,
) -> None:
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
        assert screen.errors["then"].startswith("step 2: GPUs per node must be a whole number")
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


async def load_pipeline(pilot: Pilot[Any], path: Any) -> tuple[ComposerScreen, StepsEditor]:
    """Open the composer and load ``path`` (a two-step pipeline) with Load TOML."""
    screen = await open_composer(pilot)
    await pilot.press("ctrl+o")
    modal = await shown(pilot, PathModal)
    modal.query_one(Input).value = str(path)
    await pilot.press("enter")
    editor = screen.query_one(StepsEditor)
    await wait_for(pilot, lambda: len(editor.rows) == 2, "two action rows")
    await settle(pilot)
    return screen, editor


async def test_a_loaded_pipeline_fills_the_editor(tmp_path: Any, fake: ClusterBackend) -> None:
    path = tmp_path / "pipe.toml"
    path.write_text(PIPELINE_TOML, "utf-8")
    app = build_app(fake)
    async with app.run_test(size=(160, 45)) as pilot:
        screen, _ = await load_pipeline(pilot, path)
        assert [s["action"] for s in screen.current_spec()["then"]] == ["evaluate", "export"]
        assert not screen.form.extra  # "then" is no unknown key
        assert screen.current_spec()["then"][0]["env"] == {"SPLIT": "val"}  # kept as loaded


async def test_a_steps_gpu_type_is_typed_loaded_and_rendered(
    tmp_path: Any, fake: ClusterBackend
) -> None:
    """A step's own GPU type has an input: loaded from the spec, typed, and in the step's
    script as --gres=gpu:TYPE:N (empty: the job's)."""
    path = tmp_path / "pipe.toml"
    path.write_text(
        PIPELINE_TOML.replace('action = "export"', 'action = "export"\ngpu_type = "a100"'), "utf-8"
    )
    app = build_app(fake)
    async with app.run_test(size=(80, 24)) as pilot:
        screen, editor = await load_pipeline(pilot, path)
        evaluate, export = editor.rows
        assert export.query_one(".step-gpu_type", Input).value == "a100"
        assert evaluate.query_one(".step-gpu_type", Input).value == ""
        assert "gpu_type" not in screen.current_spec()["then"][0]
        evaluate.query_one(".step-gpu_type", Input).value = "h100"
        await wait_for(
            pilot,
            lambda: (
                screen.current_spec()["then"][0].get("gpu_type") == "h100"
                and "--gres=gpu:h100:" in screen.preview.text
            ),
            "the typed GPU type in the spec and the step's script",
        )
        assert screen.current_spec()["then"][1]["gpu_type"] == "a100"
        evaluate.query_one(".step-gpu_type", Input).value = "h 100"
        await wait_for(pilot, lambda: "then" in screen.errors, "the step's problem")
        assert screen.errors["then"].startswith("step 2"), screen.errors["then"]


def detail_text(screen: QueueScreen) -> str:
    """The details pane's lines as shown (the pane's region of the screen), each with its runs
    of spaces made one."""
    box = screen.query_one("#detail-box").region
    strips = screen.app.screen._compositor.render_strips()
    lines = ["".join(seg.text for seg in strips[y]) for y in range(box.y, box.bottom)]
    return "\n".join(" ".join(line.split()) for line in lines)


@pytest.mark.parametrize(
    ("key", "this", "lines"),
    [
        ("rtdetr", "1. rtdetr done", ["2. evaluate running"]),
        (
            "rtdetr-evaluate",
            "2. evaluate running",
            ["3. export waiting for step 2 to finish"],
        ),
        (
            "rtdetr-export",
            "3. export waiting for step 2 to finish",
            ["1. rtdetr done"],
        ),
    ],
)
async def test_a_steps_details_show_the_pipeline_and_where_each_step_is(
    key: str, this: str, lines: list[str], tmp_path: Path
) -> None:
    app = pipeline_app(tmp_path)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await queue(pilot)
        await cursor_to(pilot, screen, key)
        await wait_for(pilot, lambda: "Pipeline rtdetr" in detail_text(screen), "the summary")
        text = detail_text(screen)
        assert "Pipeline rtdetr step 2/3 evaluate running" in text
        number = STEPS.index(key) + 1
        assert f"this job is step {number} of 3" in text
        assert f"{this} ◂ this job" in text
        for line in lines:
            assert line in text and f"{line} ◂" not in text


async def test_the_summary_says_in_words_when_a_step_will_never_start(tmp_path: Path) -> None:
    """A step SLURM keeps pending with DependencyNeverSatisfied (the monitor could not cancel
    it: scancel fails), a failed one before it, a single job without a summary."""
    demo = pipeline_demo(tmp_path)
    world = demo.world("fake")
    with world.edit() as state:  # evaluate failed an hour ago; SLURM holds export for ever
        evaluate = state["jobs"]["1061"]
        evaluate.update(state="FAILED", end=world_now(state) - 3600, exit_code="1:0")
    world.fail("scancel")
    fake = demo.backend()
    fake.store.update_job("fake", "rtdetr-evaluate", status=TaoStatus.ERROR, slurm_state="FAILED")
    app = build_app(fake)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await queue(pilot)
        await cursor_to(pilot, screen, "rtdetr-export")
        await wait_for(pilot, lambda: "Pipeline rtdetr" in detail_text(screen), "the summary")
        text = detail_text(screen)
        assert "2. evaluate failed" in text
        assert "3. export will never start: step 2 did not complete ◂ this job" in text
        summary = text.split("Pipeline rtdetr")[1].split("results:")[0]
        assert "DependencyNeverSatisfied" not in summary  # words, not SLURM's reason
        await cursor_to(pilot, screen, "dino-train-1")
        await wait_for(pilot, lambda: "dino-train-1" in detail_text(screen), "a single job")
        assert "Pipeline" not in detail_text(screen)


@pytest.mark.parametrize("key", ["rtdetr-export", "pipeline:rtdetr", "rtdetr"])
async def test_clone_of_a_pipelines_step_clones_the_whole_pipeline(
    key: str, tmp_path: Path
) -> None:
    app = pipeline_app(tmp_path)
    notes = record_notifications(app)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await queue(pilot)
        await cursor_to(pilot, screen, key)
        await pilot.press("e")
        composer = await shown(pilot, ComposerScreen)
        await settle(pilot)
        spec = composer.current_spec()
        assert spec["name"] == "rtdetr-2"  # the pipeline's name, not the step's
        assert spec["command"] == "dino train -e /specs/rtdetr.yaml"  # the first step's own
        assert spec["num_gpus"] == 4
        then = spec["then"]
        assert [step["action"] for step in then] == ["evaluate", "export"]
        assert then[0]["command"] == "rtdetr evaluate -e /specs/eval.yaml"
        assert then[1]["command"] == "rtdetr export -e /specs/export.yaml"
        assert then[0]["num_gpus"] == 1 and then[0]["time_hours"] == 0.5
        editor = composer.query_one(StepsEditor)
        assert len(editor.rows) == 2  # every step in the composer's steps editor, in order
        await wait_for(
            pilot, lambda: composer.preview.text.count("#!/bin/bash") == 3, "three scripts"
        )
        assert not composer.errors
        assert any(
            "whole pipeline rtdetr (3 steps: rtdetr, evaluate, export)" in n.message for n in notes
        )


async def test_clone_of_a_pipeline_picks_a_name_free_for_every_step(tmp_path: Path) -> None:
    fake = pipeline_demo(tmp_path).backend()
    evaluate = fake.store.require("fake", "rtdetr-evaluate")
    # A clone's step exists already (it ended): rtdetr-2 is not free.
    taken = replace(evaluate, id="rtdetr-2-evaluate", pipeline_id="rtdetr-2", pipeline_step=1)
    fake.store.create_job(replace(taken, status=TaoStatus.COMPLETE, slurm_state="COMPLETED"))
    app = build_app(fake)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await queue(pilot)
        await cursor_to(pilot, screen, "rtdetr")
        await pilot.press("e")
        composer = await shown(pilot, ComposerScreen)
        await settle(pilot)
        assert composer.current_spec()["name"] == "rtdetr-3"


SIZES = {"80x24": (80, 24), "160x45": (160, 45)}


@pytest.fixture(params=list(SIZES.values()), ids=list(SIZES))
def size(request: pytest.FixtureRequest) -> tuple[int, int]:
    """Every snapshot at both sizes."""
    return request.param  # type: ignore[no-any-return]


def test_snapshot_queue_with_a_grouped_pipeline(
    snap_compare: Any, size: tuple[int, int], tmp_path: Path, fake: ClusterBackend
) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        screen = await queue(pilot)
        await cursor_to(pilot, screen, "pipeline:rtdetr")

    assert snap_compare(pipeline_app(tmp_path), terminal_size=size, run_before=run_before)


def test_snapshot_pipeline_cancel_modal(
    snap_compare: Any, size: tuple[int, int], tmp_path: Path, fake: ClusterBackend
) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        screen = await queue(pilot)
        await cursor_to(pilot, screen, "rtdetr-evaluate")
        await pilot.press("c")
        await shown(pilot, PipelineCancelModal)
        await settle(pilot)

    assert snap_compare(pipeline_app(tmp_path), terminal_size=size, run_before=run_before)


def test_snapshot_composer_with_follow_up_actions(
    snap_compare: Any, size: tuple[int, int], tmp_path: Path, fake: ClusterBackend
) -> None:
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

    assert snap_compare(build_app(fake), terminal_size=size, run_before=run_before)
