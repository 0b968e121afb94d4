"""Submitting a resolved job over the profile's one connection, exactly once, in named phases.

Every step of a job (a single job has one) goes through, each phase reported as
``on_progress(stage, detail)`` (:class:`~tao_slurm_tui.services.backend.SubmitStage`):

1. **check** (:mod:`.check`): the input paths exist, the name is free on the cluster -- the
   spec itself was resolved before and is not checked again;
2. **stage** (:mod:`.stage`): the job's files, each written atomically;
3. **prepare image** (:mod:`.image`): the SQSH cache, or a conversion job the step waits for;
4. **submit and record**: ``meta/`` and the batch script written, the job recorded in the store
   *before* the one sbatch command (:mod:`.once`), reconciled by name after a lost connection,
   then marked submitted.

A dry run is check + render: it stages, prepares and submits nothing.

A rejected sbatch raises :class:`~.once.SbatchRejected` with SLURM's own words and leaves
nothing behind (no record, no staged file: the name stays free). A record an earlier try left
unsubmitted (a lost connection, a crash) may hide a job that did reach SLURM: submitting the
same job again looks it up by name first and adopts it, or replaces the record.

A pipeline's steps are submitted at once, each later one held by SLURM with
``--dependency=afterok:<previous step>``; steps an earlier try submitted are kept.

:meth:`Submitter.resubmit` is the monitor's client-side retry: the stored step's plan rendered
again (with ``--exclude`` for the failed nodes, no dependency) and submitted with the same
exactly-once command, adopting only jobs that are not already known attempts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from tao_slurm_tui.core.images import ImageError, parse_image
from tao_slurm_tui.core.layout import JobPaths
from tao_slurm_tui.core.models import Attempt, JobRecord, SubmitResult, TaoStatus
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.core.render import PREVIEW_AFTER, render_sbatch, show_preview_dependency
from tao_slurm_tui.core.spec import ResolvedJob, ResolvedStep, stored_step
from tao_slurm_tui.errors import BadInput, OperationFailed, TaoError
from tao_slurm_tui.remote.connection import Connection, RemoteFiles
from tao_slurm_tui.services.backend import ProgressCallback, SubmitStage
from tao_slurm_tui.services.images import SqshPlan, cache_dir_for, conversion_outcome
from tao_slurm_tui.services.locks import submit_lock
from tao_slurm_tui.services.partitions import (
    Facts,
    Limits,
    fetch_partition_limits,
    fetch_partitions,
)
from tao_slurm_tui.services.store import JobStore
from tao_slurm_tui.services.submit.check import Checked, check
from tao_slurm_tui.services.submit.commands import check_paths_command, meta_file, parse_missing
from tao_slurm_tui.services.submit.image import (
    image_at_start,
    launch_extras,
    prepare_image,
    preview_warning,
)
from tao_slurm_tui.services.submit.once import (
    RECONCILE_SLACK,
    SbatchOnce,
    SbatchRejected,
    Submitted,
)
from tao_slurm_tui.services.submit.stage import stage, stage_launch, unstage

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Clock:
    """When one step's submission started."""

    started: float
    """``time.monotonic()``: the reconcile window."""
    created: float
    """``time.time()``: the record's and meta's creation time."""


def _reporter(name: str, on_progress: ProgressCallback | None) -> ProgressCallback:
    def report(stage: SubmitStage, detail: str) -> None:
        log.info("submit %s: %s: %s", name, stage.value, detail)
        if on_progress is not None:
            on_progress(stage, detail)

    return report


