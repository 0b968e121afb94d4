"""The composer's slice check of a TAO training: a similar run's epochs against the interval."""

from __future__ import annotations

from typing import Any

from tao_slurm_tui.core.launch import plan_step
from tao_slurm_tui.core.models import JobRecord, Progress
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.core.spec.model import JobSpec
from tao_slurm_tui.core.spec.rules import RULES
from tao_slurm_tui.core.spec.slice_rule import SimilarRun, checkpoint_problem, similar_runs

PROFILE = Profile.model_validate(
    {"user": "u", "hostnames": ["h"], "partition": "polar", "base_results_dir": "/r"}
)


def spec(interval: int = 10, epochs: int = 100, **extra: Any) -> JobSpec:
    experiment = f"train:\n  num_epochs: {epochs}\n  checkpoint_interval: {interval}\n"
    return JobSpec.model_validate(
        {
            "name": "dino-2",
            "image": "nvcr.io/nvidia/tao/tao-toolkit:7.3.0-pyt",
            "command": "dino train -e /r/specs/dino-2.yaml results_dir=/r/results/dino-2",
            "partition": "polar",
            "tao": {"network": "dino", "action": "train", "experiment": experiment},
            **extra,
        }
    )


def problem(job: JobSpec, seconds: float) -> str:
    similar = {("dino", 1, 4): SimilarRun("dino-1", seconds)}
    return checkpoint_problem(job, plan_step(job, PROFILE), similar)


def test_an_interval_longer_than_a_slice_is_named_with_the_one_that_fits() -> None:
    assert problem(spec(), 1500.0) == (
        "A similar run (dino-1: dino on 1 node(s) with 4 GPUs each) took ~25 min an epoch, so "
        "a checkpoint every 10 epochs (~4 h 10 min) does not fit in the 3 h 48 min slice "
        "(timeout_hours): every requeue would restart from the same checkpoint; set "
        "train.checkpoint_interval to 9 or less, or raise timeout_hours."
    )


def test_nothing_is_said_when_it_fits_or_nothing_is_known() -> None:
    assert problem(spec(interval=5), 1500.0) == ""  # ~2 h 5 min per checkpoint
    assert problem(spec(epochs=8), 1500.0) == ""  # the whole training fits in one slice
    other = spec(num_gpus=8, gpu_type="")
    assert problem(other, 1500.0) == ""  # no similar run on 8 GPUs
    assert checkpoint_problem(spec(), plan_step(spec(), PROFILE), {}) == ""


def test_an_epoch_longer_than_the_slice() -> None:
    assert "one epoch is longer than the slice" in problem(spec(), 5 * 3600.0)


def test_similar_runs_take_the_latest_training_of_each_shape() -> None:
    def job(name: str, seconds: float | None, when: float, gpus: int = 4) -> JobRecord:
        runs = {"epoch_seconds": seconds} if seconds else {}
        return JobRecord(
            id=name,
            profile="p",
            spec={"tao": {"network": "dino", "action": "train"}, "num_nodes": 1, "num_gpus": gpus},
            progress=Progress(runs=runs),
            updated_at=when,
        )

    found = similar_runs(
        [
            job("old", 900.0, 1.0),
            job("new", 1200.0, 2.0),
            job("none", None, 3.0),
            job("g8", 600.0, 1.0, 8),
        ]
    )
    assert found == {
        ("dino", 1, 4): SimilarRun("new", 1200.0),
        ("dino", 1, 8): SimilarRun("g8", 600.0),
    }
    assert any(rule.name == "checkpoints fit a slice" and rule.field == "tao" for rule in RULES)
