"""The back end's one-off sentences for the user on the site's bad days (each given once).

A login host that went away (and the one used now), the state DB's journal mode on a network
file system, a damaged state DB moved aside and the jobs then recovered from the cluster; and,
when no login host answers during the site's announced maintenance, the sentence that says so.
:class:`~tao_slurm_tui.services.cluster.ClusterBackend` keeps one :class:`SiteNotices`.
"""

from __future__ import annotations

from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.core.site_state import maintenance_sentence
from tao_slurm_tui.errors import OperationFailed, TaoError
from tao_slurm_tui.remote.connection import ConnectError, Remote
from tao_slurm_tui.services import recover
from tao_slurm_tui.services.site_watch import SiteWatch
from tao_slurm_tui.services.store import JobStore


class SiteNotices:
    """The sentences not yet given, and the login host of the last connection."""

    def __init__(self) -> None:
        self._items: list[str] = []
        self.connected_to: str | None = None
        """The login host of the last connection (a different one next is a failover)."""

    def store_opened(self, store: JobStore) -> JobStore:
        """A state DB found damaged at open was moved aside: say so (and mark the recovery)."""
        if store.recovered_from is not None:
            recover.note_moved_aside(store)
            self._items.append(
                f"The state database {store.path} was damaged; it was moved to "
                f"{store.recovered_from} (nothing was deleted) and a new one started: the jobs "
                "are recovered from the cluster on the next refresh."
            )
        return store

    def connected(self, host: str | None) -> None:
        """The connection is up on ``host``: another one than before is a failover."""
        if self.connected_to and host and host != self.connected_to:
            self._items.append(
                f"The login host {self.connected_to} went away; switched to {host} "
                "(your jobs and their monitoring carry on)."
            )
        self.connected_to = host

    def take(self, store: JobStore | None) -> list[str]:
        """Every sentence not given yet (the store's journal-mode notice first), once."""
        if store is not None and store.notice:
            self._items.insert(0, store.notice)
            store.notice = ""
        items, self._items = self._items, []
        return items

    async def recover(self, conn: Remote, store: JobStore, name: str, profile: Profile) -> None:
        """After a damaged state DB was moved aside: the profile's jobs from the cluster."""
        try:
            done = await recover.recover_jobs(conn, store, name, profile)
        except TaoError:
            return  # the cluster did not answer: the next refresh tries again
        if done is not None:
            names = ", ".join(done.jobs[:5])
            if len(done.jobs) > 5:
                names += f" and {len(done.jobs) - 5} more"
            self._items.append(
                f"{len(done.jobs)} job(s) of profile '{name}' were recovered from the "
                f"cluster (their meta files and sacct){': ' + names if names else ''}."
            )


def in_maintenance(exc: ConnectError, site: SiteWatch | None) -> OperationFailed | None:
    """No login host answers: during the site's announced maintenance, the sentence saying so
    (None outside one)."""
    window = site.maintenance() if site is not None else None
    if window is None:
        return None
    detail = "; ".join(f"{host}: {why}" for host, why in exc.failures)
    return OperationFailed(maintenance_sentence(window, detail))
