"""Staging and exactly-once submission of a TAO job over the profile's one connection.

Steps of :meth:`Submitter.submit`, each reported as ``on_progress(stage, detail)`` with ``stage``
one of :class:`~tao_slurm_tui.services.backend.SubmitStage`'s values:

1. **checking inputs** — the spec's wall time against the partition's *real* MaxTime
   (:mod:`tao_slurm_tui.services.partitions`), then every ``inputs`` path and every cluster path
   in ``[specs]`` with ``test -e`` in ONE round trip; all missing paths are listed at once
   (:class:`~tao_slurm_tui.errors.BadInput`) and nothing is staged.
2. **staging** — the remote layout (:mod:`tao_slurm_tui.core.layout`), each file atomically:
   ``specs/<id>.json``, ``env/<id>.json`` (0600), ``meta/<id>.json``,
   ``entrypoints/job_<id>.sh``.
3. **sqsh conversion job** — :mod:`tao_slurm_tui.services.images` (cache hit, conversion job,
   or a conversion in flight); the training job then depends on it with ``afterany`` and the
   script falls back to the registry image by itself if the conversion failed.
4. **sbatch** — ``sbatch/job_<id>.sbatch`` is written, the job is recorded in the store
   (``submitted=False``) and ONE remote command runs ``sbatch --parsable --export=ALL --hold``
   → ``mkdir -p slurm-logs/<name>-<id>`` → ``scontrol release`` (SLURM never creates ``--output``
   directories). It is never re-run blindly: if the transport fails around it
   (:class:`ConnectionLost`/:class:`CommandTimeout`) the job is looked up by its exact name with
   ``squeue``/``sacct`` on every login host; a job found there is adopted (its log directory made
   and the job released), otherwise it is submitted once more. Never two jobs for one submit.

A rejected ``sbatch`` raises :class:`~tao_slurm_tui.errors.OperationFailed` with SLURM's own
words and leaves the job recorded as not submitted (status Error, SLURM's message). Submitting a
spec with the same name again replaces such a record — after a reconcile by name, because a record
left by a crash or a lost connection may hide a job that did reach SLURM. Rejections that still
leave a record in SLURM (``BadConstraints``: ``FAILED`` with no node) are never adopted.

:meth:`Submitter.resubmit` is the monitor's client-side retry: it re-renders the batch script
(with ``--exclude`` for the failed nodes, no dependency) and submits it with the same
hold → mkdir → release command and the same reconcile, adopting only jobs that are not already
known attempts and were submitted after the resubmission started.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tao_slurm_tui.core.images import ImageRef
from tao_slurm_tui.core.layout import JobPaths
from tao_slurm_tui.core.models import Attempt, JobRecord, SubmitResult, TaoStatus
from tao_slurm_tui.core.partitions import split_partitions
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.core.quoting import join, quote
from tao_slurm_tui.core.render import (
    PREVIEW_AFTER,
    pipeline_env,
    plan_launch,
    render_entrypoint,
    render_sbatch,
    show_preview_dependency,
)
from tao_slurm_tui.core.slurm_text import parse_sbatch_output
from tao_slurm_tui.core.spec import JobSpec, pipeline_steps, refusal_hint
from tao_slurm_tui.errors import BadInput, OperationFailed, TaoError
from tao_slurm_tui.remote.connection import (
    CommandTimeout,
    Connection,
    ConnectionLost,
    RemoteFiles,
)
from tao_slurm_tui.services.backend import SubmitStage
from tao_slurm_tui.services.images import (
    ImageService,
    SqshPlan,
    cache_dir_for,
    conversion_outcome,
    sbatch_error,
)
from tao_slurm_tui.services.locks import submit_lock
from tao_slurm_tui.services.partitions import Limits, fetch_partition_limits
from tao_slurm_tui.services.store import JobStore

log = logging.getLogger(__name__)

ProgressCallback = Callable[[str, str], None]
"""``on_progress(stage, detail)``: stage is a :class:`SubmitStage` value, detail one line."""

SBATCH_TIMEOUT = 120.0
"""Seconds the hold → mkdir → release command may take (sbatch waits ~9 s for a dead controller)."""

RECONCILE_SLACK = 120.0
"""Seconds added to the reconcile window on top of the time since the submission started."""

RECONCILE_DELAYS = (0.0, 3.0, 8.0)
"""Lookups after a lost sbatch: a timed-out sbatch may still be finishing on the login host."""

_SUBMITTED = "TAO_SUBMITTED="
_CANCELLED = "TAO_CANCELLED="


class SbatchRejected(OperationFailed):
    """SLURM refused the job; ``str()`` carries SLURM's own words."""

    def __init__(self, message: str, slurm_message: str) -> None:
        super().__init__(message)
        self.slurm_message = slurm_message
        """The ``sbatch: error:`` lines."""


