"""The fake cluster's job steps: ``srun --overlap --jobid`` into a running job, and the
``nvidia-smi`` its nodes have.

A step joins a job as SLURM 22.05 does: the job must be running (else srun's own two error
lines and exit 1), the command runs once per node (``--nodes``/``--nodelist`` narrow it) with
the step's environment (``SLURM_JOB_ID``, ``SLURMD_NODENAME``, ``SLURM_STEP_GPUS``: every GPU of
the job on that node). ``nvidia-smi`` answers ``--query-gpu=... --format=csv[,noheader]
[,nounits]`` for those GPUs, with the load :meth:`~.world.World.gpu_load` set (idle
otherwise), and fails as without a driver outside a job step.
"""

from __future__ import annotations

import os
import subprocess
import sys

from tao_slurm_tui.services.fakecluster import engine
from tao_slurm_tui.services.fakecluster.engine import Job, State

MODELS = {"a100": ("NVIDIA A100-SXM4-80GB", 81920), "h100": ("NVIDIA H100 80GB HBM3", 81559)}
"""nvidia-smi's name and MiB of each GPU type of the fake nodes (others: 32 GiB)."""

UNITS = {"utilization.gpu": "%", "memory.used": "MiB", "memory.total": "MiB"}
NO_DRIVER = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
    "Make sure that the latest NVIDIA driver is installed and running."
)


def _option(argv: list[str], name: str) -> str:
    """The value of ``--name=V`` (or ``--name V``) among srun's options ('' when absent)."""
    for i, arg in enumerate(argv):
        if arg.startswith(f"{name}="):
            return arg.split("=", 1)[1]
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
    return ""


def _refuse(job_id: str, why: str) -> int:
    print(f"srun: error: Unable to confirm allocation for job {job_id}: {why}", file=sys.stderr)
    print(
        f"srun: Check SLURM_JOB_ID environment variable. Expired or invalid job {job_id}",
        file=sys.stderr,
    )
    return 1


def step(state: State, argv: list[str], command: list[str], base_env: dict[str, str]) -> int:
    """``srun --jobid=ID [--nodes=N] [--nodelist=L] ... COMMAND``: COMMAND on the job's nodes."""
    job_id = _option(argv, "--jobid")
    job: Job | None = state["jobs"].get(job_id)
    if job is None or not engine.live(job):
        return _refuse(job_id, "Invalid job id specified")
    if job["state"] != "RUNNING":
        return _refuse(job_id, "Job is pending execution")
    nodes = [n for n in str(job["node_list"]).split(",") if n]
    wanted = [n for n in _option(argv, "--nodelist").split(",") if n]
    if wanted:
        nodes = [n for n in nodes if n in wanted]
    count = _option(argv, "--nodes")
    if count.isdigit():
        nodes = nodes[: int(count)]
    gpus = ",".join(str(i) for i in range(int(job["gpus"])))
    status = 0
    for node in nodes:
        env = dict(base_env, TAO_FAKE_NODE=node, SLURMD_NODENAME=node, SLURM_JOB_ID=job_id)
        env.update(SLURM_STEP_ID="0", SLURM_STEP_GPUS=gpus, SLURM_JOB_GPUS=gpus)
        sys.stdout.flush()
        if len(nodes) == 1:
            os.execvpe(command[0], command, env)
        done = subprocess.run(command, env=env, check=False)
        status = status or done.returncode
    return status


def _gpu_rows(state: State, job: Job, node_name: str) -> list[dict[str, str]]:
    node = next((n for n in state["nodes"] if n["name"] == node_name), {"gpu_type": ""})
    name, total = MODELS.get(node["gpu_type"], (f"NVIDIA {node['gpu_type'].upper()}", 32768))
    count = int(job["gpus"])
    load: list[tuple[int, int]] = [(0, 0)] * count
    for line in state.get("gpu_load", {}).get(job["id"], []):
        which, util, used = line.split()
        if which == "all":
            load = [(int(util), int(used))] * count
        elif int(which) < count:
            load[int(which)] = (int(util), int(used))
    return [
        {
            "index": str(i),
            "uuid": f"GPU-{job['id']}-{node_name}-{i}",
            "name": name,
            "utilization.gpu": str(min(100, util)),
            "memory.used": str(min(used, total)),
            "memory.total": str(total),
        }
        for i, (util, used) in enumerate(load)
    ]


def nvidia_smi(state: State, argv: list[str]) -> int:
    """``nvidia-smi --query-gpu=FIELDS --format=csv[,noheader][,nounits]`` in a job step."""
    job = state["jobs"].get(os.environ.get("SLURM_JOB_ID", ""))
    node = os.environ.get("TAO_FAKE_NODE", "")
    if job is None or not node:
        print(NO_DRIVER)
        return 9
    fields = [f for f in _option(argv, "--query-gpu").split(",") if f]
    options = {o.strip() for o in _option(argv, "--format").split(",")}
    if not fields or "csv" not in options:
        print('"csv" is the only supported --format. See nvidia-smi -h for more information.')
        return 2
    rows = _gpu_rows(state, job, node)
    known = {"index", "uuid", "name", *UNITS}
    for field in fields:
        if field not in known:
            print(f'Field "{field}" is not a valid field to query.\n')
            return 2
    if "noheader" not in options:
        print(", ".join(f"{f} [{UNITS[f]}]" if f in UNITS else f for f in fields))
    for row in rows:
        values = [
            row[f] if "nounits" in options or f not in UNITS else f"{row[f]} {UNITS[f]}"
            for f in fields
        ]
        print(", ".join(values))
    return 0
