"""The fake cluster's SLURM tools: one small program per call, answering in SLURM 22.05's formats.

The world puts a wrapper per tool on ``PATH`` (``squeue``, ``sacct``, ``sbatch``, ``scancel``,
``scontrol``, ``sinfo``, ``sacctmgr``, ``srun``, ``sprio``, ``sshare``, ``id``; ``hostname``,
``enroot`` and ``nvidia-smi`` on the compute node ``srun`` reaches); each starts ``python -IS`` on
:func:`main` with its name. Standard library only. They understand the flags the services
pass (explicit ``-O``/``-o``/``--format`` field lists, ``-P``, ``--delimiter``, ``-n``/``-h``,
``-X``, ``-D``, ``-j``, ``-u``, ``-t``, ``--name``, ``-S``/``-E``, ``--test-only``,
``--hold``, ...) and print what SLURM prints, errors on stderr with SLURM's words and exit
statuses. A test's failure switch (``World.fail``) makes a tool fail the way SLURM does when
its daemon is down.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from tao_slurm_tui.services.fakecluster import engine
from tao_slurm_tui.services.fakecluster.admin_tools import (
    enroot,
    hostname,
    sacctmgr,
    scontrol,
    sinfo,
    srun,
    user_id,
)
from tao_slurm_tui.services.fakecluster.batch_tools import sbatch, scancel
from tao_slurm_tui.services.fakecluster.engine import State
from tao_slurm_tui.services.fakecluster.node_tools import nvidia_smi
from tao_slurm_tui.services.fakecluster.priority_tools import sprio, sshare
from tao_slurm_tui.services.fakecluster.queue_tools import Usage, preamble, sacct, squeue

TOOLS: dict[str, Callable[[State, list[str]], int]] = {
    "squeue": squeue,
    "sacct": sacct,
    "sbatch": sbatch,
    "scancel": scancel,
    "scontrol": scontrol,
    "sinfo": sinfo,
    "sacctmgr": sacctmgr,
    "srun": srun,
    "id": user_id,
    "hostname": hostname,
    "enroot": enroot,
    "nvidia-smi": nvidia_smi,
    "sprio": sprio,
    "sshare": sshare,
}
"""Every tool the world puts on ``PATH``, by name."""

SLURM = {
    "squeue", "sacct", "sbatch", "scancel", "scontrol", "sinfo", "sacctmgr", "srun", "sprio",
    "sshare",
}  # fmt: skip
"""The tools that are SLURM's (``--version``, a daemon that can be down)."""

READ_ONLY = {"sinfo", "id", "hostname", "enroot", "sacctmgr", "nvidia-smi", "sprio", "sshare"}


def main(name: str) -> None:
    """Run tool ``name`` on ``sys.argv[1:]`` against the world of :data:`engine.WORLD_VARIABLE`."""
    argv = sys.argv[1:]
    runs_command = name == "srun" and "--help" not in argv and "--version" not in argv
    try:
        with engine.locked(engine.world_dir(), write=name not in READ_ONLY) as state:
            if name not in READ_ONLY:
                engine.catch_up(state)
            answered = preamble(state, name, argv) if name in SLURM else None
            if answered is not None:
                rc, runs_command = answered, False
            else:
                rc = 0 if runs_command else TOOLS[name](state, argv)
    except Usage as exc:
        print(str(exc), file=sys.stderr)
        sys.exit(1)
    sys.stdout.flush()
    if runs_command:
        # A compute node runs the command (after the state lock is let go).
        rc = srun(state, argv)
    sys.exit(rc)
