"""Demo mode, the snapshots and the TUI tests: the real back end over a fake cluster.

:func:`open_demo` gives a :class:`~tao_slurm_tui.services.cluster.ClusterBackend` (the real
services, a real SQLite store) whose cluster is a :class:`~.world.World` seeded by :mod:`.seed`.
A directory holds everything of one demo: ``config.toml`` (its profiles), ``state.db`` (the
store), ``workstation/`` (the SSH key and known_hosts the demo profile uses, so a demo never
touches ``~/.ssh``) and one world per profile (``clusters/<profile>``; a profile other than the
seeded one gets a quieter cluster, as another cluster of the overview would be).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from tao_slurm_tui.config import Config, Settings
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.services.cluster import ClusterBackend
from tao_slurm_tui.services.fakecluster import seed
from tao_slurm_tui.services.fakecluster.connection import FakeCluster
from tao_slurm_tui.services.fakecluster.world import World
from tao_slurm_tui.services.store import JobStore

SEED_VERSION = "2"
"""Bumped when the seed changes shape: an older demo directory is rebuilt."""


class DemoConfig(Config):
    """The demo's own config file; the ``SLURM_*`` environment does not redirect its cluster."""

    def profile(
        self,
        requested: str | None = None,
        environ: Mapping[str, str] | None = None,
        *,
        allow_new: bool = False,
    ) -> Profile:
        """The profile as saved in the demo's config (no environment overrides)."""
        return super().profile(requested, {}, allow_new=allow_new)


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(directory / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


class Demo:
    """Everything of one demo directory (see the module docstring)."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        now: float | None = seed.FROZEN_TIME,
        pipeline: bool = False,
        poll_interval: float = 10.0,
        profiles: Mapping[str, Profile] | None = None,
        workstation: bool = True,
        paced: bool | None = None,
    ) -> None:
        """Open (or create and seed) the demo in ``directory``.

        Args:
            directory: where the demo lives (created when missing).
            now: the clusters' frozen clock; None: the real one (demo mode).
            pipeline: the seeded cluster also holds the three-step pipeline.
            poll_interval: the settings' poll interval.
            profiles: the profiles of the config (default: the seeded ``fake`` one); the
                first is the default profile.
            workstation: the demo profile's key and known_hosts live in the demo directory
                (demo mode); False: the usual ``~/.ssh`` ones (the tests' HOME).
            paced: the clusters' jobs move on their own and the monitor asks squeue at its
                pace (:attr:`World.paced`); None: when the clock runs (demo mode).
        """
        self.directory = Path(directory).resolve()
        self.now = now
        self.pipeline = pipeline
        self.paced = paced
        self.store = JobStore(self.directory / "state.db")
        """The workstation's store of every profile."""
        self.worlds: dict[str, World] = {}
        with _locked(self.directory):
            marker = self.directory / "seed-version"
            fresh = not marker.exists()
            if fresh:
                if profiles is None:
                    profiles = {seed.PROFILE_NAME: self._profile(workstation)}
                settings = Settings(
                    default_profile=next(iter(profiles)),
                    poll_interval=poll_interval,
                    profiles=dict(profiles),
                )
                self.config: Config = DemoConfig(self.directory / "config.toml", settings)
                self.config.save()
                marker.write_text(SEED_VERSION)
            else:
                loaded = Config.load(self.directory / "config.toml")
                self.config = DemoConfig(loaded.path, loaded.settings)

    def _profile(self, workstation: bool) -> Profile:
        if not workstation:
            return seed.demo_profile()
        folder = self.directory / "workstation"
        return seed.demo_profile(
            ssh_key_path=str(folder / "id_ed25519"), known_hosts=str(folder / "known_hosts")
        )

    def world(self, name: str) -> World:
        """The cluster of profile ``name`` (created and seeded on first use)."""
        if name in self.worlds:
            return self.worlds[name]
        with _locked(self.directory):
            path = self.directory / "clusters" / name
            fresh = not path.exists()
            world = World(path, paced=self.now is None if self.paced is None else self.paced)
            world.host_keys.update(seed.HOST_KEYS)
            if fresh:
                primary = name == seed.PROFILE_NAME
                seed.seed_world(world, self.now, pipeline=self.pipeline and primary,
                                quiet=not primary)  # fmt: skip
                if primary:
                    seed.seed_store(self.store, name, world.now(), pipeline=self.pipeline)
                profile = self.config.settings.profiles.get(name)
                if profile is not None and profile.hostnames:
                    seed.setup_workstation(world, profile)
        self.worlds[name] = world
        return world

    def backend(self, name: str | None = None, *, allow_new: bool = False) -> ClusterBackend:
        """The real back end of profile ``name`` on its fake cluster."""
        profile_name = self.config.profile_name(name)
        world = self.world(profile_name)
        clock: Callable[[], float] | None = None
        if self.now is not None:
            clock = world.now
        return ClusterBackend(
            self.config,
            profile_name,
            # Its own connection to the one file: closing a back end (a profile switch)
            # closes its store, as the real one's.
            store=JobStore(self.directory / "state.db"),
            allow_new=allow_new,
            access=FakeCluster(world),
            clock=clock,
        )

    def close(self) -> None:
        """Close the store."""
        self.store.close()


def demo_directory(settings: Any = None) -> Path:
    """Where demo mode keeps its world (kept across runs; delete it to start afresh)."""
    from tao_slurm_tui.config import cache_dir

    return cache_dir() / "demo"
