"""A shell inside a running job: which node, the command, and the node's script run by a real
``sh`` (the container branch included: no container process here, so it says so)."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest

from tao_slurm_tui.core.job_shell import NODE_SCRIPT, ShellTarget, shell_command, shell_target
from tao_slurm_tui.core.models import Attempt, JobRecord, TaoStatus
from tao_slurm_tui.errors import BadInput


def _job(status: TaoStatus = TaoStatus.RUNNING, nodes: str = "gpu[01-02]") -> JobRecord:
    return JobRecord("dino", "p", status=status, attempts=[Attempt(0, "4242", nodes=nodes)])


def test_the_target_is_the_first_node_or_the_one_asked_for() -> None:
    target = shell_target(_job(), None, "pyxis")
    assert target == ShellTarget("dino", "4242", "gpu01", ("gpu01", "gpu02"), True)
    assert shell_target(_job(), "gpu02", "none").node == "gpu02"
    assert not shell_target(_job(), "gpu02", "none").container


def test_a_job_not_running_or_another_node_is_bad_input_with_what_to_do() -> None:
    with pytest.raises(BadInput, match="dino is Pending, not running: a shell opens only"):
        shell_target(_job(TaoStatus.PENDING, nodes=""), None, "pyxis")
    with pytest.raises(BadInput, match="is Complete, not running"):
        shell_target(_job(TaoStatus.COMPLETE), None, "pyxis")
    with pytest.raises(
        BadInput, match=r"does not run on gpu07; choose one of its nodes: gpu01, gpu02\."
    ):
        shell_target(_job(), "gpu07", "pyxis")


def test_the_command_is_one_overlapping_step_on_the_node_with_a_pty() -> None:
    command = shell_command(shell_target(_job(), "gpu02", "pyxis"))
    argv = shlex.split(command)
    assert argv[:8] == [
        "exec", "srun", "--overlap", "--jobid=4242", "--nodelist=gpu02", "--nodes=1",
        "--ntasks=1", "--pty",
    ]  # fmt: skip
    assert argv[8:10] == ["sh", "-c"] and argv[10] == NODE_SCRIPT
    assert argv[11:] == ["tao-shell", "4242", "gpu02", "1"]


def _node(tmp_path: Path, container: str) -> subprocess.CompletedProcess[str]:
    """The node's script under a real sh, its login shell a stand-in that shows how it ran."""
    shell = tmp_path / "login-shell"
    shell.write_text('#!/bin/sh\necho "login shell $*"\n')
    shell.chmod(0o755)
    env = {"PATH": os.environ["PATH"], "SHELL": str(shell), "HOME": str(tmp_path)}
    return subprocess.run(
        ["sh", "-c", NODE_SCRIPT, "tao-shell", "4242", "gpu01", container],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
        check=True,
    )


def test_without_a_container_the_script_opens_the_login_shell_in_the_allocation(
    tmp_path: Path,
) -> None:
    done = _node(tmp_path, "0")
    assert done.stdout == "login shell -l\n"
    assert done.stderr == "tao-slurm-tui: in the allocation of job 4242 on gpu01; exit to return.\n"


def test_a_pyxis_job_without_its_container_here_says_so_and_opens_a_shell_on_the_node(
    tmp_path: Path,
) -> None:
    done = _node(tmp_path, "1")
    assert done.stdout == "login shell -l\n"
    assert "no container of job 4242 runs on gpu01 (yet: is its image still being imported?)" in (
        done.stderr.replace("\n", " ")
    )
