"""When a watching monitor asks slurmctld: at a pace set by what can change (pure).

A watching tick (the queue screen, ``status --watch``) always reads the jobs' run events on the
login host (:mod:`tao_slurm_tui.core.run_events`: a ``stat``, no slurmctld RPC); a new event
runs squeue in the same round trip. Beyond that, squeue is asked only when :meth:`Pace.due`:

- a job the controller has not answered for yet (just submitted, adopted) -- at once;
- a job in a passing state (COMPLETING, CONFIGURING, REQUEUED, …), finished but not settled,
  or whose events disagree with the last answer (its run ended but SLURM still said RUNNING):
  every tick for :data:`FAST_FOR` seconds, then every :data:`SLOW_TRANSITION` (a node's
  epilog can hold COMPLETING for minutes);
- a running job that writes events: every :data:`RUNNING_QUIET` (only a lost node or a SIGKILL
  ends a run without its ``end`` line), and at the end of its time limit;
- a running job that writes none (submitted by an older version): every :data:`LEGACY`;
- a pending job: its reason and start estimate, and a cancel by someone else, are all the
  controller can tell (its start is an event): every tenth of the time to its estimated start,
  between :data:`PENDING_MIN` and :data:`PENDING_MAX`; :data:`PENDING_UNKNOWN` without one;
- after an answer that failed: :data:`AFTER_FAILURE`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tao_slurm_tui.core.run_events import RunEvent
from tao_slurm_tui.core.slurm import TERMINAL_STATES

RUNNING_QUIET = 60.0
LEGACY = 10.0
PENDING_MIN = 30.0
PENDING_MAX = 300.0
PENDING_UNKNOWN = 60.0
FAST_FOR = 30.0
SLOW_TRANSITION = 10.0
AFTER_FAILURE = 10.0
END_GRACE = 5.0
"""Seconds after a running job's time limit at which the controller is asked (SIGTERM at the
limit normally leaves an ``end`` line first)."""

PASSING_STATES = frozenset(
    {
        "CONFIGURING",
        "COMPLETING",
        "REQUEUED",
        "REQUEUE_FED",
        "RESIZING",
        "SIGNALING",
        "STAGE_OUT",
        "SPECIAL_EXIT",
    }
)
"""States SLURM leaves by itself within seconds."""


@dataclass(frozen=True)
class JobView:
    """What the pace needs to know about one active job's latest attempt."""

    sid: str
    """SLURM id."""
    state: str
    """SLURM's last answer ('' when it has not answered yet)."""
    restarts: int = 0
    run: RunEvent | None = None
    """The last line of its events file (None: no file, or no line yet)."""
    est_start: float | None = None
    """Estimated start (unix time) while pending."""
    ends_by: float | None = None
    """When its time limit ends (unix time) while running."""


def disagrees(view: JobView) -> bool:
    """True when the job's own events say something SLURM's last answer did not: a run started
    that SLURM still called pending, or ended while SLURM still said running."""
    run = view.run
    if run is None:
        return False
    if run.restart > view.restarts:
        return True  # a run after a requeue SLURM's last answer did not know of
    if run.restart < view.restarts:
        return False  # the line of an earlier run
    if run.kind == "start":
        return view.state in ("", "PENDING", "REQUEUED", "REQUEUE_HOLD")
    return view.state in ("RUNNING", "CONFIGURING", "SUSPENDED")


class Pace:
    """When the next squeue is due, from the jobs and the last answers (no I/O; time given)."""

    def __init__(self) -> None:
        self.last_answer: float | None = None
        """When squeue last answered (monitor clock)."""
        self.failed = False
        """The last ask failed (the controller is down or slow)."""
        self._since: dict[str, tuple[str, float]] = {}
        """SLURM id → (state, when first seen in it): how long a passing state lasts."""

    def answered(self, views: Iterable[JobView], now: float, *, ok: bool) -> None:
        """squeue ran at ``now``; ``views`` hold its answer (``ok``: it answered)."""
        self.last_answer = now
        self.failed = not ok
        since = {}
        for view in views:
            previous = self._since.get(view.sid)
            keep = previous is not None and previous[0] == view.state
            since[view.sid] = previous if keep and previous else (view.state, now)
        self._since = since

    def due(self, views: Iterable[JobView], now: float) -> bool:
        """True when squeue should run in this tick."""
        return self.wait(views, now) <= 0

    def wait(self, views: Iterable[JobView], now: float) -> float:
        """Seconds until squeue is due (0 or less: now)."""
        return self.next(views, now)[0]

    def next(self, views: Iterable[JobView], now: float) -> tuple[float, str]:
        """Seconds until squeue is due (0 or less: now), and why: ``first``, ``failure``,
        ``new``, ``passing`` (a passing state, or events SLURM has not caught up with),
        ``running``, ``legacy``, ``pending`` (a held or suspended job counts as one) or
        ``idle`` (no job)."""
        last = self.last_answer
        if last is None:
            return 0.0, "first"
        if self.failed:
            return last + AFTER_FAILURE - now, "failure"
        soonest, why = float("inf"), "idle"
        for view in views:
            at, reason = self._due_at(view, last, now)
            if at < soonest:
                soonest, why = at, reason
        return soonest - now, why

    def _due_at(self, view: JobView, last: float, now: float) -> tuple[float, str]:
        """When ``view`` wants the next answer (unix time on the monitor's clock), and why."""
        if not view.state:
            return now, "new"
        # A finished state of an active job waits for accounting to agree: passing too.
        passing = view.state in PASSING_STATES or view.state in TERMINAL_STATES or disagrees(view)
        if passing:
            _, since = self._since.get(view.sid, (view.state, last))
            return (now if now - since < FAST_FOR else last + SLOW_TRANSITION), "passing"
        if view.state == "RUNNING":
            if view.run is None:
                return last + LEGACY, "legacy"
            due = last + RUNNING_QUIET
            if view.ends_by is not None and view.ends_by + END_GRACE > last:
                due = min(due, view.ends_by + END_GRACE)
            return due, "running"
        if view.state == "PENDING" and view.est_start is not None:
            interval = min(PENDING_MAX, max(PENDING_MIN, (view.est_start - now) / 10))
            return last + interval, "pending"
        return last + PENDING_UNKNOWN, "pending"  # held, suspended, …: nothing moves by itself
