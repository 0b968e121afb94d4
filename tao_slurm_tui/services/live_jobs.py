"""The back end's verbs about a live job: its GPUs, a shell inside it, why it waits.

:class:`LiveJobs` is a part of :class:`~tao_slurm_tui.services.cluster.ClusterBackend` (a
mixin, so the back end stays one object over one connection): each verb is one round trip on
the profile's connection (:mod:`~tao_slurm_tui.services.gpus`,
:mod:`~tao_slurm_tui.services.job_shell`, :mod:`~tao_slurm_tui.services.why_wait`).
"""

from __future__ import annotations

from functools import cached_property

from tao_slurm_tui.core.gpu_usage import GpuReport
from tao_slurm_tui.core.job_shell import ShellTarget, shell_target
from tao_slurm_tui.core.why_wait import WaitReport
from tao_slurm_tui.services.backend_part import BackendPart
from tao_slurm_tui.services.gpus import GpuWatch
from tao_slurm_tui.services.job_shell import LocalTerminal, open_shell
from tao_slurm_tui.services.why_wait import why_waiting


class LiveJobs(BackendPart):
    """GPU samples, a shell and why a job waits; a part of the back end."""

    @cached_property
    def gpus(self) -> GpuWatch:
        """GPU samples of the running jobs over the one connection."""
        return GpuWatch(self.conn, self.clock, lambda: self.config.settings.gpu_idle_minutes)

    async def gpu_report(self, job_id: str) -> GpuReport:
        """The job's GPUs now (one round trip)."""
        return await self.gpus.report_now(self.store.require(self._name, job_id))

    async def idle_gpu_jobs(self) -> dict[str, float]:
        """Running jobs idle at least the limit (a sweep when due: one round trip)."""
        # The monitor's copy of the jobs: read from the store only where it changed.
        return await self.gpus.sweep(self.monitor.jobs.jobs())

    def shell_target(self, job_id: str, node: str | None = None) -> ShellTarget:
        """Where a shell in the running job opens (its container: the runtime it was planned
        with; jobs stored before plans, the profile's)."""
        job = self.store.require(self._name, job_id)
        runtime = str(job.plan.get("runtime") or self._profile.container_runtime)
        return shell_target(job, node, runtime)

    async def open_shell(self, target: ShellTarget, terminal: LocalTerminal) -> int:
        """The shell on ``terminal`` until it exits (a pty over the one connection)."""
        return await open_shell(self.conn, target, terminal)

    async def why_pending(self, job_id: str) -> WaitReport:
        """Why the pending job waits (one round trip: sprio, sshare, squeue)."""
        job = self.store.require(self._name, job_id)
        return await why_waiting(self.conn, job, self._profile.user, self._profile.account)
