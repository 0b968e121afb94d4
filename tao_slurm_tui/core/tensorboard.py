"""TensorBoard for a running TAO training, inside the job's own allocation (pure).

The step: ``srun --overlap --jobid=<id>`` on the job's first node (no GPU: ``--gres=none``),
in the job's image with its mounts when it runs under Pyxis, running ``tensorboard --logdir
<results_dir> --host <node> --port 0`` (TensorBoard picks a free port and says which on its
start line). The product then forwards a local port, bound to 127.0.0.1, over its one SSH
connection to ``<node>:<port>``. The step ends with the job (``--overlap`` steps are the job's).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tao_slurm_tui.core.models import JobRecord, TaoStatus
from tao_slurm_tui.core.quoting import join
from tao_slurm_tui.core.slurm_text import expand_nodelist
from tao_slurm_tui.errors import BadInput

STEP_NAME = "tao-tensorboard"
"""The step's name (``srun -J``): how :func:`stop_command` finds it."""

_START_RE = re.compile(r"TensorBoard \S+ at https?://([^\s:/]+):(\d{1,5})/")
"""TensorBoard's start line: ``TensorBoard 2.19.0 at http://tao-n3:44691/ (Press CTRL+C ...)``."""


@dataclass(frozen=True)
class TensorBoardStep:
    """Where and how TensorBoard runs for a job."""

    job_id: str
    slurm_job_id: str
    node: str
    logdir: str
    command: str


def tensorboard_step(job: JobRecord, logdir: str) -> TensorBoardStep:
    """The step that runs TensorBoard on ``logdir`` inside ``job``'s allocation.

    Raises:
        BadInput: the job is not running (TensorBoard runs in its allocation), or SLURM has not
            said where it runs yet.
    """
    attempt = job.latest
    if job.status is not TaoStatus.RUNNING or attempt is None:
        raise BadInput(
            f"{job.id} is {str(job.status).lower()}: TensorBoard runs inside a running job's "
            "allocation; open it while the job runs."
        )
    nodes = expand_nodelist(attempt.nodes) if attempt.nodes else []
    if not nodes:
        raise BadInput(f"SLURM has not said where {job.id} runs yet; press t again in a moment.")
    node = nodes[0]
    argv = [
        "srun",
        "--overlap",
        f"--jobid={attempt.slurm_job_id}",
        "--nodes=1",
        "--ntasks=1",
        f"--nodelist={node}",
        "--gres=none",
        f"--job-name={STEP_NAME}",
    ]
    plan = job.plan if isinstance(job.plan, dict) else {}
    if plan.get("runtime") == "pyxis" and plan.get("image"):
        argv.append(f"--container-image={plan['image']}")
        mounts = [str(m) for m in plan.get("mounts") or []]
        if mounts:
            argv.append(f"--container-mounts={','.join(mounts)}")
    argv += ["--", "tensorboard", "--logdir", logdir, "--host", node, "--port", "0"]
    return TensorBoardStep(job.id, attempt.slurm_job_id, node, logdir, join(argv))


def started_at(line: str) -> tuple[str, int] | None:
    """``(host, port)`` from TensorBoard's start line, or None for any other line."""
    match = _START_RE.search(line)
    if match is None:
        return None
    port = int(match.group(2))
    return (match.group(1), port) if 0 < port < 65536 else None


def stop_command(slurm_job_id: str) -> str:
    """Cancel the job's TensorBoard steps (the job itself goes on)."""
    steps = join(["squeue", "-h", "-s", "-j", slurm_job_id, "-o", "%i %j"])
    return f"{steps} 2>/dev/null | awk '$2 == \"{STEP_NAME}\" {{ print $1 }}' | xargs -r scancel"
