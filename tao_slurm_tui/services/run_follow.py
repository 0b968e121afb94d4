"""Following TAO trainings across wall-time slices: their ``status.json`` read incrementally, the
run ledger and the KPI series kept, a run that restarted without progress reported and, after
:data:`~tao_slurm_tui.core.train_command.MAX_NO_PROGRESS` of them, the job stopped.

The monitor's tick carries the read (:meth:`RunFollower.command` is a part of its one round trip)
for the jobs it sees running, and once more for a job that just ended; a screen or a CLI verb
that needs a training's runs catches up first (:meth:`RunFollower.catch_up`: one command for all
the jobs asked about, repeated while a file has more to read than one read takes). What a tick
learns goes into the job's record (``Progress.runs``) and, for a new verdict, an event and a
notification; the stop reason is written to the attempt's ``requeue.stop`` for the batch script
(in the next tick's command: no extra round trip).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace

from tao_slurm_tui.core.kpi_series import EpochPoint
from tao_slurm_tui.core.layout import JobPaths
from tao_slurm_tui.core.models import JobRecord, TaoStatus
from tao_slurm_tui.core.run_reads import (
    RUN_READ_CAP,
    RunAnswer,
    RunRead,
    parse_run_reads,
    run_reads_command,
)
from tao_slurm_tui.core.runs import RunLedger, experiment_facts
from tao_slurm_tui.core.status_json import StatusJsonReader
from tao_slurm_tui.remote.protocols import FramedRemote
from tao_slurm_tui.services.job_update import JobUpdate, MonitorEvent
from tao_slurm_tui.services.store import JobStore
from tao_slurm_tui.services.store_runs import ReaderState, RunStore, TrainingRecord

CATCH_UP_ROUNDS = 16
"""Reads of one catch-up at most (each up to RUN_READ_CAP bytes per training)."""
FOLLOWED_FOR = 30.0
"""Seconds after a tick's read during which its jobs count as followed (the queue stops
polling while another screen is shown: then a screen's read must catch up itself)."""


def training_dir(job: JobRecord, results_root: str) -> str:
    """Where the job's TAO training writes (its ``results_dir``): the plan's checkpoint dir when
    the command names one, else the job's results directory."""
    named = str(job.plan.get("checkpoint_dir") or "") if isinstance(job.plan, dict) else ""
    return named or JobPaths(job.base_results_dir or results_root, job.id).results_dir


