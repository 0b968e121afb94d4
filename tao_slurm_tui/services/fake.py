"""A deterministic back end for snapshot tests, Pilot tests, screenshots and demos.

Seeded data covers every state the screens show (pending for several reasons, running with
progress, complete, error, canceled, paused, a retried job), a doctor run with failures and a
log of a few hundred lines with an attempt separator. Nothing touches the network, the clock is
injectable and every tick changes exactly one job, so tests can assert exact outcomes.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Any

from tao_slurm_tui.core.accounting import HistoryEntry, HistoryPage, HistoryQuery, Usage
from tao_slurm_tui.core.capacity_report import CapacityReport
from tao_slurm_tui.core.job_output import JobOutput
from tao_slurm_tui.core.models import (
    Attempt,
    HostKeyInfo,
    JobRecord,
    Progress,
    SubmitResult,
    TaoStatus,
)
from tao_slurm_tui.core.partitions import HOUR, PartitionLimits
from tao_slurm_tui.core.preflight import CheckResult, CheckStatus, DoctorReport, FixAction
from tao_slurm_tui.core.profile import NAME_RE, Profile
from tao_slurm_tui.core.render import render_job, render_sbatch
from tao_slurm_tui.core.secrets import Secret
from tao_slurm_tui.core.spec import (
    Resolution,
    ResolveContext,
    ResolvedJob,
    SpecDraft,
    default_spec,
    resolve,
)
from tao_slurm_tui.core.start_estimate import StartEstimate, script_request, start_estimate_of
from tao_slurm_tui.errors import BadInput, OperationFailed, TaoError
from tao_slurm_tui.services.backend import (
    LogBatch,
    LogStreamName,
    ProgressCallback,
    SubmitStage,
)
from tao_slurm_tui.services.capacity_cache import CapacityCache
from tao_slurm_tui.services.fake_capacity import fake_capacity, fake_start_estimate
from tao_slurm_tui.services.fake_history import FakeHistory

FROZEN_TIME = 1_778_400_000.0
"""The fake's default 'now' (a fixed instant, so screens render identically every run)."""

FAKE_HOST = "login1.example.org"
"""The fake profile's first login host."""

FAKE_FINGERPRINT = "SHA256:q3Xn9bUj1yKc8wq1mO0z7HcW2m0e4vN9kXJt4aF1b2c"
"""Host key fingerprint the fake reports."""

FAKE_PUBLIC_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeHostKeyOfTheDemoClusterOnlyXXXXXXXXXXXX"
"""The host key the fake presents (never trusted anywhere real)."""

FAKE_LIMITS: dict[str, int | None] = {"polar": 4 * HOUR, "polar3": 4 * HOUR, "gpu-long": 48 * HOUR}
"""MaxTime (seconds) of the fake cluster's partitions."""


def fake_profile() -> Profile:
    """The profile the fake pretends to use."""
    return Profile(
        user="researcher",
        hostnames=[FAKE_HOST, "login2.example.org"],
        port=22,
        ssh_key_path="~/.ssh/id_ed25519",
        partition="polar,polar3,gpu-long",
        base_results_dir="/lustre/fsw/users/researcher",
        container_runtime="pyxis",
    )


def _spec(name: str, **over: Any) -> dict[str, Any]:
    spec = default_spec(fake_profile(), name=name)
    spec.update(command=f"dino train -e /specs/{name}.yaml")
    spec.update(inputs=["lustre:///lustre/data/coco/train.json"])
    spec.update(over)
    return spec


def _attempt(number: int, slurm_id: int, state: str, **over: Any) -> Attempt:
    base = Attempt(
        number=number,
        slurm_job_id=str(slurm_id),
        login_host=FAKE_HOST,
        state=state,
        partition="polar",
        time_limit="04:00:00",
        submit_time="2026-05-10T08:00:00",
    )
    return replace(base, **over)


