"""The exactly-once core of phase 4 (**submit-and-record**): one ``sbatch``, never two jobs.

The job is recorded in the store before this runs (``submitted=False``). ONE remote command
runs ``sbatch --test-only`` → ``sbatch --parsable --export=ALL --hold`` → ``mkdir -p
slurm-logs/<name>-<id>`` → ``scontrol release`` (:func:`~.commands.sbatch_command`; SLURM never
creates ``--output`` directories). It is never re-run blindly: if the transport fails around it
(:class:`ConnectionLost` / :class:`CommandTimeout`) the job is looked up by its exact name with
``squeue``/``sacct`` on every login host (after a few delays: a timed-out sbatch may still be
finishing); a job found there is adopted (its log directory made and the job released),
otherwise it is submitted once more. Rejections that still leave a record in SLURM
(``BadConstraints``: ``FAILED`` with no node) are never adopted.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from tao_slurm_tui.core.launch import LaunchPlan, refusal_hint
from tao_slurm_tui.core.layout import JobPaths
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.core.quoting import quote
from tao_slurm_tui.errors import OperationFailed, TaoError
from tao_slurm_tui.remote.connection import (
    CommandResult,
    CommandTimeout,
    ConnectionLost,
    RemoteFiles,
)
from tao_slurm_tui.services.backend import ProgressCallback, SubmitStage
from tao_slurm_tui.services.images import sbatch_error
from tao_slurm_tui.services.submit.commands import (
    parse_reconcile,
    parse_submitted,
    reconcile_command,
    sbatch_command,
)

log = logging.getLogger(__name__)

SBATCH_TIMEOUT = 120.0
"""Seconds the hold → mkdir → release command may take (sbatch waits ~9 s for a dead controller)."""

RECONCILE_SLACK = 120.0
"""Seconds added to the reconcile window on top of the time since the submission started."""

RECONCILE_DELAYS = (0.0, 3.0, 8.0)
"""Lookups after a lost sbatch: a timed-out sbatch may still be finishing on the login host."""


class SbatchRejected(OperationFailed):
    """SLURM refused the job; ``str()`` carries SLURM's own words."""

    def __init__(self, message: str, slurm_message: str) -> None:
        super().__init__(message)
        self.slurm_message = slurm_message
        """The ``sbatch: error:`` lines."""


@dataclass(frozen=True)
class FoundJob:
    """A job found by name during a reconcile."""

    slurm_job_id: str
    state: str
    host: str


@dataclass(frozen=True)
class Submitted:
    """Where the one sbatch of a job ended up."""

    slurm_job_id: str
    host: str
    """The login host that accepted it (or where it was found)."""
    adopted: bool = False
    """Found by name after a lost connection instead of confirmed by sbatch."""


