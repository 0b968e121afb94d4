"""sacct in the background: the monitor's accounting follow-up.

A tick never waits for sacct. It asks, in one batched ``sacct -X -D`` on its own channel, only
about the ids squeue cannot settle, and the next tick uses the answer:

- squeue no longer lists the job (it ended while no client was watching);
- squeue says it ended but accounting has not agreed yet: a job SLURM requeues itself
  (``--requeue`` on NODE_FAIL, or the batch script's ``scontrol requeue``) passes through such
  states and comes back PENDING under the same id, so a finished state is acted on only once
  sacct agrees, or after :data:`UNSETTLED_TICKS` ticks AND :data:`UNSETTLED_SECONDS` seconds
  (accounting down);
- a requeue whose restart count ``sacct -D`` is to confirm (a *probe*).

:meth:`AccountingFollowUp.wait` lets a caller run the next tick as soon as the rows land.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable

from tao_slurm_tui.core.slurm_poll import (
    SlurmRow,
    SlurmSnapshot,
    is_transient,
    parse_poll_output,
    poll_command,
)
from tao_slurm_tui.errors import TaoError
from tao_slurm_tui.remote.connection import Remote

UNSETTLED_TICKS = 3
"""Ticks a finished state squeue reports may wait for sacct to agree before it is trusted
anyway (accounting down)."""
LOST_ANSWERS = 3
"""sacct answers without a row (while squeue, answering, does not list the job either) before a
submitted job counts as lost by SLURM: a primary slurmctld that crashes before saving its state
forgets the jobs of its last seconds, and no accounting record was written for them."""
LOST_SECONDS = 120.0
"""...and the least time since the first such answer (slurmdbd lags by seconds, not minutes)."""
UNSETTLED_SECONDS = 30.0
"""...and the least time it waits: slurmdbd lags the controller by seconds, so a tick count
alone (3 ticks are 3 s at a 1 s interval) would end a job without its exit code."""


class Tally:
    """Per id: how many times something was seen, and since when (the first time)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        """Count nothing yet; ``clock`` is the time source."""
        self._clock = clock
        self._seen: dict[str, tuple[int, float]] = {}

    def add(self, sid: str) -> tuple[int, float]:
        """Count ``sid`` once more; return the count and the seconds since its first time."""
        now = self._clock()
        count, since = self._seen.get(sid, (0, now))
        self._seen[sid] = (count + 1, since)
        return count + 1, now - since

    def peek(self, sid: str) -> tuple[int, float]:
        """The count and the seconds since the first time, without counting ((0, 0.0): never)."""
        if sid not in self._seen:
            return 0, 0.0
        count, since = self._seen[sid]
        return count, self._clock() - since

    def forget(self, sid: str) -> None:
        """Start ``sid`` again from nothing."""
        self._seen.pop(sid, None)

    def keep_only(self, keep: set[str]) -> None:
        """Forget every id but ``keep``."""
        self._seen = {k: v for k, v in self._seen.items() if k in keep}

    def __contains__(self, sid: object) -> bool:
        return sid in self._seen

    def __bool__(self) -> bool:
        return bool(self._seen)


