"""The batch script's checked resume of a TAO training (issue 21), run in bash with fake SLURM
tools (the harness of test_render.py): after the stop at timeout_hours a run that wrote a
checkpoint is requeued; a run that wrote none is requeued at most twice in a row; the monitor's
``requeue.stop`` stops it too; a failing ``scontrol requeue`` is said, not hidden."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tao_slurm_tui.core.launch import LaunchPlan
from tao_slurm_tui.core.layout import JobPaths
from tao_slurm_tui.core.train_command import checkpoint_dir, is_tao_training
from tests.unit.test_render import FULL_TIMEOUT, make_spec, run_script, step_of

# A TAO training as a bash function: it writes a checkpoint when told to, then is stopped at
# timeout_hours (exit 124, as `timeout` reports it).
TRAIN = (
    'classification_pyt() { d="$TAO_API_RESULTS_DIR/$TAO_JOB_ID/train"; mkdir -p "$d"; '
    'if [ -n "${WRITE_CHECKPOINT:-}" ]; then touch "$d/model_epoch_004.pth"; fi; return 124; }; '
    "classification_pyt train -e /specs/t.yaml results_dir=$TAO_API_RESULTS_DIR/$TAO_JOB_ID"
)
STALL = (
    "2026-01-01T00:00:00 restart={n} rc=124 timeout after 228 minutes; "
    "no checkpoint was written in run {r}\n"
)


def _stderr(tmp_path: Path) -> str:
    return (tmp_path / "stderr").read_text()


def stopped(tmp_path: Path, **kwargs: Any) -> tuple[int, str, str, Path]:
    return run_script(tmp_path, make_spec(command=TRAIN), elapsed_seconds=FULL_TIMEOUT, **kwargs)


def test_the_plan_of_a_tao_training_names_its_checkpoint_dir() -> None:
    plan = step_of(make_spec(command=TRAIN)).plan
    assert plan.checkpoint_dir.endswith("/results/dino-train-1")
    assert LaunchPlan.from_json(plan.to_json()) == plan
    old = {k: v for k, v in plan.to_json().items() if k != "checkpoint_dir"}
    assert LaunchPlan.from_json(old).checkpoint_dir == ""  # stored before the check existed
    assert step_of(make_spec(command=TRAIN, use_requeue=False)).plan.checkpoint_dir == ""
    assert step_of(make_spec()).plan.checkpoint_dir == ""  # no results_dir=: unknown


def test_which_commands_are_tao_trainings() -> None:
    paths = JobPaths("/home/u/tao", "j1")
    assert checkpoint_dir("rtdetr train -e /s.yaml results_dir=/lustre/e1/", paths) == "/lustre/e1"
    assert checkpoint_dir(
        "dino train -e s.yaml results_dir=${TAO_API_RESULTS_DIR}/$TAO_JOB_ID", paths
    ) == ("/home/u/tao/results/j1")
    assert checkpoint_dir("dino train -e s.yaml results_dir=$HOME/x", paths) == ""
    assert checkpoint_dir("dino train -e s.yaml results_dir=/a/../b", paths) == ""
    assert is_tao_training("cd /w && dino train --experiment_spec_file=/s.yaml")
    assert not is_tao_training("python train.py train -e x")
    assert not is_tao_training("classification_pyt evaluate -e x")
    assert not is_tao_training('echo "unterminated')


def test_a_run_that_checkpointed_is_requeued(tmp_path: Path) -> None:
    rc, _, calls, logdir = stopped(tmp_path, env={"WRITE_CHECKPOINT": "1"})
    assert rc == 124 and "scontrol requeue 77" in calls
    reason = (logdir / "requeue.reason").read_text()
    assert reason.rstrip().endswith("timeout after 228 minutes")


def test_a_run_without_a_checkpoint_is_requeued_and_says_so(tmp_path: Path) -> None:
    rc, _, calls, logdir = stopped(tmp_path)
    assert rc == 124 and "scontrol requeue 77" in calls
    assert "no checkpoint was written in run 1" in (logdir / "requeue.reason").read_text()


def test_a_checkpoint_older_than_the_run_does_not_count(tmp_path: Path) -> None:
    old = tmp_path / "base" / "results" / "dino-train-1" / "train"
    old.mkdir(parents=True)
    (old / "model_epoch_001.pth").touch()
    os.utime(old / "model_epoch_001.pth", (1_000_000, 1_000_000))
    _rc, _, _calls, logdir = stopped(tmp_path, restart_count="1")
    assert "no checkpoint was written in run 2" in (logdir / "requeue.reason").read_text()


def test_the_third_run_without_a_checkpoint_is_not_requeued(tmp_path: Path) -> None:
    earlier = STALL.format(n=0, r=1) + STALL.format(n=1, r=2)
    rc, _, calls, _logdir = stopped(tmp_path, restart_count="2", requeue_reasons=earlier)
    assert rc == 124 and "scontrol requeue" not in calls
    assert "not requeued: runs 1 to 3 wrote no checkpoint" in _stderr(tmp_path)


def test_progress_in_between_resets_the_count(tmp_path: Path) -> None:
    earlier = (
        STALL.format(n=0, r=1)
        + "2026-01-01T00:00:00 restart=1 rc=124 timeout after 228 minutes\n"
        + STALL.format(n=2, r=3)
    )
    _rc, _, calls, _ = stopped(tmp_path, restart_count="3", requeue_reasons=earlier)
    assert "scontrol requeue 77" in calls


def test_the_monitor_s_stop_file_stops_the_requeue(tmp_path: Path) -> None:
    logdir = tmp_path / "base" / "slurm-logs" / "dino-train-1-77"
    logdir.mkdir(parents=True)
    (logdir / "requeue.stop").write_text("not requeued again: runs 2 and 3 restarted\n")
    rc, _, calls, _ = stopped(tmp_path, env={"WRITE_CHECKPOINT": "1"})
    assert rc == 124 and "scontrol requeue" not in calls
    assert "not requeued: not requeued again: runs 2 and 3 restarted" in _stderr(tmp_path)


def test_a_failing_scontrol_is_said(tmp_path: Path) -> None:
    rc, _, _calls, _ = run_script(
        tmp_path,
        make_spec(),
        fake_rc="124",
        elapsed_seconds=FULL_TIMEOUT,
        env={"FAKE_SCONTROL_FAILS": "1"},
    )
    assert rc == 124
    assert "'scontrol requeue' failed" in _stderr(tmp_path)


def test_the_script_s_reason_becomes_the_job_s_message() -> None:
    from tao_slurm_tui.core.retry import classify

    lines = [
        "Epoch 3",
        "[tao-slurm-tui] the command ran for 228 minutes (timeout_hours) and was stopped",
        "[tao-slurm-tui] not requeued: runs 1 to 3 wrote no checkpoint in the 228 minutes of a "
        "slice, so every requeue restarts from the same epoch; lower train.checkpoint_interval "
        "or raise timeout_hours",
        "NCCL WARN NET/IB : Got completion from peer with error 12",
    ]
    decision = classify("FAILED", lines, 0)
    assert not decision.retry
    assert decision.reason.startswith("Not requeued: runs 1 to 3 wrote no checkpoint")
