"""Domain types shared by every layer: TAO status, jobs, attempts, progress, host keys.

Pure data, no I/O. The store persists these; the poller updates them; the UI and the CLI show
them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class TaoStatus(StrEnum):
    """The TAO status of a job, as the platform names it."""

    PENDING = "Pending"
    RUNNING = "Running"
    COMPLETE = "Complete"
    ERROR = "Error"
    CANCELED = "Canceled"
    PAUSED = "Paused"

    @property
    def terminal(self) -> bool:
        """True when nothing more will happen to the job."""
        return self in (TaoStatus.COMPLETE, TaoStatus.ERROR, TaoStatus.CANCELED)


@dataclass
class Progress:
    """Training progress read from ``status.json`` (all optional).

    ``epoch`` and ``max_epoch`` are kept as TAO writes them: TAO's Lightning status callback
    writes, at the end of each epoch, its 0-based index (``epoch``) and the index of the last
    one (``max_epoch`` = epochs - 1). A researcher counts epochs done out of epochs asked for:
    :attr:`epochs_done`, :attr:`epochs_total` and :attr:`epoch_text` say that (after two of
    three epochs TAO writes ``epoch 1, max_epoch 2``: shown as ``2/3``).
    """

    epoch: int | None = None
    """0-based index of the last epoch that ended (TAO's ``epoch``)."""
    max_epoch: int | None = None
    """0-based index of the last epoch of the run (TAO's ``max_epoch`` = epochs - 1)."""
    eta: str | None = None
    """Estimated time left, as the container wrote it (a ``timedelta`` string, ``0:03:21.5``)."""
    kpi: dict[str, Any] = field(default_factory=dict)
    """Latest KPIs (loss, mAP, ...)."""
    status: str | None = None
    """Last ``status`` value (STARTED, RUNNING, SUCCESS, FAILURE, SKIPPED, or another word)."""
    message: str | None = None
    """Last ``message`` (its first line)."""
    time_per_epoch: str | None = None
    """Duration of the last epoch, as the container wrote it (``0:10:18.004311``)."""
    runs: dict[str, Any] = field(default_factory=dict)
    """A TAO training's runs across wall-time slices and whether each resumed
    (:meth:`tao_slurm_tui.core.runs.RunLedger.summary`); empty for other jobs."""

    @property
    def epochs_done(self) -> int | None:
        """Epochs that ended (``epoch`` + 1), when an epoch line was seen."""
        return None if self.epoch is None else max(0, self.epoch + 1)

    @property
    def epochs_total(self) -> int | None:
        """Epochs of the run (``max_epoch`` + 1), when known."""
        return None if self.max_epoch is None or self.max_epoch < 0 else self.max_epoch + 1

    @property
    def fraction(self) -> float | None:
        """Epochs done / epochs of the run in [0, 1], when both are known."""
        done, total = self.epochs_done, self.epochs_total
        if done is None or not total:
            return None
        return max(0.0, min(1.0, done / total))

    @property
    def epoch_text(self) -> str:
        """``2/3`` (epochs done of the run's), ``2/?`` when the total is unknown, '' before the
        first epoch ended."""
        done = self.epochs_done
        if done is None:
            return ""
        total = self.epochs_total
        return f"{done}/{total if total is not None else '?'}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form (for the store)."""
        return {
            "epoch": self.epoch,
            "max_epoch": self.max_epoch,
            "eta": self.eta,
            "kpi": self.kpi,
            "status": self.status,
            "message": self.message,
            "time_per_epoch": self.time_per_epoch,
            "runs": self.runs,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Progress:
        """Inverse of :meth:`to_dict`; tolerates missing keys."""
        data = data or {}
        return cls(
            epoch=data.get("epoch"),
            max_epoch=data.get("max_epoch"),
            eta=data.get("eta"),
            kpi=dict(data.get("kpi") or {}),
            status=data.get("status"),
            message=data.get("message"),
            time_per_epoch=data.get("time_per_epoch"),
            runs=dict(data.get("runs") or {}),
        )


@dataclass
class Attempt:
    """One SLURM submission of a job (the first, or a retry)."""

    number: int
    """0 for the first submission, 1 for the first retry, ..."""
    slurm_job_id: str
    """SLURM job id (bare, without ``;cluster``)."""
    login_host: str = ""
    """Login host the attempt was submitted through."""
    state: str = ""
    """Last SLURM state seen (first word: ``CANCELLED by 1001`` → ``CANCELLED``)."""
    exit_code: str = ""
    """``rc:signal`` as sacct prints it."""
    reason: str = ""
    """Pending reason or squeue's NODELIST(REASON) text."""
    nodes: str = ""
    """Node list the attempt ran on."""
    submit_time: str = ""
    start_time: str = ""
    end_time: str = ""
    elapsed: str = ""
    """Elapsed time as SLURM prints it."""
    time_limit: str = ""
    """Time limit as SLURM prints it."""
    partition: str = ""
    est_start: str = ""
    """Estimated start time when SLURM has one."""
    retry_reason: str = ""
    """Why this attempt was retried (empty if it was not)."""
    restarts: int = 0
    """How often SLURM requeued this SLURM job itself (``SLURM_RESTART_COUNT``/sacct -D)."""
    timeout_restarts: int = 0
    """Of ``restarts``, the batch script's requeues after ``timeout_hours`` (their own cap,
    ``max_timeout_requeues``; they do not spend the infrastructure-retry budget)."""


@dataclass
class JobRecord:
    """A TAO job under a stable id, with every SLURM attempt."""

    id: str
    """Stable job id (the spec's ``name``)."""
    profile: str
    """Profile the job was submitted with."""
    spec: dict[str, Any] = field(default_factory=dict)
    """The resolved spec as a JSON dict (a pipeline's step: its own spec, merged with the
    pipeline's first step)."""
    base_results_dir: str = ""
    """Remote root of the job's files."""
    status: TaoStatus = TaoStatus.PENDING
    slurm_state: str = ""
    """SLURM state of the latest attempt (first word)."""
    message: str = ""
    """Last message for the user (SLURM's refusal, status.json message, retry reason)."""
    progress: Progress = field(default_factory=Progress)
    attempts: list[Attempt] = field(default_factory=list)
    submitted: bool = False
    """False while the job is recorded but ``sbatch`` has not been confirmed."""
    sqsh_job_id: str = ""
    """SLURM id of the SQSH conversion job, if one was submitted for this job."""
    created_at: float = 0.0
    updated_at: float = 0.0
    pipeline_id: str = ""
    """The pipeline the job is a step of (the first step's id); '' for a single job."""
    pipeline_step: int = 0
    """Index of the step in its pipeline (0 = the first step)."""
    plan: dict[str, Any] = field(default_factory=dict)
    """The launch plan the job was resolved to, as JSON (``core.launch.LaunchPlan``): a retry
    renders it again. Empty for jobs stored before plans were stored."""

    @property
    def latest(self) -> Attempt | None:
        """The latest attempt, if any."""
        return self.attempts[-1] if self.attempts else None

    @property
    def slurm_job_id(self) -> str:
        """SLURM id of the latest attempt ('' before submission)."""
        return self.attempts[-1].slurm_job_id if self.attempts else ""

    @property
    def retries(self) -> int:
        """Number of retries so far (attempts after the first, plus SLURM self-requeues)."""
        if not self.attempts:
            return 0
        return len(self.attempts) - 1 + sum(a.restarts for a in self.attempts)

    @property
    def infra_retries(self) -> int:
        """Retries that spend the infrastructure-retry budget: :attr:`retries` without the
        batch script's timeout requeues."""
        return self.retries - sum(a.timeout_restarts for a in self.attempts)

    @property
    def reason(self) -> str:
        """Pending reason (or node list) of the latest attempt."""
        return self.attempts[-1].reason if self.attempts else ""

    def status_json(self) -> dict[str, Any]:
        """The ``status --json`` contract: id, status, slurm_state, slurm_job_id, retries,
        reason, message; and for a pipeline's step ``pipeline_id`` and ``pipeline_step``
        (1-based, as the CLI and the queue show it)."""
        data: dict[str, Any] = {
            "id": self.id,
            "status": str(self.status),
            "slurm_state": self.slurm_state,
            "slurm_job_id": self.slurm_job_id,
            "retries": self.retries,
            "reason": self.reason,
            "message": self.message,
        }
        if self.pipeline_id:
            data["pipeline_id"] = self.pipeline_id
            data["pipeline_step"] = self.pipeline_step + 1
        return data


@dataclass(frozen=True)
class HostKeyInfo:
    """A server's host key as shown to the user before trusting it."""

    host: str
    """Host name or address the key was presented for."""
    port: int
    """SSH port."""
    key_type: str
    """Key algorithm, e.g. ``ssh-ed25519``."""
    fingerprint: str
    """``SHA256:...`` exactly as ``ssh-keygen -lf`` prints it."""
    public_key: str
    """The key as one OpenSSH line, ``TYPE BASE64`` (no comment)."""


@dataclass
class SubmitResult:
    """Outcome of a submission (or of a dry run)."""

    id: str
    """Stable job id (the spec's name)."""
    slurm_job_id: str
    """SLURM id ('' for a dry run)."""
    job_dir: str
    """The job's remote root (``base_results_dir``, holding specs/, sbatch/, slurm-logs/, ...)."""
    warnings: list[str] = field(default_factory=list)
    """Sentences for the user (SQSH fallback notice, recovered submission, ...)."""
    script: str = ""
    """The rendered batch script."""
    dry_run: bool = False
    """Nothing was staged or submitted."""
    sqsh_job_id: str = ""
    """SLURM id of the SQSH conversion job waited for, if any."""
    login_host: str = ""
    """Login host that accepted the job."""
    adopted: bool = False
    """The SLURM job was found by name after a lost connection instead of confirmed by sbatch."""
    steps: list[SubmitResult] = field(default_factory=list)
    """For a pipeline: the follow-up steps, in order (this result is the first step)."""

    def to_json(self) -> dict[str, Any]:
        """The ``submit --json`` contract: id, slurm_job_id, job_dir; for a pipeline also
        ``pipeline_id`` and ``steps`` (every step's id, slurm_job_id, job_dir, first included)."""
        data: dict[str, Any] = {
            "id": self.id,
            "slurm_job_id": self.slurm_job_id,
            "job_dir": self.job_dir,
        }
        if self.steps:
            data["pipeline_id"] = self.id
            data["steps"] = [
                {"id": r.id, "slurm_job_id": r.slurm_job_id, "job_dir": r.job_dir}
                for r in (self, *self.steps)
            ]
        return data
