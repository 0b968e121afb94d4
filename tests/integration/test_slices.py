"""TAO trainings across wall-time slices on the sandbox (issue 21), with the TAO 7.3 stand-in in
the sandbox's image under Pyxis, one-minute slices (timeout_hours = 1/60) and short epochs
(TAO_SANDBOX_EPOCH_SECONDS):

- a training that checkpoints is stopped at timeout_hours, requeues itself (``scontrol`` in the
  batch step: the image has none), resumes from its checkpoint in every run and completes; the
  forecast read while the first slice ran named where the second would resume, within one
  checkpoint interval;
- a training that never checkpoints within a slice is requeued twice without progress, each
  reported, and then not again, with the reason as the job's message; while it runs,
  TensorBoard started in its allocation answers an HTTP request through the forwarded port.
"""

from __future__ import annotations

import asyncio
import time
import urllib.request
from typing import Any

import pytest

from tao_slurm_tui.core.job_runs import JobRuns
from tao_slurm_tui.core.models import JobRecord, TaoStatus
from tao_slurm_tui.services.tensorboard import TensorBoards
from tests import sandbox
from tests.integration.monitor_helpers import PROFILE, Harness, unique
from tests.integration.test_pyxis import good_key, ph, pyxis_profile

__all__ = ["good_key", "ph", "pyxis_profile"]  # fixtures

pytestmark = [pytest.mark.slow, pytest.mark.cluster]

EPOCH_SECONDS = 7
"""Seconds per epoch: a one-minute slice trains ~7 epochs after the image is imported."""
SLICES = 600.0
"""Bound for several one-minute slices, their requeues and the image imports."""


def training(epochs: int, interval: int) -> dict[str, Any]:
    """A classification_pyt training on the sandbox's dataset, in one-minute slices."""
    info = sandbox.info()
    datasets = info["tao"]["datasets"]
    spec = info["tao"]["example_specs"]["classification_pyt"]
    command = (
        f"classification_pyt train -e {spec} results_dir=$TAO_API_RESULTS_DIR/$TAO_JOB_ID "
        f"train.num_epochs={epochs} train.checkpoint_interval={interval}"
    )
    return {
        "command": command,
        "image": info["demo_image"],
        "num_gpus": 1,
        "cpus_per_task": 1,
        "time_hours": 0.1,
        "timeout_hours": 1 / 60,
        "use_requeue": True,
        "use_sqsh": False,
        "container_mounts": [f"{datasets}:{datasets}"],
        "env": {"TAO_SANDBOX_EPOCH_SECONDS": str(EPOCH_SECONDS)},
    }


async def runs_of(h: Harness, job: JobRecord) -> JobRuns:
    record = h.monitor.runs.record(job.id)
    return JobRuns.of(job, record.ledger, h.monitor.runs.points(job.id), time.time())


async def test_a_training_resumes_across_slices_and_completes_as_forecast(
    ph: Harness, good_key: None
) -> None:
    name = unique("slices")
    await ph.submit(name, **training(epochs=12, interval=2))
    # The first slice, past its second epoch: the forecast names where the next run resumes.
    job = await ph.tick_until(
        name, lambda j: (j.progress.epoch or 0) >= 2 and j.retries == 0, timeout=SLICES
    )
    forecast = (await runs_of(ph, job)).forecast
    assert forecast is not None and forecast.kind == "more_slices", forecast
    assert forecast.resume_epoch is not None and forecast.checkpoint_interval == 2
    done = await ph.tick_until(name, lambda j: j.status.terminal, timeout=SLICES)
    assert done.status is TaoStatus.COMPLETE, done.status_json()
    assert done.retries >= 1 and done.attempts[-1].timeout_restarts >= 1
    runs = (await runs_of(ph, done)).ledger.runs
    assert len(runs) >= 2
    # Every run that trained started past the checkpoint before it; a last run may train none
    # (its slice began after the last epoch, before TAO had exited: nothing left to resume).
    assert runs[1].progress is True, [r.to_json() for r in runs]
    assert all(run.progress is not False for run in runs[1:]), [r.to_json() for r in runs]
    assert runs[1].resumed_from.endswith(".pth")
    # The second run took up the training where the forecast said, within one interval.
    assert runs[1].start is not None and abs(runs[1].start - forecast.resume_epoch) <= 2
    points = ph.monitor.runs.points(name)
    assert {p.epoch for p in points} == set(range(12))
    assert "train_loss" in points[-1].kpi and done.progress.runs["no_progress"] == 0


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return str(answer.read().decode())


async def test_a_training_without_checkpoints_stops_after_two_slices_without_progress(
    ph: Harness, good_key: None
) -> None:
    name = unique("stall")
    # A checkpoint every 20 epochs; a slice trains ~7: never one to resume from.
    await ph.submit(name, **training(epochs=20, interval=20))
    job = await ph.tick_until(name, lambda j: (j.progress.epoch or 0) >= 1, timeout=SLICES)
    boards = TensorBoards(ph.conn)  # type: ignore[arg-type]
    try:
        session = await boards.start(job, f"{sandbox.RESULTS}/results/{name}")
        assert session.url.startswith("http://127.0.0.1:")
        page = await asyncio.to_thread(_get, session.url)
        assert "<title>TensorBoard</title>" in page and "events.out.tfevents" in page
    finally:
        await boards.close()
    events: list[str] = []
    deadline = time.monotonic() + SLICES
    while True:
        result = await ph.tick()
        events += [e.text for e in result.events if e.job_id == name and e.kind == "resume"]
        job = ph.store.require(PROFILE, name)
        if job.status.terminal or time.monotonic() > deadline:
            break
        await asyncio.sleep(1)
    assert job.status is TaoStatus.ERROR, job.status_json()
    assert job.message.startswith("Not requeued: "), job.message
    assert "wrote no checkpoint" in job.message or "restarted without progress" in job.message
    assert f"{name}: run 2 restarted from epoch 0: no checkpoint was written in run 1" in events
    assert any("run 3 restarted from epoch 0" in e for e in events), events
    assert job.retries == 2  # two no-progress requeues, then no more
    assert job.progress.runs["no_progress"] == 2 and job.progress.runs["stop"]