@dataclass(frozen=True)
class SbatchOnce:
    """Runs a job's sbatch command at most once per try over the profile's connection."""

    conn: RemoteFiles
    """The profile's connection (failover over its login hosts)."""
    profile: Profile
    """Its login hosts, user and command timeout."""
    host_connection: Callable[[str], RemoteFiles]
    """A connection to ONE login host, for the login hosts ``conn`` is not on."""
    sleep: Callable[[float], Awaitable[object]]
    """``asyncio.sleep`` (tests pass a no-op)."""

    async def submit(
        self,
        paths: JobPaths,
        *,
        known: Sequence[str],
        started: float,
        report: ProgressCallback | None,
        plan: LaunchPlan | None = None,
    ) -> Submitted:
        """Run the sbatch command; after a transport failure reconcile before the one retry.

        Args:
            paths: the job's remote layout (its script is staged).
            known: SLURM ids of the job's earlier attempts (never adopted).
            started: ``time.monotonic()`` when the submission started (the reconcile window).
            report: the submission's progress (None: a retry, which reports nothing).
            plan: the job's plan, so a refusal can say what could not be placed.

        Raises:
            SbatchRejected: SLURM refused the job (no job exists).
            OperationFailed: the job was cancelled after sbatch (log dir, release), or the
                outcome of a lost submission could not be checked.
        """
        name = paths.job_id
        command = sbatch_command(paths.sbatch, f"{paths.logs_root}/{name}-")
        for attempt in range(2):
            try:
                result = await self.conn.run(command, timeout=SBATCH_TIMEOUT, retry_on_drop=False)
            except (ConnectionLost, CommandTimeout) as exc:
                log.warning("submit %s: transport failed around sbatch: %s", name, exc)
                found = await self._after_lost(paths, known, started, report, last=attempt == 1)
                if found is not None:
                    return Submitted(found.slurm_job_id, found.host, adopted=True)
                continue
            return _outcome(result, paths, plan)
        raise OperationFailed(f"'{name}' could not be submitted; submit again.")  # unreachable

    async def _after_lost(
        self,
        paths: JobPaths,
        known: Sequence[str],
        started: float,
        report: ProgressCallback | None,
        *,
        last: bool,
    ) -> FoundJob | None:
        """After a lost sbatch: the job found by name, or None to submit once more.

        Raises:
            OperationFailed: the last try was lost too and no job was found.
        """
        name = paths.job_id
        if report is not None:
            report(
                SubmitStage.SBATCH,
                "the connection failed around sbatch; looking the job up by name on every "
                "login host",
            )
        window = time.monotonic() - started + RECONCILE_SLACK
        found = await self.reconcile(paths, known=known, window=window)
        if found is not None:
            return found
        if last:
            raise OperationFailed(
                f"The connection failed twice while submitting '{name}' and no job of that "
                "name was found; check the connection and submit again."
            )
        if report is not None:
            report(SubmitStage.SBATCH, "no job of that name found; submitting again")
        return None

    async def reconcile(
        self,
        paths: JobPaths,
        *,
        known: Sequence[str],
        window: float,
        tries: int = len(RECONCILE_DELAYS),
    ) -> FoundJob | None:
        """Look for a job named like ``paths`` on every login host; adopt the newest found.

        Raises:
            OperationFailed: no login host answered, so the outcome is unknown (the job stays
                recorded as not submitted; submitting again reconciles first).
        """
        name = paths.job_id
        answered_any = False
        for delay in RECONCILE_DELAYS[: max(1, tries)]:
            if delay:
                await self.sleep(delay)
            best: FoundJob | None = None
            for host in self.profile.hostnames or [""]:
                answered, candidates = await self._lookup(host, name, known, window)
                answered_any = answered_any or answered
                if candidates:
                    job_id, state = candidates[0]
                    if best is None or int(job_id) > int(best.slurm_job_id):
                        best = FoundJob(job_id, state, host)
            if best is not None:
                await self._finish_adopted(best, paths)
                return best
        if not answered_any:
            raise OperationFailed(
                f"Could not reach any login host to check whether '{name}' was submitted; the "
                "job is recorded as not submitted: run submit again once the cluster answers "
                "(it checks by name before submitting)."
            )
        return None

    async def _lookup(
        self, host: str, name: str, known: Sequence[str], window: float
    ) -> tuple[bool, list[tuple[str, str]]]:
        command = reconcile_command(self.profile.user, name, int(window) + 1)
        own = getattr(self.conn, "host", None)
        conn: RemoteFiles
        close = False
        if not host or host == own or len(self.profile.hostnames) <= 1:
            conn = self.conn
        else:
            conn = self.host_connection(host)
            close = True
        try:
            result = await conn.run(command, timeout=self.profile.command_timeout)
        except TaoError as exc:
            log.warning("reconcile of %s on %s failed: %s", name, host or "login host", exc)
            return False, []
        finally:
            if close:
                closer = getattr(conn, "close", None)
                if closer is not None:
                    await closer()
        return parse_reconcile(result.stdout, window_seconds=window, exclude_ids=known)

    async def _finish_adopted(self, found: FoundJob, paths: JobPaths) -> None:
        """Give an adopted job what the lost command may not have: its log dir and a release."""
        log_dir = f"{paths.logs_root}/{paths.job_id}-{found.slurm_job_id}"
        command = (
            f"mkdir -p -- {quote(log_dir)} && "
            f"{{ scontrol release {quote(found.slurm_job_id)} 2>/dev/null || true; }}"
        )
        await self.conn.run(command, check=True, timeout=self.profile.command_timeout)


def _outcome(result: CommandResult, paths: JobPaths, plan: LaunchPlan | None) -> Submitted:
    """What the sbatch command's answer means.

    Raises:
        OperationFailed: accepted, but cancelled because its log dir or release failed.
        SbatchRejected: SLURM refused it.
    """
    slurm_id = parse_submitted(result.stdout)
    if result.exit_status == 0 and slurm_id:
        return Submitted(slurm_id, result.host)
    if slurm_id:
        # Accepted, but the log directory or the release failed and the job was cancelled
        # (see sbatch_command).
        why = sbatch_error(result.stderr) if result.stderr.strip() else "unknown error"
        raise OperationFailed(
            f"SLURM job {slurm_id} was cancelled because its log directory under "
            f"{paths.logs_root} could not be made or it could not be released ({why}); "
            "check that base_results_dir is writable and submit again."
        )
    message = sbatch_error(result.stderr, result.stdout)
    hint = refusal_hint(message, plan) if plan is not None else ""
    raise SbatchRejected(
        f"SLURM refused the job: {message}. "
        + (hint or "Fix the spec or the profile and submit again."),
        message,
    )
