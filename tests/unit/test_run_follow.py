"""Following a TAO training's runs on the fake cluster (real services, real shell tools): the
monitor's tick reads status.json incrementally, keeps the KPI series and the ledger, reports a
run that restarted without progress, and writes requeue.stop for the batch script."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tao_slurm_tui.core.kpi_series import MAX_POINTS
from tao_slurm_tui.core.layout import JobPaths
from tao_slurm_tui.core.run_reads import RUN_READ_CAP
from tao_slurm_tui.services.cluster import ClusterBackend
from tao_slurm_tui.services.fakecluster.demo import Demo
from tao_slurm_tui.services.fakecluster.seed import PROFILE_NAME, RESULTS
from tao_slurm_tui.services.fakecluster.world import World
from tests.tao_status import line, text, training_run

JOB = "dino-train-1"
"""A seeded running job (SLURM id 1051, 4324 s into its run)."""


@pytest.fixture
def demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Demo]:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    made = Demo(tmp_path / "demo", workstation=False)
    yield made
    made.close()


@pytest.fixture
def world(demo: Demo) -> World:
    return demo.world(PROFILE_NAME)


@pytest.fixture
async def fake(demo: Demo) -> ClusterBackend:
    backend = demo.backend()
    yield backend  # type: ignore[misc]
    await backend.close()


def train_dir(world: World) -> Path:
    path = world.local(f"{JobPaths(RESULTS, JOB).results_dir}/train")
    path.mkdir(parents=True, exist_ok=True)
    return path


def write(world: World, lines: list[str], *, interval: int = 1, append: bool = False) -> None:
    folder = train_dir(world)
    (folder / "experiment.yaml").write_text(
        f"train:\n  num_epochs: 20\n  checkpoint_interval: {interval}\nresults_dir: /r\n"
    )
    with open(folder / "status.json", "a" if append else "w", encoding="utf-8") as handle:
        handle.write(text(lines))


async def test_a_tick_folds_the_runs_and_the_series(fake: ClusterBackend, world: World) -> None:
    write(
        world, training_run(0, 5, 20) + training_run(5, 7, 20, resumed_from="model_epoch_004.pth")
    )
    jobs = {j.id: j for j in await fake.refresh()}
    runs = jobs[JOB].progress.runs
    assert runs["run"] == 2 and runs["no_progress"] == 0 and runs["problem"] == ""
    assert runs["checkpoint_interval"] == 1 and runs["starts"] == [0, 5]
    got = (await fake.job_runs([JOB]))[JOB]
    names = [s.name for s in got.series]
    assert names[:2] == ["val_loss", "train_loss"] and "val_acc_1" in names
    assert [p.epoch for p in got.points] == list(range(7))
    assert got.resumes == [(2, 6)]
    assert got.forecast is not None  # 2 s epochs: it finishes in this slice
    assert got.forecast.kind == "finishes"


async def test_the_read_is_incremental(fake: ClusterBackend, world: World) -> None:
    write(world, training_run(0, 2, 20))
    await fake.refresh()
    size = (train_dir(world) / "status.json").stat().st_size
    write(world, [line("RUNNING", "Train metrics generated.", {"train_loss": 0.1})], append=True)
    world.commands.clear()
    await fake.refresh()
    sent = " ".join(world.commands)
    assert f"tail -c +{size + 1} " in sent
    assert fake.monitor.runs.record(JOB).reader.offset > size


async def test_runs_without_progress_are_reported_then_stopped(
    fake: ClusterBackend, world: World
) -> None:
    # A checkpoint every 10 epochs; each slice trains 3: nothing is ever saved.
    write(world, training_run(0, 3, 20) + training_run(0, 3, 20), interval=10)
    result = await fake.monitor.tick()
    assert [e.text for e in result.events if e.kind == "resume"] == [
        f"{JOB}: run 2 restarted from epoch 0: no checkpoint was written in run 1"
    ]
    write(world, training_run(0, 1, 20), interval=10, append=True)
    result = await fake.monitor.tick()
    (event,) = [e for e in result.events if e.kind == "resume"]
    assert event.text.endswith("no checkpoint was written in run 2; it will not be requeued again")
    job = fake.store.require(PROFILE_NAME, JOB)
    assert job.progress.runs["stop"].startswith("not requeued again: runs 2 and 3")
    stop = world.local(JobPaths(RESULTS, JOB).requeue_stop(job.slurm_job_id))
    assert not stop.exists()  # written by the next tick's command (no extra round trip)
    await fake.monitor.tick()
    assert stop.read_text().startswith("not requeued again: runs 2 and 3 restarted")
    assert fake.monitor.runs.record(JOB).reader.stop_written


async def test_a_fifo_or_a_huge_line_never_blocks_or_grows_anything(
    fake: ClusterBackend, world: World
) -> None:
    folder = train_dir(world)
    (folder / "status.json").unlink(missing_ok=True)
    os.mkfifo(folder / "status.json")
    # The runs' read alone (the tick's status tail is another module's): never opens a FIFO.
    job = fake.store.require(PROFILE_NAME, JOB)
    await asyncio.wait_for(fake.monitor.runs.catch_up(fake.conn, [job]), 20)
    assert fake.monitor.runs.record(JOB).reader.offset == 0
    (folder / "status.json").unlink()
    huge = json.dumps({"status": "RUNNING", "message": "x" * (3 * RUN_READ_CAP)})
    write(world, [huge, *training_run(0, 2, 20)])
    for _ in range(6):
        await fake.refresh()
    reader = fake.monitor.runs.record(JOB).reader
    assert reader.offset == (folder / "status.json").stat().st_size
    assert [p.epoch for p in fake.monitor.runs.points(JOB)] == [0, 1]


async def test_a_hostile_series_stays_bounded(fake: ClusterBackend, world: World) -> None:
    lines = [
        line("RUNNING", kpi={f"k{i}_{e}": e for i in range(40)}, epoch=e, max_epoch=5000)
        for e in range(MAX_POINTS + 300)
    ]
    write(world, lines)
    for _ in range(20):
        await fake.refresh()
    points = fake.monitor.runs.points(JOB)
    assert len(points) <= MAX_POINTS
    assert len({k for p in points for k in p.kpi}) <= 12


async def test_a_finished_training_is_read_to_its_end_on_demand(
    fake: ClusterBackend, world: World
) -> None:
    lines = training_run(0, 20, 20)
    path = world.local(f"{JobPaths(RESULTS, 'detect-ok').results_dir}/train/status.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text(lines))
    got = (await fake.job_runs(["detect-ok"]))["detect-ok"]
    assert len(got.points) == 20 and got.forecast is None
    assert fake.monitor.runs.record("detect-ok").reader.final
    world.commands.clear()
    await fake.job_runs(["detect-ok"])
    assert not world.commands  # read to its end: no second read
