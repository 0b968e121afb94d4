"""The application layer's interface: the one door both fronts (TUI and CLI) go through.

The fronts never open a connection or import asyncssh; they call the methods of a
:class:`Backend`, opened once per profile by :mod:`tao_slurm_tui.services.session`. One
implementation exists: :class:`~tao_slurm_tui.services.cluster.ClusterBackend`, the services over
the profile's one connection; demo mode, snapshots, Pilot tests and screenshots run it over a
fake cluster (:mod:`tao_slurm_tui.services.fakecluster`).

This module imports no Textual (an import-contract test keeps it so).

Conventions every implementation follows:

* Methods raise :class:`~tao_slurm_tui.errors.TaoError` subclasses (``BadInput``,
  ``OperationFailed``) carrying one plain sentence for the user; anything else is a bug.
* Listeners registered with :meth:`Backend.add_listener` are called on the event loop's thread.
* Secrets (password, NGC key, passphrase) are used once and dropped; never stored or logged.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from tao_slurm_tui.core.accounting import HistoryEntry, HistoryPage, HistoryQuery, Usage
from tao_slurm_tui.core.capacity_report import CapacityReport
from tao_slurm_tui.core.compare import Comparison
from tao_slurm_tui.core.gpu_usage import GpuReport
from tao_slurm_tui.core.job_output import JobOutput
from tao_slurm_tui.core.job_runs import JobRuns
from tao_slurm_tui.core.job_shell import ShellTarget
from tao_slurm_tui.core.models import HostKeyInfo, JobRecord, SubmitResult, TaoStatus
from tao_slurm_tui.core.partitions import PartitionLimits
from tao_slurm_tui.core.preflight import DoctorReport
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.core.secrets import Secret
from tao_slurm_tui.core.spec import Resolution, ResolvedJob, SpecDraft
from tao_slurm_tui.core.start_estimate import StartEstimate
from tao_slurm_tui.core.why_wait import WaitReport
from tao_slurm_tui.errors import TaoError
from tao_slurm_tui.services.login_prompts import Prompter

if TYPE_CHECKING:
    from tao_slurm_tui.services.job_shell import LocalTerminal
    from tao_slurm_tui.services.tao import TaoCatalogue

ConnectionStateName = Literal[
    "disconnected", "connecting", "connected", "reconnecting", "awaiting code", "down"
]
"""Values of :attr:`Backend.connection_state` (the ``ConnectionState`` enum's values)."""

LogStreamName = Literal["out", "err"]
"""Which log of the latest attempt: ``main.out`` or ``main.err``."""


class SubmitStage(StrEnum):
    """Visible stages of a submission, reported through ``on_progress`` in this order."""

    CHECKING = "checking inputs"
    STAGING = "staging"
    SQSH = "sqsh conversion job"
    SBATCH = "sbatch"
    DONE = "done"


@dataclass(frozen=True)
class LogBatch:
    """A batch of new log lines (never one message per line)."""

    lines: list[str]
    """New complete lines, without their newline."""
    attempt: int
    """Attempt number the lines belong to (0 = first submission)."""
    separator: str | None = None
    """When set, a new attempt starts with these lines: show this text as a separator first."""


ProgressCallback = Callable[[SubmitStage, str], None]
"""``on_progress(stage, detail)``: called as a submission goes on, with one line of detail
(the one progress type of a submission, from the back end down to the image service)."""


@runtime_checkable
class Backend(Protocol):
    """The application layer: everything a front (TUI or CLI) may ask of one profile."""

    @property
    def profile_name(self) -> str:
        """Name of the active profile."""
        ...

    @property
    def profile(self) -> Profile:
        """The active profile (environment overrides applied)."""
        ...

    @property
    def poll_interval(self) -> float:
        """Seconds between queue polls (the settings' ``poll_interval``)."""
        ...

    def profile_names(self) -> list[str]:
        """Names of every configured profile, sorted."""
        ...

    def save_profile(self, name: str, profile: Profile, *, make_default: bool = False) -> None:
        """Add or replace a profile in the config file and make it the active one.

        Raises:
            BadInput: the name or a field is invalid.
        """
        ...

    @property
    def connection_state(self) -> str:
        """One of :data:`ConnectionStateName`."""
        ...

    @property
    def last_poll(self) -> float | None:
        """``time.time()`` of the last successful :meth:`refresh`, None before the first."""
        ...

    @property
    def poll_warning(self) -> str:
        """What the last :meth:`refresh` could not read although SLURM answered (sacct down,
        lines that are not job rows), as a phrase; '' when it was complete."""
        ...

    def take_notices(self) -> list[str]:
        """One-off sentences for the user, each returned once: a login host that went away
        (and the one used now), the state DB's journal mode on a network file system, jobs
        recovered after a damaged state DB was moved aside."""
        ...

    def add_listener(self, callback: Callable[[str], None]) -> Callable[[], None]:
        """Call ``callback(state)`` whenever the connection state changes.

        Returns:
            A function that removes the listener.
        """
        ...

    def use_prompter(self, prompter: Prompter | None) -> None:
        """Who answers the cluster's keyboard-interactive questions (a one-time code) from now
        on: the dashboard's modal, the CLI's terminal; None: nobody (a login that needs a code
        then fails with a sentence saying how to get a code-free session)."""
        ...

    def ask_again(self) -> None:
        """The user asks to connect again (a manual refresh): after a declined or refused
        one-time code the connection asks nobody until this is called (no storm of prompts)."""
        ...

    async def share_connection(self) -> bool:
        """Lend the connection to the CLI verbs and dashboards of the same login started
        beside this one, so that one code serves them all (the dashboard calls it at start;
        ``docs/MFA.md``). False when another dashboard shares already, or nothing can be."""
        ...

    async def refresh(self, *, connect: bool = True, full: bool = False) -> list[JobRecord]:
        """One monitor tick: one round trip for every active job, due retries done.

        Args:
            connect: open (or check) the connection even when no job is active, so a broken
                profile shows at once (the TUI); the CLI's ``status`` needs no round trip then.
            full: ask slurmctld in this tick whatever the pace says (the refresh key); a tick
                otherwise reads the jobs' run events and asks slurmctld only when they changed
                or something else may have (a pending job's reason, a node lost).

        Returns:
            Every job of the profile, terminal ones included (newest first).

        Raises:
            OperationFailed: the cluster could not be reached (the store is unchanged).
        """
        ...

    async def followup(self) -> bool:
        """Wait for the background accounting query the last :meth:`refresh` started, if any.

        Returns:
            True when it brought news, so the caller should refresh again at once.
        """
        ...

    def jobs(self) -> list[JobRecord]:
        """Every job of the profile from the store (newest first), without the network."""
        ...

    async def job_detail(self, job_id: str) -> JobRecord:
        """One job with its full attempt history.

        Raises:
            BadInput: no job has this id.
        """
        ...

    async def cancel(self, job_id: str) -> JobRecord:
        """scancel every attempt of the job; an already finished job counts as success.

        Returns:
            The job as it is now (Canceled unless it had finished).

        Raises:
            BadInput: no job has this id.
        """
        ...

    async def cancel_pipeline(self, pipeline_id: str) -> list[JobRecord]:
        """scancel every step of a pipeline that has not ended, in one command.

        Returns:
            Every step as it is now, in order.

        Raises:
            BadInput: no pipeline has this id.
        """
        ...

    async def job_runs(self, job_ids: list[str]) -> dict[str, JobRuns]:
        """The runs of TAO trainings across wall-time slices: the run ledger (where each run
        started, whether it resumed), the KPIs per epoch and the running slice's forecast.

        What the trainings wrote since they were last read is read first (one command for all,
        none for a running job the monitor follows). When the cluster cannot be reached the
        stored runs are returned.

        Raises:
            BadInput: no job has one of these ids.
        """
        ...

    async def compare(self, job_ids: list[str]) -> Comparison:
        """TAO runs side by side: the experiment-spec keys that differ (each job's
        ``experiment.yaml``, read in one command, else its submitted spec) and the last and
        best value of every KPI.

        Raises:
            BadInput: fewer than two different ids, or no job has one of them.
        """
        ...

    async def start_tensorboard(self, job_id: str) -> str:
        """Start TensorBoard on a running TAO training's results (inside its allocation, in its
        image) and forward a local port bound to 127.0.0.1 over the connection.

        Returns:
            The local URL (the running session's when there is one).

        Raises:
            BadInput: no job has this id, or it is not running.
            OperationFailed: TensorBoard did not start, or the port could not be forwarded.
        """
        ...

    async def stop_tensorboard(self, job_id: str) -> bool:
        """Stop the job's TensorBoard (its step and the forwarded port); False if none ran."""
        ...

    def tensorboard_url(self, job_id: str) -> str | None:
        """The local URL of the job's running TensorBoard (None: none runs, or it ended with
        its job)."""
        ...

    async def job_usage(self, job_ids: list[str]) -> dict[str, Usage]:
        """What the given finished jobs used (latest attempt), by TAO id; one sacct call.

        Jobs that are not finished, or that accounting does not know, are absent.

        Raises:
            OperationFailed: sacct failed or the cluster could not be reached.
        """
        ...

    async def gpu_report(self, job_id: str) -> GpuReport:
        """The GPUs of a running job now: utilisation and memory of each, and how long they
        sat idle (one round trip: an ``srun --overlap`` step running nvidia-smi).

        Raises:
            BadInput: no job has this id, or it is not running.
            OperationFailed: the cluster could not be reached.
        """
        ...

    async def idle_gpu_jobs(self) -> dict[str, float]:
        """Running jobs whose GPUs sat idle at least the settings' ``gpu_idle_minutes``, by
        TAO id (seconds idle). Samples every running job when that is due (one round trip,
        now and then), else answers from what is known without the network.

        Raises:
            OperationFailed: the cluster could not be reached.
        """
        ...

    def shell_target(self, job_id: str, node: str | None = None) -> ShellTarget:
        """Where a shell inside a running job opens: ``node`` (None: its first), in its
        container for a Pyxis job (no network: the job as the store has it).

        Raises:
            BadInput: no job has this id, it is not running, or it does not run on ``node``.
        """
        ...

    async def open_shell(self, target: ShellTarget, terminal: LocalTerminal) -> int:
        """An interactive shell on ``terminal`` inside the job (a pty over the connection:
        ``srun --overlap --jobid --pty``, into its Pyxis container); returns when it exits,
        with its exit status.

        Raises:
            BadInput: ``terminal`` is not an interactive terminal.
            OperationFailed: the cluster could not be reached.
        """
        ...

    async def why_pending(self, job_id: str) -> WaitReport:
        """Why a pending job waits: its reason in words with what to do, its priority and
        factors (``sprio``), its rank among its partition's pending jobs, the user's fair share
        (``sshare``) and the start estimate; one round trip.

        Raises:
            BadInput: no job has this id, or it is not pending.
            OperationFailed: the cluster could not be reached.
        """
        ...

    async def history_page(self, query: HistoryQuery) -> HistoryPage:
        """One page of the user's SLURM history (every job, not only ours): one sacct call.

        Raises:
            BadInput: the query is invalid.
            OperationFailed: sacct failed or the cluster could not be reached.
        """
        ...

    async def job_output(self, entry: HistoryEntry) -> JobOutput:
        """Where a (foreign) job wrote StdOut/StdErr and the end of each readable file.

        Raises:
            BadInput: the entry has no SLURM id to look up.
            OperationFailed: the cluster could not be reached.
        """
        ...

    def default_spec(self) -> dict[str, Any]:
        """A spec table with the profile's defaults, for a new job in the composer."""
        ...

    def resolve(self, draft: SpecDraft, *, names: bool = True, load_tao: bool = True) -> Resolution:
        """Check a draft against every rule and plan it on the profile (no network).

        The rules see what the back end knows now: the partitions' MaxTime and node sizes as
        last fetched by :meth:`partition_limits` (else the cached or packaged list; node sizes
        only once the cluster told them), the paths :meth:`check_paths` found or missed, the
        capacity report while it is fresh, and -- with ``names`` -- the jobs of the state DB
        (``render`` opens no state DB, so it passes False). A ``[tao]`` table is checked
        against the profile's TAO catalogue, opened (and a network's schema built) on first
        use -- unless ``load_tao`` is False (the UI thread): then only what :meth:`tao` opened
        and built already is used.

        Returns:
            The resolved job, or the problems by field (and as one sentence).
        """
        ...

    def tao(self) -> TaoCatalogue:
        """The profile's TAO catalogue, opened on first use (blocking: the first ever fetches
        the pinned nvidia-tao-core wheel; call it from a worker thread in the TUI).

        Raises:
            BadInput: the profile pins a TAO version this product does not know.
            OperationFailed: the wheel cannot be obtained.
        """
        ...

    async def partition_limits(self) -> PartitionLimits:
        """Fetch the MaxTime in seconds of the cluster's partitions (None when unlimited) and
        the shapes of their nodes (one round trip, cached); the next :meth:`resolve` checks
        partitions, wall times and what one node is asked for against them."""
        ...

    async def check_paths(self, paths: list[str]) -> dict[str, bool]:
        """Whether each cluster path exists (one ``test -e`` round trip); the next
        :meth:`resolve` names the inputs and mount sources that do not.

        Raises:
            OperationFailed: the cluster could not be asked.
        """
        ...

    def render(self, job: ResolvedJob, *, entrypoint: bool = False) -> str:
        """The sbatch script (or the staged entrypoint) the job would submit (no network); a
        pipeline's every step under a header line."""
        ...

    async def submit(
        self,
        job: ResolvedJob,
        on_progress: ProgressCallback,
        *,
        dry_run: bool = False,
    ) -> SubmitResult:
        """Check (the cluster's side: input paths, the name there), stage and submit exactly
        once; report each stage.

        With ``dry_run`` the job is checked and its script rendered; nothing is staged.

        A job with ``[[then]]`` steps is a pipeline: every step is submitted, each held by
        SLURM until the previous one completed (``afterok``); the result is the first step's,
        the others in ``steps``.

        Raises:
            BadInput: the profile is incomplete, an input path does not exist, or the name is
                taken on the cluster.
            OperationFailed: SLURM refused the job (its message is in the sentence).
        """
        ...

    def cached_capacity(self) -> CapacityReport | None:
        """The last capacity report while it is fresh (no network); None otherwise."""
        ...

    async def capacity(self) -> CapacityReport:
        """Free and allocated GPUs per partition and type, the largest free block, the user's
        share and limits: one round trip.

        Raises:
            OperationFailed: the cluster could not be reached or SLURM did not list its nodes.
        """
        ...

    async def start_estimate(self, job: ResolvedJob) -> StartEstimate:
        """SLURM's start estimate for the job as it would be submitted (no job is created;
        a pipeline: its first step), with hints about what would start sooner.

        Raises:
            OperationFailed: the cluster could not be reached.
        """
        ...

    async def doctor(self, spec_path: str | None = None) -> DoctorReport:
        """Run the preflight checks in order (``spec_path``: its inputs and image too)."""
        ...

    async def fetch_host_key(self, host: str) -> HostKeyInfo:
        """Fetch a login host's key for the user to inspect; nothing is written."""
        ...

    async def trust_host(self, host: str) -> None:
        """Write the host's key (as fetched) to known_hosts, after the user confirmed."""
        ...

    async def generate_key(self, passphrase: str | None) -> str:
        """Generate an ed25519 key pair (mode 0600) at the profile's key path.

        Returns:
            The private key's path.
        """
        ...

    async def install_key(self, password: str) -> None:
        """Install the public key with one password login (the password is used once)."""
        ...

    async def fix_key_permissions(self) -> None:
        """chmod 600 the private key, with the user's consent."""
        ...

    async def create_results_dir(self) -> str:
        """``mkdir -p`` the profile's results root on the cluster; returns the path."""
        ...

    async def install_credentials(self, ngc_key: str | Secret) -> str:
        """Write the NGC key into the remote enroot credentials (stdin only; never stored).

        Returns:
            The login host it was written on.
        """
        ...

    async def credentials_present(self) -> tuple[bool, str]:
        """Whether the remote enroot credentials exist and are not empty, and the host asked."""
        ...

    def read_log(self, job_id: str, stream: LogStreamName) -> AsyncIterator[list[str]]:
        """The whole log of the latest attempt, in chunks of lines (bounded memory).

        Raises:
            BadInput: no job has this id.
        """
        ...

    async def tail_log(self, job_id: str, stream: LogStreamName, lines: int) -> list[str] | None:
        """The last ``lines`` lines of the latest attempt; None when the file does not exist."""
        ...

    def follow_logs(
        self,
        job_id: str,
        stream: LogStreamName,
        *,
        latest_only: bool = False,
        tail_lines: int | None = None,
        on_refresh_error: Callable[[TaoError], None] | None = None,
    ) -> AsyncIterator[LogBatch]:
        """Follow ``main.out``/``main.err`` of the job across attempts.

        The iterator waits quietly while the file does not exist, yields batches of new lines,
        and ends when the job is terminal and everything was read (or when cancelled).

        Args:
            job_id: the job.
            stream: which log.
            latest_only: start at the latest attempt instead of the first.
            tail_lines: start with the last N lines of the current file instead of its start.
            on_refresh_error: follow on its own (a monitor tick every ``poll_interval``),
                reporting a failed tick here (the CLI); None: job states come from the store,
                which the TUI's queue keeps current.
        """
        ...

    async def close(self) -> None:
        """Close the connection and release resources."""
        ...


# ----------------------------------------------------------------------------------- helpers

TransitionKind = Literal[
    "started", "finished", "failed", "canceled", "retried", "stalled", "walltime"
]
"""Job events worth a notification (``walltime``: its wall time runs out soon, see
:meth:`~tao_slurm_tui.services.notify.Notifier.wall_time`)."""


@dataclass(frozen=True)
class Transition:
    """A change of a job between two refreshes that the user should hear about."""

    job_id: str
    kind: TransitionKind
    message: str
    """One sentence for the notification."""


def transitions(before: dict[str, JobRecord], after: Iterable[JobRecord]) -> list[Transition]:
    """Events between two snapshots of the jobs (new jobs are not events).

    Args:
        before: The previous snapshot, by job id.
        after: The new records.

    Returns:
        Started / finished / failed / canceled / retried events, and stalled ones (a TAO
        training's run that restarted without progress), in the order of ``after``.
    """
    events: list[Transition] = []
    for job in after:
        old = before.get(job.id)
        if old is None or old is job:  # the same record: nothing happened to it
            continue
        if job.retries > old.retries:
            events.append(
                Transition(
                    job.id,
                    "retried",
                    f"{job.id} was retried (attempt {job.retries + 1})"
                    + (f": {job.message}" if job.message else "."),
                )
            )
        problem = str(job.progress.runs.get("problem") or "")
        if problem and problem != old.progress.runs.get("problem"):
            # A TAO training's run restarted without progress (core.runs).
            stop = "; it will not be requeued again" if job.progress.runs.get("stop") else ""
            events.append(Transition(job.id, "stalled", f"{job.id}: {problem}{stop}."))
        if job.status == old.status:
            continue
        if job.status is TaoStatus.RUNNING and old.status is TaoStatus.PENDING:
            nodes = job.latest.nodes if job.latest else ""
            where = f" on {nodes}" if nodes else ""
            events.append(Transition(job.id, "started", f"{job.id} started{where}."))
        elif job.status is TaoStatus.COMPLETE:
            events.append(Transition(job.id, "finished", f"{job.id} finished."))
        elif job.status is TaoStatus.ERROR:
            why = f": {job.message}" if job.message else "."
            events.append(Transition(job.id, "failed", f"{job.id} failed{why}"))
        elif job.status is TaoStatus.CANCELED:
            events.append(Transition(job.id, "canceled", f"{job.id} was canceled."))
    return events