def seed_jobs(now: float = FROZEN_TIME) -> list[JobRecord]:
    """Jobs in every state the screens show, newest first."""
    root = fake_profile().results_root

    def job(
        i: int, name: str, status: TaoStatus, state: str, attempts: list[Attempt], **over: Any
    ) -> JobRecord:
        spec = over.pop("spec", None) or _spec(name)
        return JobRecord(
            id=name,
            profile="fake",
            spec=spec,
            base_results_dir=root,
            status=status,
            slurm_state=state,
            attempts=attempts,
            submitted=True,
            created_at=now - 3600 * i,
            updated_at=now - 60 * i,
            **over,
        )

    return [
        job(0, "dino-train-1", TaoStatus.RUNNING, "RUNNING",
            [_attempt(0, 1051, "RUNNING", nodes="gpu-a01", start_time="2026-05-10T08:02:11",
                      elapsed="01:12:04")],
            progress=Progress(epoch=7, max_epoch=20, eta="0:41:12", status="RUNNING",
                              kpi={"loss": 0.412})),
        job(1, "yolo-finetune", TaoStatus.PENDING, "PENDING",
            [_attempt(0, 1052, "PENDING", reason="Resources", est_start="2026-05-10T14:30:00",
                      elapsed="00:00:00")]),
        job(2, "seg-large", TaoStatus.PENDING, "PENDING",
            [_attempt(0, 1053, "PENDING", reason="Priority", elapsed="00:00:00")],
            spec=_spec("seg-large", num_nodes=2, num_gpus=8)),
        job(3, "classify-long", TaoStatus.PENDING, "PENDING",
            [_attempt(0, 1054, "PENDING", reason="PartitionTimeLimit", time_limit="2-00:00:00",
                      elapsed="00:00:00")],
            spec=_spec("classify-long", time_hours=48.0, timeout_hours=47.5)),
        job(4, "bert-retried", TaoStatus.RUNNING, "RUNNING",
            [_attempt(0, 1040, "NODE_FAIL", nodes="gpu-b03", exit_code="0:0",
                      start_time="2026-05-10T04:00:05", end_time="2026-05-10T05:10:44",
                      elapsed="01:10:39", retry_reason="NODE_FAIL on gpu-b03"),
             _attempt(1, 1049, "RUNNING", nodes="gpu-a02", start_time="2026-05-10T05:12:00",
                      elapsed="03:01:30")],
            progress=Progress(epoch=3, max_epoch=10, eta="2:05:00", status="RUNNING"),
            message="Retried after NODE_FAIL on gpu-b03."),
        job(5, "mae-pretrain", TaoStatus.PAUSED, "SUSPENDED",
            [_attempt(0, 1044, "SUSPENDED", nodes="gpu-a03", elapsed="00:20:00")]),
        job(6, "dep-waiter", TaoStatus.PENDING, "PENDING",
            [_attempt(0, 1055, "PENDING", reason="Dependency", elapsed="00:00:00")]),
        job(7, "detect-ok", TaoStatus.COMPLETE, "COMPLETED",
            [_attempt(0, 1031, "COMPLETED", nodes="gpu-a01", exit_code="0:0",
                      start_time="2026-05-09T22:00:00", end_time="2026-05-10T01:10:00",
                      elapsed="03:10:00")],
            progress=Progress(epoch=20, max_epoch=20, status="SUCCESS",
                              message="Training finished successfully."),
            message="Training finished successfully."),
        job(8, "detect-bad", TaoStatus.ERROR, "FAILED",
            [_attempt(0, 1030, "FAILED", nodes="gpu-a04", exit_code="1:0",
                      start_time="2026-05-09T21:00:00", end_time="2026-05-09T21:03:12",
                      elapsed="00:03:12")],
            message="ValueError: dataset_config.train_data_sources is empty."),
        job(9, "timeout-job", TaoStatus.ERROR, "TIMEOUT",
            [_attempt(0, 1021, "TIMEOUT", nodes="gpu-a02", exit_code="0:15",
                      start_time="2026-05-09T12:00:00", end_time="2026-05-09T16:00:00",
                      elapsed="04:00:00")],
            message="The job hit its wall time (04:00:00)."),
        job(10, "ocr-stop", TaoStatus.CANCELED, "CANCELLED",
            [_attempt(0, 1020, "CANCELLED", nodes="gpu-a01", exit_code="0:15",
                      elapsed="00:45:00")]),
        job(11, "unet-small", TaoStatus.COMPLETE, "COMPLETED",
            [_attempt(0, 1012, "COMPLETED", nodes="gpu-a03", exit_code="0:0",
                      elapsed="00:52:10")],
            progress=Progress(epoch=10, max_epoch=10, status="SUCCESS")),
    ]  # fmt: skip