@dataclass(frozen=True)
class PipelineLink:
    """Where a job sits in a pipeline (:meth:`Submitter.submit_pipeline`)."""

    pipeline_id: str
    """The pipeline's id: its first step's id."""
    step: int
    """0 for the first step."""
    after: str = ""
    """SLURM id of the previous step (``--dependency=afterok:<after>``); '' for the first step
    (and in a dry run, where the script shows a placeholder)."""
    previous_results_dir: str = ""
    """The previous step's results dir (``TAO_PREVIOUS_RESULTS_DIR``)."""

    def env(self) -> dict[str, str]:
        """The step's pipeline variables."""
        return pipeline_env(self.pipeline_id, self.step, self.previous_results_dir)


@dataclass(frozen=True)
class FoundJob:
    """A job found by name during a reconcile."""

    slurm_job_id: str
    state: str
    host: str


# ----------------------------------------------------------------------------------- pure parts


def check_paths_command(paths: Sequence[str]) -> str:
    """One round trip: ``MISSING=<path>`` for every path ``test -e`` does not find."""
    lines = ['printf "NOW=%s\\n" "$(date +%s)"']
    if paths:
        lines.append(
            f"for p in {' '.join(quote(p) for p in paths)}; do "
            'test -e "$p" || printf "MISSING=%s\\n" "$p"; done'
        )
    return "; ".join(lines)


def name_taken_command(user: str, name: str, staged: Sequence[str]) -> str:
    """One command: ``LIVE=<id>`` per live SLURM job of ``user`` named ``name`` and
    ``STAGED=<path>`` per staged file of that name that exists (for :func:`parse_taken`)."""
    squeue = join(["squeue", "-h", "-u", user, f"--name={name}", "-o", "%i"]) if user else "true"
    return (
        f'for i in $({squeue} 2>/dev/null); do printf "LIVE=%s\\n" "$i"; done; '
        f"for p in {' '.join(quote(p) for p in staged)}; do "
        'test -e "$p" && printf "STAGED=%s\\n" "$p"; done; true'
    )


def parse_taken(output: str) -> tuple[list[str], list[str]]:
    """(live SLURM ids, staged paths) reported by :func:`name_taken_command`."""
    live = [ln[5:] for ln in output.splitlines() if ln.startswith("LIVE=") and ln[5:].strip()]
    staged = [ln[7:] for ln in output.splitlines() if ln.startswith("STAGED=")]
    return live, staged


def parse_missing(output: str) -> list[str]:
    """Paths reported missing by :func:`check_paths_command`."""
    return [ln[len("MISSING=") :] for ln in output.splitlines() if ln.startswith("MISSING=")]


NO_NODE_FITS = "Batch job submission failed: Requested node configuration is not available"
"""What sbatch says of a request no node of the partition could ever hold."""


def sbatch_command(
    script: str, log_dir_prefix: str, extra: Sequence[str] = (), *, scancel_on_failure: bool = True
) -> str:
    """The one remote command: ``sbatch --test-only`` → ``sbatch --hold`` → ``mkdir -p <log
    dir>`` → ``scontrol release``.

    SLURM accepts a held job that no node could ever run (it then pends for ever with reason
    ``BadConstraints``: a GPU type no node has, more GPUs than a node holds), so the same
    request is tried with ``--test-only`` first, and that refusal ends the command as sbatch's
    own would (exit 1, ``sbatch: error: Requested node configuration is not available``). Any
    other answer of the test (busy, later) goes on to the real submission.

    ``log_dir_prefix`` is ``<base>/slurm-logs/<name>-``; the SLURM id completes it. If the
    directory cannot be made or the job released, the job is cancelled (a held job would wait
    forever, one without its log directory would die at launch) and the command exits 90.

    Output: ``TAO_SUBMITTED=<ID or ID;cluster>`` once sbatch accepted the job.
    """
    test = join(["sbatch", "--test-only", "--export=ALL", *extra, script])
    sbatch = join(["sbatch", "--parsable", "--export=ALL", "--hold", *extra, script])
    undo = 'scancel "$id"; printf "' + _CANCELLED + '%s\\n" "$id"; ' if scancel_on_failure else ""
    return (
        f"t=$({test} 2>&1); case $t in *'node configuration is not available'*) "
        f"echo 'sbatch: error: {NO_NODE_FITS}' >&2; exit 1;; esac; "
        f"out=$({sbatch}) || exit $?; "
        f'printf "{_SUBMITTED}%s\\n" "$out"; '
        'id="${out%%;*}"; '
        f'if ! mkdir -p -- {quote(log_dir_prefix)}"$id"; then {undo}exit 90; fi; '
        f'if ! scontrol release "$id"; then {undo}exit 91; fi'
    )


