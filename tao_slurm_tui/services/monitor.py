"""The poller: one round trip per tick for every active job of a profile, TAO status, auto-retry.

One :meth:`Monitor.tick`:

1. loads the profile's non-terminal, submitted jobs from the store (so a restarted app or CLI
   carries on where the last one stopped, retries included);
2. sends ONE remote command on the connection's long-lived shell (``run_framed``: one network
   round trip): :func:`~tao_slurm_tui.core.slurm_poll.queue_command` (``squeue -u <me> -t all``: the
   user's live jobs and the ones slurmctld still keeps after they ended, the same command for
   1 or 1,000 tracked jobs, filtered here), followed in the same shell by a single
   ``tail -v -c`` of the ``status.json`` of the jobs last seen running (progress, and the
   verdict if one just ended);
3. merges squeue with the accounting (``sacct -X -D``) rows a background follow-up fetched
   (:func:`~tao_slurm_tui.core.slurm_poll.merge`): sacct is never awaited by the tick. It is asked,
   in one batched call on its own channel, only about ids that need it: squeue no longer lists
   them (ended while the client was off), squeue says they ended but accounting has not agreed
   yet, or a requeue whose restart count it confirms. The follow-up's rows are used by the next
   tick; :meth:`Monitor.wait_followup` lets the caller run that tick as soon as they land. No
   sacct row yet or a transient ``allocation`` row → the previous state stays; a finished state
   is acted on only once sacct agrees (``settled``), because a job SLURM requeues itself
   (``--requeue`` on NODE_FAIL, or the batch script's ``scontrol requeue``) passes through
   such states and comes back PENDING under the same id;
4. only when a job newly finished and needs more: ONE extra round trip for all of them together
   (``status.json`` of COMPLETED jobs that were not read in step 2; the last 500 lines of
   ``main.out``/``main.err`` of failed attempts for :func:`~tao_slurm_tui.core.retry.classify`;
   the partition size for ``--exclude``);
5. retries what :func:`~tao_slurm_tui.core.retry.classify` says is an infrastructure failure,
   through ``resubmit`` (the submitter's exactly-once resubmission), under the same stable id,
   with the failed nodes excluded while the partition has enough others. The batch script's own
   requeues (``sacct -D`` rows, ``Attempt.restarts``) count against the same budget, and a
   failure the script requeued never reaches a finished state, so it is never retried twice.
   A file lock next to the state DB makes the decide-and-resubmit step exclusive across
   processes (the TUI and a CLI ``status`` may run at once); :meth:`Monitor.cancel` takes it too.

Terminal jobs are stored and never asked about again.

The parts, each its own object: :class:`~tao_slurm_tui.services.job_cache.JobCache` (the jobs,
read from the store only where they changed), :class:`~tao_slurm_tui.services.accounting_followup.
AccountingFollowUp` (sacct in the background), :class:`~tao_slurm_tui.services.job_update.
JobUpdate` (one job's merge within a tick), :class:`~tao_slurm_tui.services.pipeline_follow.
PipelineFollower`, :class:`~tao_slurm_tui.services.retrier.Retrier` (steps 4 and 5) and
:class:`~tao_slurm_tui.services.cancel.Canceller`. The shell text of the
reads beyond the queue is :mod:`tao_slurm_tui.core.tick_reads`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tao_slurm_tui.core import retry as retry_rules
from tao_slurm_tui.core.layout import JobPaths
from tao_slurm_tui.core.models import JobRecord, TaoStatus
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.core.run_events import (
    ASK_CONDITION,
    EventsAnswer,
    events_parts,
    parse_events,
    split_events,
)
from tao_slurm_tui.core.slurm import controller_unreachable
from tao_slurm_tui.core.slurm_poll import PollOutput, parse_poll_output, queue_command
from tao_slurm_tui.core.slurm_text import federated
from tao_slurm_tui.core.tick_reads import (
    STATUS_TAIL_LIVE,
    marker,
    parse_sections,
    split_status_tails,
    status_tail_command,
)
from tao_slurm_tui.remote.connection import FramedRemote, RemoteError
from tao_slurm_tui.services.accounting_followup import AccountingFollowUp
from tao_slurm_tui.services.cancel import Canceller
from tao_slurm_tui.services.controller_watch import ControllerWatch
from tao_slurm_tui.services.job_cache import JobCache
from tao_slurm_tui.services.job_update import JobUpdate, MonitorEvent
from tao_slurm_tui.services.locks import RetryLock, retry_lock, submit_lock
from tao_slurm_tui.services.pipeline_follow import PipelineFollower
from tao_slurm_tui.services.retrier import Resubmit, Retrier
from tao_slurm_tui.services.run_follow import RunFollower
from tao_slurm_tui.services.site_watch import SiteWatch
from tao_slurm_tui.services.store import JobStore

__all__ = ["MIN_INTERVAL", "Monitor", "TickResult"]

log = logging.getLogger(__name__)

MIN_INTERVAL = 2.0
"""Shortest poll interval allowed (SLURM controllers do not like being hammered)."""


Reconcile = Callable[[JobRecord], Awaitable[JobRecord]]
"""``Submitter.reconcile_interrupted``: adopt by name (or end) a record a dead submit left."""


@dataclass
class TickResult:
    """The outcome of one :meth:`Monitor.tick`."""

    jobs: list[JobRecord]
    """Every job of the profile after the tick (terminal ones included), oldest first."""
    changed: list[str] = field(default_factory=list)
    """Ids of jobs whose record changed in this tick."""
    events: list[MonitorEvent] = field(default_factory=list)
    round_trips: int = 0
    """Remote commands this tick waited for (1, or 2 when a job newly finished and needed more)."""
    asked: bool = False
    """True when squeue ran in this tick (always, unless the monitor is paced)."""
    asked_by: str = ""
    """Why a paced tick asked: ``events`` (a job's run events changed) or the pace's reason
    (``first``, ``new``, ``passing``, ``running``, ``pending``, ``legacy``, ``failure``,
    ``full``, ``accounting``); ``every`` for an unpaced monitor."""
    accounting: list[str] = field(default_factory=list)
    """SLURM ids sent to the background sacct follow-up (not awaited by this tick)."""
    warning: str = ""
    """A partial failure (e.g. ``sacct failed: ...``): the tick used what it got."""


@dataclass
class _Poll:
    """What the tick's one round trip brought: the queue and the running jobs' status.json."""

    ids: dict[str, str]
    """Job id → SLURM id of its latest attempt, for every polled job."""
    output: PollOutput
    live_status: dict[str, str]
    """Job id → the tail of its status.json (jobs last seen running)."""
    asked: bool = True
    """True when squeue ran (a paced tick may read only the run events and status.json)."""
    asked_by: str = "every"
    """Why squeue ran (see :attr:`TickResult.asked_by`)."""
    events: EventsAnswer | None = None
    """What the run events part printed (a paced tick), taken into the watch only once the
    whole tick has succeeded: a tick cut short leaves the sizes as they were, so the next one
    sees the same change again."""
    stdout: str = ""
    """The whole answer (the trainings' run reads are parsed from it after the merge)."""


class Monitor:
    """Polls every active job of one profile and keeps the store up to date."""

    def __init__(
        self,
        conn: FramedRemote,
        store: JobStore,
        profile_name: str,
        profile: Profile,
        *,
        resubmit: Resubmit | None = None,
        reconcile: Reconcile | None = None,
        clock: Callable[[], float] = time.time,
        max_retries: int = retry_rules.DEFAULT_MAX_RETRIES,
        lock_path: str | os.PathLike[str] | None = None,
        paced: bool = False,
    ) -> None:
        """Create a monitor (nothing is polled yet).

        Long because: one assignment per part the tick uses, each with its docstring.

        Args:
            conn: the profile's one connection.
            store: the job store (jobs are keyed by ``profile_name``).
            profile_name: the profile's name.
            profile: the profile.
            resubmit: ``Submitter.resubmit``; without it infrastructure failures end in Error
                with the reason they were not retried.
            reconcile: ``Submitter.reconcile_interrupted``: a record a dead submitter left
                "submitting" is looked up by name on every tick and cancel, so an interrupted
                submit never leaves an unmonitored job holding GPUs.
            clock: time source (tests).
            max_retries: retry budget per job (client retries plus SLURM requeues).
            lock_path: the cross-process retry/cancel lock; default next to the store's file.
            paced: ask slurmctld only when the jobs' run events cannot tell (ControllerWatch).
        """
        self.conn = conn
        self.store = store
        self.profile_name = profile_name
        self.profile = profile
        """The profile (replaced when the user saves an edit of it)."""
        self.reconcile = reconcile
        self.clock = clock
        self.max_retries = max_retries
        self.lock = RetryLock(lock_path) if lock_path else retry_lock(store)
        """The cross-process retry/cancel lock."""
        self.jobs = JobCache(store, profile_name)
        """Every job of the profile, read from the store only where it changed."""
        self.accounting = AccountingFollowUp(conn, timeout=self._timeout, clock=clock)
        """sacct in the background."""
        self.canceller = Canceller(
            conn,
            store,
            profile_name,
            lock=self.lock,
            timeout=self._timeout,
            reconcile=lambda job_id: self._reconcile_interrupted(only=job_id),
        )
        self.site = SiteWatch(conn, timeout=self._timeout, clock=clock)
        """Reservations and drained nodes, for the words behind a pending reason."""
        self.retrier = Retrier(
            conn,
            store,
            profile_name,
            lambda: self.profile,
            lock=self.lock,
            resubmit=resubmit,
            max_retries=max_retries,
        )
        """The second round trip for newly finished jobs; requeues, verdicts, retries."""
        self.pipelines = PipelineFollower(
            conn, store, profile_name, canceller=self.canceller, timeout=self._timeout
        )
        self.watch = ControllerWatch(clock) if paced else None  # run events, pace of squeue
        self._folded: dict[str, str] = {}  # job id → the status.json tail folded last
        self.runs = RunFollower(store, profile_name, lambda: self.profile.results_root, clock)
        """TAO trainings across slices: runs, resume verdicts, KPI series."""
        self._tick_lock = asyncio.Lock()

    def _timeout(self) -> float:
        return self.profile.command_timeout

    # ------------------------------------------------------------------ tick

    async def tick(self, *, full: bool = False) -> TickResult:
        """Poll once: one round trip for all active jobs (two when a job newly finished and its
        ``status.json`` or log tail is needed), retries performed, store updated.

        Args:
            full: a paced monitor asks squeue in this tick whatever the pace says (a refresh
                the user asked for). An unpaced monitor always does.

        Raises:
            RemoteError: the cluster could not be reached; nothing was changed.
        """
        async with self._tick_lock:  # ticks never overlap
            return await self._tick(full)

    async def _tick(self, full: bool) -> TickResult:
        every = await self._jobs_after_reconciling()
        jobs = [j for j in every if not j.status.terminal and j.submitted and j.attempts]
        result = TickResult(jobs=every)
        if not jobs:
            self.jobs.keep_merges_of(())  # (what the next merge compares against: active only)
            self.accounting.rest()
            return result
        poll = await self._poll(jobs, result, full)
        result.asked, result.asked_by = poll.asked, poll.asked_by if poll.asked else ""
        work = self._merge(jobs, poll) if poll.asked else self._carry_forward(jobs, poll)
        self.runs.take(poll.stdout, work)
        if poll.asked:
            result.accounting = self.accounting.send()
        result.warning = result.warning or self.accounting.warning
        pending = [w for w in work.values() if w.pending]
        if pending:
            await self.retrier.read_finished(pending)
            result.round_trips += 1
        for w in work.values():
            await self.retrier.settle(w)
        self._save_all(work, result)
        if any(j.pipeline_id for j in self.jobs.records()):
            await self._follow_pipelines(result)
        if self.watch is not None and poll.events is not None:
            self.watch.take(poll.events, jobs)
        self._forget_ended(jobs, poll.ids)
        if self.watch is not None and poll.asked:
            active = [r for j in jobs if not (r := self.jobs.get(j.id) or j).status.terminal]
            self.watch.answered(active, ok=poll.output.squeue_rc == 0)
        active = [j for j in self.jobs.records() if not j.status.terminal and j.submitted]
        self.site.send(active)
        explained = self.site.explain(self.store, self.profile_name, active)
        if explained:
            result.changed += explained
            self.jobs.reload(explained)
        result.jobs = self.jobs.records()
        return result

    async def _jobs_after_reconciling(self) -> list[JobRecord]:
        """Every job; records a dead submitter left "submitting" are adopted first (then polled
        like the others) or ended."""
        every = self.jobs.jobs()
        interrupted = any(not j.submitted and not j.status.terminal for j in every)
        if interrupted and await self._reconcile_interrupted():
            every = self.jobs.jobs()
        return every

    async def _poll(self, jobs: Sequence[JobRecord], result: TickResult, full: bool) -> _Poll:
        """The one round trip: the queue (a paced tick: the run events, and the queue only when
        they changed or the pace says so), and the status.json of the jobs last seen running."""
        ids = {j.id: j.attempts[-1].slurm_job_id for j in jobs}
        results_dirs = {
            j.id: JobPaths(j.base_results_dir or self.profile.results_root, j.id).results_dir
            for j in jobs
            if j.status in (TaoStatus.RUNNING, TaoStatus.PAUSED)
        }
        # A nonce per command frames what the job's files hold (tick_reads, run_events): their
        # lines can neither open another job's part nor pass for queue rows.
        nonce = secrets.token_hex(8)
        watch = self.watch
        local = not federated(ids.values())
        if watch is None:
            command = queue_command(local=local)
        else:
            events = watch.paths(jobs, self.profile.results_root)
            busy = self.accounting.waiting(ids.values())
            why = watch.should_ask(jobs, full=full, accounting=busy)
            first_parts = events_parts(list(events.values()), watch.sizes, bool(why), nonce)
            command = queue_command(local=local, first=first_parts, when=ASK_CONDITION)
        extra = status_tail_command(results_dirs, STATUS_TAIL_LIVE, nonce)
        runs = self.runs.command(jobs, nonce)  # the trainings' new status.json bytes, same trip
        for part in (extra, runs):
            if part:
                command = f"{command}; {part}"
        first = await self.conn.run_framed(command, timeout=self.profile.command_timeout)
        result.round_trips = 1
        # The queue's part ends where the files' parts begin (their markers carry the nonce);
        # a paced tick's starts after its events part (whose last marker carries it too).
        queue_text = first.stdout.partition(f"\n{marker(nonce)}")[0]
        asked, asked_by, answer = True, "every", None
        if watch is not None:
            events_text, queue_text = split_events(queue_text, nonce)
            answer = parse_events(events_text, events, nonce)
            asked, asked_by = answer.asked, "events" if answer.printed or not why else why
        output = parse_poll_output(queue_text, wanted=set(ids.values()))
        if not output.complete or (answer is not None and not answer.complete):
            raise RemoteError(
                "The poll command's output was cut short "
                f"({(first.stderr.strip() or 'no message')[:200]}); the next tick retries."
            )
        if asked and output.squeue_rc != 0:
            # The controller is down or slow: accounting may still answer (in the background).
            detail = output.squeue_messages[:1] or [f"rc {output.squeue_rc}"]
            result.warning = controller_unreachable(detail[0]) or f"squeue failed: {detail[0]}"
        # Lines that are no job rows (a banner on stdout, a wrapper): the rows they hid are unknown.
        result.warning = result.warning or output.error
        output.sacct_rows = self.accounting.rows_for(ids.values())
        sections = parse_sections(first.stdout, nonce)
        live_status = split_status_tails(sections.get(("status", ""), []), results_dirs, nonce)
        return _Poll(ids, output, live_status, asked, asked_by, answer, first.stdout)

    def _merge(self, jobs: Sequence[JobRecord], poll: _Poll) -> dict[str, JobUpdate]:
        """Merge what the poll says into a copy of each job that something new is known about;
        note the ids squeue cannot settle for the accounting follow-up."""
        self.accounting.begin_tick()
        work: dict[str, JobUpdate] = {}
        for job in jobs:
            sid = poll.ids[job.id]
            row = poll.output.squeue_rows.get(sid)
            inputs = (sid, row.fields if row else None, poll.output.sacct_rows.get(sid))
            text = poll.live_status.get(job.id)
            if self._nothing_new(job, sid, inputs, text):
                continue  # no merge, no store access: the common case of a waiting job
            self.jobs.remember_merge(job, inputs)
            if text is not None:
                self._folded[job.id] = text
            w = work[job.id] = JobUpdate.of(job, text)
            w.merge(poll.output.snapshot(sid), self.accounting, self.max_retries)
            self.accounting.ask_if_needed(sid, w.snap, listed=row is not None)
            # The controller answered and does not know it, nor does accounting (or accounting
            # still says it runs, which only a job the controller forgot can be): lost.
            unlisted = row is None and poll.output.squeue_rc == 0
            found = bool(w.snap and w.snap.found)
            live = bool(w.snap and w.snap.found and not w.snap.terminal)
            w.lost = (unlisted and not found and self.accounting.lost(sid)) or (
                self.accounting.runaway(sid, unlisted and live)
            )
        return work

    def _carry_forward(self, jobs: Sequence[JobRecord], poll: _Poll) -> dict[str, JobUpdate]:
        """A tick that did not ask squeue: what the running jobs' status.json says (progress),
        and their elapsed time carried forward on the clock; SLURM's word stands otherwise."""
        work: dict[str, JobUpdate] = {}
        watch = self.watch
        for job in jobs:
            text = poll.live_status.get(job.id)
            new_text = text is not None and text != self._folded.get(job.id)
            elapsed = watch.elapsed_now(job.attempts[-1]) if watch is not None else None
            if not new_text and elapsed is None:
                continue
            w = work[job.id] = JobUpdate.of(job, None)
            if new_text and text is not None:
                w.fold_status(text)
                self._folded[job.id] = text
            if elapsed is not None:
                w.job.attempts[-1] = replace(w.job.attempts[-1], elapsed=elapsed)
            if w.job.status is TaoStatus.RUNNING:
                w.job.message = w.job.progress.message or ""  # as a merge of RUNNING sets it
        return work

    def _nothing_new(self, job: JobRecord, sid: str, inputs: Any, status_text: str | None) -> bool:
        """True when merging ``job`` again could not change it: its record and what squeue and
        sacct say are those of its last merge, no status.json was read for it, and accounting
        has no open question or new answer about it."""
        return (
            status_text is None
            and self.jobs.merged_with(job, inputs)
            and not self.accounting.involves(sid)
        )

    def _save_all(self, work: dict[str, JobUpdate], result: TickResult) -> None:
        """Write every merged job in one transaction and read the written ones back.

        No await from the check of the store's version to the cache update: the writes and the
        read-back see the same store.
        """
        stale = self.jobs.behind_store()  # someone else wrote during the tick
        with self.store.batch():  # one commit for the whole tick
            for w in work.values():
                if self._save(w):
                    result.changed.append(w.job.id)
                result.events.extend(w.events)
        self.jobs.read_back(work, stale=stale)

    def _forget_ended(self, jobs: Sequence[JobRecord], ids: dict[str, str]) -> None:
        """Keep accounting rows and merge inputs only while their job is still active (bounded
        by the active jobs, not by every job that ever ran)."""
        live = [j.id for j in jobs if not (self.jobs.get(j.id) or j).status.terminal]
        self.accounting.keep_only(ids[i] for i in live)
        self.jobs.keep_merges_of(live)
        self._folded = {i: self._folded[i] for i in live if i in self._folded}
        if self.watch is not None:
            self.watch.forget_all_but(ids[i] for i in live)

    # ------------------------------------------------------------------ accounting follow-up

    @property
    def followup_warning(self) -> str:
        """What the last background sacct follow-up could not read (it failed, or answered
        lines that are no job rows), as a phrase; '' when it was complete or none ran."""
        return self.accounting.warning

    async def wait_followup(self) -> bool:
        """Wait for the background sacct follow-up and site state fetch, if they are running.

        Returns:
            True when they brought what the next tick should use (accounting rows, words for a
            waiting job), so the caller may tick again at once, not a poll interval later.
        """
        news = await self.accounting.wait()
        return await self.site.news() or news

    # ------------------------------------------------------------------ saving

    def _save(self, w: JobUpdate) -> bool:
        job, before = w.job, w.before
        if not w.events and job == before:
            # Nothing happened to this job (the common case while it waits in the queue):
            # no store read or write, so a tick stays cheap with many jobs.
            return False
        current = self.store.get(self.profile_name, job.id)
        if current is None:
            return False
        if current.status.terminal and not before.status.terminal and job.status != current.status:
            # Cancelled (or finished) by another process during this tick: theirs wins.
            return False
        changed = False
        # Attempts: only the ones this tick touched (the latest, and a retried one).
        stored = {a.number: a for a in current.attempts}
        for attempt in job.attempts:
            if stored.get(attempt.number) != attempt:
                self.store.save_attempt(self.profile_name, job.id, attempt)
                changed = True
        fields: dict[str, Any] = {}
        if job.status != current.status:
            fields["status"] = job.status
        if job.slurm_state != current.slurm_state:
            fields["slurm_state"] = job.slurm_state
        if job.message != current.message:
            fields["message"] = job.message
        if job.progress.to_dict() != current.progress.to_dict():
            fields["progress"] = job.progress
        if fields:
            self.store.update_job(self.profile_name, job.id, **fields)
            changed = True
        for event in w.events:
            self.store.add_event(self.profile_name, job.id, event.kind, event.text)
        return changed

    # ------------------------------------------------------------------ pipelines, cancel

    async def _follow_pipelines(self, result: TickResult) -> None:
        """Cancel the steps that can no longer start and re-point the stranded ones (see
        :mod:`~tao_slurm_tui.services.pipeline_follow`), from the cached records alone; a
        remote command only when a step must change."""
        moves = await self.pipelines.follow(self.jobs.records())
        result.events += moves.events
        result.changed += [event.job_id for event in moves.events]
        result.warning = result.warning or moves.warning
        if moves.touched:
            self.jobs.reload(moves.touched)  # (and whatever was written since, next tick)

    async def close(self) -> None:
        """Stop the background calls no tick awaits (the sacct follow-up, the site's fetch),
        while the loop and the connection still run."""
        await self.accounting.close()
        await self.site.close()

    async def cancel(self, job_id: str) -> JobRecord:
        """Cancel one job and the steps of its pipeline after it (:meth:`Canceller.cancel`)."""
        return await self.canceller.cancel(job_id)

    async def cancel_pipeline(self, pipeline_id: str) -> list[JobRecord]:
        """Cancel the unfinished steps of a pipeline (:meth:`Canceller.cancel_pipeline`)."""
        return await self.canceller.cancel_pipeline(pipeline_id)

    async def _reconcile_interrupted(self, only: str | None = None) -> bool:
        """Reconcile "submitting" records whose submitter is gone; True if any was changed."""
        if self.reconcile is None:
            return False
        changed = False
        for job in self.store.list_jobs(self.profile_name):
            if job.submitted or job.status.terminal or (only is not None and job.id != only):
                continue
            if submit_lock(self.store, self.profile_name, job.id).held_elsewhere():
                continue  # its submit is still in flight (this process or another)
            await self.reconcile(job)
            changed = True
        return changed