def seed_pipeline(now: float = FROZEN_TIME) -> list[JobRecord]:
    """A three-step pipeline, newest first: ``rtdetr`` (train) complete, ``rtdetr-evaluate``
    running, ``rtdetr-export`` held by its dependency. Not part of :func:`seed_jobs` (the
    screens' snapshots); pass ``jobs=[*seed_pipeline(), *seed_jobs()]`` to show one."""
    root = fake_profile().results_root
    steps = [
        ("rtdetr", TaoStatus.COMPLETE, "COMPLETED", _spec("rtdetr", num_gpus=4),
         _attempt(0, 1060, "COMPLETED", nodes="gpu-a01", exit_code="0:0",
                  start_time="2026-05-10T05:00:00", end_time="2026-05-10T07:40:12",
                  elapsed="02:40:12"), "Training finished successfully."),
        ("rtdetr-evaluate", TaoStatus.RUNNING, "RUNNING",
         _spec("rtdetr-evaluate", num_gpus=1, time_hours=0.5, timeout_hours=0.475,
               command="rtdetr evaluate -e /specs/eval.yaml"),
         _attempt(0, 1061, "RUNNING", nodes="gpu-a02", start_time="2026-05-10T07:40:30",
                  elapsed="00:12:40", time_limit="00:30:00"), ""),
        ("rtdetr-export", TaoStatus.PENDING, "PENDING",
         _spec("rtdetr-export", num_gpus=1, time_hours=0.5, timeout_hours=0.475,
               command="rtdetr export -e /specs/export.yaml"),
         _attempt(0, 1062, "PENDING", reason="Dependency", elapsed="00:00:00",
                  time_limit="00:30:00"), ""),
    ]  # fmt: skip
    jobs = [
        JobRecord(
            id=name,
            profile="fake",
            spec=spec,
            base_results_dir=root,
            status=status,
            slurm_state=state,
            attempts=[attempt],
            submitted=True,
            message=message,
            created_at=now + 50 + index,
            updated_at=now,
            pipeline_id="rtdetr",
            pipeline_step=index,
            progress=Progress(epoch=2, max_epoch=5, status="RUNNING") if index == 1 else Progress(),
        )
        for index, (name, status, state, spec, attempt, message) in enumerate(steps)
    ]
    return list(reversed(jobs))


def seed_doctor() -> list[CheckResult]:
    """A doctor run with some failures, each with its fix."""
    ok, fail, skip = CheckStatus.PASS, CheckStatus.FAIL, CheckStatus.SKIP
    login = "Needs a working login."
    return [
        CheckResult("profile", "profile complete", ok, "user, login hosts and partition are set."),
        CheckResult("ssh_key", "private key present", ok, "~/.ssh/id_ed25519 exists."),
        CheckResult(
            "ssh_key",
            "private key permissions",
            fail,
            "~/.ssh/id_ed25519 is readable by others (mode 0644).",
            "Restrict it: chmod 600 ~/.ssh/id_ed25519.",
            FixAction.FIX_PERMISSIONS,
        ),
        CheckResult(
            "host_keys",
            f"host key known ({FAKE_HOST})",
            fail,
            f"{FAKE_HOST} is not in known_hosts.",
            "Check its fingerprint and trust it.",
            FixAction.TRUST_HOST,
            FAKE_HOST,
        ),
        CheckResult(
            "login",
            f"key-only login ({FAKE_HOST})",
            fail,
            "The server refused the key.",
            "Install your public key with a one-time password login.",
            FixAction.INSTALL_KEY,
        ),
        CheckResult("slurm_tools", "SLURM commands answer", skip, login),
        CheckResult(
            "account",
            "account",
            fail,
            "No account is set and the site requires one.",
            "Use the detected account 'edgeai'.",
            FixAction.SET_ACCOUNT,
            "edgeai",
        ),
        CheckResult(
            "partitions", "partitions exist", ok, "polar (4:00:00), polar3 (4:00:00), gpu-long."
        ),
        CheckResult("results_dir", "results dir writable", skip, login),
        CheckResult(
            "enroot_credentials",
            "enroot credentials",
            CheckStatus.WARN,  # what the core says on a Pyxis cluster before the NGC key
            "~/.config/enroot/.credentials is missing (needed for private images).",
            "Install your NGC key.",
            FixAction.INSTALL_CREDENTIALS,
        ),
        CheckResult("pyxis", "pyxis present", skip, login),
    ]


