"""The poller: one round trip per tick for every active job of a profile, TAO status, auto-retry.

One :meth:`Monitor.tick`:

1. loads the profile's non-terminal, submitted jobs from the store (so a restarted app or CLI
   carries on where the last one stopped, retries included);
2. sends ONE remote command on the connection's long-lived shell (``run_framed``: one network
   round trip): :func:`~tao_slurm_tui.core.slurm.queue_command` (``squeue -u <me> -t all``: the
   user's live jobs and the ones slurmctld still keeps after they ended, the same command for
   1 or 1,000 tracked jobs, filtered here), followed in the same shell by a single
   ``tail -v -c`` of the ``status.json`` of the jobs last seen running (progress, and the
   verdict if one just ended);
3. merges squeue with the accounting (``sacct -X -D``) rows a background follow-up fetched
   (:func:`~tao_slurm_tui.core.slurm.merge`): sacct is never awaited by the tick. It is asked,
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
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import itertools
import logging
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, Protocol

from tao_slurm_tui.core import retry as retry_rules
from tao_slurm_tui.core.layout import JobPaths
from tao_slurm_tui.core.models import Attempt, JobRecord, Progress, TaoStatus
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.core.quoting import join, quote
from tao_slurm_tui.core.slurm import StateAction
from tao_slurm_tui.core.slurm_poll import (
    PollOutput,
    SlurmRow,
    SlurmSnapshot,
    parse_poll_output,
    poll_command,
    queue_command,
)
from tao_slurm_tui.core.slurm_text import expand_nodelist
from tao_slurm_tui.core.status_json import StatusJsonReader, StatusSummary, resolve_completed
from tao_slurm_tui.errors import BadInput, OperationFailed, TaoError
from tao_slurm_tui.remote.connection import FramedRemote, RemoteError
from tao_slurm_tui.services.locks import submit_lock
from tao_slurm_tui.services.store import JobStore

__all__ = [
    "DEFAULT_INTERVAL",
    "MAX_BACKOFF",
    "MIN_INTERVAL",
    "Monitor",
    "MonitorEvent",
    "MonitorStatus",
    "TickResult",
]

log = logging.getLogger(__name__)

DEFAULT_INTERVAL = 10.0
"""Seconds between ticks unless the settings say otherwise."""
MIN_INTERVAL = 2.0
"""Shortest interval allowed (SLURM controllers do not like being hammered)."""
MAX_BACKOFF = 300.0
"""Longest wait between ticks while the cluster cannot be reached."""

STATUS_TAIL_LIVE = 16 * 1024
"""Bytes of ``status.json`` read per running job per tick (progress; KPIs merge across ticks)."""
STATUS_TAIL_FINAL = 256 * 1024
"""Bytes of ``status.json`` read once when a job has finished (the verdict is near the end)."""
UNSETTLED_TICKS = 3
"""Ticks a finished state squeue reports may wait for sacct to agree before it is trusted
anyway (accounting down)."""
UNSETTLED_SECONDS = 30.0
"""...and the least time it waits: slurmdbd lags the controller by seconds, so a tick count
alone (3 ticks are 3 s at a 1 s interval) would end a job without its exit code."""

_MARK = "@@tao-mon:"
_MISSING = "@@tao-missing@@"

EventKind = Literal["state", "finished", "failed", "canceled", "retried", "requeued", "error"]


class Resubmit(Protocol):
    """``Submitter.resubmit``: submit a new attempt of ``job`` exactly once and record it."""

    def __call__(
        self, job: JobRecord, *, exclude_nodes: Iterable[str] = (), reason: str = ""
    ) -> Awaitable[Attempt]: ...


Reconcile = Callable[[JobRecord], Awaitable[JobRecord]]
"""``Submitter.reconcile_interrupted``: adopt by name (or end) a record a dead submit left."""


@dataclass(frozen=True)
class MonitorEvent:
    """Something that happened to a job during a tick (also written to the store's event log)."""

    job_id: str
    kind: EventKind
    text: str
    """One sentence for a notification."""


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
    accounting: list[str] = field(default_factory=list)
    """SLURM ids sent to the background sacct follow-up (not awaited by this tick)."""
    warning: str = ""
    """A partial failure (e.g. ``sacct failed: ...``): the tick used what it got."""


@dataclass
class MonitorStatus:
    """What the poll loop is doing, for a status bar."""

    state: Literal["idle", "polling", "ok", "backoff"] = "idle"
    last_ok: float | None = None
    """Clock time of the last successful tick."""
    error: str = ""
    """The last failure (one sentence) while in backoff."""
    retry_in: float = 0.0
    """Seconds until the next attempt while in backoff."""
    failures: int = 0
    """Failed ticks in a row."""


# ----------------------------------------------------------------------------------- commands


def _section(kind: str, job_id: str, body: str) -> str:
    return f"printf '%s{kind} %s\\n' \"$M\" {quote(job_id)}; {body}; printf '\\n'"


def _script(parts: Sequence[str]) -> str:
    """Wrap shell parts into one ``sh -c`` (the login shell may be csh)."""
    return join(["sh", "-c", "; ".join([f"M={quote(_MARK)}", *parts, "printf '%send\\n' \"$M\""])])


def status_tail_command(paths: dict[str, str], nbytes: int) -> str:
    """One ``tail -v`` over every ``status.json`` (one process, headers name the files)."""
    if not paths:
        return ""
    body = join(["tail", "-v", "-c", str(nbytes), "--", *paths.values()]) + " 2>/dev/null"
    return _script(["printf '%sstatus\\n' \"$M\"", f"{body}; true"])


def parse_sections(text: str) -> dict[tuple[str, str], list[str]]:
    """``{(kind, job id): lines}`` of our marked sections; ``status`` holds ``tail -v`` output."""
    sections: dict[tuple[str, str], list[str]] = {}
    current: list[str] | None = None
    for line in text.split("\n"):
        if line.startswith(_MARK):
            kind, _, arg = line[len(_MARK) :].partition(" ")
            if kind == "end":
                current = None
                continue
            current = sections.setdefault((kind, arg.strip()), [])
            continue
        if current is not None:
            current.append(line)
    return sections


def split_tail_v(lines: Sequence[str], paths: dict[str, str]) -> dict[str, str]:
    """Split ``tail -v`` output into ``{job id: text}`` using the ``==> path <==`` headers."""
    by_path = {p: j for j, p in paths.items()}
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in lines:
        if line.startswith("==> ") and line.endswith(" <==") and line[4:-4] in by_path:
            current = out.setdefault(by_path[line[4:-4]], [])
            continue
        if current is not None:
            current.append(line)
    return {j: "\n".join(v) for j, v in out.items()}


# ----------------------------------------------------------------------------------- monitor


@dataclass
class _Work:
    """Per-job state within one tick."""

    job: JobRecord
    before: JobRecord
    snap: SlurmSnapshot | None = None
    status_text: str | None = None
    need_status: bool = False
    need_logs: bool = False
    need_requeue_reason: bool = False
    requeued_from: str = ""
    """Nodes the attempt ran on before SLURM requeued it (named in the event)."""
    out_tail: list[str] | None = None
    err_tail: list[str] | None = None
    requeue_reason: str = ""
    events: list[MonitorEvent] = field(default_factory=list)


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
    ) -> None:
        """Create a monitor (nothing is polled yet).

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
        """
        self.conn = conn
        self.store = store
        self.profile_name = profile_name
        self.profile = profile
        self.resubmit = resubmit
        self.reconcile = reconcile
        self.clock = clock
        self.max_retries = max_retries
        self.status = MonitorStatus()
        """What the poll loop is doing (for the UI)."""
        self._lock_path = Path(lock_path) if lock_path else _default_lock_path(store)
        self._unsettled: dict[str, tuple[int, float]] = {}  # id -> (ticks, first seen)
        self._probe: set[str] = set()
        self._probed: set[str] = set()  # ids whose accounting rows answer a requeue probe
        self._accounting: dict[str, list[SlurmRow]] = {}  # sacct -X -D rows from follow-ups
        self._followup: asyncio.Task[bool] | None = None
        self._followup_error = ""
        self._needed: set[str] = set()  # ids the last tick sent to the follow-up
        self._cache: dict[str, JobRecord] = {}  # every job of the profile, store order
        self._version: tuple[int, int] | None = None  # the store's version the cache matches
        # The store's (change number, deletions) when the cache was last read from it.
        self._changes: tuple[int, int] | None = None
        self._seen: dict[str, tuple[JobRecord, tuple[Any, ...]]] = {}  # last merge's inputs
        self._tick_lock = asyncio.Lock()

    # ------------------------------------------------------------------ tick

    async def tick(self) -> TickResult:
        """Poll once: one round trip for all active jobs (two when a job newly finished and its
        ``status.json`` or log tail is needed), retries performed, store updated.

        Raises:
            RemoteError: the cluster could not be reached; nothing was changed.
        """
        async with self._tick_lock:  # ticks never overlap
            return await self._tick()

    async def _tick(self) -> TickResult:
        every = self._cached_jobs()
        # Records a dead submitter left "submitting": adopted (then polled below) or ended.
        interrupted = any(not j.submitted and not j.status.terminal for j in every)
        if interrupted and await self._reconcile_interrupted():
            every = self._cached_jobs()
        jobs = [j for j in every if not j.status.terminal and j.submitted and j.attempts]
        result = TickResult(jobs=every)
        if not jobs:
            self._seen.clear()  # (what the next merge compares against: active jobs only)
            self._followup_error = ""  # (no job left that sacct could be asked about)
            return result
        ids = {j.id: j.attempts[-1].slurm_job_id for j in jobs}
        status_paths = {
            j.id: JobPaths(j.base_results_dir or self.profile.results_root, j.id).status_json
            for j in jobs
            if j.status in (TaoStatus.RUNNING, TaoStatus.PAUSED)
        }
        command = queue_command()
        extra = status_tail_command(status_paths, STATUS_TAIL_LIVE)
        if extra:
            command = f"{command}; {extra}"
        first = await self.conn.run_framed(command, timeout=self.profile.command_timeout)
        result.round_trips = 1
        output = parse_poll_output(first.stdout, wanted=set(ids.values()))
        if not output.complete:
            raise RemoteError(
                "The poll command's output was cut short "
                f"({(first.stderr.strip() or 'no message')[:200]}); the next tick retries."
            )
        if output.squeue_rc != 0:
            # The controller is down or slow: accounting may still answer (in the background).
            detail = output.squeue_messages[:1] or [f"rc {output.squeue_rc}"]
            result.warning = f"squeue failed: {detail[0]}"
        # Lines that are no job rows (a banner on stdout, a wrapper): the rows they hid are unknown.
        result.warning = result.warning or output.error
        # What earlier follow-ups learnt from sacct, for the ids of this tick only.
        output.sacct_rows = {
            sid: rows for sid in ids.values() if (rows := self._accounting.get(sid)) is not None
        }
        sections = parse_sections(first.stdout)
        live_status = split_tail_v(sections.get(("status", ""), []), status_paths)
        probed, self._probed = self._probed, set()
        needed, self._needed = self._needed, set()
        work: dict[str, _Work] = {}
        for job in jobs:
            sid = ids[job.id]
            row = output.squeue_rows.get(sid)
            seen = (sid, row.fields if row else None, output.sacct_rows.get(sid))
            text = live_status.get(job.id)
            last = self._seen.get(job.id)
            if (
                last is not None
                and last[0] is job
                and last[1] == seen
                and text is None
                and sid not in needed
                and sid not in self._unsettled
                and sid not in self._probe
                and sid not in probed
            ):
                continue  # nothing new about this job: no merge, no store access
            self._seen[job.id] = (job, seen)
            w = work[job.id] = _Work(job=_copy(job), before=job, status_text=text)
            self._apply_snapshot(w, output, sid, probed=sid in probed)
            snap = w.snap
            forgotten = row is None and not (snap and snap.settled)
            if sid in self._probe or (snap and snap.terminal and not snap.settled) or forgotten:
                self._needed.add(sid)
        if self._needed:
            result.accounting = sorted(self._needed)
            self._start_followup(result.accounting)
        elif self._followup is None or self._followup.done():
            # Nothing is asked of sacct any more (the jobs it failed about are listed again or
            # ended): its last failure says nothing about these rows, and a screen showing it
            # would show it forever.
            self._followup_error = ""
        result.warning = result.warning or self._followup_error
        pending = [
            w for w in work.values() if w.need_status or w.need_logs or w.need_requeue_reason
        ]
        if pending:
            await self._second_round(pending)
            result.round_trips += 1
        for w in work.values():
            await self._settle(w)
        # From here on no await: the store writes and the cache update see the same store.
        stale = self.store.version() != self._version  # someone else wrote during the tick
        with self.store.batch():  # one commit for the whole tick
            for w in work.values():
                if self._save(w):
                    result.changed.append(w.job.id)
                result.events.extend(w.events)
        self._refresh_cache(work, stale)
        if any(j.pipeline_id for j in self._cache.values()):
            # From the cache alone; a remote command only when a step must change.
            await self._follow_pipelines(result)
        # Accounting rows and the last merge's inputs are kept only while their job is still
        # active (bounded by N active, not by every job that ever ran).
        live = [j.id for j in jobs if not self._cache.get(j.id, j).status.terminal]
        active = {ids[i] for i in live}
        self._accounting = {k: v for k, v in self._accounting.items() if k in active}
        self._seen = {i: self._seen[i] for i in live if i in self._seen}
        result.jobs = list(self._cache.values())
        return result

    # ------------------------------------------------------------------ the jobs, cached

    def _cached_jobs(self) -> list[JobRecord]:
        """Every job of the profile (store order). After a write (this process's or another's)
        only the rows written since are read again; everything once a job was deleted (rare:
        a refused submission), and the first time."""
        version = self.store.version()
        if version != self._version:
            changes = self.store.changes()  # before reading: a later write is read next time
            known = self._changes
            if known is None or changes[1] != known[1] or not self._cache:
                self._cache = {j.id: j for j in self.store.list_jobs(self.profile_name)}
            else:
                for job in self.store.jobs_changed_since(self.profile_name, known[0]):
                    self._cache[job.id] = job
            self._changes = changes
            self._version = version
        return list(self._cache.values())

    def _refresh_cache(self, work: dict[str, _Work], stale: bool) -> None:
        """Read back only the jobs this tick merged (the others are unchanged)."""
        for job_id in work:
            fresh = self.store.get(self.profile_name, job_id)
            if fresh is None:
                self._cache.pop(job_id, None)
                continue
            self._cache[job_id] = fresh
            seen = self._seen.get(job_id)
            if seen is not None:
                self._seen[job_id] = (fresh, seen[1])
        # A write by someone else during the tick (another process, a submission) is picked up
        # next tick. The change number stays where the cache was last read from the store, so
        # that read takes every row written since (this tick's own rows too: a few, read again).
        self._version = None if stale else self.store.version()

    # ------------------------------------------------------------------ accounting follow-up

    def _start_followup(self, ids: list[str]) -> None:
        """Ask sacct about ``ids`` in the background (one batched call on its own channel, so
        it never holds up a tick); at most one at a time, the next tick asks again."""
        if self._followup is not None and not self._followup.done():
            return
        probes = {sid for sid in ids if sid in self._probe}
        self._probe -= probes
        self._followup = asyncio.get_running_loop().create_task(self._follow_up(ids, probes))

    async def _follow_up(self, ids: list[str], probes: set[str]) -> bool:
        try:
            result = await self.conn.run(
                poll_command((), ids), timeout=self.profile.command_timeout
            )
        except (TaoError, ValueError) as exc:
            self._followup_error = f"sacct failed: {exc}"
            self._probe |= probes  # ask again next time
            return False
        output = parse_poll_output(result.stdout)
        self._followup_error = output.error
        news = False
        for sid in ids:
            rows = output.sacct_rows.get(sid)
            if rows is not None and rows != self._accounting.get(sid):
                self._accounting[sid] = rows
                news = True
        self._probed |= probes
        return news or bool(probes)

    @property
    def followup_warning(self) -> str:
        """What the last background sacct follow-up could not read (it failed, or answered
        lines that are no job rows), as a phrase; '' when it was complete or none ran."""
        return self._followup_error

    async def wait_followup(self) -> bool:
        """Wait for the background sacct follow-up, if one is running.

        Returns:
            True when it brought accounting rows the next tick should use (so the caller may
            tick again at once instead of after the poll interval).
        """
        task = self._followup
        if task is None:
            return False
        try:
            return await asyncio.shield(task)
        finally:
            if self._followup is task and task.done():
                self._followup = None

    # ------------------------------------------------------------------ merge

    def _apply_snapshot(
        self, w: _Work, output: PollOutput, slurm_id: str, *, probed: bool = False
    ) -> None:
        job = w.job
        attempt = job.attempts[-1]
        snap = output.snapshot(slurm_id)
        w.snap = snap
        if w.status_text is not None:
            self._fold_status(job, w.status_text)
        if not snap.found:
            # sacct has no row for ~1 s after submit; keep what we had and ask again.
            return
        if probed and snap.source == "sacct" and not snap.terminal:
            # The tick after a requeue asks sacct -D only for the restart count. slurmdbd lags
            # by seconds and may still show the earlier run as RUNNING: taking that state would
            # flip the job back to Running, and the next squeue PENDING would count the same
            # requeue twice. squeue's state from the last tick stands.
            if snap.restarts > attempt.restarts:
                job.attempts[-1] = replace(attempt, restarts=snap.restarts)
                w.need_requeue_reason = True
                w.requeued_from = w.requeued_from or attempt.nodes
            return
        updated = snap.apply_to(attempt)  # drops waiting reasons once the job left PENDING
        if (
            attempt.state == "RUNNING"
            and snap.state in ("PENDING", "REQUEUED")
            and snap.source != "sacct"
        ):
            # Running → pending under the same id: SLURM requeued it (the batch script's
            # `scontrol requeue`, or --requeue after a node failure). sacct -D confirms the count.
            updated.restarts = max(updated.restarts, attempt.restarts + 1)
            self._probe.add(slurm_id)
        if updated.restarts > attempt.restarts:
            w.need_requeue_reason = True
            w.requeued_from = w.requeued_from or attempt.nodes
        job.attempts[-1] = updated
        job.slurm_state = snap.state
        mapped = snap.mapped
        if mapped.action is StateAction.UNKNOWN or mapped.status is None:
            return
        if snap.terminal and not snap.settled:
            # Wait for sacct to agree that it finished (a self-requeue passes through such
            # states); trust squeue anyway after a few ticks AND some seconds in case
            # accounting is down (ticks alone depend on the poll interval, not on the lag).
            now = self.clock()
            count, since = self._unsettled.get(slurm_id, (0, now))
            self._unsettled[slurm_id] = (count + 1, since)
            if count + 1 < UNSETTLED_TICKS or now - since < UNSETTLED_SECONDS:
                return
        self._unsettled.pop(slurm_id, None)
        if mapped.action is StateAction.NEEDS_STATUS_JSON:
            if w.status_text is None:
                w.need_status = True
            else:
                self._complete(w)
            return
        if mapped.action is StateAction.MAYBE_RETRY:
            w.need_logs = True
            return
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
                snap.state, None, job.infra_retries, self.max_retries
            ).reason

    def _fold_status(self, job: JobRecord, text: str) -> StatusSummary:
        reader = StatusJsonReader()
        entries = reader.feed(text.encode("utf-8"))
        entries += reader.flush()
        summary = StatusSummary()
        # Keep KPIs seen in earlier ticks: the tail only holds the latest lines.
        summary.progress = Progress.from_dict(job.progress.to_dict())
        summary.add(entries)
        job.progress = summary.progress
        return summary

    def _complete(self, w: _Work) -> None:
        job = w.job
        summary = self._fold_status(job, w.status_text or "")
        status, message = resolve_completed(summary.terminal, summary.message)
        job.status = status
        job.message = message

    # ------------------------------------------------------------------ second round trip

    async def _second_round(self, pending: list[_Work]) -> None:
        parts: list[str] = []
        partitions: set[str] = set()
        final_paths: dict[str, str] = {}
        for w in pending:
            job = w.job
            attempt = job.attempts[-1]
            paths = JobPaths(job.base_results_dir or self.profile.results_root, job.id)
            if w.need_status:
                final_paths[job.id] = paths.status_json
            if w.need_logs:
                for kind, path in (
                    ("out", paths.main_out(attempt.slurm_job_id)),
                    ("err", paths.main_err(attempt.slurm_job_id)),
                ):
                    q = quote(path)
                    body = (
                        f"if [ -r {q} ]; then tail -n {retry_rules.LOG_TAIL_LINES} -- {q}; "
                        f"else echo {_MISSING}; fi"
                    )
                    parts.append(_section(kind, job.id, body))
                if attempt.partition:
                    partitions.add(attempt.partition.split(",")[0])
            if w.need_requeue_reason:
                q = quote(paths.requeue_reason(attempt.slurm_job_id))
                parts.append(_section("requeue", job.id, f"tail -n 1 -- {q} 2>/dev/null"))
        if final_paths:
            tail = join(["tail", "-v", "-c", str(STATUS_TAIL_FINAL), "--", *final_paths.values()])
            parts.append(f"printf '%sstatus\\n' \"$M\"; {tail} 2>/dev/null; printf '\\n'")
        for partition in sorted(partitions):
            parts.append(
                _section(
                    "sinfo",
                    partition,
                    join(["sinfo", "-h", "-p", partition, "-o", "%n"]) + " 2>/dev/null",
                )
            )
        result = await self.conn.run_framed(_script(parts), timeout=self.profile.command_timeout)
        sections = parse_sections(result.stdout)
        if ("end", "") not in sections and f"{_MARK}end" not in result.stdout:
            raise RemoteError(
                "Reading the logs of finished jobs was cut short; the next tick retries."
            )
        statuses = split_tail_v(sections.get(("status", ""), []), final_paths)
        self._partition_nodes = {
            p: len({n for n in sections.get(("sinfo", p), []) if n.strip()}) for p in partitions
        }
        for w in pending:
            jid = w.job.id
            if w.need_status:
                w.status_text = statuses.get(jid, "")
            if w.need_logs:
                w.out_tail = _log_lines(sections.get(("out", jid)))
                w.err_tail = _log_lines(sections.get(("err", jid)))
            if w.need_requeue_reason:
                lines = [ln for ln in sections.get(("requeue", jid), []) if ln.strip()]
                w.requeue_reason = lines[-1].strip() if lines else ""

    # ------------------------------------------------------------------ decisions

    async def _settle(self, w: _Work) -> None:
        job = w.job
        attempt = job.attempts[-1]
        if w.need_requeue_reason:
            why = _requeue_why(w.requeue_reason)
            if why.startswith("timeout after"):
                # The script's timeout requeue: its own cap, not the infrastructure budget.
                job.attempts[-1] = replace(attempt, timeout_restarts=attempt.timeout_restarts + 1)
                attempt = job.attempts[-1]
            where = f" after it ran on {w.requeued_from}" if w.requeued_from else ""
            text = (
                f"SLURM requeued job {attempt.slurm_job_id} (restart {attempt.restarts}){where}"
                + (f": {why}" if why else ".")
            )
            job.message = text
            w.events.append(MonitorEvent(job.id, "requeued", text))
        if w.need_status:
            self._complete(w)
        if w.need_logs:
            await self._maybe_retry(w)
        old, new = w.before.status, job.status
        if new != old:
            kind: EventKind = "state"
            if new is TaoStatus.COMPLETE:
                kind = "finished"
            elif new is TaoStatus.ERROR:
                kind = "failed"
            elif new is TaoStatus.CANCELED:
                kind = "canceled"
            text = f"{job.id}: {old} → {new}" + (f" ({job.message})" if job.message else "")
            if kind != "state" or not any(e.kind == "retried" for e in w.events):
                w.events.append(MonitorEvent(job.id, kind, text))

    async def _maybe_retry(self, w: _Work) -> None:
        job = w.job
        attempt = job.attempts[-1]
        tails = None
        if w.out_tail is not None or w.err_tail is not None:
            tails = [*(w.out_tail or []), *(w.err_tail or [])]
        decision = retry_rules.classify(attempt.state, tails, job.infra_retries, self.max_retries)
        if not decision.retry:
            job.status = TaoStatus.ERROR
            job.message = decision.reason + (f" ({decision.line})" if decision.line else "")
            return
        if self.resubmit is None:
            job.status = TaoStatus.ERROR
            job.message = (
                f"{decision.reason} (This monitor cannot resubmit, so it was not retried.)"
            )
            return
        failed = expand_nodelist(attempt.nodes)
        count = getattr(self, "_partition_nodes", {}).get(attempt.partition.split(",")[0])
        needed = int(job.spec.get("num_nodes", 1) or 1)
        exclude = retry_rules.nodes_to_exclude(failed, count, needed)
        async with self._exclusive():
            # Another process (the TUI, a CLI) may have retried or cancelled it meanwhile.
            current = self.store.get(self.profile_name, job.id)
            if (
                current is None
                or current.status.terminal
                or (current.attempts and current.attempts[-1].number != attempt.number)
            ):
                w.job = current or job
                w.before = _copy(w.job)
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

    # ------------------------------------------------------------------ saving

    def _save(self, w: _Work) -> bool:
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

    # ------------------------------------------------------------------ loop

    async def run_forever(
        self,
        interval: float = DEFAULT_INTERVAL,
        on_tick: Callable[[TickResult], Any] | None = None,
        on_error: Callable[[TaoError, float], Any] | None = None,
    ) -> None:
        """Tick every ``interval`` seconds until cancelled.

        Never stops because a job waits long in the queue. While the cluster cannot be reached
        the wait doubles after every failure up to :data:`MAX_BACKOFF` (5 min); :attr:`status`
        says so (``backoff``, the error, seconds to the next try).

        Args:
            interval: seconds between ticks (at least :data:`MIN_INTERVAL`).
            on_tick: called with every successful tick's result.
            on_error: called with the error and the backoff delay after a failed tick.
        """
        base = max(MIN_INTERVAL, float(interval))
        while True:
            self.status.state = "polling"
            try:
                result = await self.tick()
            except TaoError as exc:
                self.status.failures += 1
                delay = min(MAX_BACKOFF, base * 2**self.status.failures)
                self.status.state, self.status.error, self.status.retry_in = (
                    "backoff",
                    str(exc),
                    delay,
                )
                log.info("tick failed (%s); next try in %.0f s", exc, delay)
                if on_error is not None:
                    on_error(exc, delay)
            else:
                delay = base
                self.status = MonitorStatus(state="ok", last_ok=self.clock())
                if on_tick is not None:
                    on_tick(result)
                if await self.wait_followup():
                    delay = 0.0  # accounting just landed: the next tick uses it now
            await asyncio.sleep(delay)

    async def watch(self, interval: float = DEFAULT_INTERVAL) -> AsyncIterator[TickResult]:
        """Yield a tick result every ``interval`` seconds (errors propagate)."""
        base = max(MIN_INTERVAL, float(interval))
        while True:
            yield await self.tick()
            await asyncio.sleep(0.0 if await self.wait_followup() else base)

    # ------------------------------------------------------------------ cancel

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
        async with self._exclusive():
            job = await self._settled_record(job_id)
            if job.status.terminal:
                return job
            later = [
                step
                for step in self.store.pipeline(self.profile_name, job.pipeline_id)
                if step.pipeline_step > job.pipeline_step and not step.status.terminal
            ]
            why = f"Canceled: the previous step was canceled ({job.id})."
            await self._cancel([(job, "Canceled by the user."), *((s, why) for s in later)])
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
        async with self._exclusive():
            steps = self.store.pipeline(self.profile_name, pipeline_id)
            if not steps:
                raise BadInput(
                    f"There is no pipeline '{pipeline_id}' in profile '{self.profile_name}'; "
                    "run 'tao-slurm-tui status' to list the pipelines."
                )
            alive = [await self._settled_record(s.id) for s in steps if not s.status.terminal]
            why = "Canceled by the user (the whole pipeline)."
            await self._cancel([(s, why) for s in alive if not s.status.terminal])
            return self.store.pipeline(self.profile_name, pipeline_id)

    async def _settled_record(self, job_id: str) -> JobRecord:
        """The stored job; a submit that died after sbatch is reconciled first (its SLURM job
        found by name), or a cancel would leave it running."""
        job = self.store.require(self.profile_name, job_id)
        if not job.submitted and not job.status.terminal:
            await self._reconcile_interrupted(only=job_id)
            job = self.store.require(self.profile_name, job_id)
        return job

    async def _cancel(self, jobs: Sequence[tuple[JobRecord, str]]) -> None:
        """scancel every SLURM id of ``jobs`` in one command, then mark each Canceled with its
        message. Call under :meth:`_exclusive`.

        Raises:
            OperationFailed: SLURM refused.
            RemoteError: the cluster could not be reached (nothing was marked).
        """
        ids: list[str] = []
        for job, _ in jobs:
            ids += [a.slurm_job_id for a in job.attempts if a.slurm_job_id]
            if job.sqsh_job_id:
                ids.append(job.sqsh_job_id)
        ids = list(dict.fromkeys(ids))
        if ids:
            result = await self.conn.run(
                join(["scancel", *ids]), timeout=self.profile.command_timeout
            )
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
            own = [a.slurm_job_id for a in job.attempts if a.slurm_job_id]
            if job.sqsh_job_id:
                own.append(job.sqsh_job_id)
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
                + ("" if message == "Canceled by the user." else f": {message}"),
            )

    # ------------------------------------------------------------------ pipelines

    async def _follow_pipelines(self, result: TickResult) -> None:
        """Keep every pipeline moving after a tick changed one of its steps.

        From the stored records only (no remote command unless something must change):

        * a step after one that ended Error or Canceled is cancelled (``scancel``) and ends
          Canceled with "the previous step failed": SLURM would leave it pending forever with
          ``DependencyNeverSatisfied``;
        * a step held with ``DependencyNeverSatisfied`` behind a step that was retried under a
          new SLURM id is re-pointed at the retry (``scontrol update JobId=<step>
          Dependency=afterok:<new id>``): SLURM never re-evaluates a failed dependency.
        """
        doomed: list[tuple[JobRecord, str]] = []
        repoint: list[tuple[JobRecord, str]] = []
        pipelines: dict[str, list[JobRecord]] = {}
        for job in self._cache.values():
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
                elif (target := _repoint_target(previous, step)) and not self._repointed(
                    step, target
                ):
                    repoint.append((step, target))
        if not doomed and not repoint:
            return
        async with self._exclusive():
            # Another process may have acted meanwhile: decide again on the stored records.
            doomed = [
                (fresh, why)
                for job, why in doomed
                if (fresh := self.store.get(self.profile_name, job.id)) is not None
                and not fresh.status.terminal
            ]
            if doomed:
                try:
                    await self._cancel(doomed)
                except TaoError as exc:
                    result.warning = result.warning or f"cancelling a pipeline's steps: {exc}"
                else:
                    for job, why in doomed:
                        result.events.append(MonitorEvent(job.id, "canceled", f"{job.id}: {why}"))
                        result.changed.append(job.id)
            if repoint:
                await self._repoint(repoint, result)
        for job_id in {job.id for job, _ in (*doomed, *repoint)}:
            fresh = self.store.get(self.profile_name, job_id)
            if fresh is not None:
                self._cache[job_id] = fresh
        self._version = None  # read what was written since again next tick
        result.jobs = list(self._cache.values())

    def _repointed(self, step: JobRecord, target: str) -> bool:
        return any(
            e.kind == "dependency" and e.text.endswith(f"afterok:{target}")
            for e in self.store.events(self.profile_name, step.id)
        )

    async def _repoint(self, moves: Sequence[tuple[JobRecord, str]], result: TickResult) -> None:
        """``scontrol update JobId=<step> Dependency=afterok:<target>`` for every move, in one
        command; each move that worked is written to the step's event log."""
        parts = [
            join(["scontrol", "update", f"JobId={step.slurm_job_id}", f"Dependency=afterok:{to}"])
            + f' 2>&1; printf "%s%s %s\\n" "$M" {quote(step.id)} "$?"'
            for step, to in moves
        ]
        try:
            out = await self.conn.run(_script([*parts]), timeout=self.profile.command_timeout)
        except TaoError as exc:
            result.warning = result.warning or f"re-pointing a pipeline's dependency: {exc}"
            return
        codes: dict[str, str] = {}
        for line in out.stdout.splitlines():
            if line.startswith(_MARK):
                job_id, _, code = line[len(_MARK) :].rpartition(" ")
                codes[job_id] = code.strip()
        for step, target in moves:
            if codes.get(step.id) != "0":
                log.warning("re-pointing %s at %s failed: %s", step.id, target, out.stdout[-300:])
                continue
            text = (
                f"the previous step was retried as SLURM job {target}: SLURM job "
                f"{step.slurm_job_id} now waits for it: Dependency=afterok:{target}"
            )
            self.store.add_event(self.profile_name, step.id, "dependency", text)
            self.store.update_job(
                self.profile_name, step.id, message="Waiting for the retried previous step."
            )
            result.events.append(MonitorEvent(step.id, "state", f"{step.id}: {text}"))
            result.changed.append(step.id)

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

    @contextlib.asynccontextmanager
    async def _exclusive(self) -> AsyncIterator[None]:
        """The cross-process retry/cancel lock (flock on a file next to the state DB)."""
        self._lock_path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            await asyncio.to_thread(fcntl.flock, fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock


# ----------------------------------------------------------------------------------- helpers


NEVER_SATISFIED = "DependencyNeverSatisfied"
"""squeue's reason for a job whose ``afterok`` job failed: SLURM holds it forever."""

_FAILED_STATES = frozenset(
    {"FAILED", "NODE_FAIL", "BOOT_FAIL", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "DEADLINE"}
)


def pipeline_failed(failed: JobRecord) -> str:
    """The message of a step cancelled because ``failed`` (an earlier step) did not complete."""
    if failed.status is TaoStatus.CANCELED:
        return f"Canceled: the previous step was canceled ({failed.id})."
    return f"Canceled: the previous step failed ({failed.id} ended {failed.status})."


def _repoint_target(previous: JobRecord, step: JobRecord) -> str:
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


def _copy(job: JobRecord) -> JobRecord:
    return replace(
        job,
        attempts=[replace(a) for a in job.attempts],
        progress=Progress.from_dict(job.progress.to_dict()),
    )


def _default_lock_path(store: JobStore) -> Path:
    path = getattr(store, "path", None)
    if path:
        return Path(f"{path}.retry.lock")
    from tao_slurm_tui.config import state_db_path

    return Path(f"{state_db_path()}.retry.lock")


def _log_lines(lines: list[str] | None) -> list[str] | None:
    if lines is None:
        return None
    if any(line == _MISSING for line in lines):
        return None
    return lines


def _requeue_why(line: str) -> str:
    # "<date> restart=N rc=R why..." (written by the batch script's tao_requeue).
    parts = line.split(" ", 3)
    return parts[3].strip() if len(parts) == 4 and parts[1].startswith("restart=") else line.strip()
