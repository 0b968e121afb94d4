"""What a tick decides about the jobs its merge left open: the second round trip for the jobs
that newly finished (their status.json and log tails, for all at once), then each job's requeue,
verdict and retry.

A failed attempt ends in Error with its reason (a full disk told with its figures, TAO's own
words, else :func:`~tao_slurm_tui.core.retry.classify`'s), or, for an infrastructure failure with
budget left, is resubmitted exactly once across processes (under :class:`~tao_slurm_tui.services.
locks.RetryLock`) under the same stable id, with its failed nodes excluded while the partition
has enough others. The :class:`~tao_slurm_tui.services.monitor.Monitor` owns one
:class:`Retrier`.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import replace
from typing import Protocol

from tao_slurm_tui.core import retry as retry_rules
from tao_slurm_tui.core.disk_space import (
    FULL,
    disk_full_kind,
    disk_full_line,
    disk_full_sentence,
    is_nearly_full,
    path_in,
    role_of,
)
from tao_slurm_tui.core.models import Attempt, JobRecord, TaoStatus
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.core.slurm_text import expand_nodelist
from tao_slurm_tui.core.tick_reads import (
    FinishedReads,
    finished_reads_command,
    parse_finished_reads,
)
from tao_slurm_tui.errors import TaoError
from tao_slurm_tui.remote.connection import FramedRemote, RemoteError
from tao_slurm_tui.services.disk_space import probe_space
from tao_slurm_tui.services.job_update import JobUpdate, MonitorEvent, copy_of
from tao_slurm_tui.services.locks import RetryLock
from tao_slurm_tui.services.store import JobStore

__all__ = ["Resubmit", "Retrier"]


class Resubmit(Protocol):
    """``Submitter.resubmit``: submit a new attempt of ``job`` exactly once and record it."""

    def __call__(
        self, job: JobRecord, *, exclude_nodes: Iterable[str] = (), reason: str = ""
    ) -> Awaitable[Attempt]: ...


class Retrier:
    """Reads what newly finished jobs need and decides on them (requeue, verdict, retry)."""

    def __init__(
        self,
        conn: FramedRemote,
        store: JobStore,
        profile_name: str,
        profile: Callable[[], Profile],
        *,
        lock: RetryLock,
        resubmit: Resubmit | None,
        max_retries: int,
    ) -> None:
        """Args:
        conn: the profile's one connection.
        store: the job store.
        profile_name: the profile's name.
        profile: the profile as it is now (the user may save an edit of it).
        lock: the cross-process retry/cancel lock.
        resubmit: ``Submitter.resubmit``; without it a failure ends in Error saying why.
        max_retries: retry budget per job (client retries plus SLURM requeues).
        """
        self.conn = conn
        self.store = store
        self.profile_name = profile_name
        self.profile = profile
        self.lock = lock
        self.resubmit = resubmit
        self.max_retries = max_retries

    async def read_finished(self, pending: list[JobUpdate]) -> None:
        """The second round trip: what the jobs that newly finished need, for all at once."""
        reads = FinishedReads()
        for w in pending:
            w.add_reads(reads, self.profile().results_root)
        nonce = secrets.token_hex(8)
        result = await self.conn.run_framed(
            finished_reads_command(reads, nonce), timeout=self.profile().command_timeout
        )
        try:
            answers = parse_finished_reads(result.stdout, reads, nonce)
        except ValueError:
            raise RemoteError(
                "Reading the logs of finished jobs was cut short; the next tick retries."
            ) from None
        for w in pending:
            w.take_answers(answers)

    async def settle(self, w: JobUpdate) -> None:
        """Decide on a job the merge left open: its requeue, its verdict, its retry."""
        merged = w.job
        if w.need_requeue_reason:
            w.note_requeue()
        if w.need_status:
            w.complete()
        if w.need_logs:
            await self._maybe_retry(w)
        elif w.lost:
            await self._retry(w, _lost_decision(w.job, self.max_retries), exclude=[])
        w.note_status_change(merged)

    async def _maybe_retry(self, w: JobUpdate) -> None:
        """A failed attempt: Error, or (infrastructure, budget left) resubmitted exactly once
        across processes under the same id, with the failed nodes excluded if the partition
        has enough others. Long because: the not-retried message and the resubmission
        under its lock are one sequence on the same job's record."""
        job = w.job
        attempt = job.attempts[-1]
        decision = retry_rules.classify(
            attempt.state, w.log_tails, job.infra_retries, self.max_retries
        )
        if not decision.retry:
            job.status = TaoStatus.ERROR
            # A full disk (its figures), TAO's own words, else the classification (a runtime
            # cause in its own words: no quoted line).
            quoted = f" ({decision.line})" if decision.line and not decision.field else ""
            disk = await self._full_disk(job, w.log_tails, decision)
            job.message = disk or w.tao_failure() or decision.reason + quoted
            return
        if self.resubmit is None:
            job.status = TaoStatus.ERROR
            job.message = (
                f"{decision.reason} (This monitor cannot resubmit, so it was not retried.)"
            )
            return
        needed = int(job.spec.get("num_nodes", 1) or 1)
        exclude = retry_rules.nodes_to_exclude(
            expand_nodelist(attempt.nodes), w.partition_nodes, needed
        )
        await self._retry(w, decision, exclude)

    async def _retry(
        self, w: JobUpdate, decision: retry_rules.RetryDecision, exclude: list[str]
    ) -> None:
        """Resubmit the job exactly once across processes (or end it in Error saying why)."""
        job = w.job
        attempt = job.attempts[-1]
        if not decision.retry or self.resubmit is None:
            job.status = TaoStatus.ERROR
            job.message = decision.reason + (
                " (This monitor cannot resubmit, so it was not retried.)" if decision.retry else ""
            )
            return
        async with self.lock.held():
            # Another process (the TUI, a CLI) may have retried or cancelled it meanwhile.
            current = self.store.get(self.profile_name, job.id)
            if (
                current is None
                or current.status.terminal
                or (current.attempts and current.attempts[-1].number != attempt.number)
            ):
                w.job = current or job
                w.before = copy_of(w.job)
                return
            self.store.save_attempt(
                self.profile_name, job.id, replace(attempt, retry_reason=decision.reason)
            )
            job = self.store.require(self.profile_name, job.id)
            try:
                new = await self.resubmit(job, exclude_nodes=exclude, reason=decision.reason)
            except TaoError as exc:
                w.job = job
                job.status = TaoStatus.ERROR
                job.message = f"{decision.reason} The resubmission failed: {exc}"
                return
        fresh = self.store.require(self.profile_name, job.id)
        fresh.status = TaoStatus.PENDING
        fresh.slurm_state = "PENDING"
        fresh.message = f"Retry {fresh.infra_retries} of {self.max_retries}: {decision.reason}"
        w.job = fresh
        text = (
            f"{job.id} was retried as SLURM job {new.slurm_job_id}"
            + (f" excluding {','.join(exclude)}" if exclude else "")
            + f": {decision.reason}"
        )
        w.events.append(MonitorEvent(job.id, "retried", text))

    async def _full_disk(
        self, job: JobRecord, tails: list[str] | None, decision: retry_rules.RetryDecision
    ) -> str:
        """The sentence for a job that failed writing to a full (or over-quota) file system:
        its log says so, or it says nothing (a full results file system also eats the log)
        and the file system under its results is full now. '' otherwise. One extra round trip,
        only for such a failure."""
        line = disk_full_line(tails or [])
        if not line and decision.family:
            return ""  # the log names another cause
        base = job.base_results_dir or self.profile().results_root
        path = path_in(line) or base
        space = await probe_space(self.conn, self.profile(), [path])
        usage = space.of(path)
        kind = disk_full_kind(line) if line else ""
        if not kind and not (usage is not None and is_nearly_full(usage)):
            return ""
        what = role_of(path, space, self.profile().results_root)
        told = disk_full_sentence(
            kind or FULL,
            space,
            path,
            what=what,
            then="free space there, then clone the job (e) and submit it again",
            user=self.profile().user,
        )
        return f"The job stopped because {told[0].lower()}{told[1:]}"


def _lost_decision(job: JobRecord, max_retries: int) -> retry_rules.RetryDecision:
    """A submitted attempt neither squeue nor sacct knows (SLURM lost it: a primary controller
    that crashed before saving its state forgets the jobs of its last seconds)."""
    what = (
        f"SLURM lost job {job.slurm_job_id}: its queue no longer knows it and its accounting "
        "has no end for it (a controller that failed over right after the submission forgets "
        "such jobs)"
    )
    if job.infra_retries >= max_retries:
        return retry_rules.RetryDecision(
            False, f"{what}, and the retry budget ({max_retries}) is used up; submit it again."
        )
    return retry_rules.RetryDecision(True, f"{what}; submitted again.", "lost by SLURM")
