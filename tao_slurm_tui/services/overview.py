"""Every configured cluster at a glance: one back end (one connection) per profile, lazily.

The active profile's back end is the app's own; another profile's is built by the factory the
first time the overview asks about it, and kept open while the overview lives, so switching into
that cluster reuses the connection (:meth:`Overview.take`). A profile that fails (unreachable,
broken config) is one sentence in its own row; the others are unaffected.

No Textual here: the overview screen and any script use it alike.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from tao_slurm_tui.core.capacity_report import CapacityReport
from tao_slurm_tui.errors import TaoError
from tao_slurm_tui.services.backend import Backend

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClusterSummary:
    """What the overview shows for one profile."""

    profile: str
    active: bool
    """The app's current profile."""
    report: CapacityReport | None = None
    """The cluster's capacity (the user's jobs, free GPUs); None when it failed."""
    error: str = ""
    """Why there is no report, one sentence."""


class Overview:
    """Back ends of every profile, opened on first use, closed together."""

    def __init__(self, active: Backend, factory: Callable[[str], Backend] | None) -> None:
        """Create the overview.

        Args:
            active: the app's back end (its profile is the active one).
            factory: builds the back end of another profile; None when the app cannot switch.
        """
        self.active = active
        self.factory = factory
        self._open: dict[str, Backend] = {}

    def names(self) -> list[str]:
        """Every profile, the active one first, the others sorted."""
        others = [n for n in self.active.profile_names() if n != self.active.profile_name]
        return [self.active.profile_name, *others]

    def backend(self, name: str) -> Backend:
        """The back end of ``name``, built on first use (opening nothing yet).

        Raises:
            TaoError: the profile cannot be used (its sentence says why).
        """
        if name == self.active.profile_name:
            return self.active
        if name not in self._open:
            if self.factory is None:
                raise TaoError(f"Restart with --profile {name} to see that cluster.")
            self._open[name] = self.factory(name)
        return self._open[name]

    async def summary(self, name: str) -> ClusterSummary:
        """One refresh of one cluster; a failure is the row's sentence, never an exception."""
        active = name == self.active.profile_name
        try:
            report = await self.backend(name).capacity()
        except TaoError as error:
            return ClusterSummary(name, active, error=str(error))
        except Exception as error:  # a broken profile must not take the overview down
            log.exception("overview of %s failed", name)
            return ClusterSummary(name, active, error=f"{type(error).__name__}: {error}.")
        return ClusterSummary(name, active, report)

    def take(self, name: str) -> Backend | None:
        """Hand the open back end of ``name`` over (to switch into it); None if not open."""
        return self._open.pop(name, None)

    async def close(self) -> None:
        """Close every back end this overview opened (not the active one)."""
        backends, self._open = list(self._open.values()), {}
        await asyncio.gather(*(b.close() for b in backends), return_exceptions=True)
