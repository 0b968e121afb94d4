"""Keeping a pipeline moving after a monitor tick changed one of its steps.

From the stored records only (no remote command unless something must change):

* a step after one that ended Error or Canceled is cancelled (``scancel``) and ends Canceled
  with "the previous step failed": SLURM would leave it pending forever with
  ``DependencyNeverSatisfied``;
* a step held with ``DependencyNeverSatisfied`` behind a step that was retried under a new
  SLURM id is re-pointed at the retry (``scontrol update JobId=<step>
  Dependency=afterok:<new id>``): SLURM never re-evaluates a failed dependency.
"""

from __future__ import annotations

import itertools
import logging
import secrets
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from tao_slurm_tui.core.models import JobRecord, TaoStatus
from tao_slurm_tui.core.quoting import join, quote
from tao_slurm_tui.core.tick_reads import marker, script
from tao_slurm_tui.errors import TaoError
from tao_slurm_tui.remote.connection import Remote
from tao_slurm_tui.services.cancel import Canceller
from tao_slurm_tui.services.job_update import MonitorEvent
from tao_slurm_tui.services.store import JobStore

log = logging.getLogger(__name__)

NEVER_SATISFIED = "DependencyNeverSatisfied"
"""squeue's reason for a job whose ``afterok`` job failed: SLURM holds it forever."""

_FAILED_STATES = frozenset(
    {"FAILED", "NODE_FAIL", "BOOT_FAIL", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "DEADLINE"}
)


@dataclass
class PipelineMoves:
    """What following the pipelines did (for the tick's result)."""

    events: list[MonitorEvent] = field(default_factory=list)
    """One per step that changed: ``canceled``, or ``state`` (re-pointed)."""
    warning: str = ""
    """Why a move failed (the next tick tries again)."""
    touched: set[str] = field(default_factory=set)
    """Ids of the steps written to the store."""


class PipelineFollower:
    """Cancels the doomed steps and re-points the stranded ones of one profile's pipelines."""

    def __init__(
        self,
        conn: Remote,
        store: JobStore,
        profile_name: str,
        *,
        canceller: Canceller,
        timeout: Callable[[], float],
    ) -> None:
        self.conn = conn
        self.store = store
        self.profile_name = profile_name
        self.canceller = canceller
        self.timeout = timeout

    async def follow(self, jobs: Iterable[JobRecord]) -> PipelineMoves:
        """Decide on ``jobs`` (every job of the profile) and make the moves, under the lock."""
        moves = PipelineMoves()
        doomed, repoint = self._decide(jobs)
        if not doomed and not repoint:
            return moves
        async with self.canceller.lock.held():
            # Another process may have acted meanwhile: decide again on the stored records.
            doomed = [
                (fresh, why)
                for job, why in doomed
                if (fresh := self.store.get(self.profile_name, job.id)) is not None
                and not fresh.status.terminal
            ]
            if doomed:
                try:
                    await self.canceller.scancel(doomed)
                except TaoError as exc:
                    moves.warning = f"cancelling a pipeline's steps: {exc}"
                else:
                    for job, why in doomed:
                        moves.events.append(MonitorEvent(job.id, "canceled", f"{job.id}: {why}"))
            if repoint:
                await self._repoint(repoint, moves)
        moves.touched = {job.id for job, _ in (*doomed, *repoint)}
        return moves

    def _decide(
        self, jobs: Iterable[JobRecord]
    ) -> tuple[list[tuple[JobRecord, str]], list[tuple[JobRecord, str]]]:
        """(steps to cancel with why, steps to re-point with the SLURM id to wait for)."""
        doomed: list[tuple[JobRecord, str]] = []
        repoint: list[tuple[JobRecord, str]] = []
        pipelines: dict[str, list[JobRecord]] = {}
        for job in jobs:
            if job.pipeline_id:
                pipelines.setdefault(job.pipeline_id, []).append(job)
        for steps in pipelines.values():
            steps.sort(key=lambda j: j.pipeline_step)
            failed: JobRecord | None = None
            for previous, step in itertools.pairwise(steps):
                if failed is None and previous.status in (TaoStatus.ERROR, TaoStatus.CANCELED):
                    failed = previous
                if step.status.terminal or not step.submitted or not step.attempts:
                    continue
                if failed is not None:
                    doomed.append((step, pipeline_failed(failed)))
                elif (target := repoint_target(previous, step)) and not self._repointed(
                    step, target
                ):
                    repoint.append((step, target))
        return doomed, repoint

    def _repointed(self, step: JobRecord, target: str) -> bool:
        return any(
            e.kind == "dependency" and e.text.endswith(f"afterok:{target}")
            for e in self.store.events(self.profile_name, step.id)
        )

    async def _repoint(self, moves: Sequence[tuple[JobRecord, str]], out: PipelineMoves) -> None:
        """``scontrol update JobId=<step> Dependency=afterok:<target>`` for every move, in one
        command; each move that worked is written to the step's event log."""
        parts = [
            join(["scontrol", "update", f"JobId={step.slurm_job_id}", f"Dependency=afterok:{to}"])
            + f' 2>&1; printf "%s%s %s\\n" "$M" {quote(step.id)} "$?"'
            for step, to in moves
        ]
        nonce = secrets.token_hex(8)
        try:
            result = await self.conn.run(script(parts, nonce), timeout=self.timeout())
        except TaoError as exc:
            out.warning = out.warning or f"re-pointing a pipeline's dependency: {exc}"
            return
        codes: dict[str, str] = {}
        mark = marker(nonce)
        for line in result.stdout.split("\n"):
            if line.startswith(mark):
                job_id, _, code = line[len(mark) :].rpartition(" ")
                codes[job_id] = code.strip()
        for step, target in moves:
            if codes.get(step.id) != "0":
                log.warning(
                    "re-pointing %s at %s failed: %s", step.id, target, result.stdout[-300:]
                )
                continue
            text = (
                f"the previous step was retried as SLURM job {target}: SLURM job "
                f"{step.slurm_job_id} now waits for it: Dependency=afterok:{target}"
            )
            self.store.add_event(self.profile_name, step.id, "dependency", text)
            self.store.update_job(
                self.profile_name, step.id, message="Waiting for the retried previous step."
            )
            out.events.append(MonitorEvent(step.id, "state", f"{step.id}: {text}"))


def pipeline_failed(failed: JobRecord) -> str:
    """The message of a step cancelled because ``failed`` (an earlier step) did not complete."""
    if failed.status is TaoStatus.CANCELED:
        return f"Canceled: the previous step was canceled ({failed.id})."
    return f"Canceled: the previous step failed ({failed.id} ended {failed.status})."


def repoint_target(previous: JobRecord, step: JobRecord) -> str:
    """The SLURM id ``step`` must wait for instead, or '' when its dependency is fine.

    Only a step SLURM holds with ``DependencyNeverSatisfied`` is moved, and only onto an
    attempt of the previous step that has not failed (a retry, or the one that completed).
    """
    if step.status is not TaoStatus.PENDING or NEVER_SATISFIED not in step.reason:
        return ""
    latest = previous.latest
    if (
        latest is None
        or not latest.slurm_job_id
        or (previous.status.terminal and (previous.status is not TaoStatus.COMPLETE))
    ):
        return ""
    if latest.number == 0 and previous.status is not TaoStatus.COMPLETE:
        return ""  # the step was not retried: nothing to move to (yet)
    if latest.state.split(" ")[0] in _FAILED_STATES:
        return ""
    return latest.slurm_job_id
