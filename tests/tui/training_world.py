"""A TAO training's files in the fake cluster's world, as TAO 7.3 leaves them: status.json of
several runs (a requeue resumed from its checkpoint) and the experiment.yaml TAO saved."""

from __future__ import annotations

from pathlib import Path

from tao_slurm_tui.core.layout import JobPaths
from tao_slurm_tui.services.fakecluster.seed import RESULTS
from tao_slurm_tui.services.fakecluster.world import World
from tests.tao_status import text, training_run


def train_dir(world: World, job: str) -> Path:
    """``<results_dir>/train`` of ``job`` in the world (made)."""
    path = world.local(f"{JobPaths(RESULTS, job).results_dir}/train")
    path.mkdir(parents=True, exist_ok=True)
    return path


def write_training(
    world: World,
    job: str,
    runs: list[list[str]],
    *,
    epochs: int = 20,
    interval: int = 2,
) -> None:
    """Write ``job``'s status.json (the runs' lines) and experiment.yaml."""
    folder = train_dir(world, job)
    (folder / "experiment.yaml").write_text(
        f"train:\n  num_epochs: {epochs}\n  checkpoint_interval: {interval}\n"
        f"  optim:\n    lr: 0.001\ndataset:\n  batch_size: 8\nresults_dir: {folder}\n"
    )
    (folder / "status.json").write_text(text([line for run in runs for line in run]))


def two_slices(world: World, job: str = "dino-train-1", *, detector: bool = True) -> None:
    """A training of 20 epochs, 190 s each: the first slice trained 11 epochs, the second
    resumed from the checkpoint after epoch 10 and is at epoch 17."""
    first = training_run(0, 11, 20, epoch_seconds=190, detector=detector)
    second = training_run(
        10, 17, 20, epoch_seconds=190, detector=detector, resumed_from="model_epoch_009.pth"
    )
    write_training(world, job, [first, second])
