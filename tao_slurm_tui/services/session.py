"""Opening the application layer: one back end per profile, real or (``TAO_SLURM_TUI_DEMO=1``) fake.

Every front opens its back end here: each CLI verb (through
:class:`~tao_slurm_tui.commands.context.CliContext`) and the TUI (its profile switcher too).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping

from tao_slurm_tui.config import Config
from tao_slurm_tui.services.backend import Backend

DEMO_VARIABLE = "TAO_SLURM_TUI_DEMO"
"""Set to ``1`` to run every front on the deterministic fake back end (no cluster needed)."""

BackendFactory = Callable[[str | None], Backend]
"""Opens the back end of a profile by name (None: the default profile)."""


def demo_mode(environ: Mapping[str, str] | None = None) -> bool:
    """True when :data:`DEMO_VARIABLE` asks for the fake back end."""
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
        from tao_slurm_tui.services.fake import FakeBackend

        def fake(name: str | None) -> Backend:
            # The real clock, as the header's: a frozen fake would be 'polled 4909h ago'.
            backend = FakeBackend(profile_name=config.profile_name(name), clock=time.time)
            backend.poll_interval = config.settings.poll_interval
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