def parse_submitted(stdout: str) -> str:
    """The SLURM id from :func:`sbatch_command` output ('' when sbatch did not accept the job)."""
    for line in stdout.splitlines():
        if line.startswith(_SUBMITTED):
            try:
                return parse_sbatch_output(line[len(_SUBMITTED) :])
            except ValueError:
                return ""
    return ""


def reconcile_command(user: str, name: str, window_seconds: int) -> str:
    """One round trip on one login host: jobs of ``user`` named ``name`` (squeue + sacct).

    Output sections ``@@now``, ``@@squeue rc=N`` (``id|state|submit|reason``) and
    ``@@sacct rc=N`` (``id|state|submit|nodelist``, submitted in the last ``window_seconds``).
    """
    squeue = join(["squeue", "-h", "-t", "all", "-u", user, f"--name={name}", "-o", "%i|%T|%V|%r"])
    sacct = join(
        [
            "sacct", "-X", "-n", "-P", "-u", user, f"--name={name}",
            "-S", f"now-{max(1, int(window_seconds))}",
            "--format=JobID,State,Submit,NodeList",
        ]
    )  # fmt: skip
    return (
        'printf "@@now %s\\n" "$(date +%Y-%m-%dT%H:%M:%S)"; '
        f'o=$({squeue} 2>/dev/null); printf "@@squeue rc=%s\\n%s\\n" "$?" "$o"; '
        f'o=$({sacct} 2>/dev/null); printf "@@sacct rc=%s\\n%s\\n" "$?" "$o"'
    )