class AccountingFollowUp:
    """What sacct said about a profile's active jobs, and the one background call asking more.

    Per tick: :meth:`begin_tick`, then for each merged job :meth:`rows_for`, the requeue and
    settle questions, :meth:`ask_if_needed`; then :meth:`send`. Ids are SLURM job ids.
    """

    def __init__(
        self, conn: Remote, *, timeout: Callable[[], float], clock: Callable[[], float]
    ) -> None:
        """Keep nothing yet.

        Args:
            conn: the profile's connection (``run``: its own channel, beside the tick's shell).
            timeout: the command timeout (read at every call: the profile may be edited).
            clock: time source (tests).
        """
        self.conn = conn
        self.timeout = timeout
        self._rows: dict[str, list[SlurmRow]] = {}
        """``sacct -X -D`` rows from earlier follow-ups, by id."""
        self._unsettled = Tally(clock)
        """Finished per squeue, not yet per sacct: ticks since first seen."""
        self._probe: set[str] = set()
        """Requeues whose restart count sacct is to confirm."""
        self._probed: set[str] = set()
        """Probes answered since the last tick began."""
        self._answered: set[str] = set()
        """Probes answered, for the tick running now."""
        self._asked: set[str] = set()
        """Ids this tick asks about."""
        self._asked_before: set[str] = set()
        """Ids the previous tick asked about."""
        self._missing = Tally(clock)
        """Ids sacct answered about without a row (or only the transient ``allocation`` one a lost
    job keeps): answers since the first."""
        self._runaway = Tally(clock)
        """Ids sacct calls pending or running while squeue, answering, does not list them: ticks
    since first seen."""
        self._task: asyncio.Task[bool] | None = None
        self._error = ""

    # ------------------------------------------------------------------ one tick

    def begin_tick(self) -> None:
        """Start a tick: the probes answered and the ids asked since the last one are its own."""
        self._answered, self._probed = self._probed, set()
        self._asked_before, self._asked = self._asked, set()

    def rows_for(self, ids: Iterable[str]) -> dict[str, list[SlurmRow]]:
        """What earlier follow-ups learnt from sacct, for ``ids`` only."""
        return {sid: rows for sid in ids if (rows := self._rows.get(sid)) is not None}

    def involves(self, sid: str) -> bool:
        """True while accounting has an open question or a new answer about ``sid`` (so the
        job must be merged this tick even if nothing else changed)."""
        return (
            sid in self._asked_before
            or sid in self._unsettled
            or sid in self._probe
            or sid in self._answered
        )

    def waiting(self, sids: Iterable[str]) -> bool:
        """True while any of ``sids`` has a question open or an answer to merge (asked this
        tick or the one before, unsettled, a probe): a paced tick must then ask squeue, since
        the merge reads squeue's rows of the same tick."""
        busy = self._asked | self._asked_before | self._probe | self._probed | self._answered
        return any(sid in busy or sid in self._unsettled for sid in sids)

    def answers_probe(self, sid: str) -> bool:
        """True when this tick's sacct rows for ``sid`` answer a requeue probe."""
        return sid in self._answered

    def probe(self, sid: str) -> None:
        """Ask sacct ``-D`` to confirm the restart count of a job squeue saw requeued."""
        self._probe.add(sid)

    def still_unsettled(self, sid: str) -> bool:
        """For a finished state sacct has not confirmed: True while it should wait longer."""
        ticks, age = self._unsettled.add(sid)
        return ticks < UNSETTLED_TICKS or age < UNSETTLED_SECONDS

    def lost(self, sid: str) -> bool:
        """True when accounting has answered about ``sid`` without a row for long enough
        (:data:`LOST_ANSWERS`, :data:`LOST_SECONDS`): with squeue not listing it either, SLURM
        lost the job."""
        answers, age = self._missing.peek(sid)
        return answers >= LOST_ANSWERS and age >= LOST_SECONDS

    def runaway(self, sid: str, unlisted_but_live: bool) -> bool:
        """True when sacct has called ``sid`` pending or running while squeue, answering, did
        not list it, for :data:`LOST_ANSWERS` ticks and :data:`LOST_SECONDS`: the controller
        lost a job whose start accounting had already recorded (SLURM's "runaway jobs": a
        primary that crashed before saving its state, after the job started). squeue lists
        every job it knows, ended ones too until ``MinJobAge``, so only a job it forgot is
        missing while accounting says it has not ended.

        Args:
            sid: the SLURM job id.
            unlisted_but_live: this tick, squeue answered without ``sid`` and sacct's state
                for it is not a finished one (False forgets what was counted).
        """
        if not unlisted_but_live:
            self._runaway.forget(sid)
            return False
        ticks, age = self._runaway.add(sid)
        return ticks >= LOST_ANSWERS and age >= LOST_SECONDS

    def settled(self, sid: str) -> None:
        """The state of ``sid`` is acted on: stop counting it as unsettled."""
        self._unsettled.forget(sid)

    def ask_if_needed(self, sid: str, snap: SlurmSnapshot | None, *, listed: bool) -> None:
        """Ask sacct about ``sid`` when squeue cannot settle it: a probe, a finished state sacct
        has not confirmed, or a job squeue no longer lists."""
        forgotten = not listed and not (snap and snap.settled)
        if sid in self._probe or (snap and snap.terminal and not snap.settled) or forgotten:
            self._asked.add(sid)

    def send(self) -> list[str]:
        """Start the background call for the ids this tick asks about (sorted, returned).

        At most one call runs at a time; a tick that finds one running leaves its ids for the
        next tick to ask again.
        """
        if self._asked:
            ids = sorted(self._asked)
            if self._task is None or self._task.done():
                probes = {sid for sid in ids if sid in self._probe}
                self._probe -= probes
                self._task = asyncio.get_running_loop().create_task(self._call(ids, probes))
            return ids
        if self._task is None or self._task.done():
            # Nothing is asked of sacct any more (the jobs it failed about are listed again or
            # ended): its last failure says nothing about these rows, and a screen showing it
            # would show it forever.
            self._error = ""
        return []

    def keep_only(self, active: Iterable[str]) -> None:
        """Forget every id but ``active`` (bounded by the active jobs, not every job that ran)."""
        keep = set(active)
        self._rows = {k: v for k, v in self._rows.items() if k in keep}
        for tally in (self._unsettled, self._missing, self._runaway):
            tally.keep_only(keep)

    def rest(self) -> None:
        """No active job is left: there is nothing sacct could be asked about."""
        self._error = ""

    @property
    def holds_nothing(self) -> bool:
        """True when no rows and no unsettled states are kept."""
        return not (self._rows or self._unsettled or self._missing or self._runaway)

    # ------------------------------------------------------------------ the call

    async def _call(self, ids: list[str], probes: set[str]) -> bool:
        try:
            result = await self.conn.run(poll_command((), ids), timeout=self.timeout())
        except (TaoError, ValueError) as exc:
            self._error = f"sacct failed: {exc}"
            self._probe |= probes  # ask again next time
            return False
        output = parse_poll_output(result.stdout)
        self._error = output.error
        news = False
        answered = output.sacct_rc == 0 and not output.error
        for sid in ids:
            rows = output.sacct_rows.get(sid)
            if rows and not all(is_transient(r) for r in rows):
                self._missing.forget(sid)
            elif answered:
                self._missing.add(sid)
            if rows is not None and rows != self._rows.get(sid):
                self._rows[sid] = rows
                news = True
        self._probed |= probes
        return news or bool(probes)

    @property
    def warning(self) -> str:
        """What the last call could not read (it failed, or answered lines that are no job
        rows), as a phrase; '' when it was complete or none ran."""
        return self._error

    async def close(self) -> None:
        """Stop a call under way, while the loop and the connection still run (a back end
        that closes must not leave it reading from a channel about to be torn down)."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def wait(self) -> bool:
        """Wait for the background call, if one is running.

        Returns:
            True when it brought rows the next tick should use (so the caller may tick again
            at once instead of after the poll interval).
        """
        task = self._task
        if task is None:
            return False
        try:
            return await asyncio.shield(task)
        finally:
            if self._task is task and task.done():
                self._task = None
