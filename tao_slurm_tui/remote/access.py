"""How the services reach a cluster: its one connection, one login host, a host's key.

:class:`ClusterAccess` is what a back end is given instead of building SSH connections itself:
the real one, :data:`SSH`, dials with asyncssh; the fake cluster of demo mode and the TUI tests
(:class:`~tao_slurm_tui.services.fakecluster.connection.FakeCluster`) hands out the same
:class:`~tao_slurm_tui.remote.connection.Connection` with a local transport. The services above
it never know which.
"""

from __future__ import annotations

from typing import Protocol

from tao_slurm_tui.core.models import HostKeyInfo
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.remote.authprobe import AuthProbe, probe_login
from tao_slurm_tui.remote.connection import Connection, StateCallback
from tao_slurm_tui.remote.hostkeys import fetch_profile_host_key


class ClusterAccess(Protocol):
    """Opens connections to a cluster's login hosts and reads their host keys."""

    @property
    def jobs_write_events(self) -> bool:
        """True when the cluster's jobs run on their own and their batch scripts write run
        events (:mod:`~tao_slurm_tui.core.run_events`): the monitor may then ask slurmctld
        only at its pace. A cluster that moves only when a SLURM tool asks must be asked every
        tick."""
        ...

    def connection(self, profile: Profile, *, on_state: StateCallback | None = None) -> Connection:
        """The profile's one connection (failover over its login hosts), not opened yet."""
        ...

    def to_host(self, profile: Profile, host: str, *, password: str | None = None) -> Connection:
        """A connection to ONE login host of ``profile`` (no failover), not opened yet."""
        ...

    async def host_key(self, profile: Profile, host: str) -> HostKeyInfo:
        """The key ``host`` presents, as known_hosts must hold it (nothing is written)."""
        ...

    async def probe_login(
        self, profile: Profile, host: str, *, password: str | None = None
    ) -> AuthProbe:
        """What ``host`` asks of a login (after a refusal: does it want a one-time code?)."""
        ...


class SshAccess:
    """The real cluster over SSH (asyncssh)."""

    jobs_write_events = True

    def connection(self, profile: Profile, *, on_state: StateCallback | None = None) -> Connection:
        """A :class:`Connection` for ``profile``."""
        return Connection(profile, on_state=on_state)

    def to_host(self, profile: Profile, host: str, *, password: str | None = None) -> Connection:
        """:meth:`Connection.to_host`."""
        return Connection.to_host(profile, host, password=password)

    async def host_key(self, profile: Profile, host: str) -> HostKeyInfo:
        """:func:`~tao_slurm_tui.remote.connection.fetch_profile_host_key`."""
        return await fetch_profile_host_key(profile, host)

    async def probe_login(
        self, profile: Profile, host: str, *, password: str | None = None
    ) -> AuthProbe:
        """:func:`~tao_slurm_tui.remote.authprobe.probe_login`."""
        return await probe_login(profile, host, password=password)


SSH = SshAccess()
"""The real access, the default of every service that reaches a login host."""
