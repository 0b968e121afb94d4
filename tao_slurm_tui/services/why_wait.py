"""Why a pending job waits, asked of SLURM in one round trip (``sprio``, ``sshare``, ``squeue``).

Asked when the details pane shows a pending job, never in the poll (every ``sprio`` is a request
to the controller): :func:`why_waiting` sends :func:`~tao_slurm_tui.core.why_wait.why_command`
on the connection's shell and reads the answer with
:func:`~tao_slurm_tui.core.why_wait.parse_why`.
"""

from __future__ import annotations

from tao_slurm_tui.core.models import JobRecord, TaoStatus
from tao_slurm_tui.core.why_wait import MARK, WaitReport, parse_why, why_command
from tao_slurm_tui.errors import BadInput, OperationFailed
from tao_slurm_tui.remote.connection import FramedRemote


async def why_waiting(
    remote: FramedRemote, job: JobRecord, user: str, account: str = ""
) -> WaitReport:
    """What SLURM says about ``job``'s wait: its priority, factors, rank, the user's share
    (in the job's account, else ``account``: the profile's).

    Raises:
        BadInput: the job is not pending in SLURM.
        OperationFailed: the cluster could not be reached or did not answer.
    """
    latest = job.latest
    if job.status is not TaoStatus.PENDING or latest is None or not job.slurm_job_id.isdigit():
        raise BadInput(f"{job.id} is {job.status}, not waiting in the queue.")
    partition = latest.partition or str(job.spec.get("partition", ""))
    partitions = [p for p in partition.split(",") if p]
    result = await remote.run_framed(why_command(job.slurm_job_id, partitions, user))
    if MARK not in result.stdout:
        last = (result.stderr.strip().splitlines() or [f"exit status {result.exit_status}"])[-1]
        raise OperationFailed(f"Could not ask SLURM why {job.id} waits ({last}).")
    return parse_why(
        result.stdout,
        job.id,
        job.slurm_job_id,
        reason=job.reason,
        account=str(job.spec.get("account") or account),
    )