def _log_lines(stream: LogStreamName, attempt: int, count: int) -> list[str]:
    if stream == "err":
        return [
            f"[attempt {attempt + 1}] WARNING: dataloader worker {i % 8} slow ({i * 3 % 97} ms)"
            for i in range(count)
        ]
    lines = [f"[attempt {attempt + 1}] Starting training on {count} steps"]
    for i in range(1, count):
        epoch = i // 20 + 1
        lines.append(
            f"Epoch {epoch:>2}/20 step {i:>4}: loss={1.0 / (1 + i * 0.01):.4f} lr=0.0001 "
            f"throughput={900 + i % 50} img/s"
        )
    if attempt == 0:
        lines.append("NCCL WARN NET/IB : Got completion with error 12, opcode 0, len 0")
    return lines


class FakeBackend:
    """A :class:`~tao_slurm_tui.services.backend.Backend` with seeded, scripted data.

    Every :meth:`refresh` advances ``dino-train-1`` by one epoch (Complete at 20) and touches no
    other job, so a keyed-diff test can assert that exactly one row changed.
    """

    def __init__(
        self,
        *,
        clock: Callable[[], float] | None = None,
        jobs: list[JobRecord] | None = None,
        profile: Profile | None = None,
        profile_name: str = "fake",
        log_lines: int = 300,
        checks: list[CheckResult] | None = None,
        other_profiles: dict[str, Profile] | None = None,
    ) -> None:
        self.clock: Callable[[], float] = clock or (lambda: FROZEN_TIME)
        """Injectable 'now'."""
        self._profile = profile if profile is not None else fake_profile()
        self._profile_name = profile_name
        self._profiles: dict[str, Profile] = {**(other_profiles or {}), profile_name: self._profile}
        self._jobs: dict[str, JobRecord] = {
            j.id: j for j in (jobs if jobs is not None else seed_jobs(self.clock()))
        }
        self._state = "connected"
        self._last_poll: float | None = self.clock() - 4
        self._listeners: list[Callable[[str], None]] = []
        self._checks = checks if checks is not None else seed_doctor()
        self._next_slurm_id = 1100
        self.log_lines = log_lines
        """Lines per attempt the log stream yields at once."""
        self.live_log: tuple[int, float] | None = None
        """(lines, interval) to keep yielding after the seeded lines; None: stay quiet."""
        self.refresh_error: str | None = None
        """When set, :meth:`refresh` fails with this message (and the state goes down)."""
        self.submit_error: str | None = None
        """When set, :meth:`submit` fails with this message at the sbatch stage."""
        self.refresh_count = 0
        """How many refreshes ran."""
        self.tick_warning = ""
        """What each :meth:`refresh` reports it could not read (``squeue failed: ...``); '' when
        the ticks are complete (test hook, as the cluster back end's partial failures)."""
        self.followup_warning = ""
        """What each :meth:`followup` reports it could not read (sacct answered garbage)."""
        self._poll_warning = ""
        self.installed_credentials = 0
        """How many times credentials were installed (the key itself is never kept)."""
        self.trusted_hosts: list[str] = []
        self.closed = False
        self.poll_interval = 10.0
        """Seconds between queue polls (the settings' default)."""
        self.capacity_error: str | None = None
        """When set, :meth:`capacity` fails with this message (a cluster that is down)."""
        self.capacities = CapacityCache(self._fake_capacity, clock=self.clock)
        """The last capacity report, shared by the GPUs screen and the composer's hint (as the
        cluster back end keeps it)."""
        self.estimate_count = 0
        """How many start estimates ran."""
        self.history = FakeHistory(self.clock(), list(self._jobs.values()))
        """The fake SLURM history (about 1,000 foreign jobs plus the seeded ones)."""
        self.history_gate: asyncio.Event | None = None
        """When set, each history page waits for this event (a slow cluster, for tests)."""

    # ---------------------------------------------------------------- profile & connection
    @property
    def profile_name(self) -> str:
        """Name of the active profile."""
        return self._profile_name

    @property
    def profile(self) -> Profile:
        """The active profile."""
        return self._profile

    def profile_names(self) -> list[str]:
        """Every profile name, sorted."""
        return sorted(self._profiles)

    def save_profile(self, name: str, profile: Profile, *, make_default: bool = False) -> None:
        """Keep the profile in memory and make it active."""
        if not NAME_RE.match(name):
            raise BadInput(
                f"Profile name {name!r} is invalid: use letters, digits, '.', '_' or '-'."
            )
        self._profiles[name] = profile
        self._profile_name = name
        self._profile = profile

    @property
    def connection_state(self) -> str:
        """Current connection state."""
        return self._state

    @property
    def last_poll(self) -> float | None:
        """Time of the last successful refresh."""
        return self._last_poll

    @property
    def poll_warning(self) -> str:
        """What the last refresh (and its follow-up) could not read ('' when complete)."""
        return self._poll_warning

    def add_listener(self, callback: Callable[[str], None]) -> Callable[[], None]:
        """Register a connection-state listener."""
        self._listeners.append(callback)
        return lambda: self._listeners.remove(callback) if callback in self._listeners else None

    def set_state(self, state: str) -> None:
        """Change the connection state and tell the listeners (test hook)."""
        self._state = state
        for callback in list(self._listeners):
            callback(state)

    # ---------------------------------------------------------------- jobs
    async def followup(self) -> bool:
        """The fake answers everything in :meth:`refresh`: never news, perhaps a warning."""
        self._poll_warning = self._poll_warning or self.followup_warning
        return False

    async def refresh(self, *, connect: bool = True, full: bool = False) -> list[JobRecord]:
        """Advance the running job by one epoch and return every job."""
        await asyncio.sleep(0)
        if self.refresh_error:
            self.set_state("down")
            raise OperationFailed(self.refresh_error)
        if self._state != "connected":
            self.set_state("connected")
        self.refresh_count += 1
        self._poll_warning = self.tick_warning
        job = self._jobs.get("dino-train-1")
        if job is not None and not job.status.terminal and job.progress.epoch is not None:
            job = copy.deepcopy(job)
            epoch = (job.progress.epoch or 0) + 1
            job.progress.epoch = epoch
            max_epoch = job.progress.max_epoch or 0
            # About 3.5 minutes an epoch, as in the seed's eta: the eta shrinks as epochs pass.
            left = max(0, max_epoch - epoch) * 190
            job.progress.eta = f"{left // 3600}:{left // 60 % 60:02d}:{left % 60:02d}"
            if max_epoch and epoch >= max_epoch:
                job.status = TaoStatus.COMPLETE
                job.slurm_state = "COMPLETED"
                job.attempts[-1].state = "COMPLETED"
                job.attempts[-1].exit_code = "0:0"
                job.progress.eta = ""  # nothing left to wait for
                job.progress.status = "SUCCESS"
                job.message = "Training finished successfully."
            self._jobs[job.id] = job
        self._last_poll = self.clock()
        return self.jobs()

    def jobs(self) -> list[JobRecord]:
        """Every job, newest first (copies: callers may keep them as snapshots)."""
        ordered = sorted(self._jobs.values(), key=lambda j: -j.created_at)
        return [copy.deepcopy(j) for j in ordered]

    def put_job(self, job: JobRecord) -> None:
        """Add or replace a job (test hook)."""
        self._jobs[job.id] = copy.deepcopy(job)

    async def job_detail(self, job_id: str) -> JobRecord:
        """One job with its attempts."""
        await asyncio.sleep(0)
        try:
            return copy.deepcopy(self._jobs[job_id])
        except KeyError:
            raise BadInput(f"No job named {job_id!r}; check the id in the queue.") from None

    async def cancel(self, job_id: str) -> JobRecord:
        """Mark the job Canceled (finished jobs stay as they are), and the later steps of its
        pipeline with the reason."""
        job = await self.job_detail(job_id)
        if not job.status.terminal:
            self._mark_canceled(job, "Canceled by the user.")
            why = f"Canceled: the previous step was canceled ({job.id})."
            for step in self._steps(job.pipeline_id):
                if step.pipeline_step > job.pipeline_step:
                    self._mark_canceled(step, why)
        return copy.deepcopy(self._jobs[job_id])

    async def cancel_pipeline(self, pipeline_id: str) -> list[JobRecord]:
        """Mark every step of the pipeline that has not ended Canceled."""
        await asyncio.sleep(0)
        steps = self._steps(pipeline_id)
        if not steps:
            raise BadInput(f"No pipeline named {pipeline_id!r}; check the id in the queue.")
        for step in steps:
            self._mark_canceled(step, "Canceled by the user (the whole pipeline).")
        return [copy.deepcopy(self._jobs[s.id]) for s in steps]

    def _steps(self, pipeline_id: str) -> list[JobRecord]:
        if not pipeline_id:
            return []
        found = [j for j in self._jobs.values() if j.pipeline_id == pipeline_id]
        return sorted(found, key=lambda j: j.pipeline_step)

    def _mark_canceled(self, job: JobRecord, message: str) -> None:
        if job.status.terminal:
            return
        job.status = TaoStatus.CANCELED
        job.slurm_state = "CANCELLED"
        job.message = message
        if job.attempts:
            job.attempts[-1].state = "CANCELLED"
        self._jobs[job.id] = copy.deepcopy(job)

    # ---------------------------------------------------------------- composer
    # ---------------------------------------------------------------- history
    async def job_usage(self, job_ids: list[str]) -> dict[str, Usage]:
        """Usage of the finished jobs' latest attempts, from the fake history."""
        await asyncio.sleep(0)
        by_id = {e.raw_id: e for e in self.history.entries}
        found: dict[str, Usage] = {}
        for job_id in job_ids:
            job = self._jobs.get(job_id)
            if job is not None and job.status.terminal and job.slurm_job_id in by_id:
                found[job_id] = by_id[job.slurm_job_id].usage
        return found

    async def history_page(self, query: HistoryQuery) -> HistoryPage:
        """One page of the fake history."""
        if self.history_gate is not None:
            await self.history_gate.wait()
        await asyncio.sleep(0)
        return self.history.page(query)

    async def job_output(self, entry: HistoryEntry) -> JobOutput:
        """A plausible StdOut of a foreign job."""
        await asyncio.sleep(0)
        return self.history.output(entry)

    def default_spec(self) -> dict[str, Any]:
        """A new spec with the profile's defaults."""
        return default_spec(self._profile, name="new-job")

    def resolve(self, draft: SpecDraft, *, names: bool = True) -> Resolution:
        """The real rules (core.spec), wall time against the fake cluster's partitions."""
        context = ResolveContext(
            partition_limits=FAKE_LIMITS,
            jobs=dict(self._jobs) if names else {},
            profile_name=self._profile_name,
            capacity=self.capacities.fresh(),
        )
        return resolve(draft, self._profile, context)

    async def partition_limits(self) -> PartitionLimits:
        """MaxTime per partition in seconds."""
        await asyncio.sleep(0)
        return dict(FAKE_LIMITS)

    def render(self, job: ResolvedJob, *, entrypoint: bool = False) -> str:
        """The real sbatch script (core.render) for the fake profile."""
        return render_job(job, entrypoint=entrypoint)

    async def submit(
        self,
        job: ResolvedJob,
        on_progress: ProgressCallback,
        *,
        dry_run: bool = False,
    ) -> SubmitResult:
        """Walk through the stages; fail at sbatch when :attr:`submit_error` is set."""
        script = render_job(job)
        root = self._profile.results_root
        if dry_run:
            on_progress(SubmitStage.CHECKING, "the fake cluster has every input path")
            return SubmitResult(job.name, "", root, script=script, dry_run=True)
        for stage in (
            SubmitStage.CHECKING,
            SubmitStage.STAGING,
            SubmitStage.SQSH,
            SubmitStage.SBATCH,
        ):
            on_progress(stage, "")
            await asyncio.sleep(0)
        if self.submit_error:
            raise OperationFailed(self.submit_error)
        for step in job.steps:
            if step.name in self._jobs:
                raise BadInput(f"A job named {step.name!r} exists; pick another name.")
        results: list[SubmitResult] = []
        for step in job.steps:
            self._next_slurm_id += 1
            now = self.clock()
            after = f"afterok:{self._next_slurm_id - 1}"
            reason = "Priority" if step.index == 0 else f"Dependency ({after})"
            record = step.record(
                self._profile_name,
                status=TaoStatus.PENDING,
                slurm_state="PENDING",
                attempts=[_attempt(0, self._next_slurm_id, "PENDING", reason=reason)],
                submitted=True,
                created_at=now + self._next_slurm_id,
                updated_at=now,
            )
            self._jobs[record.id] = record
            results.append(
                SubmitResult(
                    record.id,
                    str(self._next_slurm_id),
                    root,
                    script=script,
                    login_host=FAKE_HOST,
                )
            )
        on_progress(SubmitStage.DONE, "")
        first = results[0]
        first.steps = results[1:]
        return first

    # ---------------------------------------------------------------- capacity
    @property
    def capacity_count(self) -> int:
        """How many capacity refreshes ran."""
        return self.capacities.fetches

    async def _fake_capacity(self) -> CapacityReport:
        await asyncio.sleep(0)
        if self.capacity_error:
            raise OperationFailed(self.capacity_error)
        return fake_capacity(self._profile.user or "researcher", self._profile_name)

    def cached_capacity(self) -> CapacityReport | None:
        """The fake cluster's last capacity report while it is fresh (no network)."""
        return self.capacities.fresh()

    async def capacity(self) -> CapacityReport:
        """The fake cluster's capacity (:mod:`~tao_slurm_tui.services.fake_capacity`)."""
        return await self.capacities.refresh()

    async def start_estimate(self, job: ResolvedJob) -> StartEstimate:
        """What sbatch --test-only would say on the fake cluster for the rendered job (a
        pipeline: its first step); the free-block hint comes from the shared capacity cache, as
        on a cluster."""
        script = render_sbatch(job.steps[0].plan)
        await asyncio.sleep(0)
        self.estimate_count += 1
        truth = fake_capacity(self._profile.user or "researcher", self._profile_name)
        estimate = fake_start_estimate(script, self._profile.partitions, self.clock(), truth)
        report = await self.capacities.get_or_none()
        return start_estimate_of(estimate.estimates, script_request(script), report)

    # ---------------------------------------------------------------- onboarding
    async def doctor(self, spec_path: str | None = None) -> DoctorReport:
        """The seeded checks, with fixes already applied turned to pass."""
        await asyncio.sleep(0)
        return DoctorReport(list(self._checks), FAKE_HOST)

    def _resolve(self, action: str) -> None:
        self._checks = [
            replace(c, status=CheckStatus.PASS, fix="", action=None, detail="Fixed.")
            if c.action == action
            else c
            for c in self._checks
        ]

    async def fetch_host_key(self, host: str) -> HostKeyInfo:
        """A fixed key for any host."""
        await asyncio.sleep(0)
        return HostKeyInfo(
            host, self._profile.port, "ssh-ed25519", FAKE_FINGERPRINT, FAKE_PUBLIC_KEY
        )

    async def trust_host(self, host: str) -> None:
        """Remember the host as trusted."""
        self.trusted_hosts.append(host)
        self._resolve("trust_host")

    async def generate_key(self, passphrase: str | None) -> str:
        """Pretend to generate a key."""
        self._resolve("generate_key")
        return self._profile.ssh_key_path or "~/.ssh/id_ed25519"

    async def install_key(self, password: str) -> None:
        """Refuse an empty password, else pretend to install the key."""
        if not password:
            raise BadInput("Type the password of your cluster account to install the key.")
        self._resolve("install_key")

    async def fix_key_permissions(self) -> None:
        """Pretend to chmod 600."""
        self._resolve("fix_permissions")

    async def create_results_dir(self) -> str:
        """Pretend to mkdir -p the results root."""
        self._resolve("create_results_dir")
        return self._profile.results_root

    async def install_credentials(self, ngc_key: str | Secret) -> str:
        """Check the key's shape, count the install, keep nothing."""
        if isinstance(ngc_key, Secret):
            ngc_key = ngc_key.reveal()
        if not ngc_key or ngc_key != ngc_key.strip() or any(c in ngc_key for c in "\r\n\t "):
            raise BadInput("The NGC key is empty or contains spaces or newlines; paste it again.")
        self.installed_credentials += 1
        self._resolve("install_credentials")
        return FAKE_HOST

    async def credentials_present(self) -> tuple[bool, str]:
        """Present once installed."""
        await asyncio.sleep(0)
        return self.installed_credentials > 0, FAKE_HOST

    # ---------------------------------------------------------------- logs
    async def read_log(self, job_id: str, stream: LogStreamName) -> AsyncIterator[list[str]]:
        """The seeded lines of the latest attempt."""
        job = await self.job_detail(job_id)
        if job.latest is not None and job.latest.state != "PENDING":  # pending: no log yet
            yield _log_lines(stream, job.latest.number, self.log_lines)

    async def tail_log(self, job_id: str, stream: LogStreamName, lines: int) -> list[str] | None:
        """The last ``lines`` seeded lines of the latest attempt."""
        job = await self.job_detail(job_id)
        if job.latest is None or job.latest.state == "PENDING":
            return None
        return _log_lines(stream, job.latest.number, self.log_lines)[-lines:] if lines else []

    async def follow_logs(
        self,
        job_id: str,
        stream: LogStreamName,
        *,
        latest_only: bool = False,
        tail_lines: int | None = None,
        on_refresh_error: Callable[[TaoError], None] | None = None,
    ) -> AsyncIterator[LogBatch]:
        """Every attempt's seeded lines (with a separator), then live lines if configured.

        Following on its own (the CLI), it ends once a finished job's lines are out.
        """
        job = await self.job_detail(job_id)
        # Only attempts that ran wrote a log: a Pending job has none yet (nor a pending requeue).
        attempts = [a for a in job.attempts if a.state != "PENDING"]
        if latest_only:
            attempts = attempts[-1:]
        for attempt in attempts:
            separator = None
            if attempt.number > 0:
                separator = (
                    f"attempt {attempt.number + 1} · SLURM {attempt.slurm_job_id} on "
                    f"{attempt.nodes or '?'}"
                )
            lines = _log_lines(stream, attempt.number, self.log_lines)
            if tail_lines is not None and attempt is attempts[-1]:
                lines = lines[-tail_lines:] if tail_lines else []
            yield LogBatch(lines, attempt.number, separator if not latest_only else None)
        last = attempts[-1].number if attempts else 0
        if on_refresh_error is not None and job.status.terminal:
            return
        if self.live_log is None or not attempts:
            await asyncio.Event().wait()  # follow forever, quietly, until cancelled
            return
        count, interval = self.live_log
        n = 0
        while True:
            await asyncio.sleep(interval)
            yield LogBatch([f"live line {n + i}" for i in range(count)], last)
            n += count

    async def close(self) -> None:
        """Nothing to release."""
        self.closed = True
