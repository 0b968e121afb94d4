"""GPU use of running jobs: the one command, its answer as the sandbox's nvidia-smi stand-in and
SLURM 22.05 give it, and the idle runs that flag a job."""

from __future__ import annotations

import subprocess

import pytest

from tao_slurm_tui.core.gpu_usage import (
    GpuReport,
    GpuSample,
    IdleTracker,
    gpu_command,
    idle_words,
    parse_gpu_answer,
)

# What gpu_command's answer looks like on the sandbox (recorded): a two-node job, a job that
# ended, a node whose driver is gone, a step that timed out, MIG (utilisation unknown).
ANSWER = """\
@@tao-gpu:6533 0
tao-n1, 0, GPU-b9ee99c4-1b89-eb68-55fe-dea56d917800, 87, 30000, 81920, NVIDIA A100-SXM4-80GB
tao-n1, 1, GPU-a94553c1-b65a-66e9-31b5-4dfaea46c9f5, 0, 0, 81920, NVIDIA A100-SXM4-80GB
tao-n2, 0, GPU-a71f177a-8854-e8cf-7922-a8244e56cea4, 85, 29000, 81920, NVIDIA A100-SXM4-80GB
@@tao-gpu:99999999 1
srun: error: Unable to confirm allocation for job 99999999: Invalid job id specified
srun: Check SLURM_JOB_ID environment variable. Expired or invalid job 99999999
@@tao-gpu:7001 9
tao-n3, NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.
@@tao-gpu:7002 124
@@tao-gpu:7003 0
tao-n3, 0, GPU-0f, [N/A], 1024, 40192, NVIDIA H100 80GB HBM3 MIG 3g.40gb
"""  # noqa: E501 - recorded lines


def test_the_answer_gives_each_jobs_gpus_by_node_or_why_not() -> None:
    samples = parse_gpu_answer(ANSWER, 1000.0)
    two_nodes = samples["6533"]
    assert not two_nodes.problem
    assert [(g.node, g.index, g.utilization, g.memory_used) for g in two_nodes.gpus] == [
        ("tao-n1", 0, 87, 30000),
        ("tao-n1", 1, 0, 0),
        ("tao-n2", 0, 85, 29000),
    ]
    assert two_nodes.gpus[0].name == "NVIDIA A100-SXM4-80GB"
    assert two_nodes.gpus[0].memory_total == 81920
    assert not two_nodes.idle  # one GPU idle is not the job idle
    assert samples["99999999"].problem == "the job is not running any more"
    assert not samples["99999999"].gpus
    assert samples["7001"].problem == "nvidia-smi cannot reach the GPU driver on the job's nodes"
    assert samples["7002"].problem == "nvidia-smi did not answer within 20 s"
    mig = samples["7003"].gpus[0]
    assert mig.utilization is None and mig.name.endswith("MIG 3g.40gb")
    assert not mig.idle  # unknown is not idle


def test_a_missing_nvidia_smi_is_said_in_words() -> None:
    answer = "@@tao-gpu:5 0\ntao-n1, sh: 1: nvidia-smi: not found\n"
    assert parse_gpu_answer(answer, 0)["5"].problem == (
        "nvidia-smi is not installed on the job's nodes"
    )


def test_the_command_runs_every_step_side_by_side_each_bounded() -> None:
    command = gpu_command([("6533", 2), ("6534", 1)])
    assert command.count("timeout -k 5 20 srun --overlap") == 2
    assert "--jobid=6533 --nodes=2 --ntasks=2 --ntasks-per-node=1" in command
    assert "--jobid=6534 --nodes=1 --ntasks=1 --ntasks-per-node=1" in command
    assert command.count(" &\n") == 2 and "\nwait\n" in command
    assert "--query-gpu=index,uuid,utilization.gpu,memory.used,memory.total,name" in command
    with pytest.raises(ValueError):
        gpu_command([("6533; rm -rf ~", 1)])
    with pytest.raises(ValueError):
        gpu_command([("6533", 0)])


def test_the_command_frames_each_jobs_output_when_run_by_sh(tmp_path: object) -> None:
    # sh on this machine with stand-ins for timeout/srun: the framing and the exit statuses.
    command = gpu_command([("11", 1), ("12", 1)]).replace("timeout -k 5 20 srun", "fake_srun")
    script = (
        'fake_srun() { case "$*" in *jobid=11*) echo "n1, 0, G, 50, 10, 20, M";; '
        '*) echo "srun: error: Unable to confirm allocation for job 12: x" >&2; return 1;; '
        "esac; }\n" + command
    )
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=True)
    samples = parse_gpu_answer(out.stdout, 5.0)
    assert samples["11"].gpus[0].utilization == 50 and not samples["11"].problem
    assert samples["12"].problem == "the job is not running any more"


def _sample(at: float, *utils: int | None, problem: str = "") -> GpuSample:
    from tao_slurm_tui.core.gpu_usage import GpuReading

    gpus = tuple(GpuReading("n1", i, "M", u, 0, 100) for i, u in enumerate(utils))
    return GpuSample("42", at, gpus, problem)


def test_an_idle_run_starts_with_the_first_idle_sample_and_ends_with_a_busy_one() -> None:
    tracker = IdleTracker()
    tracker.record(_sample(0, 90, 80))
    assert tracker.idle_seconds("42") is None
    tracker.record(_sample(60, 0, 4))  # under 5 %: idle
    tracker.record(_sample(600, 1, 0))
    assert tracker.idle_seconds("42") == 540
    tracker.record(_sample(700, problem="nvidia-smi did not answer within 20 s"))
    assert tracker.idle_seconds("42") == 540  # unknown neither ends nor extends it
    assert tracker.latest("42") is not None and tracker.latest("42").problem  # type: ignore[union-attr]
    assert tracker.idle_over(500, {"42": "job-a"}) == {"job-a": 540}
    assert tracker.idle_over(600, {"42": "job-a"}) == {}
    tracker.record(_sample(800, 0, 30))  # one GPU busy: the job is working
    assert tracker.idle_seconds("42") is None
    tracker.keep_only([])
    assert tracker.latest("42") is None


def test_a_report_is_flagged_once_idle_at_least_the_limit() -> None:
    sample = _sample(0, 0)
    assert GpuReport("a", sample, 1800, 1800).flagged
    assert not GpuReport("a", sample, 1799, 1800).flagged
    assert not GpuReport("a", sample, 5000, None).flagged  # flagging off
    assert idle_words(59) == "under a minute" and idle_words(42 * 60) == "42 min"
    assert idle_words(125 * 60) == "2 h 05 min"
