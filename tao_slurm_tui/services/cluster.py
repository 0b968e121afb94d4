"""The application layer over a real cluster: one object per profile, used by the TUI and the CLI.

:class:`ClusterBackend` implements :class:`~tao_slurm_tui.services.backend.Backend`. Opened once
per profile (by :func:`tao_slurm_tui.services.session.open_backend`), it owns the profile's one
:class:`~tao_slurm_tui.remote.connection.Connection` (made by its
:class:`~tao_slurm_tui.remote.access.ClusterAccess`: SSH, or demo mode's fake cluster), the
:class:`~tao_slurm_tui.services.store.JobStore`, the submitter, the monitor, the log tailer, the
credentials and the doctor. Every front (each CLI verb, each screen) is a call on it; it adds no
rules of its own: a spec is resolved (:func:`tao_slurm_tui.core.spec.resolve`) against the
profile and what the back end knows (partition limits, the state DB's jobs, the capacity).

Nothing is opened until first use: ``render`` touches neither the network nor the state DB.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any

from tao_slurm_tui.config import Config, how_to_create, state_db_path
from tao_slurm_tui.core.accounting import HistoryEntry, HistoryPage, HistoryQuery, Usage
from tao_slurm_tui.core.capacity_report import CapacityReport
from tao_slurm_tui.core.job_output import JobOutput
from tao_slurm_tui.core.models import HostKeyInfo, JobRecord, SubmitResult
from tao_slurm_tui.core.partitions import PartitionLimits
from tao_slurm_tui.core.preflight import DoctorReport
from tao_slurm_tui.core.profile import Profile
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
from tao_slurm_tui.core.spec.cluster_rules import fit_defaults
from tao_slurm_tui.core.spec.slice_rule import similar_runs
from tao_slurm_tui.core.spec.tao_source import TaoContext
from tao_slurm_tui.core.spec.tao_stage import uses_tao
from tao_slurm_tui.core.start_estimate import StartEstimate
from tao_slurm_tui.errors import BadInput, TaoError
from tao_slurm_tui.remote.access import SSH, ClusterAccess
from tao_slurm_tui.remote.connection import ConnectError, ConnectionState
from tao_slurm_tui.remote.share_server import ShareServer
from tao_slurm_tui.services import credentials, sshsetup
from tao_slurm_tui.services.backend import LogBatch, LogStreamName, ProgressCallback
from tao_slurm_tui.services.capacity import estimate_start, fetch_capacity
from tao_slurm_tui.services.capacity_cache import CapacityCache
from tao_slurm_tui.services.history import HistoryService
from tao_slurm_tui.services.live_jobs import LiveJobs
from tao_slurm_tui.services.login_prompts import Prompter
from tao_slurm_tui.services.logs import LogTailer, file_size, read_whole, tail
from tao_slurm_tui.services.monitor import MIN_INTERVAL, Monitor
from tao_slurm_tui.services.onboarding import create_results_dir, run_doctor
from tao_slurm_tui.services.partitions import Facts, offline_facts, offline_limits
from tao_slurm_tui.services.site_notices import SiteNotices, in_maintenance
from tao_slurm_tui.services.store import JobStore
from tao_slurm_tui.services.submit import Submitter
from tao_slurm_tui.services.training_views import TrainingViews

if TYPE_CHECKING:  # opened on first use: the CLI's start never loads the TAO modules
    from tao_slurm_tui.services.tao import TaoCatalogue


class ClusterBackend(TrainingViews, LiveJobs):
    """Everything the fronts ask of one cluster profile, done by the real services."""

    def __init__(
        self,
        config: Config,
        name: str | None = None,
        *,
        store: JobStore | None = None,
        allow_new: bool = False,
        access: ClusterAccess = SSH,
        clock: Callable[[], float] | None = None,
    ) -> None:
        """Build the back end of profile ``name`` (nothing is opened until first use).

        Args:
            config: the loaded config (profiles, settings).
            name: the profile to use; None: the default (or the one the environment describes).
            store: the job store; default the one under the platform data dir, opened on use.
            allow_new: an unknown profile is a new one to set up (the TUI), not an error.
            access: how the cluster is reached: its connection, one login host, a host key
                (SSH; demo mode and the TUI tests pass a fake cluster's).
            clock: the time of polls and of the capacity cache's age (a frozen one for
                snapshots); default the real clock.

        Raises:
            ConfigError: unknown profile, or a bad environment override.
        """
        self.config = config
        self._name = config.profile_name(name)
        # The one place a profile is read for the cluster: environment overrides applied.
        self._profile = config.profile(name, allow_new=allow_new)
        self._listeners: list[Callable[[str], None]] = []
        self.access = access
        """How the cluster is reached (every connection is made by it)."""
        self.clock = clock or time.time
        self.conn = access.connection(self._profile, on_state=self._on_state)
        # A dashboard of the same login may lend its connection: no new login, no new code.
        # (Over SSH only: a fake cluster's connection has nothing to lend.)
        self.conn.login.attach = access is SSH
        self._share: ShareServer | None = None
        self._reshare: asyncio.Future[bool] | None = None
        if store is not None:
            self.store = store
        self._last_poll: float | None = None
        self._poll_warning = ""
        self.notices = SiteNotices()
        self._fetched: dict[str, HostKeyInfo] = {}
        self._live_limits: dict[str, int | None] | None = None
        self._partitions: Facts | None = None
        """The cluster's partitions with their node shapes (fetched, or the cache's)."""
        self._paths: dict[str, bool] = {}
        """Cluster paths :meth:`check_paths` found (True) or not (False)."""
        self._tao: TaoCatalogue | None = None
        self.capacities = CapacityCache(
            lambda: fetch_capacity(self.conn, user=self._profile.user),
            clock=clock or time.monotonic,
        )
        """The last capacity report, shared by the GPUs screen and the composer's hint."""

    # ------------------------------------------------------------------ services, on first use

    @cached_property
    def store(self) -> JobStore:
        """The job store (the state DB is opened on first use)."""
        return self.notices.store_opened(JobStore(state_db_path()))

    @cached_property
    def submitter(self) -> Submitter:
        """Stages and submits over the one connection."""
        return Submitter(
            self.conn,
            self.store,
            self._name,
            self._profile,
            host_connection=lambda host: self.access.to_host(self._profile, host),
        )

    @cached_property
    def history(self) -> HistoryService:
        """The user's SLURM history and usage over the one connection."""
        return HistoryService(self.conn, self.store, self._name)

    @cached_property
    def monitor(self) -> Monitor:
        """Polls, retries and cancels over the one connection."""
        return Monitor(
            self.conn,
            self.store,
            self._name,
            self._profile,
            resubmit=self.submitter.resubmit,
            reconcile=self.submitter.reconcile_interrupted,
            clock=self.clock,
            paced=self.access.jobs_write_events,
        )

    # ------------------------------------------------------------------ profile

    @property
    def profile_name(self) -> str:
        """Name of the active profile."""
        return self._name

    @property
    def profile(self) -> Profile:
        """The active profile (environment overrides applied)."""
        return self._profile

    @property
    def poll_interval(self) -> float:
        """Seconds between queue polls (the settings' ``poll_interval``)."""
        return self.config.settings.poll_interval

    def profile_names(self) -> list[str]:
        """Every configured profile, sorted."""
        return sorted(self.config.settings.profiles)

    def save_profile(self, name: str, profile: Profile, *, make_default: bool = False) -> None:
        """Save ``profile`` under ``name`` and make it the active one (as the set-up screen
        shows it); the services pick it up on the next connection."""
        self.config.upsert_profile(name, profile, make_default=make_default)
        if name != self._name:
            # A first start's draft saved under the name the user typed: that is the profile
            # now, and services built for the old name must not outlive it.
            self._name = name
            for service in ("submitter", "monitor"):
                self.__dict__.pop(service, None)
        if name == self._name:
            self._profile = self.config.profile(name)
            # New login settings: the open connection (to the old place) goes, the next command
            # dials the new ones; unchanged ones keep it.
            if self.conn.use_profile(self._profile):
                self.notices.connected_to = None  # another place on purpose: no failover
                # Another host or user may be another cluster: its own limits and capacity.
                self._live_limits = self._partitions = None
                self._paths = {}
                self.capacities.clear()
                if self._share is not None:
                    # The share is per login: serve the new one (a task: this is not async).
                    self._reshare = asyncio.ensure_future(self._share.restart())
            for service in ("submitter", "monitor"):
                if service in self.__dict__:
                    self.__dict__[service].profile = self._profile

    # ------------------------------------------------------------------ connection

    @property
    def connection_state(self) -> str:
        """disconnected / connecting / connected / reconnecting / down."""
        return str(self.conn.state)

    @property
    def last_poll(self) -> float | None:
        """Time of the last successful refresh."""
        return self._last_poll

    @property
    def poll_warning(self) -> str:
        """What the last refresh could not read ('' when complete)."""
        return self._poll_warning

    def add_listener(self, callback: Callable[[str], None]) -> Callable[[], None]:
        """Hear about connection state changes."""
        self._listeners.append(callback)

        def remove() -> None:
            if callback in self._listeners:
                self._listeners.remove(callback)

        return remove

    def use_prompter(self, prompter: Prompter | None) -> None:
        """Who answers the cluster's one-time code questions (see :class:`Backend`)."""
        self.conn.login.prompter = prompter

    def ask_again(self) -> None:
        """After a declined or refused code, the next connect may ask again."""
        self.conn.login.release()

    async def share_connection(self) -> bool:
        """Lend the connection to the fronts of the same login beside this one
        (:mod:`tao_slurm_tui.remote.share`)."""
        if self.access is not SSH:
            return False
        if self._share is None:
            self._share = ShareServer(self.conn)
        return await self._share.start()

    def _on_state(self, state: ConnectionState, message: str) -> None:
        if state is ConnectionState.CONNECTED:
            self.notices.connected(self.conn.host)
        for callback in list(self._listeners):
            callback(str(state))

    def take_notices(self) -> list[str]:
        """One-off sentences, each returned once (:class:`SiteNotices`)."""
        return self.notices.take(self.__dict__.get("store"))

    # ------------------------------------------------------------------ queue

    async def refresh(self, *, connect: bool = True, full: bool = False) -> list[JobRecord]:
        """One monitor tick (one round trip for every active job; due retries done); squeue
        runs when the jobs' run events or the pace call for it, or ``full``."""
        try:
            if connect:
                # With no active job the tick needs no round trip; open (or check) the
                # connection anyway so the header's indicator tells the truth and a broken
                # profile shows at once.
                await self.conn.connect()
            # (Reads one marker file; the cluster only after a damaged state DB.)
            await self.notices.recover(self.conn, self.store, self._name, self._profile)
            result = await self.monitor.tick(full=full)
        except ConnectError as exc:
            told = in_maintenance(exc, self.monitor.site if "monitor" in self.__dict__ else None)
            if told is None:
                raise
            raise told from None
        self._poll_warning = result.warning
        self._last_poll = self.monitor.clock()
        return list(reversed(result.jobs))

    async def followup(self) -> bool:
        """Wait for the monitor's background sacct follow-up (see ``Monitor.wait_followup``);
        what it could not read becomes the :attr:`poll_warning` (a one-shot ``status`` may not
        tick again after it)."""
        news = await self.monitor.wait_followup()
        self._poll_warning = self._poll_warning or self.monitor.followup_warning
        return news

    def jobs(self) -> list[JobRecord]:
        """Every job of the profile, newest first, from the store only."""
        return list(reversed(self.store.list_jobs(self._name)))

    async def job_detail(self, job_id: str) -> JobRecord:
        """One job with every attempt."""
        return self.store.require(self._name, job_id)

    async def cancel(self, job_id: str) -> JobRecord:
        """scancel every attempt of the job (and the later steps of its pipeline)."""
        self.store.require(self._name, job_id)
        return await self.monitor.cancel(job_id)

    async def cancel_pipeline(self, pipeline_id: str) -> list[JobRecord]:
        """scancel every step of the pipeline that has not ended, in one command."""
        return await self.monitor.cancel_pipeline(pipeline_id)

    # ------------------------------------------------------------------ history

    async def job_usage(self, job_ids: list[str]) -> dict[str, Usage]:
        """What the finished jobs used, by TAO id (one sacct call)."""
        jobs = [job for i in job_ids if (job := self.store.get(self._name, i)) is not None]
        return await self.history.job_usage(jobs)

    async def history_page(self, query: HistoryQuery) -> HistoryPage:
        """One page of the user's SLURM history (one sacct call)."""
        return await self.history.page(query)

    async def job_output(self, entry: HistoryEntry) -> JobOutput:
        """A job's StdOut/StdErr paths and the end of each (one call)."""
        return await self.history.job_output(entry)

    # ------------------------------------------------------------------ composer

    def default_spec(self) -> dict[str, Any]:
        """A new job with the profile's defaults, fitted to the nodes of its partition when
        the cluster told their size (never a default the cluster cannot satisfy)."""
        self._limits()  # the cached partition facts, if any
        return fit_defaults(default_spec(self._profile), self._profile, self._partitions)

    def resolve(self, draft: SpecDraft, *, names: bool = True, load_tao: bool = True) -> Resolution:
        """Every rule on the draft, with the limits, capacity, TAO catalogue and (``names``)
        jobs known now; ``load_tao=False`` (the UI thread) never opens the TAO catalogue or
        builds a schema: a ``[tao]`` table waits until a worker did (:meth:`tao`)."""
        stored = self.store.list_jobs(self._name)
        context = ResolveContext(
            partition_limits=self._limits(),
            jobs={job.id: job for job in stored} if names else {},
            profile_name=self._name,
            capacity=self.capacities.fresh(),
            partitions=self._partitions,
            paths=self._paths,
            tao=self._tao_context(draft, load_tao),
            similar_runs=similar_runs(stored),
        )
        return resolve(draft, self._profile, context)

    def tao(self) -> TaoCatalogue:
        """The profile's TAO catalogue, opened on first use (the first ever fetches the pinned
        nvidia-tao-core wheel): blocking, so a worker thread in the TUI.

        Raises:
            BadInput: the profile pins a TAO version this product does not know.
            OperationFailed: the wheel cannot be obtained (offline: the sentence says how).
        """
        if self._tao is None:
            from tao_slurm_tui.services.tao import open_tao

            self._tao = open_tao(self.config, self._profile)
        return self._tao

    def _tao_context(self, draft: SpecDraft, load: bool) -> TaoContext | None:
        if self._tao is None and not (load and uses_tao(draft.table)):
            return None
        catalogue = self.tao()
        if load:
            return TaoContext(catalogue, self._profile.results_root)
        from tao_slurm_tui.services.tao import LoadedSchemasOnly

        return TaoContext(LoadedSchemasOnly(catalogue), self._profile.results_root)

    def _limits(self) -> PartitionLimits:
        # The cluster's table once partition_limits() fetched it; before that the cached or
        # packaged one, read once (not on every keystroke of the composer).
        if self._live_limits is None:
            self._live_limits = dict(offline_limits(self._profile))
            self._partitions = offline_facts(self._profile)
        return self._live_limits

    async def partition_limits(self) -> PartitionLimits:
        """MaxTime (seconds) of the cluster's partitions and their node shapes; the cached or
        packaged list offline."""
        try:
            limits, facts = await self.submitter.partitions()
        except TaoError:
            return offline_limits(self._profile)
        self._live_limits, self._partitions = dict(limits), facts
        return self._live_limits

    async def check_paths(self, paths: list[str]) -> dict[str, bool]:
        """Whether each cluster path exists (one round trip; remembered for :meth:`resolve`)."""
        found = await self.submitter.check_paths(paths)
        self._paths.update(found)
        return found

    def render(self, job: ResolvedJob, *, entrypoint: bool = False) -> str:
        """The sbatch script (or the staged entrypoint) the job would submit (no network)."""
        return render_job(job, entrypoint=entrypoint)

    async def submit(
        self,
        job: ResolvedJob,
        on_progress: ProgressCallback,
        *,
        dry_run: bool = False,
    ) -> SubmitResult:
        """Check, stage and submit exactly once (a dry run: check and render)."""
        missing = self._profile.missing_required()
        if missing:
            raise BadInput(
                f"profile '{self._name}' has no {', '.join(missing)}; {how_to_create(self._name)} "
                "(or set the SLURM_* environment variables)."
            )
        return await self.submitter.submit(job, dry_run=dry_run, on_progress=on_progress)

    # ------------------------------------------------------------------ capacity

    def cached_capacity(self) -> CapacityReport | None:
        """The cluster's last capacity report while it is fresh (no network)."""
        return self.capacities.fresh()

    async def capacity(self) -> CapacityReport:
        """The cluster's capacity in one round trip (kept for the composer's block hint)."""
        return await self.capacities.refresh()

    async def start_estimate(self, job: ResolvedJob) -> StartEstimate:
        """sbatch --test-only on the script the job renders to (one round trip); for a
        pipeline its first step's (the later ones start when the one before them ends)."""
        script = render_sbatch(job.steps[0].plan)
        return await estimate_start(
            self.conn, script, self._profile.partitions, capacity=self.capacities
        )

    # ------------------------------------------------------------------ onboarding

    async def doctor(self, spec_path: str | None = None) -> DoctorReport:
        """The preflight checks, over the one connection."""
        return await run_doctor(
            self._profile,
            profile_name=self._name,
            spec_path=spec_path,
            connection=self.conn,
            access=self.access,
        )

    async def fetch_host_key(self, host: str) -> HostKeyInfo:
        """Fetch a login host's key for the user to inspect; nothing is written."""
        info = await sshsetup.fetch_host(self._profile, host, access=self.access)
        self._fetched[host] = info
        return info

    async def trust_host(self, host: str) -> None:
        """Write the key fetched (and shown) for ``host`` to known_hosts."""
        info = self._fetched.get(host)
        if info is None:
            raise BadInput(f"Fetch and check {host}'s host key before trusting it.")
        sshsetup.trust_host(self._profile, info)

    async def generate_key(self, passphrase: str | None) -> str:
        """Generate an ed25519 key pair at the profile's key path (or ~/.ssh/id_ed25519)."""
        generated = sshsetup.generate_key(sshsetup.key_path(self._profile), passphrase=passphrase)
        if not self._profile.ssh_key_path:
            self.save_profile(
                self._name, self._profile.model_copy(update={"ssh_key_path": str(generated.path)})
            )
        return str(generated.path)

    async def install_key(self, password: str) -> None:
        """Install the public key on every login host with one password login each."""
        for host in self._profile.hostnames:
            await sshsetup.install_public_key(
                self._profile, password, host=host, access=self.access
            )

    async def fix_key_permissions(self) -> None:
        """chmod 600 the private key (the user agreed)."""
        sshsetup.fix_key_permissions(sshsetup.key_path(self._profile))

    async def create_results_dir(self) -> str:
        """``mkdir -p`` the results root on the cluster (the doctor's fix)."""
        path = self._profile.results_root
        await create_results_dir(self.conn, path)
        return path

    async def install_credentials(self, ngc_key: str | Secret) -> str:
        """The NGC key into the remote enroot credentials, on stdin only; returns the host."""
        await credentials.install_ngc_credentials(self.conn, ngc_key)
        return self.conn.host or ""

    async def credentials_present(self) -> tuple[bool, str]:
        """Whether the remote enroot credentials file exists and is not empty, and the host."""
        present = await credentials.credentials_present(self.conn)
        return present, self.conn.host or ""

    # ------------------------------------------------------------------ logs

    async def read_log(self, job_id: str, stream: LogStreamName) -> AsyncIterator[list[str]]:
        """The whole file of the latest attempt, in chunks of lines (bounded memory)."""
        job = self.store.require(self._name, job_id)
        async for chunk in read_whole(self.conn, job, stream):
            yield chunk

    async def tail_log(self, job_id: str, stream: LogStreamName, lines: int) -> list[str] | None:
        """The last ``lines`` lines of the latest attempt; None when the file does not exist."""
        return await tail(self.conn, self.store.require(self._name, job_id), stream, lines)

    async def follow_logs(
        self,
        job_id: str,
        stream: LogStreamName,
        *,
        latest_only: bool = False,
        tail_lines: int | None = None,
        on_refresh_error: Callable[[TaoError], None] | None = None,
    ) -> AsyncIterator[LogBatch]:
        """Follow main.out / main.err across attempts, reading only new bytes.

        The TUI follows from the first attempt and reads job states from the store (its queue
        polls). With ``on_refresh_error`` set (the CLI), the log follower runs a monitor tick
        every ``poll_interval`` seconds itself and reports a failed one there.
        """
        job = self.store.require(self._name, job_id)
        tailer = LogTailer(self.conn, job, stream, from_attempt=None if latest_only else 0)
        if tail_lines is not None:
            # The last N lines, then follow from the size measured first: a line written in
            # between may show twice, but none is lost.
            size = await file_size(self.conn, tailer.path)
            lines = await tail(self.conn, job, stream, tail_lines)
            if lines:
                yield LogBatch(lines, tailer.index)
            tailer.skip_to(size if lines is not None else 0)

        async def latest() -> JobRecord:
            if on_refresh_error is not None:
                try:
                    await self.monitor.tick()
                    if await self.monitor.wait_followup():
                        await self.monitor.tick()  # sacct's answer about a job that ended
                except TaoError as exc:
                    on_refresh_error(exc)
            return self.store.require(self._name, job_id)

        if on_refresh_error is None:
            follow = tailer.follow(refresh=latest)
        else:
            every = max(MIN_INTERVAL, self.poll_interval)
            follow = tailer.follow(refresh=latest, refresh_every=every)
        async for batch in follow:
            yield batch

    async def close(self) -> None:
        """Stop the TensorBoards and sharing, close the connection and the store (if it was
        opened)."""
        if "tensorboards" in self.__dict__:
            await self.tensorboards.close()
        if self._share is not None:
            await self._share.close()
        if "monitor" in self.__dict__:
            await self.monitor.close()  # its background calls are never awaited by a tick
        await self.conn.close()
        if "store" in self.__dict__:
            self.store.close()
