"""The remote layout of a job (docs/ARCHITECTURE.md)."""

from __future__ import annotations

import pytest

from tao_slurm_tui.core.layout import JobPaths


def test_contract_paths() -> None:
    p = JobPaths("/home/slurmtest/tao/", "dino-train-1")
    assert p.base == "/home/slurmtest/tao"
    assert p.spec_json == "/home/slurmtest/tao/specs/dino-train-1.json"
    assert p.env_json == "/home/slurmtest/tao/env/dino-train-1.json"
    assert p.meta_json == "/home/slurmtest/tao/meta/dino-train-1.json"
    assert p.entrypoint == "/home/slurmtest/tao/entrypoints/job_dino-train-1.sh"
    assert p.sbatch == "/home/slurmtest/tao/sbatch/job_dino-train-1.sbatch"
    assert p.results_root == "/home/slurmtest/tao/results"
    assert p.status_json == "/home/slurmtest/tao/results/dino-train-1/status.json"
    assert p.out_pattern == "/home/slurmtest/tao/slurm-logs/%x-%j/main.out"
    assert p.err_pattern == "/home/slurmtest/tao/slurm-logs/%x-%j/main.err"


def test_attempt_log_paths() -> None:
    p = JobPaths("/b", "job")
    assert p.log_dir("42") == "/b/slurm-logs/job-42"
    assert p.main_out("42") == "/b/slurm-logs/job-42/main.out"
    assert p.main_err("42;taotest") == "/b/slurm-logs/job-42/main.err"
    assert p.requeue_reason("42") == "/b/slurm-logs/job-42/requeue.reason"


def test_staging_dirs_cover_every_file() -> None:
    p = JobPaths("/b", "job")
    files = [p.spec_json, p.env_json, p.meta_json, p.entrypoint, p.sbatch, p.status_json]
    for file in files:
        assert file.rsplit("/", 1)[0] in p.staging_dirs
    assert p.logs_root in p.staging_dirs


def test_root_base() -> None:
    assert JobPaths("/", "j").sbatch == "/sbatch/job_j.sbatch"


@pytest.mark.parametrize(("base", "job"), [("rel", "j"), ("/b", ".."), ("/b", "a/b"), ("/b", "")])
def test_invalid(base: str, job: str) -> None:
    with pytest.raises(ValueError):
        JobPaths(base, job)


@pytest.mark.parametrize("slurm_id", ["", "abc", "1x;2", "../1"])
def test_invalid_slurm_ids(slurm_id: str) -> None:
    with pytest.raises(ValueError):
        JobPaths("/b", "j").log_dir(slurm_id)
