"""A shell inside a running job from the real app and CLI in a real terminal (tmux), on demo
mode's fake cluster: its ``srun --overlap --jobid --pty`` runs the node's script on a real
pseudo-terminal, so keys, the window size and the way back to the queue are the user's own."""

from __future__ import annotations

import sys
from pathlib import Path

from tao_slurm_tui.services.fakecluster.world import World
from tests.terminal.demo import start
from tests.terminal.tmux import Terminal


def _queue(terminal: Terminal) -> None:
    terminal.wait_for("set-up")  # demo mode's first start
    terminal.keys("Escape")
    terminal.wait_for("dino-train-1")


def test_the_shell_key_opens_a_shell_in_the_job_and_comes_back_to_the_queue(
    demo_home: Path, demo_world: World, demo_terminals: list[Terminal]
) -> None:
    terminal = start(demo_terminals, demo_home, [])
    _queue(terminal)
    terminal.keys("!")  # dino-train-1, the first row
    terminal.wait_for("in the allocation of job 1051 on gpu-a01; exit to return.")
    terminal.text("echo job=$SLURM_JOB_ID node=$SLURMD_NODENAME size=$(stty size)")
    terminal.keys("Enter")
    terminal.wait_for("job=1051 node=gpu-a01 size=30 100")
    terminal.resize(90, 28)
    terminal.text("stty size")
    terminal.keys("Enter")
    terminal.wait_for("28 90")
    terminal.text("exit")
    terminal.keys("Enter")
    # The queue as it was: the details of the same job (the Id column is off to the right at
    # 90 columns, and the toast covers the end of the details' first line).
    terminal.wait_for(
        "Back from the shell in dino-train-1", "Details", "dino-train-1  Running  ·  SLURM RUNNING"
    )
    # A pending job has no shell yet: a toast says so, nothing is suspended.
    terminal.keys("down")
    terminal.wait_for("yolo-finetune  Pending")
    terminal.keys("!")
    terminal.wait_for("yolo-finetune is Pending, not running")
    terminal.keys("C-q")
    assert terminal.wait_exit() == 0


def test_a_shell_that_fails_waits_for_a_key_before_the_queue_returns(
    demo_home: Path, demo_world: World, demo_terminals: list[Terminal]
) -> None:
    terminal = start(demo_terminals, demo_home, [])
    _queue(terminal)
    terminal.keys("!")
    terminal.wait_for("exit to return.")
    terminal.text("exit 3")
    terminal.keys("Enter")
    terminal.wait_for("the shell ended with exit status 3; press a key to return to the queue")
    terminal.keys("x")
    terminal.wait_for("Back from the shell in dino-train-1")
    terminal.keys("C-q")
    assert terminal.wait_exit() == 0


def test_the_shell_verb(demo_home: Path, demo_world: World, demo_terminals: list[Terminal]) -> None:
    terminal = start(demo_terminals, demo_home, ["shell", "dino-train-1"])
    terminal.wait_for("a shell in dino-train-1 (SLURM 1051) on gpu-a01, inside its container")
    terminal.wait_for("no container of job 1051 runs on gpu-a01")
    terminal.text("exit 5")
    terminal.keys("Enter")
    assert terminal.wait_exit() == 5  # the shell's own status, as ssh's
    pending = start(demo_terminals, demo_home, ["shell", "yolo-finetune"])
    assert pending.wait_exit() == 2
    assert "yolo-finetune is Pending, not running" in pending.stderr()
    elsewhere = start(demo_terminals, demo_home, ["shell", "dino-train-1", "--node", "gpu-b01"])
    assert elsewhere.wait_exit() == 2
    assert "does not run on gpu-b01; choose one of its nodes: gpu-a01." in elsewhere.stderr()
    piped = start(
        demo_terminals, demo_home, [], ARGV=f"{sys.executable} -m tao_slurm_tui shell x </dev/null"
    )
    assert piped.wait_exit() == 2
    assert "a shell needs an interactive terminal" in piped.stderr()
