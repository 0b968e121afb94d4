"""The real back end of the TUI: the services over the profile's one SSH connection.

:class:`ClusterBackend` implements :class:`~tao_slurm_tui.services.backend.Backend` by
composition — it owns one :class:`~tao_slurm_tui.remote.connection.Connection`, one
:class:`~tao_slurm_tui.services.store.JobStore`, and the submit / monitor / logs / onboarding
services built on them. It adds no rules of its own; it translates between the services' types
and the UI's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from tao_slurm_tui.config import Config, state_db_path
from tao_slurm_tui.core.models import HostKeyInfo, JobRecord
from tao_slurm_tui.core.partitions import PartitionLimits
from tao_slurm_tui.core.preflight import CheckResult
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.core.render import render_sbatch
from tao_slurm_tui.core.spec import (
    JobSpec,
    spec_errors_for_profile,
    validate_spec,
    with_profile_defaults,
)
from tao_slurm_tui.errors import BadInput, TaoError
from tao_slurm_tui.remote.connection import Connection, ConnectionState
from tao_slurm_tui.services import credentials, sshsetup
from tao_slurm_tui.services.backend import (
    LogBatch,
    LogStreamName,
    SubmitStage,
)
from tao_slurm_tui.services.logs import LogTailer
from tao_slurm_tui.services.monitor import Monitor
from tao_slurm_tui.services.onboarding import run_doctor
from tao_slurm_tui.services.partitions import offline_limits
from tao_slurm_tui.services.store import JobStore
from tao_slurm_tui.services.submit import Submitter

DEFAULT_IMAGE = "nvcr.io/nvidia/tao/tao-toolkit:6.26.3-pyt"
"""Image a new job starts from in the composer."""


class ClusterBackend:
    """Everything the TUI asks of one cluster profile, done by the real services."""

    def __init__(self, config: Config, name: str, *, store: JobStore | None = None) -> None:
        """Build the back end of profile ``name`` (nothing is opened until first use).

        Args:
            config: the loaded config (profiles, settings).
            name: the profile to use.
            store: the job store; default the one under the platform data dir.
        """
        self.config = config
        self._name = name
        self._profile = config.profile(name)
        self._listeners: list[Callable[[str], None]] = []
        self.conn = Connection(self._profile, on_state=self._on_state)
        self.store = store or JobStore(state_db_path())
        self.submitter = Submitter(self.conn, self.store, name, self._profile)
        self.monitor = Monitor(
            self.conn, self.store, name, self._profile, resubmit=self.submitter.resubmit
        )
        self._last_poll: float | None = None
        self._fetched: dict[str, HostKeyInfo] = {}
        self._live_limits: dict[str, int | None] | None = None

    # ------------------------------------------------------------------ profile

    @property
    def profile_name(self) -> str:
        """Name of the active profile."""
        return self._name

    @property
    def profile(self) -> Profile:
        """The active profile (environment overrides applied)."""
        return self._profile

    def profile_names(self) -> list[str]:
        """Every configured profile, sorted."""
        return sorted(self.config.settings.profiles)

    def save_profile(self, name: str, profile: Profile, *, make_default: bool = False) -> None:
        """Save ``profile`` under ``name``; the services pick it up on the next connection."""
        self.config.upsert_profile(name, profile, make_default=make_default)
        if name == self._name:
            self._profile = self.config.profile(name)
            for service in (self.conn, self.submitter, self.monitor):
                service.profile = self._profile

    # ------------------------------------------------------------------ connection

    @property
    def connection_state(self) -> str:
        """disconnected / connecting / connected / reconnecting / down."""
        return str(self.conn.state)

    @property
    def last_poll(self) -> float | None:
        """Time of the last successful refresh."""
        return self._last_poll

    def add_listener(self, callback: Callable[[str], None]) -> Callable[[], None]:
        """Hear about connection state changes."""
        self._listeners.append(callback)

        def remove() -> None:
            if callback in self._listeners:
                self._listeners.remove(callback)

        return remove

    def _on_state(self, state: ConnectionState, message: str) -> None:
        for callback in list(self._listeners):
            callback(str(state))

    # ------------------------------------------------------------------ queue

    async def refresh(self) -> list[JobRecord]:
        """One monitor tick (one round trip for every active job; due retries done)."""
        # With no active job the tick needs no round trip; open (or check) the connection
        # anyway so the header's indicator tells the truth and a broken profile shows at once.
        await self.conn.connect()
        result = await self.monitor.tick()
        self._last_poll = self.monitor.clock()
        return list(reversed(result.jobs))

    def jobs(self) -> list[JobRecord]:
        """Every job of the profile, newest first, from the store only."""
        return list(reversed(self.store.list_jobs(self._name)))

    async def job_detail(self, job_id: str) -> JobRecord:
        """One job with every attempt."""
        return self.store.require(self._name, job_id)

    async def cancel(self, job_id: str) -> JobRecord:
        """scancel every attempt of the job."""
        return await self.monitor.cancel(job_id)

    # ------------------------------------------------------------------ composer

    def default_spec(self) -> dict[str, Any]:
        """A new job with the profile's defaults."""
        p = self._profile
        return {
            "name": "",
            "image": DEFAULT_IMAGE,
            "command": "",
            "num_nodes": 1,
            "num_gpus": 4,
            "cpus_per_task": 16,
            "time_hours": p.time_hours,
            "timeout_hours": p.timeout_hours,
            "partition": p.partitions[0] if p.partitions else "",
            "account": p.account,
            "container_mounts": ["/lustre"],
            "use_requeue": p.use_requeue,
            "use_sqsh": True,
            "inputs": [],
            "env": {},
            "specs": {},
        }

    def validate_spec(self, data: dict[str, Any]) -> dict[str, str]:
        """Field errors of a spec dict, wall time against the partition limits known so far."""
        return spec_errors_for_profile(data, self._profile, self._limits())

    def _limits(self) -> PartitionLimits:
        # The cluster's table once partition_limits() fetched it; before that the cached or
        # packaged one, read once (not on every keystroke of the composer).
        if self._live_limits is None:
            self._live_limits = dict(offline_limits(self._name))
        return self._live_limits

    async def partition_limits(self) -> PartitionLimits:
        """MaxTime (seconds) of the cluster's partitions; the cached or packaged list offline."""
        try:
            self._live_limits = dict(await self.submitter.partition_limits())
        except TaoError:
            return offline_limits(self._name)
        return self._live_limits

    def _spec(self, data: dict[str, Any]) -> JobSpec:
        return validate_spec(with_profile_defaults(data, self._profile))

    def render(self, spec: dict[str, Any]) -> str:
        """The sbatch script the spec would submit (no network)."""
        return render_sbatch(self._spec(spec), self._profile, partition_limits=self._limits())

    async def submit(
        self, spec: dict[str, Any], on_progress: Callable[[SubmitStage], None]
    ) -> JobRecord:
        """Validate (remote paths too), stage and submit exactly once."""

        def progress(stage: str, detail: str) -> None:
            on_progress(SubmitStage(stage))

        result = await self.submitter.submit(self._spec(spec), on_progress=progress)
        return self.store.require(self._name, result.id)

    # ------------------------------------------------------------------ onboarding

    async def doctor(self) -> list[CheckResult]:
        """The preflight checks, over the one connection."""
        report = await run_doctor(self._profile, profile_name=self._name, connection=self.conn)
        return report.results

    async def fetch_host_key(self, host: str) -> HostKeyInfo:
        """Fetch a login host's key for the user to inspect; nothing is written."""
        info = await sshsetup.fetch_host(self._profile, host)
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
            await sshsetup.install_public_key(self._profile, password, host=host)

    async def fix_key_permissions(self) -> None:
        """chmod 600 the private key (the user agreed)."""
        sshsetup.fix_key_permissions(sshsetup.key_path(self._profile))

    async def install_credentials(self, ngc_key: str) -> None:
        """The NGC key into the remote enroot credentials, on stdin only."""
        await credentials.install_ngc_credentials(self.conn, ngc_key)

    # ------------------------------------------------------------------ logs

    async def follow_logs(self, job_id: str, stream: LogStreamName) -> AsyncIterator[LogBatch]:
        """Follow main.out / main.err across attempts, reading only new bytes."""
        job = self.store.require(self._name, job_id)
        tailer = LogTailer(self.conn, job, stream)

        async def latest() -> JobRecord:
            return self.store.require(self._name, job_id)

        async for batch in tailer.follow(refresh=latest):
            yield batch

    async def close(self) -> None:
        """Close the connection and the store."""
        await self.conn.close()
        self.store.close()