class Submitter:
    """Stages and submits resolved jobs of one profile over its connection, exactly once."""

    def __init__(
        self,
        conn: RemoteFiles,
        store: JobStore,
        profile_name: str,
        profile: Profile,
        *,
        host_connection: Callable[[str], RemoteFiles] | None = None,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ) -> None:
        """Create a submitter.

        Args:
            conn: the profile's one connection (failover over its login hosts).
            store: the job store.
            profile_name: the profile's name (store key, limits cache key).
            profile: the profile.
            host_connection: makes a connection to ONE login host, used by the reconcile to ask
                the login hosts ``conn`` is not on; default a :class:`Connection` to a copy of
                the profile with that host only.
            sleep: ``asyncio.sleep`` (tests pass a no-op).
        """
        self.conn = conn
        self.store = store
        self.profile_name = profile_name
        self.profile = profile
        self._host_connection = host_connection or self._single_host
        self._sleep = sleep

    def _single_host(self, host: str) -> RemoteFiles:
        return Connection.to_host(self.profile, host)

    @property
    def once(self) -> SbatchOnce:
        """The exactly-once sbatch runner over the current profile."""
        return SbatchOnce(self.conn, self.profile, self._host_connection, self._sleep)

    async def partition_limits(self, *, refresh: bool = False) -> Limits:
        """MaxTime of the cluster's partitions (cached per cluster; packaged list offline)."""
        return await fetch_partition_limits(self.conn, self.profile, refresh=refresh)

    async def partitions(self, *, refresh: bool = False) -> tuple[Limits, Facts | None]:
        """MaxTime of the cluster's partitions and their node shapes (one round trip, cached
        per cluster; offline the cache's, or the packaged limits and no facts)."""
        return await fetch_partitions(self.conn, self.profile, refresh=refresh)

    async def check_paths(self, paths: Sequence[str]) -> dict[str, bool]:
        """Whether each cluster path exists (one ``test -e`` round trip).

        Raises:
            OperationFailed: the cluster could not be asked (or did not answer).
        """
        if not paths:
            return {}
        try:
            result = await self.conn.run(
                check_paths_command(paths), timeout=self.profile.command_timeout
            )
        except TaoError as exc:
            raise OperationFailed(f"Could not check the paths on the cluster: {exc}") from None
        if "NOW=" not in result.stdout:
            raise OperationFailed("Checking the paths on the cluster was cut short; try again.")
        missing = set(parse_missing(result.stdout))
        return {path: path not in missing for path in paths}

    # ------------------------------------------------------------------ submit

    async def submit(
        self,
        job: ResolvedJob,
        *,
        dry_run: bool = False,
        on_progress: ProgressCallback | None = None,
    ) -> SubmitResult:
        """Submit every step of ``job`` exactly once (a dry run: check and render each).

        Returns:
            The first step's result; a pipeline's later steps in ``steps``.

        Raises:
            BadInput: missing input paths, a name taken on the cluster.
            OperationFailed: SLURM refused the job (its words), or the outcome of a lost
                submission could not be checked (submit again to reconcile). For a pipeline's
                later step the sentence says which steps were submitted.
        """
        # Every step is checked before the first is staged: a missing mount source or input
        # of a later step must not leave the earlier ones submitted.
        checks: dict[int, Checked] = {}
        for step in job.steps:
            if self._resumed(step, "") is None:
                report = _reporter(step.name, on_progress)
                checks[step.index] = await check(
                    self.conn, self.store, self.profile_name, self.profile, step, report, job.source
                )
        results: list[SubmitResult] = []
        for step in job.steps:
            after = results[-1].slurm_job_id if results else ""
            where = f"step {step.index + 1} of {len(job.steps)} ({step.name})"
            if len(job.steps) > 1 and on_progress is not None:
                on_progress(SubmitStage.CHECKING, f"pipeline {step.pipeline_id}: {where}")
            try:
                result = self._resumed(step, where) or await self._submit_step(
                    step, checks.get(step.index, Checked()), after, dry_run, on_progress
                )
            except TaoError as exc:
                if not results or dry_run:
                    raise
                raise _later_step_failed(exc, where, results) from None
            results.append(result)
        first = results[0]
        first.steps = results[1:]
        return first

    async def _submit_step(
        self,
        step: ResolvedStep,
        checked: Checked,
        after: str,
        dry_run: bool,
        on_progress: ProgressCallback | None,
    ) -> SubmitResult:
        """One checked step through the other phases (``after``: the previous step's SLURM
        id)."""
        clock = _Clock(time.monotonic(), time.time())
        report = _reporter(step.name, on_progress)
        if dry_run:
            return self._dry_run(step, after, report)
        # From here until the outcome is in the store, this process holds the job's submit
        # lock: a monitor (in any process) reconciles a "submitting" record only when no live
        # submitter holds it, so a record left by a crash or Ctrl-C is found by name again.
        lock = submit_lock(self.store, self.profile_name, step.name)
        await lock.acquire()
        try:
            if checked.earlier is not None:
                adopted = await self._settle_earlier_try(step, checked.earlier, report)
                if adopted is not None:
                    return adopted
            await stage(self.conn, self.profile, step, report)
            limits = await self.partition_limits()
            image = await prepare_image(self.conn, self.profile, step, limits, report)
            return await self._submit_and_record(step, image, after, clock, report)
        finally:
            lock.release()

    def _resumed(self, step: ResolvedStep, where: str) -> SubmitResult | None:
        """A pipeline step an earlier try of the same pipeline submitted (it stopped part way):
        kept as it is."""
        existing = self.store.get(self.profile_name, step.name)
        if (
            existing is None
            or not existing.submitted
            or not step.pipeline_id
            or existing.pipeline_id != step.pipeline_id
            or existing.pipeline_step != step.index
        ):
            return None
        if existing.base_results_dir and existing.base_results_dir != step.plan.paths.base:
            raise BadInput(
                f"{step.name} was submitted under {existing.base_results_dir}, but the profile's "
                f"results dir is now {step.plan.paths.base}; the next step would not find its "
                "results: submit the rest with the results dir it was submitted with."
            )
        return SubmitResult(
            existing.id,
            existing.slurm_job_id,
            existing.base_results_dir,
            [f"{where} had been submitted already (SLURM job {existing.slurm_job_id})."],
        )

    def _dry_run(self, step: ResolvedStep, after: str, report: ProgressCallback) -> SubmitResult:
        """Check + render: the script the step would run, nothing staged or prepared."""
        image = image_at_start(step, self.profile)
        preview = bool(step.index) and not after
        extras = launch_extras(image, after=PREVIEW_AFTER if preview else after)
        script = render_sbatch(step.plan, extras)
        # A dry run has no SLURM id for the previous step yet: say what goes there.
        script = show_preview_dependency(script) if preview else script
        warning = preview_warning(step, image)
        report(SubmitStage.DONE, "dry run: nothing staged or submitted")
        return SubmitResult(
            step.name,
            "",
            step.plan.paths.base,
            [warning] if warning else [],
            script=script,
            dry_run=True,
        )

    async def _settle_earlier_try(
        self, step: ResolvedStep, earlier: JobRecord, report: ProgressCallback
    ) -> SubmitResult | None:
        """A record left by an earlier try (refused, lost connection, crash): its job may have
        reached SLURM, so look before replacing it. The adopted job's result, or None (the
        record is gone and the step is submitted afresh)."""
        report(SubmitStage.CHECKING, "an earlier try of this job exists; looking it up by name")
        window = max(0.0, time.time() - earlier.created_at) + RECONCILE_SLACK
        paths = step.plan.paths
        found = await self.once.reconcile(paths, known=(), window=window, tries=1)
        if found is not None:
            self._adopt(earlier, Submitted(found.slurm_job_id, found.host, adopted=True))
            return SubmitResult(
                earlier.id,
                found.slurm_job_id,
                paths.base,
                [
                    f"An earlier try of '{earlier.id}' had reached SLURM as job "
                    f"{found.slurm_job_id}; it was adopted instead of submitting a second job."
                ],
                sqsh_job_id=earlier.sqsh_job_id,
                login_host=found.host,
                adopted=True,
            )
        self.store.delete_job(self.profile_name, step.name)
        return None

    async def _submit_and_record(
        self,
        step: ResolvedStep,
        image: SqshPlan,
        after: str,
        clock: _Clock,
        report: ProgressCallback,
    ) -> SubmitResult:
        """Write meta and the script, record the job, run sbatch once, mark it submitted."""
        paths = step.plan.paths
        meta = meta_file(step, self.profile_name, self.profile.user, image, clock.created, after)
        script = render_sbatch(step.plan, launch_extras(image, after=after))
        report(SubmitStage.SBATCH, f"writing {paths.meta_json} and {paths.sbatch}")
        await stage_launch(self.conn, self.profile, step, meta, script)
        self.store.create_job(
            step.record(
                self.profile_name,
                status=TaoStatus.PENDING,
                submitted=False,
                sqsh_job_id=image.conversion_job_id,
                message="submitting",
                created_at=clock.created,
            )
        )
        if image.event:
            self.store.add_event(self.profile_name, step.name, "sqsh", image.event)
        report(SubmitStage.SBATCH, "sbatch --hold, mkdir of the log directory, scontrol release")
        submitted = await self._sbatch(step, clock, report)
        self._mark_submitted(step.name, submitted)
        warnings = list(image.warnings)
        if submitted.adopted:
            warnings.append(
                f"The connection dropped around sbatch; SLURM job {submitted.slurm_job_id} was "
                "found by name and adopted (no second job was submitted)."
            )
        report(SubmitStage.DONE, f"SLURM job {submitted.slurm_job_id}")
        return SubmitResult(
            step.name,
            submitted.slurm_job_id,
            paths.base,
            warnings,
            script=script,
            sqsh_job_id=image.conversion_job_id,
            login_host=submitted.host,
            adopted=submitted.adopted,
        )

    async def _sbatch(
        self, step: ResolvedStep, clock: _Clock, report: ProgressCallback
    ) -> Submitted:
        """The one sbatch of a recorded step; a refusal leaves nothing behind, another failure
        leaves the record (not submitted) with the sentence."""
        try:
            return await self.once.submit(
                step.plan.paths, known=(), started=clock.started, report=report, plan=step.plan
            )
        except SbatchRejected:
            # SLURM said no: no job exists, so nothing is left half-done -- neither the staged
            # files (the name stays free, also for other workstations) nor the record.
            with contextlib.suppress(TaoError):
                await unstage(self.conn, self.profile, step)
            self.store.delete_job(self.profile_name, step.name)
            raise
        except TaoError as exc:
            self.store.update_job(self.profile_name, step.name, message=str(exc))
            self.store.add_event(self.profile_name, step.name, "error", str(exc))
            raise

    def _mark_submitted(self, job_id: str, submitted: Submitted) -> None:
        attempt = Attempt(number=0, slurm_job_id=submitted.slurm_job_id, login_host=submitted.host)
        how = "found by name after a lost connection" if submitted.adopted else "submitted"
        via = f" via {submitted.host}" if submitted.host else ""
        self.store.mark_submitted(
            self.profile_name,
            job_id,
            attempt,
            event=f"{how}: SLURM job {submitted.slurm_job_id}{via}",
        )
        self.store.update_job(self.profile_name, job_id, message="")

    def _adopt(self, existing: JobRecord, found: Submitted) -> None:
        attempt = Attempt(number=0, slurm_job_id=found.slurm_job_id, login_host=found.host)
        self.store.mark_submitted(
            self.profile_name,
            existing.id,
            attempt,
            event=f"found SLURM job {found.slurm_job_id} of an earlier try by name; adopted",
        )
        self.store.update_job(self.profile_name, existing.id, status=TaoStatus.PENDING, message="")

    # ------------------------------------------------------------------ the monitor's calls

    def _stored(self, job: JobRecord) -> ResolvedStep:
        """The job's step as stored (its plan as submitted; no rule runs again)."""
        previous = ""
        if not job.plan and job.pipeline_step > 0:
            # Stored before plans were: its pipeline variables are made again, from the
            # previous step's record.
            for step in self.store.pipeline(self.profile_name, job.pipeline_id):
                if step.pipeline_step == job.pipeline_step - 1:
                    base = step.base_results_dir or self.profile.results_root
                    previous = JobPaths(base, step.id).results_dir
        return stored_step(job, self.profile, previous_results_dir=previous)

    async def reconcile_interrupted(self, job: JobRecord) -> JobRecord:
        """A record a dead submitter left "submitting" (Ctrl-C or a crash between sbatch and
        the store): look its job up by name on the cluster and adopt it, or, when SLURM never
        got it, end the record in Error saying to submit again (which reconciles once more).

        Raises:
            OperationFailed: no login host answered (the record stays as it was).
        """
        paths = JobPaths(job.base_results_dir or self.profile.results_root, job.id)
        window = max(0.0, time.time() - job.created_at) + RECONCILE_SLACK
        found = await self.once.reconcile(paths, known=(), window=window, tries=1)
        if found is not None:
            self._adopt(job, Submitted(found.slurm_job_id, found.host, adopted=True))
            return self.store.require(self.profile_name, job.id)
        message = (
            "The submission was interrupted before SLURM accepted the job; submit the spec "
            "again to retry."
        )
        self.store.update_job(self.profile_name, job.id, status=TaoStatus.ERROR, message=message)
        self.store.add_event(self.profile_name, job.id, "error", message)
        return self.store.require(self.profile_name, job.id)

    async def resubmit(
        self, job: JobRecord, *, exclude_nodes: Iterable[str] = (), reason: str = ""
    ) -> Attempt:
        """Submit a new attempt of ``job`` (the monitor's client-side retry), exactly once.

        The stored step's plan is rendered again (``--exclude`` for ``exclude_nodes``; no
        dependency: a pipeline step's previous step has completed, that is why it ran; the
        script checks the SQSH file itself) and submitted with hold → mkdir → release. The new
        attempt is recorded in the store here; the caller must not add it again.

        Args:
            job: the job as stored, with every earlier attempt.
            exclude_nodes: nodes to avoid.
            reason: why the job is retried (stored on the new attempt).

        Returns:
            The new attempt.

        Raises:
            OperationFailed: SLURM refused it, or a lost submission could not be checked.
        """
        started = time.monotonic()
        step = self._stored(job)
        extras = launch_extras(image_at_start(step, self.profile), exclude_nodes=exclude_nodes)
        paths = step.plan.paths
        # The script carries the [env] values: as private as env/<id>.json.
        await self.conn.upload_text(paths.sbatch, render_sbatch(step.plan, extras), mode=0o600)
        known = [a.slurm_job_id for a in job.attempts if a.slurm_job_id]
        number = max((a.number for a in job.attempts), default=-1) + 1
        submitted = await self.once.submit(
            paths, known=known, started=started, report=None, plan=step.plan
        )
        attempt = Attempt(
            number=number,
            slurm_job_id=submitted.slurm_job_id,
            login_host=submitted.host,
            retry_reason=reason,
        )
        how = "found by name after a lost connection" if submitted.adopted else "resubmitted"
        excluded = f" excluding {extras.exclude}" if extras.exclude else ""
        self.store.mark_submitted(
            self.profile_name,
            job.id,
            attempt,
            event=f"{how}: attempt {number} as SLURM job {submitted.slurm_job_id}{excluded}"
            + (f" ({reason})" if reason else ""),
        )
        return attempt

    async def check_sqsh_outcome(self, job: JobRecord) -> str | None:
        """Record (once) whether the job's SQSH conversion failed, i.e. the fallback was taken.

        For the monitor: call it when the job has started or ended. One round trip.

        Returns:
            The warning recorded (``sqsh_fallback`` event), or None when there is nothing to
            report (no conversion, still running, it worked, or already reported).
        """
        if not job.sqsh_job_id:
            return None
        if any(e.kind == "sqsh_fallback" for e in self.store.events(self.profile_name, job.id)):
            return None
        try:
            ref = parse_image(str(job.spec.get("image", "")))
        except ImageError:
            return None
        path = ref.sqsh_cache_path(cache_dir_for(self.profile))
        outcome = await conversion_outcome(self.conn, job.sqsh_job_id, path)
        if not outcome.failed:
            return None
        ended = f"SQSH conversion job {job.sqsh_job_id} ended {outcome.state or 'without a file'}"
        if self.profile.require_sqsh:
            text = f"{ended}; the profile requires SQSH, so the job stops (see main.err)."
        else:
            text = f"{ended}; the job fell back to the registry image {ref.canonical}."
        self.store.add_event(self.profile_name, job.id, "sqsh_fallback", text)
        return text


def _later_step_failed(exc: TaoError, where: str, results: list[SubmitResult]) -> TaoError:
    """A pipeline's later step (``where``) was not submitted: say which steps were."""
    done = ", ".join(f"{r.id} (SLURM job {r.slurm_job_id})" for r in results)
    kind = BadInput if isinstance(exc, BadInput) else OperationFailed
    return kind(
        f"{where} was not submitted: {str(exc).rstrip('.')}. The steps before it were: "
        f"{done}; fix the problem and submit the same spec again to submit the rest."
    )
