"""What every screen gets from the app: the back end, the settings and the clock."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from textual.binding import Binding, BindingType

from tao_slurm_tui.config import Settings
from tao_slurm_tui.services.backend import Backend
from tao_slurm_tui.services.notify import Notifier

APP_BINDINGS: list[BindingType] = [
    Binding("question_mark", "help", "Help", id="app.help"),
    Binding("n", "new_job", "New job", id="app.new_job"),
    Binding("d", "doctor", "Set-up", id="app.doctor"),
    Binding("p", "capacity", "GPUs", tooltip="Where GPUs are free", id="app.capacity"),
    # Hidden from the footer (room): offered on the GPUs screen, in help and the palette.
    Binding("a", "overview", "All clusters", show=False, id="app.overview"),
    Binding("h", "history", "History", id="app.history"),
    Binding("ctrl+q", "quit", "Quit", show=False, id="app.quit"),
]
"""The app's own bindings, active on every screen (the help's "Everywhere" table)."""


@dataclass
class UiContext:
    """Shared by the app and its screens (the back end may be swapped on a profile switch)."""

    backend: Backend
    """The only door to the cluster, the store and the config."""
    settings: Settings = field(default_factory=Settings)
    """The config file's app settings (poll interval, keys, theme)."""
    clock: Callable[[], float] = time.time
    """'Now' — frozen in tests and screenshots."""
    notifier: Notifier | None = None
    """Desktop notifications of job events (None: none are sent)."""
