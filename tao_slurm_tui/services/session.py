"""Opening the application layer: one back end per profile, on the cluster or (demo) a fake one.

Every front opens its back end here: each CLI verb (through
:class:`~tao_slurm_tui.commands.context.CliContext`) and the TUI (its profile switcher too).
With ``TAO_SLURM_TUI_DEMO=1`` the back end is the same
:class:`~tao_slurm_tui.services.cluster.ClusterBackend`, over the fake cluster of
:mod:`tao_slurm_tui.services.fakecluster` (kept in the cache dir's ``demo`` folder: its own
config, store, SSH key and known_hosts; the user's are never touched). Demo mode needs Linux:
the fake cluster runs the real remote commands in a local ``sh`` with GNU tools, as the
cluster's login host would.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping

from tao_slurm_tui.config import Config
from tao_slurm_tui.errors import ConfigError
from tao_slurm_tui.services.backend import Backend

DEMO_VARIABLE = "TAO_SLURM_TUI_DEMO"
"""Set to ``1`` to run every front on a fake cluster (no cluster needed; Linux only)."""

BackendFactory = Callable[[str | None], Backend]
"""Opens the back end of a profile by name (None: the default profile)."""


def demo_mode(environ: Mapping[str, str] | None = None) -> bool:
    """True when :data:`DEMO_VARIABLE` asks for the fake cluster."""
    return (os.environ if environ is None else environ).get(DEMO_VARIABLE) == "1"


def backend_factory(
    config: Config, environ: Mapping[str, str] | None = None, *, allow_new: bool = False
) -> BackendFactory:
    """A function opening the back end of any profile of ``config``.

    Args:
        config: The loaded config file.
        environ: The environment (demo mode); default ``os.environ``.
        allow_new: An unknown profile name opens a draft to set up (the TUI) instead of
            failing (the CLI verbs).
    """
    if demo_mode(environ):
        if not sys.platform.startswith("linux"):
            raise ConfigError(
                f"{DEMO_VARIABLE}=1 needs Linux (the fake cluster runs the remote commands with "
                "GNU tools, as a cluster's login host does); unset it to use a real cluster."
            )
        from tao_slurm_tui.services.fakecluster.demo import Demo, demo_directory

        # The real clock, as the header's: the demo's jobs run while you watch.
        demo = Demo(demo_directory(), now=None, poll_interval=config.settings.poll_interval)

        def fake(name: str | None) -> Backend:
            backend: Backend = demo.backend(name, allow_new=allow_new)
            return backend

        return fake

    from tao_slurm_tui.services.cluster import ClusterBackend

    def real(name: str | None) -> Backend:
        backend: Backend = ClusterBackend(config, name, allow_new=allow_new)
        return backend

    return real


def open_backend(config: Config, name: str | None = None) -> Backend:
    """The back end of profile ``name`` (None: the default one), nothing connected yet.

    Raises:
        ConfigError: unknown profile, or a bad environment override.
    """
    return backend_factory(config)(name)
