"""A shell inside a running job: which node, and the one command that opens it there.

Pure. :func:`shell_target` checks the job and the node the user asked for;
:func:`shell_command` is what runs on the login host under a pty:
``srun --overlap --jobid ID --nodelist NODE --pty`` (a step sharing the job's CPUs, memory and
GPUs instead of waiting for free ones) running a small ``sh`` script on the node that, for a
Pyxis job, joins the container of the job's step and otherwise starts the user's login shell.

Joining the container: Pyxis 0.24 attaches a new step to a running container only by name
(``--container-name=NAME:exec``, looked up with ``enroot list -f``), and our jobs' step
containers are unnamed on purpose (a named container outlives the job under Pyxis'
``container_scope=global`` and a requeued job would reuse its file system). So the script does
what ``enroot exec`` is for: it finds a process of the job's step on this node inside an enroot
container (``/proc/PID/root/.lock``, enroot's own mark, with ``SLURM_JOB_ID`` and
``SLURMD_NODENAME`` of this job and node in its environment) and runs ``enroot exec PID`` on it,
which enters that process's namespaces with its environment and working directory, as Pyxis
does for the step's own tasks. When there is none (the image is still being imported, or a
job without a container), the shell opens on the node and says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from tao_slurm_tui.core import quoting
from tao_slurm_tui.core.models import JobRecord, TaoStatus
from tao_slurm_tui.core.slurm_text import expand_nodelist
from tao_slurm_tui.errors import BadInput

NOTE = "tao-slurm-tui:"
"""How the script's own lines start on the terminal (before the shell's prompt)."""


@dataclass(frozen=True)
class ShellTarget:
    """Where a shell opens: a node of a running job, in its container or not."""

    job_id: str
    """The TAO job."""
    slurm_job_id: str
    """Its running SLURM job (the latest attempt)."""
    node: str
    """The node the shell opens on."""
    nodes: tuple[str, ...]
    """Every node of the job (the user may choose another)."""
    container: bool
    """The job runs in a Pyxis container: the shell joins it."""


def shell_target(job: JobRecord, node: str | None, runtime: str) -> ShellTarget:
    """Where a shell in ``job`` opens: ``node`` (None: its first node).

    Args:
        job: The job (its latest attempt must be running on nodes).
        node: The node asked for (``--node``).
        runtime: The job's container runtime (``pyxis`` or ``none``).

    Raises:
        BadInput: the job is not running, or ``node`` is not one of its nodes.
    """
    latest = job.latest
    nodes = tuple(expand_nodelist(latest.nodes)) if latest is not None else ()
    if job.status is not TaoStatus.RUNNING or not nodes or not job.slurm_job_id.isdigit():
        raise BadInput(
            f"{job.id} is {job.status}, not running: a shell opens only inside a running job "
            "(wait until it runs, or run 'tao-slurm-tui status' to see where it is)."
        )
    if node is not None and node not in nodes:
        raise BadInput(
            f"{job.id} does not run on {node}; choose one of its nodes: {', '.join(nodes)}."
        )
    return ShellTarget(job.id, job.slurm_job_id, node or nodes[0], nodes, runtime == "pyxis")


NODE_SCRIPT = r"""job=$1 node=$2 container=$3
if [ "$container" = 1 ]; then
  pid=
  for d in /proc/[0-9]*; do
    [ -O "$d" ] && [ -e "$d/root/.lock" ] || continue
    env=$(tr '\0' '\n' < "$d/environ" 2>/dev/null) || continue
    printf '%s\n' "$env" | grep -qx "SLURM_JOB_ID=$job" || continue
    printf '%s\n' "$env" | grep -qx "SLURMD_NODENAME=$node" || continue
    pid=${d#/proc/}
    break
  done
  if [ -n "$pid" ] && command -v enroot >/dev/null 2>&1; then
    echo "NOTE inside the container of job $job on $node; exit to return." >&2
    exec enroot exec --env TERM "$pid" sh -c \
      'if command -v bash >/dev/null 2>&1; then exec bash -i; else exec sh -i; fi'
  fi
  echo "NOTE no container of job $job runs on $node (yet: is its image still being \
imported?); this shell is on the node, outside it." >&2
fi
echo "NOTE in the allocation of job $job on $node; exit to return." >&2
exec "${SHELL:-/bin/sh}" -l
""".replace("NOTE", NOTE)
"""What runs on the node (``sh -c SCRIPT tao-shell JOB NODE CONTAINER``)."""


def shell_command(target: ShellTarget) -> str:
    """The command run on the login host under a pty: one ``srun --overlap --pty`` step on the
    target node running :data:`NODE_SCRIPT`."""
    argv = [
        "srun", "--overlap", f"--jobid={target.slurm_job_id}", f"--nodelist={target.node}",
        "--nodes=1", "--ntasks=1", "--pty",
        "sh", "-c", NODE_SCRIPT, "tao-shell",
        target.slurm_job_id, target.node, "1" if target.container else "0",
    ]  # fmt: skip
    return "exec " + quoting.join(argv)
