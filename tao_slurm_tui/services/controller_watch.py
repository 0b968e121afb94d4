"""What a watching monitor knows between two answers of slurmctld.

A monitor made with ``paced=True`` (the queue screen's and ``status --watch``'s) reads, on every
tick, the run events its jobs write on the login host (:mod:`tao_slurm_tui.core.run_events`), and
asks slurmctld only when something may have changed that the files cannot tell
(:mod:`tao_slurm_tui.core.pace`). :class:`ControllerWatch` holds what that needs between ticks:
the event files' sizes the shell compares against, each attempt's last event, the pace, and the
clock offsets that turn SLURM's local times into the monitor's. Between answers a running job's
elapsed time is carried forward on the clock, in steps of :data:`ELAPSED_STEP` seconds, as
squeue itself would print it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from tao_slurm_tui.core.layout import JobPaths
from tao_slurm_tui.core.models import Attempt, JobRecord
from tao_slurm_tui.core.pace import JobView, Pace
from tao_slurm_tui.core.run_events import EventsAnswer, RunEvent, slurm_time_to_unix
from tao_slurm_tui.core.slurm_text import format_duration, parse_duration

ELAPSED_STEP = 10
"""Seconds by which a running job's elapsed time moves between two answers of squeue."""


class ControllerWatch:
    """The run events seen, the pace of squeue, and the clocks, for one monitor."""

    def __init__(self, clock: Callable[[], float]) -> None:
        """Know nothing yet: the first tick asks slurmctld.

        Args:
            clock: the monitor's time source.
        """
        self.clock = clock
        self.pace = Pace()
        self.sizes = ""
        """The event files' sizes as the shell last printed them."""
        self._runs: dict[str, RunEvent | None] = {}
        """SLURM id → the last line of its events file (None: the file has none)."""
        self._skew = 0.0
        """The monitor's clock minus the login host's, at the last answer."""
        self._utc_offset = 0
        """The login host's UTC offset (SLURM prints local times)."""
        self._elapsed: dict[str, tuple[int, float]] = {}
        """SLURM id → (elapsed seconds squeue said, when), for running jobs."""
        self._paths: dict[tuple[str, str, str], str] = {}
        """(base dir, job id, SLURM id) → its events file (made once)."""

    # ------------------------------------------------------------------ the tick's reads

    def paths(self, jobs: Iterable[JobRecord], results_root: str) -> dict[str, str]:
        """Job id → the events file of its latest attempt."""
        out: dict[str, str] = {}
        known = self._paths
        for job in jobs:
            key = (job.base_results_dir or results_root, job.id, job.attempts[-1].slurm_job_id)
            path = known.get(key)
            if path is None:
                path = known[key] = JobPaths(key[0], key[1]).run_events(key[2])
            out[job.id] = path
        return out

    def should_ask(self, jobs: Sequence[JobRecord], *, full: bool, accounting: bool) -> str:
        """Why this tick asks squeue whatever the event files say ('' when it need not).

        Args:
            jobs: the active jobs.
            full: the caller wants SLURM's word now (a refresh key, a one-shot ``status``).
            accounting: the accounting follow-up has a question open or an answer to merge
                (those merges need squeue's rows of the same tick).
        """
        if full:
            return "full"
        if accounting and not self.pace.failed:  # (a failing controller waits its turn)
            return "accounting"
        wait, why = self.pace.next(self.views(jobs), self.clock())
        return why if wait <= 0 else ""

    def take(self, answer: EventsAnswer, jobs: Sequence[JobRecord]) -> None:
        """Note what the events part printed (sizes, changed files, the login host's clock)."""
        if not answer.complete or answer.sizes is None:
            return
        self.sizes = answer.sizes
        by_id = {j.id: j.attempts[-1].slurm_job_id for j in jobs}
        for job_id, event in answer.last.items():
            if job_id in by_id:
                self._runs[by_id[job_id]] = event
        if answer.cluster_now is not None:
            self._skew = self.clock() - answer.cluster_now
            self._utc_offset = answer.utc_offset

    def answered(self, jobs: Sequence[JobRecord], *, ok: bool) -> None:
        """squeue ran in this tick; ``jobs`` are the active jobs as merged from its answer."""
        now = self.clock()
        self.pace.answered(self.views(jobs), now, ok=ok)
        if not ok:
            return
        elapsed: dict[str, tuple[int, float]] = {}
        for job in jobs:
            attempt = job.attempts[-1]
            seconds = parse_duration(attempt.elapsed) if attempt.state == "RUNNING" else None
            if seconds is not None:
                elapsed[attempt.slurm_job_id] = (seconds, now)
        self._elapsed = elapsed

    def forget_all_but(self, sids: Iterable[str]) -> None:
        """Keep what is known of ``sids`` only (the active attempts)."""
        keep = set(sids)
        self._runs = {k: v for k, v in self._runs.items() if k in keep}
        self._elapsed = {k: v for k, v in self._elapsed.items() if k in keep}
        self._paths = {k: v for k, v in self._paths.items() if k[2] in keep}

    # ------------------------------------------------------------------ between answers

    def elapsed_now(self, attempt: Attempt) -> str | None:
        """The running attempt's elapsed time carried forward on the clock (None: no
        change to show, or not running)."""
        known = self._elapsed.get(attempt.slurm_job_id)
        if known is None or attempt.state != "RUNNING":
            return None
        seconds, at = known
        step = int((self.clock() - at) // ELAPSED_STEP) * ELAPSED_STEP
        if step <= 0:
            return None
        text = format_duration(seconds + step)
        return None if text == attempt.elapsed else text

    def views(self, jobs: Iterable[JobRecord]) -> list[JobView]:
        """What the pace needs of each active job."""
        return [self._view(job) for job in jobs]

    def _view(self, job: JobRecord) -> JobView:
        attempt = job.attempts[-1]
        sid = attempt.slurm_job_id
        state = attempt.state
        return JobView(
            sid=sid,
            state=state,
            restarts=attempt.restarts,
            run=self._runs.get(sid),
            est_start=self._local(attempt.est_start) if state == "PENDING" else None,
            ends_by=self._ends_by(attempt) if state == "RUNNING" else None,
        )

    def _local(self, slurm_time: str) -> float | None:
        """A SLURM timestamp on the monitor's clock."""
        unix = slurm_time_to_unix(slurm_time, self._utc_offset) if slurm_time else None
        return None if unix is None else unix + self._skew

    def _ends_by(self, attempt: Attempt) -> float | None:
        start = self._local(attempt.start_time)
        limit = parse_duration(attempt.time_limit)
        return None if start is None or limit is None else start + limit

    def wait(self, jobs: Sequence[JobRecord]) -> float:
        """Seconds until the pace asks squeue again (for a caller that sleeps until then)."""
        return self.pace.wait(self.views(jobs), self.clock())

    @property
    def runs(self) -> Mapping[str, RunEvent | None]:
        """SLURM id → the last event line seen."""
        return self._runs
