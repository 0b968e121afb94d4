"""What a part of the back end (a mixin of :class:`~tao_slurm_tui.services.cluster.ClusterBackend`)
may use of it: the one connection, the clock, the profile and its name, the store and the
monitor. :class:`~tao_slurm_tui.services.training_views.TrainingViews` and
:class:`~tao_slurm_tui.services.live_jobs.LiveJobs` are such parts: the back end stays one object
over one connection while its verbs live in modules of a readable size.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from tao_slurm_tui.config import Config
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.remote.connection import Connection

if TYPE_CHECKING:
    from tao_slurm_tui.services.monitor import Monitor
    from tao_slurm_tui.services.store import JobStore


class BackendPart:
    """The back end's attributes its parts use (the back end sets them)."""

    conn: Connection
    config: Config
    clock: Callable[[], float]
    _name: str
    _profile: Profile
    if TYPE_CHECKING:  # the back end's own, opened on first use

        @property
        def store(self) -> JobStore: ...

        @property
        def monitor(self) -> Monitor: ...