def _parse_time(text: str) -> datetime | None:
    try:
        return datetime.strptime(text.strip(), "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        return None


def parse_reconcile(
    output: str, *, window_seconds: float, exclude_ids: Iterable[str] = ()
) -> tuple[bool, list[tuple[str, str]]]:
    """Candidates from :func:`reconcile_command` output.

    Args:
        output: the command's stdout.
        window_seconds: only jobs submitted at most this long ago count.
        exclude_ids: known attempts (never adopted again).

    Returns:
        (whether the host answered, ``[(slurm id, state)]`` newest first). Rejections that
        left a record (``BadConstraints``; ``FAILED`` with no node) are dropped.
    """
    excluded = {str(i) for i in exclude_ids}
    now: datetime | None = None
    answered = False
    section = ""
    found: dict[str, str] = {}
    for raw in output.splitlines():
        line = raw.strip()
        if line.startswith("@@now "):
            now = _parse_time(line[len("@@now ") :])
            continue
        if line.startswith("@@squeue") or line.startswith("@@sacct"):
            section = "squeue" if line.startswith("@@squeue") else "sacct"
            answered = answered or line.endswith("rc=0")
            continue
        if not line or not section:
            continue
        parts = line.split("|")
        if len(parts) < 4:
            continue
        job_id, state, submit, extra = parts[0].split(";")[0], parts[1], parts[2], parts[3]
        if not job_id.isdigit() or job_id in excluded:
            continue
        state_word = state.split(" ")[0]
        if section == "squeue":
            if "BadConstraints" in extra:
                continue
            when = _parse_time(submit)
            if (
                now is not None
                and when is not None
                and (now - when).total_seconds() > window_seconds
            ):
                continue
        elif state_word == "FAILED" and extra.strip().lower() in {"none assigned", ""}:
            continue
        found.setdefault(job_id, state_word)
    ordered = sorted(found.items(), key=lambda item: int(item[0]), reverse=True)
    return answered, ordered


def spec_file(spec: JobSpec) -> str:
    """Content of ``specs/<id>.json``: ``[specs]`` with cluster paths converted."""
    return json.dumps(spec.resolved_specs(), indent=2, sort_keys=True) + "\n"


def env_file(spec: JobSpec) -> str:
    """Content of ``env/<id>.json`` (written 0600)."""
    return json.dumps(spec.env, indent=2, sort_keys=True) + "\n"


def meta_file(
    spec: JobSpec,
    profile_name: str,
    profile: Profile,
    plan: SqshPlan | None,
    created: float,
    pipeline: PipelineLink | None = None,
) -> str:
    """Content of ``meta/<id>.json``: what was submitted, from where, with which image."""
    meta: dict[str, Any] = {
        "id": spec.name,
        "profile": profile_name,
        "user": profile.user,
        "image": spec.image,
        "partition": spec.effective_partition(profile),
        "account": spec.effective_account(profile),
        "inputs": spec.resolved_inputs(),
        "created_at": created,
        "tool": "tao-slurm-tui",
    }
    if plan is not None and plan.action != "off":
        meta["sqsh"] = {
            "action": plan.action,
            "path": plan.sqsh_path,
            "conversion_job_id": plan.conversion_job_id,
        }
    if pipeline is not None:
        meta["pipeline"] = {
            "id": pipeline.pipeline_id,
            "step": pipeline.step + 1,
            "after_slurm_job_id": pipeline.after,
        }
    return json.dumps(meta, indent=2, sort_keys=True) + "\n"


# ----------------------------------------------------------------------------------- service


class Submitter:
    """Stages and submits jobs of one profile over its connection, exactly once."""

    def __init__(
        self,
        conn: RemoteFiles,
        store: JobStore,
        profile_name: str,
        profile: Profile,
        *,
        host_connection: Callable[[str], RemoteFiles] | None = None,
        sleep: Callable[[float], Any] = asyncio.sleep,
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

    # ------------------------------------------------------------------ public

    async def partition_limits(self, *, refresh: bool = False) -> Limits:
        """MaxTime of the cluster's partitions (cached per cluster; packaged list offline)."""
        return await fetch_partition_limits(self.conn, self.profile, refresh=refresh)

    async def submit(
        self,
        spec: JobSpec,
        *,
        dry_run: bool = False,
        on_progress: ProgressCallback | None = None,
        pipeline: PipelineLink | None = None,
    ) -> SubmitResult:
        """Validate, stage and submit ``spec`` exactly once.

        Args:
            spec: the validated spec (a single job or one step of a pipeline; see
                :meth:`submit_pipeline` for a spec with ``[[then]]`` steps).
            dry_run: validate (remote paths too) and render; stage and submit nothing.
            on_progress: ``(stage, detail)`` callback for the UI.
            pipeline: the step's place in its pipeline (recorded with the job; the script
                depends on the previous step with ``afterok`` and exports its results dir).

        Returns:
            The job id, SLURM id, job dir and warnings.

        Raises:
            BadInput: wall time above MaxTime, missing input paths, a name already used.
            OperationFailed: SLURM refused the job (its words), or the outcome of a lost
                submission could not be checked (submit again to reconcile).
        """

        def report(stage: SubmitStage, detail: str) -> None:
            log.info("submit %s: %s: %s", spec.name, stage.value, detail)
            if on_progress is not None:
                on_progress(stage.value, detail)

        started = time.monotonic()
        created = time.time()
        profile = self.profile
        paths = JobPaths(profile.results_root, spec.name)
        partition = spec.effective_partition(profile)

        # -- 1. checking inputs
        report(SubmitStage.CHECKING, f"checking the wall time against the MaxTime of {partition}")
        limits = await self.partition_limits()
        # The render's own checks (wall time, every #SBATCH value) before anything is staged.
        plan_launch(spec, profile, partition_limits=limits)
        existing = self.store.get(self.profile_name, spec.name)
        if existing is not None and existing.submitted:
            raise BadInput(
                f"A job named '{spec.name}' was already submitted in profile "
                f"'{self.profile_name}' (SLURM job {existing.slurm_job_id or '?'}); give the new "
                "job another name."
            )
        to_check = spec.paths_to_check()
        report(SubmitStage.CHECKING, f"checking {len(to_check)} input path(s) on the cluster")
        command = check_paths_command(to_check)
        if existing is None:
            # Names are unique in this state DB only: another workstation (or state DB) may
            # have a job of this name pending under the same base_results_dir, whose staged
            # entrypoint the new one would overwrite. Same round trip.
            staged = [paths.sbatch, paths.entrypoint]
            command += "; " + name_taken_command(profile.user, spec.name, staged)
        result = await self.conn.run(command, timeout=profile.command_timeout)
        missing = parse_missing(result.stdout)
        if missing:
            listed = ", ".join(missing)
            raise BadInput(
                f"{len(missing)} input path(s) do not exist on the cluster: {listed}; stage the "
                "data on the shared filesystem or fix the paths in the spec."
            )
        live, staged_found = parse_taken(result.stdout) if existing is None else ([], [])
        if live:
            raise BadInput(
                f"A job named '{spec.name}' is already pending or running on the cluster (SLURM "
                f"job {live[0]}) but is not in this state database (another workstation?); give "
                f"the new job another name, or cancel that one with 'scancel {live[0]}'."
            )
        if staged_found:
            raise BadInput(
                f"A job named '{spec.name}' was already staged on the cluster ({staged_found[0]}) "
                "by another workstation or state database; give the new job another name so "
                "neither overwrites the other's files."
            )
        ref = spec.image_ref
        warnings: list[str] = []

        if dry_run:
            plan = await ImageService(self.conn, profile).prepare(
                ref,
                use_sqsh=spec.use_sqsh,
                spec_partition=partition,
                dry_run=True,
                on_progress=on_progress,
                stage=SubmitStage.SQSH.value,
            )
            script = self._render(spec, limits, plan, pipeline=pipeline)
            warnings.extend(plan.warnings)
            report(SubmitStage.DONE, "dry run: nothing staged or submitted")
            return SubmitResult(spec.name, "", paths.base, warnings, script=script, dry_run=True)

        # From here until the outcome is in the store, this process holds the job's submit
        # lock: a monitor (in any process) reconciles a "submitting" record only when no live
        # submitter holds it, so a record left by a crash or Ctrl-C is found by name again.
        lock = submit_lock(self.store, self.profile_name, spec.name)
        await lock.acquire()
        try:
            # A record left by an earlier try (rejected, lost connection, crash): its job may have
            # reached SLURM, so look before replacing it.
            if existing is not None:
                report(
                    SubmitStage.CHECKING, "an earlier try of this job exists; looking it up by name"
                )
                window = max(0.0, time.time() - existing.created_at) + RECONCILE_SLACK
                found = await self._reconcile(spec.name, paths, known=(), window=window, tries=1)
                if found is not None:
                    return await self._adopt_existing(existing, paths, found)
                self.store.delete_job(self.profile_name, spec.name)

            # -- 2. staging
            report(SubmitStage.STAGING, f"creating the job layout under {paths.base}")
            await self.conn.run(
                join(["mkdir", "-p", "--", *paths.staging_dirs]),
                check=True,
                timeout=profile.command_timeout,
            )
            report(SubmitStage.STAGING, f"writing {paths.spec_json}")
            await self.conn.upload_text(paths.spec_json, spec_file(spec))
            report(SubmitStage.STAGING, f"writing {paths.env_json} (mode 0600)")
            await self.conn.upload_text(paths.env_json, env_file(spec), mode=0o600)
            report(SubmitStage.STAGING, f"writing {paths.entrypoint}")
            await self.conn.upload_text(paths.entrypoint, render_entrypoint(spec), mode=0o755)

            # -- 3. SQSH
            if spec.use_sqsh or ref.is_sqsh:
                report(SubmitStage.SQSH, f"preparing the image {ref.canonical}")
            conv_partition = split_partitions(profile.conversion_partition or partition)[:1]
            plan = await ImageService(self.conn, profile).prepare(
                ref,
                use_sqsh=spec.use_sqsh,
                spec_partition=partition,
                max_time_seconds=limits.get(conv_partition[0]) if conv_partition else None,
                on_progress=on_progress,
                stage=SubmitStage.SQSH.value,
            )
            warnings.extend(plan.warnings)
            await self.conn.upload_text(
                paths.meta_json,
                meta_file(spec, self.profile_name, profile, plan, created, pipeline),
            )

            # -- 4. sbatch, exactly once
            script = self._render(spec, limits, plan, pipeline=pipeline)
            report(SubmitStage.SBATCH, f"writing {paths.sbatch}")
            # The script carries the [env] values: as private as env/<id>.json.
            await self.conn.upload_text(paths.sbatch, script, mode=0o600)
            record = JobRecord(
                id=spec.name,
                profile=self.profile_name,
                spec=spec.model_dump(mode="json"),
                base_results_dir=paths.base,
                status=TaoStatus.PENDING,
                submitted=False,
                sqsh_job_id=plan.conversion_job_id,
                message="submitting",
                created_at=created,
                pipeline_id=pipeline.pipeline_id if pipeline else "",
                pipeline_step=pipeline.step if pipeline else 0,
            )
            self.store.create_job(record)
            if plan.event:
                self.store.add_event(self.profile_name, spec.name, "sqsh", plan.event)
            report(
                SubmitStage.SBATCH, "sbatch --hold, mkdir of the log directory, scontrol release"
            )
            try:
                slurm_id, host, adopted = await self._submit_once(
                    spec.name, paths, known=(), started=started, report=report, spec=spec
                )
            except SbatchRejected:
                # SLURM said no: no job exists, so nothing is left half-done -- neither the
                # staged files (the name stays free, also for other workstations) nor the record.
                with contextlib.suppress(TaoError):
                    await self.conn.run(
                        join(
                            [
                                "rm",
                                "-f",
                                "--",
                                paths.spec_json,
                                paths.env_json,
                                paths.entrypoint,
                                paths.meta_json,
                                paths.sbatch,
                            ]
                        ),
                        timeout=profile.command_timeout,
                    )
                self.store.delete_job(self.profile_name, spec.name)
                raise
            except TaoError as exc:
                self.store.update_job(self.profile_name, spec.name, message=str(exc))
                self.store.add_event(self.profile_name, spec.name, "error", str(exc))
                raise
            attempt = Attempt(number=0, slurm_job_id=slurm_id, login_host=host)
            how = "found by name after a lost connection" if adopted else "submitted"
            self.store.mark_submitted(
                self.profile_name,
                spec.name,
                attempt,
                event=f"{how}: SLURM job {slurm_id}" + (f" via {host}" if host else ""),
            )
            self.store.update_job(self.profile_name, spec.name, message="")
            if adopted:
                warnings.append(
                    f"The connection dropped around sbatch; SLURM job {slurm_id} was found by name "
                    "and adopted (no second job was submitted)."
                )
            report(SubmitStage.DONE, f"SLURM job {slurm_id}")
            return SubmitResult(
                spec.name,
                slurm_id,
                paths.base,
                warnings,
                script=script,
                sqsh_job_id=plan.conversion_job_id,
                login_host=host,
                adopted=adopted,
            )
        finally:
            lock.release()

    async def submit_pipeline(
        self,
        spec: JobSpec,
        *,
        dry_run: bool = False,
        on_progress: ProgressCallback | None = None,
    ) -> SubmitResult:
        """Submit every step of ``spec`` at once, each later one held by SLURM with
        ``--dependency=afterok:<previous step>``, so the workstation may be off meanwhile.

        Each step is one :meth:`submit` (exactly once, reconciled by name after a lost
        connection), recorded with the pipeline's id (the first step's) and its index, and
        sees the previous step's results dir as ``TAO_PREVIOUS_RESULTS_DIR``. A single job
        (no ``[[then]]``) is submitted as before. If a step cannot be submitted, the steps
        before it stay submitted; submitting the same spec again keeps them and submits the
        rest.

        Returns:
            The first step's result, the other steps in ``steps``.

        Raises:
            BadInput, OperationFailed: as :meth:`submit`; for a later step the sentence says
                which steps were submitted.
        """
        steps = pipeline_steps(spec)
        if len(steps) == 1:
            return await self.submit(spec, dry_run=dry_run, on_progress=on_progress)
        pipeline_id = steps[0].name
        results: list[SubmitResult] = []
        after, previous_dir = "", ""
        for index, step in enumerate(steps):
            where = f"step {index + 1} of {len(steps)} ({step.name})"
            if on_progress is not None:
                on_progress(SubmitStage.CHECKING.value, f"pipeline {pipeline_id}: {where}")
            existing = self.store.get(self.profile_name, step.name)
            if (
                not dry_run
                and existing is not None
                and existing.submitted
                and existing.pipeline_id == pipeline_id
                and existing.pipeline_step == index
            ):
                # Submitted by an earlier try of this pipeline that stopped part way.
                result = SubmitResult(
                    existing.id,
                    existing.slurm_job_id,
                    existing.base_results_dir,
                    [f"{where} had been submitted already (SLURM job {existing.slurm_job_id})."],
                )
            else:
                link = PipelineLink(pipeline_id, index, after, previous_dir)
                try:
                    result = await self.submit(
                        step, dry_run=dry_run, on_progress=on_progress, pipeline=link
                    )
                except TaoError as exc:
                    if not results or dry_run:
                        raise
                    done = ", ".join(f"{r.id} (SLURM job {r.slurm_job_id})" for r in results)
                    kind = BadInput if isinstance(exc, BadInput) else OperationFailed
                    raise kind(
                        f"{where} was not submitted: {str(exc).rstrip('.')}. The steps before "
                        f"it were: {done}; fix the problem and submit the same spec again to "
                        "submit the rest."
                    ) from None
            results.append(result)
            after = result.slurm_job_id
            previous_dir = JobPaths(
                result.job_dir or self.profile.results_root, step.name
            ).results_dir
        first = results[0]
        first.steps = results[1:]
        return first

    def _link_of(self, job: JobRecord) -> PipelineLink | None:
        """The pipeline variables of a stored step (for a re-render on retry)."""
        if not job.pipeline_id:
            return None
        previous = ""
        if job.pipeline_step > 0:
            for step in self.store.pipeline(self.profile_name, job.pipeline_id):
                if step.pipeline_step == job.pipeline_step - 1:
                    base = step.base_results_dir or self.profile.results_root
                    previous = JobPaths(base, step.id).results_dir
        return PipelineLink(job.pipeline_id, job.pipeline_step, "", previous)

    async def reconcile_interrupted(self, job: JobRecord) -> JobRecord:
        """A record a dead submitter left "submitting" (Ctrl-C or a crash between sbatch and
        the store): look its job up by name on the cluster and adopt it, or, when SLURM never
        got it, end the record in Error saying to submit again (which reconciles once more).

        Raises:
            OperationFailed: no login host answered (the record stays as it was).
        """
        paths = JobPaths(job.base_results_dir or self.profile.results_root, job.id)
        window = max(0.0, time.time() - job.created_at) + RECONCILE_SLACK
        found = await self._reconcile(job.id, paths, known=(), window=window, tries=1)
        if found is not None:
            await self._adopt_existing(job, paths, found)
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

        The batch script is re-rendered from the stored spec (``--exclude`` for
        ``exclude_nodes``; no SQSH dependency, the script checks the SQSH file itself) and
        submitted with hold → mkdir → release. The new attempt is recorded in the store here;
        the caller must not add it again.

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
        spec = JobSpec.model_validate(job.spec)
        paths = JobPaths(job.base_results_dir or self.profile.results_root, job.id)
        limits = await self.partition_limits()
        plan = self._resubmit_plan(spec.image_ref, spec.use_sqsh)
        # A pipeline step keeps its variables; its previous step has completed (that is why it
        # ran), so the retry needs no dependency on it.
        link = self._link_of(job)
        script = self._render(
            spec, limits, plan, exclude_nodes=exclude_nodes, pipeline=link, depend=False
        )
        # The script carries the [env] values: as private as env/<id>.json.
        await self.conn.upload_text(paths.sbatch, script, mode=0o600)
        known = [a.slurm_job_id for a in job.attempts if a.slurm_job_id]
        number = max((a.number for a in job.attempts), default=-1) + 1
        slurm_id, host, adopted = await self._submit_once(
            job.id, paths, known=known, started=started, report=None, spec=spec
        )
        attempt = Attempt(
            number=number, slurm_job_id=slurm_id, login_host=host, retry_reason=reason
        )
        how = "found by name after a lost connection" if adopted else "resubmitted"
        excluded = ",".join(n for n in exclude_nodes if n)
        self.store.mark_submitted(
            self.profile_name,
            job.id,
            attempt,
            event=f"{how}: attempt {number} as SLURM job {slurm_id}"
            + (f" excluding {excluded}" if excluded else "")
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
        spec = JobSpec.model_validate(job.spec)
        path = spec.image_ref.sqsh_cache_path(cache_dir_for(self.profile))
        outcome = await conversion_outcome(self.conn, job.sqsh_job_id, path)
        if not outcome.failed:
            return None
        if self.profile.require_sqsh:
            text = (
                f"SQSH conversion job {job.sqsh_job_id} ended {outcome.state or 'without a file'}; "
                "the profile requires SQSH, so the job stops (see main.err)."
            )
        else:
            text = (
                f"SQSH conversion job {job.sqsh_job_id} ended {outcome.state or 'without a file'}; "
                f"the job fell back to the registry image {spec.image_ref.canonical}."
            )
        self.store.add_event(self.profile_name, job.id, "sqsh_fallback", text)
        return text

    # ------------------------------------------------------------------ internals

    def _resubmit_plan(self, ref: ImageRef, use_sqsh: bool) -> SqshPlan:
        if ref.is_sqsh:
            return SqshPlan(action="direct", sqsh_path=ref.sqsh_path, image_override=ref.sqsh_path)
        if not use_sqsh:
            return SqshPlan(action="off")
        path = ref.sqsh_cache_path(cache_dir_for(self.profile))
        return SqshPlan(action="cached", sqsh_path=path, sqsh_fallback=path)

    def _render(
        self,
        spec: JobSpec,
        limits: Limits,
        plan: SqshPlan,
        *,
        exclude_nodes: Iterable[str] = (),
        pipeline: PipelineLink | None = None,
        depend: bool = True,
    ) -> str:
        dependency = [plan.dependency] if plan.dependency else []
        depend = depend and pipeline is not None and pipeline.step > 0
        preview = depend and pipeline is not None and not pipeline.after
        if depend and pipeline is not None:
            dependency.append(f"afterok:{pipeline.after or PREVIEW_AFTER}")
        script = render_sbatch(
            spec,
            self.profile,
            partition_limits=limits,
            exclude_nodes=exclude_nodes,
            dependency=",".join(dependency),
            image_override=plan.image_override,
            sqsh_fallback=plan.sqsh_fallback,
            require_sqsh=self.profile.require_sqsh,
            pipeline_env=pipeline.env() if pipeline is not None else None,
        )
        # A dry run has no SLURM id for the previous step yet: say what goes there.
        return show_preview_dependency(script) if preview else script

    async def _submit_once(
        self,
        name: str,
        paths: JobPaths,
        *,
        known: Sequence[str],
        started: float,
        report: Callable[[SubmitStage, str], None] | None,
        spec: JobSpec | None = None,
    ) -> tuple[str, str, bool]:
        """Run the sbatch command; after a transport failure reconcile before the one retry.

        ``spec`` (when known) lets a refusal say what could not be placed.

        Returns:
            (SLURM id, login host, adopted by reconcile).
        """
        command = sbatch_command(paths.sbatch, f"{paths.logs_root}/{name}-")
        for attempt in range(2):
            try:
                result = await self.conn.run(command, timeout=SBATCH_TIMEOUT, retry_on_drop=False)
            except (ConnectionLost, CommandTimeout) as exc:
                log.warning("submit %s: transport failed around sbatch: %s", name, exc)
                if report is not None:
                    report(
                        SubmitStage.SBATCH,
                        "the connection failed around sbatch; looking the job up by name on "
                        "every login host",
                    )
                window = time.monotonic() - started + RECONCILE_SLACK
                found = await self._reconcile(name, paths, known=known, window=window)
                if found is not None:
                    return found.slurm_job_id, found.host, True
                if attempt == 1:
                    raise OperationFailed(
                        f"The connection failed twice while submitting '{name}' and no job of "
                        "that name was found; check the connection and submit again."
                    ) from None
                if report is not None:
                    report(SubmitStage.SBATCH, "no job of that name found; submitting again")
                continue
            slurm_id = parse_submitted(result.stdout)
            if result.exit_status == 0 and slurm_id:
                return slurm_id, result.host, False
            if slurm_id:
                # Accepted, but the log directory or the release failed and the job was
                # cancelled (see sbatch_command).
                why = sbatch_error(result.stderr) if result.stderr.strip() else "unknown error"
                raise OperationFailed(
                    f"SLURM job {slurm_id} was cancelled because its log directory under "
                    f"{paths.logs_root} could not be made or it could not be released ({why}); "
                    "check that base_results_dir is writable and submit again."
                )
            message = sbatch_error(result.stderr, result.stdout)
            hint = refusal_hint(message, spec, self.profile) if spec is not None else ""
            raise SbatchRejected(
                f"SLURM refused the job: {message}. "
                + (hint or "Fix the spec or the profile and submit again."),
                message,
            )
        raise OperationFailed(f"'{name}' could not be submitted; submit again.")  # unreachable

    async def _reconcile(
        self,
        name: str,
        paths: JobPaths,
        *,
        known: Sequence[str],
        window: float,
        tries: int = len(RECONCILE_DELAYS),
    ) -> FoundJob | None:
        """Look for a job named ``name`` on every login host; adopt the newest one found.

        Raises:
            OperationFailed: no login host answered, so the outcome is unknown (the job stays
                recorded as not submitted; submitting again reconciles first).
        """
        answered_any = False
        for delay in RECONCILE_DELAYS[: max(1, tries)]:
            if delay:
                await self._sleep(delay)
            best: FoundJob | None = None
            for host in self.profile.hostnames or [""]:
                answered, candidates = await self._lookup(host, name, known, window)
                answered_any = answered_any or answered
                if candidates:
                    job_id, state = candidates[0]
                    if best is None or int(job_id) > int(best.slurm_job_id):
                        best = FoundJob(job_id, state, host)
            if best is not None:
                await self._finish_adopted(best, paths, name)
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
            conn = self._host_connection(host)
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

    async def _finish_adopted(self, found: FoundJob, paths: JobPaths, name: str) -> None:
        """Give an adopted job what the lost command may not have: its log dir and a release."""
        log_dir = f"{paths.logs_root}/{name}-{found.slurm_job_id}"
        command = (
            f"mkdir -p -- {quote(log_dir)} && "
            f"{{ scontrol release {quote(found.slurm_job_id)} 2>/dev/null || true; }}"
        )
        await self.conn.run(command, check=True, timeout=self.profile.command_timeout)

    async def _adopt_existing(
        self, existing: JobRecord, paths: JobPaths, found: FoundJob
    ) -> SubmitResult:
        attempt = Attempt(number=0, slurm_job_id=found.slurm_job_id, login_host=found.host)
        self.store.mark_submitted(
            self.profile_name,
            existing.id,
            attempt,
            event=f"found SLURM job {found.slurm_job_id} of an earlier try by name; adopted",
        )
        self.store.update_job(self.profile_name, existing.id, status=TaoStatus.PENDING, message="")
        return SubmitResult(
            existing.id,
            found.slurm_job_id,
            paths.base,
            [
                f"An earlier try of '{existing.id}' had reached SLURM as job "
                f"{found.slurm_job_id}; it was adopted instead of submitting a second job."
            ],
            sqsh_job_id=existing.sqsh_job_id,
            login_host=found.host,
            adopted=True,
        )
