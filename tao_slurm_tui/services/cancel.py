"""Cancelling jobs: one ``scancel`` for every SLURM id involved, then each record ends Canceled.

Used by the monitor for the user's cancel (a job, a pipeline) and for the steps of a pipeline
that can no longer start. Every cancel runs under the cross-process retry lock
(:class:`~tao_slurm_tui.services.locks.RetryLock`), so a job is never retried while it is being
cancelled, in this process or another.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from tao_slurm_tui.core.models import JobRecord, TaoStatus
from tao_slurm_tui.core.quoting import join
from tao_slurm_tui.errors import BadInput, OperationFailed
from tao_slurm_tui.remote.connection import Remote
from tao_slurm_tui.services.locks import RetryLock
from tao_slurm_tui.services.store import JobStore

BY_THE_USER = "Canceled by the user."
"""The message of a job the user cancelled."""


class Canceller:
    """Cancels jobs of one profile."""

    def __init__(
        self,
        conn: Remote,
        store: JobStore,
        profile_name: str,
        *,
        lock: RetryLock,
        timeout: Callable[[], float],
        reconcile: Callable[[str], Awaitable[bool]],
    ) -> None:
        """Cancel nothing yet.

        Args:
            conn: the profile's connection.
            store: the job store.
            profile_name: the profile's name.
            lock: the cross-process retry/cancel lock.
            timeout: the command timeout (read at every call).
            reconcile: reconciles one "submitting" record a dead submit left (by job id), so a
                cancel never leaves its SLURM job running.
        """
        self.conn = conn
        self.store = store
        self.profile_name = profile_name
        self.lock = lock
        self.timeout = timeout
        self.reconcile = reconcile

    async def cancel(self, job_id: str) -> JobRecord:
        """scancel every SLURM id of the job (all attempts, a pending SQSH conversion) in one
        command; ids SLURM no longer knows count as success. The job ends Canceled.

        A step of a pipeline takes the steps after it along (same command): they end Canceled
        with the reason "the previous step was canceled". A job that already finished is
        returned unchanged.

        Raises:
            BadInput: no such job.
            OperationFailed: SLURM refused (e.g. not your job).
            RemoteError: the cluster could not be reached.
        """
        async with self.lock.held():
            job = await self._settled_record(job_id)
            if job.status.terminal:
                return job
            later = [
                step
                for step in self.store.pipeline(self.profile_name, job.pipeline_id)
                if step.pipeline_step > job.pipeline_step and not step.status.terminal
            ]
            why = f"Canceled: the previous step was canceled ({job.id})."
            await self.scancel([(job, BY_THE_USER), *((s, why) for s in later)])
            return self.store.require(self.profile_name, job_id)

    async def cancel_pipeline(self, pipeline_id: str) -> list[JobRecord]:
        """Cancel every step of a pipeline that has not ended, in one ``scancel``.

        Returns:
            Every step of the pipeline as it is now, in order.

        Raises:
            BadInput: no pipeline has this id.
            OperationFailed: SLURM refused (e.g. not your job).
            RemoteError: the cluster could not be reached.
        """
        async with self.lock.held():
            steps = self.store.pipeline(self.profile_name, pipeline_id)
            if not steps:
                raise BadInput(
                    f"There is no pipeline '{pipeline_id}' in profile '{self.profile_name}'; "
                    "run 'tao-slurm-tui status' to list the pipelines."
                )
            alive = [await self._settled_record(s.id) for s in steps if not s.status.terminal]
            why = "Canceled by the user (the whole pipeline)."
            await self.scancel([(s, why) for s in alive if not s.status.terminal])
            return self.store.pipeline(self.profile_name, pipeline_id)

    async def _settled_record(self, job_id: str) -> JobRecord:
        """The stored job; a submit that died after sbatch is reconciled first (its SLURM job
        found by name), or a cancel would leave it running."""
        job = self.store.require(self.profile_name, job_id)
        if not job.submitted and not job.status.terminal:
            await self.reconcile(job_id)
            job = self.store.require(self.profile_name, job_id)
        return job

    async def scancel(self, jobs: Sequence[tuple[JobRecord, str]]) -> None:
        """scancel every SLURM id of ``jobs`` in one command, then mark each Canceled with its
        message. Call while holding :attr:`lock`.

        Raises:
            OperationFailed: SLURM refused.
            RemoteError: the cluster could not be reached (nothing was marked).
        """
        ids = list(dict.fromkeys(sid for job, _ in jobs for sid in _slurm_ids(job)))
        if ids:
            result = await self.conn.run(join(["scancel", *ids]), timeout=self.timeout())
            if not result.ok:
                detail = result.stderr.strip().splitlines()[-1:] or [
                    f"exit status {result.exit_status}"
                ]
                names = ", ".join(job.id for job, _ in jobs)
                raise OperationFailed(
                    f"scancel refused to cancel {names} ({detail[0]}); check that the job "
                    "belongs to you and try again."
                )
        for job, message in jobs:
            own = _slurm_ids(job)
            self.store.update_job(
                self.profile_name,
                job.id,
                status=TaoStatus.CANCELED,
                slurm_state="CANCELLED" if own else job.slurm_state,
                message=message,
            )
            self.store.add_event(
                self.profile_name,
                job.id,
                "cancel",
                (f"scancel {' '.join(own)}" if own else "canceled before submission")
                + ("" if message == BY_THE_USER else f": {message}"),
            )


def _slurm_ids(job: JobRecord) -> list[str]:
    """Every SLURM id of ``job``: its attempts' and a pending SQSH conversion's."""
    ids = [a.slurm_job_id for a in job.attempts if a.slurm_job_id]
    if job.sqsh_job_id:
        ids.append(job.sqsh_job_id)
    return ids
