"""What every screen gets from the app: the back end, the settings and the clock."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from tao_slurm_tui.config import Settings
from tao_slurm_tui.services.backend import Backend


@dataclass
class UiContext:
    """Shared by the app and its screens (the back end may be swapped on a profile switch)."""

    backend: Backend
    """The only door to the cluster, the store and the config."""
    settings: Settings = field(default_factory=Settings)
    """The config file's app settings (poll interval, keys, theme)."""
    clock: Callable[[], float] = time.time
    """'Now' — frozen in tests and screenshots."""
