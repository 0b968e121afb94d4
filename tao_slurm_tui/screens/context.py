"""What every screen gets from the app: the back end, the settings and the clock."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from textual.binding import Binding, BindingType

from tao_slurm_tui.config import ConfigError, Settings
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
    # Priority: Textual hands every key to the widget focused when the app reads it, while a
    # plain Tab binding moves the focus only once the focused widget has processed the Tab --
    # so keys typed right after Tab went to the field being left ("48" became "8"). Handled
    # by the app first, the focus moves before the next key is handed on.
    Binding("tab", "app.focus_next", "Next field", show=False, priority=True, id="app.next"),
    Binding(
        "shift+tab",
        "app.focus_previous",
        "Previous field",
        show=False,
        priority=True,
        id="app.previous",
    ),
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
    save_settings: Callable[[Settings], None] | None = None
    """Writes the settings to the config file (None: kept for this run only)."""

    def remember(self, **changes: Any) -> str:
        """Change settings the UI keeps for the next start (the theme, the queue's view) and
        write them; '' or why they could not be written (they still hold for this run)."""
        if all(getattr(self.settings, key) == value for key, value in changes.items()):
            return ""
        for key, value in changes.items():
            setattr(self.settings, key, value)
        if self.save_settings is None:
            return ""
        try:
            self.save_settings(self.settings)
        except (OSError, ConfigError) as error:
            return str(error)
        return ""
