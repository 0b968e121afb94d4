"""One job's update within a monitor tick: what SLURM and the job's files say, merged.

The monitor makes a :class:`JobUpdate` for every job something new is known about, merges the
queue's answer into it (:meth:`JobUpdate.merge`), reads in a second round trip what a newly
finished job needs (:meth:`JobUpdate.add_reads`, :meth:`JobUpdate.take_answers`), decides, and
saves the copy when it differs from ``before``. Only the retry (a resubmission) and the store are
the monitor's: everything here works on the copy.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

from tao_slurm_tui.core import retry as retry_rules
from tao_slurm_tui.core.layout import JobPaths
from tao_slurm_tui.core.models import JobRecord, Progress, TaoStatus
from tao_slurm_tui.core.slurm import StateAction
from tao_slurm_tui.core.slurm_poll import SlurmSnapshot
from tao_slurm_tui.core.status_json import StatusJsonReader, StatusSummary, resolve_completed
from tao_slurm_tui.core.tao_outcome import failure_reason
from tao_slurm_tui.core.tick_reads import FinishedAnswers, FinishedReads, requeue_why
from tao_slurm_tui.services.accounting_followup import AccountingFollowUp

EventKind = Literal[
    "state", "finished", "failed", "canceled", "retried", "requeued", "error", "resume"
]


@dataclass(frozen=True)
class MonitorEvent:
    """Something that happened to a job during a tick (also written to the store's event log)."""

    job_id: str
    kind: EventKind
    text: str
    """One sentence for a notification."""


def copy_of(job: JobRecord) -> JobRecord:
    """A copy of ``job`` whose attempts and progress can be changed without touching it."""
    return replace(
        job,
        attempts=[replace(a) for a in job.attempts],
        progress=Progress.from_dict(job.progress.to_dict()),
    )


@dataclass
class JobUpdate:
    """One job within one tick: the record as it was, the copy being updated, what to read."""

    job: JobRecord
    """The copy being updated (replaced by the stored record after a retry)."""
    before: JobRecord
    """The record as the tick found it."""
    snap: SlurmSnapshot | None = None
    status_text: str | None = None
    """The tail of the job's ``status.json``, when read."""
    need_status: bool = False
    need_logs: bool = False
    need_requeue_reason: bool = False
    requeued_from: str = ""
    """Nodes the attempt ran on before SLURM requeued it (named in the event)."""
    out_tail: list[str] | None = None
    err_tail: list[str] | None = None
    requeue_reason: str = ""
    partition_nodes: int | None = None
    """Nodes in the failed attempt's partition (how many may be excluded on a retry)."""
    lost: bool = False
    """Neither squeue (answering) nor sacct knows the latest attempt any more: SLURM lost it."""
    events: list[MonitorEvent] = field(default_factory=list)

    @classmethod
    def of(cls, job: JobRecord, status_text: str | None) -> JobUpdate:
        """An update of ``job`` (a copy is changed, ``job`` stays as it was)."""
        return cls(job=copy_of(job), before=job, status_text=status_text)

    # ------------------------------------------------------------------ merge

    def merge(self, snap: SlurmSnapshot, accounting: AccountingFollowUp, max_retries: int) -> None:
        """Merge what SLURM says about the latest attempt (``snap``) into the copy."""
        self.snap = snap
        if self.status_text is not None:
            self.fold_status(self.status_text)
        if not snap.found:
            # sacct has no row for ~1 s after submit; keep what we had and ask again.
            return
        sid = self.job.attempts[-1].slurm_job_id
        if accounting.answers_probe(sid) and snap.source == "sacct" and not snap.terminal:
            self._take_restart_count(snap)
            return
        self._take_state(snap, accounting)
        mapped = snap.mapped
        if mapped.action is StateAction.UNKNOWN or mapped.status is None:
            return
        if snap.terminal and not snap.settled and accounting.still_unsettled(sid):
            # Wait for sacct to agree that it finished (a self-requeue passes through such
            # states); trust squeue anyway after a few ticks AND some seconds in case
            # accounting is down (ticks alone depend on the poll interval, not on the lag).
            return
        accounting.settled(sid)
        self._act_on_state(snap, max_retries)

    def _take_restart_count(self, snap: SlurmSnapshot) -> None:
        """The tick after a requeue asks sacct -D only for the restart count. slurmdbd lags by
        seconds and may still show the earlier run as RUNNING: taking that state would flip the
        job back to Running, and the next squeue PENDING would count the same requeue twice.
        squeue's state from the last tick stands."""
        attempt = self.job.attempts[-1]
        if snap.restarts > attempt.restarts:
            self.job.attempts[-1] = replace(attempt, restarts=snap.restarts)
            self.need_requeue_reason = True
            self.requeued_from = self.requeued_from or attempt.nodes

    def _take_state(self, snap: SlurmSnapshot, accounting: AccountingFollowUp) -> None:
        """SLURM's state, times and nodes into the latest attempt; a requeue is noticed."""
        attempt = self.job.attempts[-1]
        updated = snap.apply_to(attempt)  # drops waiting reasons once the job left PENDING
        if (
            attempt.state == "RUNNING"
            and snap.state in ("PENDING", "REQUEUED")
            and snap.source != "sacct"
        ):
            # Running → pending under the same id: SLURM requeued it (the batch script's
            # `scontrol requeue`, or --requeue after a node failure). sacct -D confirms the count.
            updated.restarts = max(updated.restarts, attempt.restarts + 1)
            accounting.probe(attempt.slurm_job_id)
        if updated.restarts > attempt.restarts:
            self.need_requeue_reason = True
            self.requeued_from = self.requeued_from or attempt.nodes
        self.job.attempts[-1] = updated
        self.job.slurm_state = snap.state

    def _act_on_state(self, snap: SlurmSnapshot, max_retries: int) -> None:
        """A settled state: the TAO status and message, or what must be read to decide them."""
        job, mapped = self.job, snap.mapped
        if mapped.action is StateAction.NEEDS_STATUS_JSON:
            if self.status_text is None:
                self.need_status = True
            else:
                self.complete()
            return
        if mapped.action is StateAction.MAYBE_RETRY:
            self.need_logs = True
            return
        assert mapped.status is not None
        job.status = mapped.status
        if mapped.status is TaoStatus.PENDING:
            job.message = snap.reason_text
        elif mapped.status is TaoStatus.RUNNING:
            job.message = job.progress.message or ""
        elif mapped.status is TaoStatus.PAUSED:
            job.message = f"SLURM suspended the job ({snap.state})."
        elif mapped.status is TaoStatus.CANCELED:
            job.message = f"The job was {snap.state.lower()} in SLURM."
        elif mapped.status is TaoStatus.ERROR:
            job.message = retry_rules.classify(
                snap.state, None, job.infra_retries, max_retries
            ).reason

    def fold_status(self, text: str) -> StatusSummary:
        """Fold ``status.json`` text into the progress (KPIs of earlier ticks are kept)."""
        reader = StatusJsonReader()
        entries = reader.feed(text.encode("utf-8"))
        entries += reader.flush()
        summary = StatusSummary()
        # Keep KPIs seen in earlier ticks: the tail only holds the latest lines.
        summary.progress = Progress.from_dict(self.job.progress.to_dict())
        summary.add(entries)
        self.job.progress = summary.progress
        return summary

    def complete(self) -> None:
        """COMPLETED in SLURM: ``status.json`` decides Complete or Error."""
        summary = self.fold_status(self.status_text or "")
        self.job.status, self.job.message = resolve_completed(summary.terminal, summary.message)

    def tao_failure(self) -> str:
        """Why TAO says the failed attempt failed: the FAILURE message of its ``status.json``
        (its progress is folded in too), else Hydra's refusal of the spec in the log (a spec
        error leaves no status.json); '' when neither says."""
        summary = self.fold_status(self.status_text or "")
        return failure_reason(summary.terminal, summary.message, self.log_tails)

    # ------------------------------------------------------------------ the second round trip

    @property
    def pending(self) -> bool:
        """True when the second round trip must read something for this job."""
        return self.need_status or self.need_logs or self.need_requeue_reason

    def add_reads(self, reads: FinishedReads, results_root: str) -> None:
        """Add what this job needs to the second round trip's reads."""
        job = self.job
        attempt = job.attempts[-1]
        paths = JobPaths(job.base_results_dir or results_root, job.id)
        reads.add(job.id)
        if self.need_status or self.need_logs:
            # A failed attempt's status.json holds TAO's FAILURE message (and its last epoch).
            reads.status[job.id] = paths.results_dir
        if self.need_logs:
            sid = attempt.slurm_job_id
            reads.logs[job.id] = (paths.main_out(sid), paths.main_err(sid))
            if attempt.partition:
                reads.partitions.add(attempt.partition.split(",")[0])
        if self.need_requeue_reason:
            reads.requeue[job.id] = paths.requeue_reason(attempt.slurm_job_id)

    def take_answers(self, answers: FinishedAnswers) -> None:
        """The second round trip's answers about this job."""
        jid = self.job.id
        if self.need_status or self.need_logs:
            self.status_text = answers.status.get(jid, "")
        if self.need_logs:
            self.out_tail = answers.out.get(jid)
            self.err_tail = answers.err.get(jid)
            partition = self.job.attempts[-1].partition.split(",")[0]
            self.partition_nodes = answers.partition_nodes.get(partition)
        if self.need_requeue_reason:
            self.requeue_reason = answers.requeue.get(jid, "")

    @property
    def log_tails(self) -> list[str] | None:
        """The failed attempt's log lines for the retry rules (None when neither was read)."""
        if self.out_tail is None and self.err_tail is None:
            return None
        return [*(self.out_tail or []), *(self.err_tail or [])]

    # ------------------------------------------------------------------ events

    def note_requeue(self) -> None:
        """SLURM requeued the job: the event says where it ran and why (the script's reason)."""
        job = self.job
        attempt = job.attempts[-1]
        why = requeue_why(self.requeue_reason)
        if why.startswith("timeout after"):
            # The script's timeout requeue: its own cap, not the infrastructure budget.
            job.attempts[-1] = replace(attempt, timeout_restarts=attempt.timeout_restarts + 1)
            attempt = job.attempts[-1]
        where = f" after it ran on {self.requeued_from}" if self.requeued_from else ""
        text = f"SLURM requeued job {attempt.slurm_job_id} (restart {attempt.restarts}){where}"
        job.message = text + (f": {why}" if why else ".")
        self.events.append(MonitorEvent(job.id, "requeued", job.message))

    def note_status_change(self, merged: JobRecord) -> None:
        """An event when ``merged`` (the copy this update merged into, even if a retry then
        replaced :attr:`job` with the stored record) has another TAO status than
        :attr:`before`; none for a plain state change after a retry, which the ``retried``
        event tells."""
        old, new = self.before.status, merged.status
        if new == old:
            return
        kind: EventKind = "state"
        if new is TaoStatus.COMPLETE:
            kind = "finished"
        elif new is TaoStatus.ERROR:
            kind = "failed"
        elif new is TaoStatus.CANCELED:
            kind = "canceled"
        text = f"{merged.id}: {old} → {new}" + (f" ({merged.message})" if merged.message else "")
        if kind != "state" or not any(e.kind == "retried" for e in self.events):
            self.events.append(MonitorEvent(merged.id, kind, text))
