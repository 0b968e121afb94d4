"""The back end's verbs about trainings: their runs and KPI series, runs side by side, TensorBoard.

:class:`TrainingViews` is a part of :class:`~tao_slurm_tui.services.cluster.ClusterBackend` (a
mixin, so the back end stays one object over one connection): the runs come from the monitor's
:class:`~tao_slurm_tui.services.run_follow.RunFollower`, the comparison reads the experiment
specs in one command, TensorBoard runs over the same connection
(:mod:`~tao_slurm_tui.services.tensorboard`).
"""

from __future__ import annotations

import contextlib
import secrets
from functools import cached_property

from tao_slurm_tui.core.compare import Comparison, column, compare
from tao_slurm_tui.core.job_runs import JobRuns
from tao_slurm_tui.core.run_reads import experiment_reads_command, parse_experiment_reads
from tao_slurm_tui.errors import BadInput
from tao_slurm_tui.remote.connection import RemoteError
from tao_slurm_tui.services.backend_part import BackendPart
from tao_slurm_tui.services.run_follow import training_dir
from tao_slurm_tui.services.tensorboard import TensorBoards


class TrainingViews(BackendPart):
    """Runs, comparisons and TensorBoard; a part of the back end."""

    async def job_runs(self, job_ids: list[str]) -> dict[str, JobRuns]:
        """The trainings' runs, KPI series and forecasts (read up to now first)."""
        jobs = [self.store.require(self._name, job_id) for job_id in job_ids]
        follower = self.monitor.runs
        # What is stored is still worth showing; the poll says when the cluster is away.
        with contextlib.suppress(RemoteError):
            await follower.catch_up(
                self.conn, follower.behind(jobs), timeout=self._profile.command_timeout
            )
        now = self.clock()
        out = {}
        for job_id in job_ids:
            job = self.store.require(self._name, job_id)
            record = follower.record(job_id)
            out[job_id] = JobRuns.of(job, record.ledger, follower.points(job_id), now)
        return out

    async def compare(self, job_ids: list[str]) -> Comparison:
        """The jobs' spec differences and KPIs (one command reads the experiment specs)."""
        ids = list(dict.fromkeys(i.strip() for i in job_ids if i.strip()))
        if len(ids) < 2:
            raise BadInput("Compare needs two or more different job ids, e.g. 'compare a b'.")
        jobs = [self.store.require(self._name, job_id) for job_id in ids]
        runs = await self.job_runs(ids)
        root = self._profile.results_root
        nonce = secrets.token_hex(8)
        command = experiment_reads_command({j.id: training_dir(j, root) for j in jobs}, nonce)
        notes: list[str] = []
        specs: dict[str, str] = {}
        try:
            result = await self.conn.run_framed(command, timeout=self._profile.command_timeout)
            specs = parse_experiment_reads(result.stdout, ids, nonce)
        except (RemoteError, ValueError) as exc:
            notes.append(f"The experiment specs could not be read ({exc}); compared as submitted.")
        columns = [column(job, runs[job.id], specs.get(job.id)) for job in jobs]
        notes += [
            f"{c.job_id}: no experiment spec found, compared as submitted."
            for c in columns
            if c.source == "submitted spec"
        ]
        return compare(columns, notes)

    @cached_property
    def tensorboards(self) -> TensorBoards:
        """TensorBoard sessions over the one connection."""
        return TensorBoards(self.conn)

    async def start_tensorboard(self, job_id: str) -> str:
        """TensorBoard for a running training; its local URL."""
        job = self.store.require(self._name, job_id)
        logdir = training_dir(job, self._profile.results_root)
        return (await self.tensorboards.start(job, logdir)).url

    async def stop_tensorboard(self, job_id: str) -> bool:
        """Stop the job's TensorBoard."""
        return await self.tensorboards.stop(job_id)

    def tensorboard_url(self, job_id: str) -> str | None:
        """The job's TensorBoard URL while it runs."""
        session = (
            self.tensorboards.sessions.get(job_id) if "tensorboards" in self.__dict__ else None
        )
        return session.url if session is not None else None