class RunFollower:
    """Reads and folds the runs of one profile's trainings."""

    def __init__(
        self,
        store: JobStore,
        profile_name: str,
        results_root: Callable[[], str],
        clock: Callable[[], float] = time.time,
    ) -> None:
        """Follow the trainings of ``profile_name``.

        Args:
            store: the job store (the runs tables live in its file).
            profile_name: the profile.
            results_root: the profile's results root (jobs without their own; asked each time:
                the profile may be edited).
            clock: this machine's clock (when an epoch line was read).
        """
        self.runs = RunStore(store)
        self.store = store
        self.profile_name = profile_name
        self._results_root = results_root
        self.clock = clock
        self._running: set[str] = set()
        """Jobs read as running in the last tick (one more read once they ended)."""
        self._asked: list[tuple[RunRead, JobRecord, TrainingRecord]] = []
        self._nonce = ""
        """The nonce of the tick whose reads :attr:`_asked` holds."""
        self._took_at = -FOLLOWED_FOR
        """When (``time.monotonic``) a tick last brought its reads."""

    # ------------------------------------------------------------------ the tick's part

    def command(self, jobs: Sequence[JobRecord], nonce: str) -> str:
        """The shell part reading the trainings of the tick's ``jobs`` ('' when none): the ones
        running or suspended, and those that were running in the last tick; its marker lines
        carry the tick's ``nonce``."""
        wanted = [
            j
            for j in jobs
            if j.submitted
            and j.attempts
            and (j.status in (TaoStatus.RUNNING, TaoStatus.PAUSED) or j.id in self._running)
        ]
        self._running = {j.id for j in wanted}
        self._asked = self._reads(wanted)
        self._nonce = nonce
        return run_reads_command([read for read, _job, _record in self._asked], nonce)

    def take(self, stdout: str, updates: Mapping[str, JobUpdate]) -> None:
        """Fold what the tick's part read; the jobs the tick updates carry the news in their
        record and events, the others are updated in the store."""
        asked, self._asked = self._asked, []
        self._took_at = time.monotonic()
        if not asked:
            return
        try:
            answers = parse_run_reads(stdout, [read for read, _job, _record in asked], self._nonce)
        except ValueError:
            return  # cut short: the next tick reads the same bytes again
        for read, job, record in asked:
            update = updates.get(job.id)
            current = update.job if update is not None else job
            self._fold(current, record, answers.get(read.key, RunAnswer()), read)
            self._publish(current, record.ledger, update)

    # ------------------------------------------------------------------ on demand

    def record(self, job_id: str) -> TrainingRecord:
        """The stored state of one training."""
        return self.runs.load(self.profile_name, job_id)

    def points(self, job_id: str) -> list[EpochPoint]:
        """The stored KPI series of one training."""
        return self.runs.points(self.profile_name, job_id)

    def behind(self, jobs: Iterable[JobRecord]) -> list[JobRecord]:
        """Those of ``jobs`` whose training may have written what was not read: not read to
        their end, and not read by every tick (a running job the monitor follows)."""
        followed = self._running if time.monotonic() - self._took_at < FOLLOWED_FOR else set()
        return [
            j
            for j in jobs
            if j.submitted
            and j.attempts
            and j.id not in followed
            and not self.record(j.id).reader.final
        ]

    async def catch_up(
        self, conn: FramedRemote, jobs: Iterable[JobRecord], *, timeout: float | None = None
    ) -> None:
        """Read what the trainings of ``jobs`` wrote since they were last read (jobs read to
        their end are skipped; nothing to do costs no round trip).

        Raises:
            RemoteError: the cluster could not be reached (what was folded before stays).
        """
        pending = [j for j in jobs if j.submitted and j.attempts]
        for _ in range(CATCH_UP_ROUNDS):
            asked = [a for a in self._reads(pending) if not a[2].reader.final]
            if not asked:
                return
            reads = [read for read, _job, _record in asked]
            nonce = secrets.token_hex(8)
            result = await conn.run_framed(run_reads_command(reads, nonce), timeout=timeout)
            try:
                answers = parse_run_reads(result.stdout, reads, nonce)
            except ValueError:
                return
            more = []
            for read, job, record in asked:
                answer = answers.get(read.key, RunAnswer())
                self._fold(job, record, answer, read)
                self._publish(job, record.ledger, None)
                if len(answer.data) >= RUN_READ_CAP:
                    more.append(job)
            if not more:
                return
            pending = more

    # ------------------------------------------------------------------ folding

    def _reads(self, jobs: Iterable[JobRecord]) -> list[tuple[RunRead, JobRecord, TrainingRecord]]:
        out = []
        for job in jobs:
            record = self.record(job.id)
            ledger, reader = record.ledger, record.reader
            stop_path = ""
            if ledger.stop and not reader.stop_written and not job.status.terminal:
                paths = JobPaths(job.base_results_dir or self._results_root(), job.id)
                stop_path = paths.requeue_stop(job.attempts[-1].slurm_job_id)
            read = RunRead(
                key=job.id,
                directory=training_dir(job, self._results_root()),
                offset=reader.offset,
                experiment=not ledger.experiment_read,
                stop_path=stop_path,
                stop_reason=ledger.stop,
            )
            out.append((read, job, record))
        return out

    def _fold(
        self, job: JobRecord, record: TrainingRecord, answer: RunAnswer, read: RunRead
    ) -> None:
        """Fold one answer into the training's record and store it when anything changed."""
        reader, ledger = record.reader, record.ledger
        ended = job.status.terminal
        before = (reader.to_json(), ledger.to_json())
        reset = False
        if answer.path and (
            (reader.path and answer.path != reader.path) or answer.size < reader.offset
        ):
            # Another file, or this one truncated: a new history (not a continuation).
            record.reader, record.ledger = ReaderState(path=answer.path), RunLedger()
            reader, ledger, reset = record.reader, record.ledger, True
        if answer.path:
            reader.path = answer.path
            if not ledger.experiment_read:
                # TAO saves experiment.yaml before its first status line: none by now, none ever.
                ledger.take_experiment(experiment_facts(answer.experiment or ""))
        points = self._take_bytes(reader, ledger, answer.data) if answer.path else []
        if answer.stopped and read.stop_path:
            reader.stop_written = True
        if ended and len(answer.data) < RUN_READ_CAP:
            reader.final = True
        if reset or points or (reader.to_json(), ledger.to_json()) != before:
            self.runs.save(self.profile_name, job.id, record, points, reset=reset)

    def _take_bytes(self, reader: ReaderState, ledger: RunLedger, data: bytes) -> list[EpochPoint]:
        """Fold the complete lines of ``data`` (read at ``reader.offset``)."""
        start = 0
        if reader.skip_line:
            cut = data.find(b"\n")
            if cut < 0:
                reader.offset += len(data)
                return []
            start, reader.skip_line = cut + 1, False
        end = data.rfind(b"\n") + 1
        if end <= start:
            if len(data) >= RUN_READ_CAP:  # one line longer than a read: no status line
                reader.offset += len(data)
                reader.skip_line = True
            return []
        parser = StatusJsonReader()
        entries = parser.feed(data[start:end])
        reader.offset += end
        return ledger.fold(entries, self.clock())

    def _publish(self, job: JobRecord, ledger: RunLedger, update: JobUpdate | None) -> None:
        """The ledger's summary into the job's record; a new verdict is an event."""
        summary = ledger.summary()
        if summary == job.progress.runs:
            return
        before = str(job.progress.runs.get("problem", ""))
        problem = str(summary.get("problem", ""))
        if update is not None:
            update.job.progress.runs = summary
            if problem and problem != before:
                text = f"{job.id}: {problem}"
                if summary.get("stop"):
                    text += "; it will not be requeued again"
                update.events.append(MonitorEvent(job.id, "resume", text))
            return
        progress = replace(job.progress, runs=summary)
        self.store.update_job(self.profile_name, job.id, progress=progress)
