"""Pilot tests of a TAO training across slices, on the fake cluster: the details' runs panel and
forecast, the job view, the stalled notification, TensorBoard through the connection, and the
comparison of runs."""

from __future__ import annotations

import asyncio
import os
import urllib.error
import urllib.request
from typing import Any

import pytest

from tao_slurm_tui.screens.compare import CompareScreen
from tao_slurm_tui.screens.job_view import JobViewScreen
from tao_slurm_tui.screens.queue import QueueScreen
from tao_slurm_tui.services.cluster import ClusterBackend
from tao_slurm_tui.services.fakecluster.seed import PROFILE_NAME
from tao_slurm_tui.services.fakecluster.world import World
from tao_slurm_tui.widgets.kpi_plot import KpiPlot
from tao_slurm_tui.widgets.runs_panel import RunsPanel
from tests.tao_status import training_run
from tests.tui.conftest import SIZE, build_app
from tests.tui.training_world import train_dir, two_slices, write_training
from tests.tui.waits import record_notifications, settle, shown, wait_for


def plain(widget: Any) -> str:
    """What a Static shows, as plain text."""
    from rich.console import Console

    console = Console(width=200, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
    console.print(widget.content)
    return console.export_text()


async def queue(pilot: Any) -> QueueScreen:
    screen: QueueScreen = await shown(pilot, QueueScreen)
    await wait_for(pilot, lambda: screen.polled_ok, "the first poll")
    await settle(pilot)
    return screen


def make_trainings(fake: ClusterBackend, world: World) -> None:
    """dino-train-1 running in its second slice, detect-ok finished with another lr."""
    two_slices(world)
    write_training(world, "detect-ok", [training_run(0, 20, 20, detector=True)], interval=5)
    spec = (train_dir(world, "detect-ok") / "experiment.yaml").read_text()
    (train_dir(world, "detect-ok") / "experiment.yaml").write_text(
        spec.replace("lr: 0.001", "lr: 0.0005")
    )
    for job_id in ("dino-train-1", "detect-ok"):
        job = fake.store.require(PROFILE_NAME, job_id)
        fake.store.update_job(
            PROFILE_NAME, job_id, spec={**job.spec, "tao": {"network": "dino", "action": "train"}}
        )


async def test_the_details_show_the_run_the_forecast_and_the_curves(
    fake: ClusterBackend, world: World
) -> None:
    two_slices(world)
    app = build_app(fake)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await queue(pilot)
        panel = screen.query_one(RunsPanel)
        await wait_for(pilot, lambda: panel.display and panel.runs is not None, "the runs")
        text = plain(panel.query_one("#runs-text"))
        assert "Run: 2, from epoch 10 · checkpoint every 2 epochs" in text
        assert "Forecast: finishes in this slice (~10 min left of 3 h 48 min)" in text
        plot = panel.query_one(KpiPlot)
        assert [s.name for s in plot.runs.series] == ["val_loss", "train_loss", "val_mAP"]  # type: ignore[union-attr]
        # Another job that is no training: the panel goes.
        await pilot.press("down")
        await wait_for(pilot, lambda: not panel.display, "the panel hidden for yolo-finetune")


async def test_the_job_view_lists_the_runs(fake: ClusterBackend, world: World) -> None:
    two_slices(world)
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await queue(pilot)
        await pilot.press("o")
        view: JobViewScreen = await shown(pilot, JobViewScreen)
        await wait_for(pilot, lambda: view.runs is not None, "the runs")
        await settle(pilot)
        table = plain(view.query_one("#job-view-runs"))
        assert "model_epoch_009.pth" in table and "resumed" in table
        await pilot.press("escape")
        await shown(pilot, QueueScreen)


async def test_a_run_without_progress_is_a_notification(fake: ClusterBackend, world: World) -> None:
    runs = [training_run(0, 3, 20), training_run(0, 2, 20)]
    write_training(world, "dino-train-1", runs, interval=10)
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        notes = record_notifications(app)
        await queue(pilot)
        await wait_for(pilot, lambda: any(n.title == "Job stalled" for n in notes), "the toast")
        (note,) = [n for n in notes if n.title == "Job stalled"]
        assert note.message == (
            "dino-train-1: run 2 restarted from epoch 0: no checkpoint was written in run 1."
        )
        assert note.severity == "warning"


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as answer:
        return str(answer.read().decode())


async def test_tensorboard_answers_through_the_forwarded_port(
    fake: ClusterBackend, world: World
) -> None:
    two_slices(world)
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        notes = record_notifications(app)
        await queue(pilot)
        await pilot.press("t")
        await wait_for(pilot, lambda: fake.tensorboard_url("dino-train-1"), "TensorBoard")
        url = fake.tensorboard_url("dino-train-1")
        assert url is not None and url.startswith("http://127.0.0.1:")
        assert "TensorBoard" in await asyncio.to_thread(_get, url)
        assert '"logdir"' in await asyncio.to_thread(_get, url + "data/logdir")
        await wait_for(pilot, lambda: any(url in n.message for n in notes), "the URL shown")
        await pilot.press("t")
        await wait_for(pilot, lambda: not fake.tensorboard_url("dino-train-1"), "stopped")
        with pytest.raises(urllib.error.URLError):
            await asyncio.to_thread(_get, url)


async def test_tensorboard_is_refused_for_a_job_that_does_not_run(
    fake: ClusterBackend, world: World
) -> None:
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        notes = record_notifications(app)
        screen = await queue(pilot)
        screen.table.reveal("detect-ok")
        await wait_for(pilot, lambda: screen.table.cursor_job_id == "detect-ok", "detect-ok")
        await pilot.press("t")
        await wait_for(pilot, lambda: any(n.severity == "error" for n in notes), "the refusal")
        assert any("runs inside a running job's allocation" in n.message for n in notes)


async def test_compare_two_trainings(fake: ClusterBackend, world: World) -> None:
    make_trainings(fake, world)
    app = build_app(fake)
    async with app.run_test(size=(160, 45)) as pilot:
        await queue(pilot)
        await pilot.press("v")
        screen: CompareScreen = await shown(pilot, CompareScreen)
        tables = screen.query_one("#compare-tables")
        assert "Pick two or more" in plain(tables)
        pick = screen.query_one("#compare-pick")
        index = [job.id for job in screen.offered].index("detect-ok")
        await pilot.press(*["down"] * index, "space")  # dino-train-1 was picked; detect-ok too
        await wait_for(pilot, lambda: "Spec: " in plain(tables), "the comparison")
        text = plain(tables)
        assert "train.optim.lr" in text and "0.0005" in text and "0.001" in text
        assert "train.checkpoint_interval" in text
        assert "results_dir" not in text  # every job has its own
        assert "val_mAP" in text and "experiment.yaml" in text
        assert pick.has_focus


# ----------------------------------------------------------------------------------- snapshots

SIZES = {"80x24": (80, 24), "160x45": (160, 45)}


@pytest.fixture(params=list(SIZES.values()), ids=list(SIZES))
def size(request: pytest.FixtureRequest) -> tuple[int, int]:
    """Every snapshot at both sizes."""
    return request.param  # type: ignore[no-any-return]


def test_snapshot_job_view(
    snap_compare: Any, size: tuple[int, int], fake: ClusterBackend, world: World
) -> None:
    two_slices(world)

    async def run_before(pilot: Any) -> None:
        await queue(pilot)
        await pilot.press("o")
        view: JobViewScreen = await shown(pilot, JobViewScreen)
        await wait_for(pilot, lambda: view.runs is not None, "the runs")
        await settle(pilot)

    assert snap_compare(build_app(fake), terminal_size=size, run_before=run_before)


def test_snapshot_queue_details_with_curves(
    snap_compare: Any, size: tuple[int, int], fake: ClusterBackend, world: World
) -> None:
    two_slices(world)

    async def run_before(pilot: Any) -> None:
        screen = await queue(pilot)
        panel = screen.query_one(RunsPanel)
        await wait_for(pilot, lambda: panel.runs is not None, "the runs")
        await settle(pilot)

    assert snap_compare(build_app(fake), terminal_size=size, run_before=run_before)


def test_snapshot_compare(
    snap_compare: Any, size: tuple[int, int], fake: ClusterBackend, world: World
) -> None:
    make_trainings(fake, world)

    async def run_before(pilot: Any) -> None:
        await queue(pilot)
        await pilot.press("v")
        screen: CompareScreen = await shown(pilot, CompareScreen)
        index = [job.id for job in screen.offered].index("detect-ok")
        await pilot.press(*["down"] * index, "space")
        tables = screen.query_one("#compare-tables")
        await wait_for(pilot, lambda: "Spec: " in plain(tables), "the comparison")
        await settle(pilot)

    assert snap_compare(build_app(fake), terminal_size=size, run_before=run_before)
