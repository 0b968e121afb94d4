"""GPU use of the profile's running jobs, live: samples over the connection and idle runs.

:class:`GpuWatch` sends :func:`~tao_slurm_tui.core.gpu_usage.gpu_command` (one round trip, on
its own channel: a slow ``srun`` must not hold up the queue's poll on the shared shell) for the
job the details pane shows, every few seconds while it shows it, and for every running job
now and then (:meth:`GpuWatch.sweep`: a third of the idle limit, at least a minute), so that a
job whose GPUs sit idle is flagged in the queue even when nobody looks at it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tao_slurm_tui.core.gpu_usage import (
    MARK,
    STEP_TIMEOUT,
    GpuReport,
    GpuSample,
    IdleTracker,
    gpu_command,
    parse_gpu_answer,
)
from tao_slurm_tui.core.models import JobRecord, TaoStatus
from tao_slurm_tui.core.slurm_text import expand_nodelist
from tao_slurm_tui.errors import BadInput, OperationFailed
from tao_slurm_tui.remote.connection import Remote

MAX_JOBS = 16
"""Jobs one sweep samples at most (the ones looked at longest ago first)."""

MIN_SWEEP = 60.0
"""Shortest time between two sweeps over every running job (seconds)."""


def gpu_target(job: JobRecord) -> tuple[str, int] | None:
    """(SLURM id, node count) of a running job's latest attempt; None when it is not running
    on nodes (nothing to sample)."""
    latest = job.latest
    if job.status is not TaoStatus.RUNNING or latest is None or not job.slurm_job_id.isdigit():
        return None
    nodes = expand_nodelist(latest.nodes)
    return (job.slurm_job_id, len(nodes)) if nodes else None


class GpuWatch:
    """Samples and idle runs of the GPUs of one profile's running jobs."""

    def __init__(
        self, remote: Remote, clock: Callable[[], float], idle_minutes: Callable[[], float]
    ) -> None:
        """Create the watch (nothing is sent until asked).

        Args:
            remote: the profile's connection.
            clock: 'now' (the back end's clock: samples are stamped with it).
            idle_minutes: the settings' ``gpu_idle_minutes`` (read on every use: 0 turns
                flagging off).
        """
        self.remote = remote
        self.clock = clock
        self.idle_minutes = idle_minutes
        self.tracker = IdleTracker()
        """Each job's latest sample and idle run."""
        self._swept_at: float | None = None

    @property
    def idle_limit(self) -> float | None:
        """Seconds of idle GPUs after which a job is flagged (None: flagging is off)."""
        minutes = self.idle_minutes()
        return minutes * 60.0 if minutes > 0 else None

    async def sample(self, jobs: Sequence[JobRecord]) -> dict[str, GpuSample]:
        """One look at the GPUs of ``jobs`` (running ones; others are left out), one round trip.

        Returns:
            Each sampled job's sample, by TAO id.

        Raises:
            OperationFailed: the cluster could not be reached, or the command itself failed.
        """
        targets = {job.id: target for job in jobs if (target := gpu_target(job)) is not None}
        if not targets:
            return {}
        command = gpu_command(list(targets.values()))
        result = await self.remote.run(command, timeout=STEP_TIMEOUT + 15)
        if MARK not in result.stdout:
            last = (result.stderr.strip().splitlines() or [f"exit status {result.exit_status}"])[-1]
            raise OperationFailed(f"Could not read the GPUs' use on the cluster ({last}).")
        at = self.clock()
        samples = parse_gpu_answer(result.stdout, at)
        out: dict[str, GpuSample] = {}
        for job_id, (slurm_id, _nodes) in targets.items():
            sample = samples.get(slurm_id) or GpuSample(slurm_id, at, problem="no answer")
            self.tracker.record(sample)
            out[job_id] = sample
        return out

    def report(self, job: JobRecord) -> GpuReport | None:
        """What is known of ``job``'s GPUs (None: never sampled)."""
        sample = self.tracker.latest(job.slurm_job_id)
        if sample is None:
            return None
        idle = self.tracker.idle_seconds(job.slurm_job_id)
        return GpuReport(job.id, sample, idle, self.idle_limit)

    async def report_now(self, job: JobRecord) -> GpuReport:
        """Sample ``job`` now and report it.

        Raises:
            BadInput: the job is not running on nodes.
            OperationFailed: the cluster could not be reached.
        """
        if gpu_target(job) is None:
            raise BadInput(
                f"{job.id} is {job.status}, not running: GPU figures exist only while it runs."
            )
        await self.sample([job])
        report = self.report(job)
        assert report is not None
        return report

    async def sweep(self, jobs: Sequence[JobRecord]) -> dict[str, float]:
        """Sample every running job among ``jobs`` when a sweep is due; the jobs flagged idle.

        Due at most every third of the idle limit (at least :data:`MIN_SWEEP` seconds);
        in between (and with flagging off) nothing is sent.

        Returns:
            TAO id → seconds idle, of the jobs idle at least the limit.

        Raises:
            OperationFailed: the cluster could not be reached.
        """
        running = [job for job in jobs if gpu_target(job) is not None]
        self.tracker.keep_only(job.slurm_job_id for job in running)
        limit = self.idle_limit
        if limit is None or not running:
            return {}
        now = self.clock()
        if self._swept_at is None or now - self._swept_at >= max(MIN_SWEEP, limit / 3):
            self._swept_at = now

            def looked_at(job: JobRecord) -> float:
                sample = self.tracker.latest(job.slurm_job_id)
                return sample.at if sample is not None else float("-inf")

            await self.sample(sorted(running, key=looked_at)[:MAX_JOBS])
        return self.flagged(running)

    def flagged(self, jobs: Sequence[JobRecord]) -> dict[str, float]:
        """The jobs among ``jobs`` idle at least the limit (no network)."""
        limit = self.idle_limit
        if limit is None:
            return {}
        return self.tracker.idle_over(limit, {job.slurm_job_id: job.id for job in jobs})
