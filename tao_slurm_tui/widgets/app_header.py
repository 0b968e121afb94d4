"""The header line: app title, profile and connection indicator with the last poll time."""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual.widget import Widget

from tao_slurm_tui.services.backend import Backend

STATE_LABELS: dict[str, tuple[str, str]] = {
    "connected": ("●", "connected"),
    "connecting": ("◌", "connecting"),
    "reconnecting": ("◐", "reconnecting"),
    "down": ("○", "down"),
    "disconnected": ("○", "disconnected"),
}
"""Connection state → (glyph, word)."""


def ago(seconds: float) -> str:
    """'0s ago', '40s ago', '3m ago', '2h ago' (seconds in steps of 10: a header showing it
    redraws when the text changes, and a 10 s poll keeps it at '0s ago')."""
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds // 10 * 10}s ago"
    if seconds < 3600:
        return f"{seconds // 60}m ago"
    return f"{seconds // 3600}h ago"


class AppHeader(Widget):
    """One line: title · profile · connection state · last poll."""

    COMPONENT_CLASSES = {
        "app-header--connected",
        "app-header--warning",
        "app-header--down",
        "app-header--title",
    }

    DEFAULT_CSS = """
    AppHeader {
        dock: top;
        height: 1;
        width: 100%;
        background: $panel;
        color: $foreground;
        padding: 0 1;
        & > .app-header--connected { color: $success; }
        & > .app-header--warning { color: $warning; }
        & > .app-header--down { color: $error; text-style: bold; }
        & > .app-header--title { color: $primary; text-style: bold; }
    }
    """

    def __init__(
        self, backend: Backend, clock: Callable[[], float], screen_title: str = ""
    ) -> None:
        """Create the header.

        Args:
            backend: Where the profile, connection state and last poll time come from.
            clock: Returns 'now' (frozen in tests).
            screen_title: Name of the screen it sits on.
        """
        super().__init__()
        self.backend = backend
        self.clock = clock
        self.screen_title = screen_title
        self._unlisten: Callable[[], None] | None = None
        self._drawn: tuple[str, str, str] | None = None

    def on_mount(self) -> None:
        """Redraw on every connection change, and every few seconds for the 'ago' text."""
        self._unlisten = self.backend.add_listener(self._on_state)
        self.set_interval(5, self._refresh_if_changed)

    def _key(self) -> tuple[str, str, str]:
        last_poll = self.backend.last_poll
        polled = "" if last_poll is None else ago(self.clock() - last_poll)
        return self.backend.connection_state, polled, self.backend.profile_name

    def _refresh_if_changed(self) -> None:
        # An idle queue must not redraw the header every few seconds for the same text.
        if self._key() != self._drawn:
            self.refresh()

    def _on_state(self, _state: str) -> None:
        self.refresh()

    def on_unmount(self) -> None:
        """Stop listening."""
        if self._unlisten is not None:
            self._unlisten()

    def render(self) -> Text:
        """The header line."""
        self._drawn = self._key()
        state = self.backend.connection_state
        last_poll = self.backend.last_poll
        glyph, word = STATE_LABELS.get(state, ("?", state))
        if state == "connected":
            style = self.get_component_rich_style("app-header--connected")
        elif state in ("down", "disconnected"):
            style = self.get_component_rich_style("app-header--down")
        else:
            style = self.get_component_rich_style("app-header--warning")
        text = Text(no_wrap=True, overflow="ellipsis")
        # Separators end a piece rather than start the next: SVG renderers (rsvg, which turns
        # the screenshots into PNGs) drop a <text>'s leading spaces ("connectedpolled").
        title = self.get_component_rich_style("app-header--title")
        if self.screen_title:
            text.append("tao-slurm-tui ", style=title)
            text.append(f"· {self.screen_title}  ")
        else:
            text.append("tao-slurm-tui  ", style=title)
        text.append(f"profile {self.backend.profile_name or '-'}  ")
        if last_poll is None:
            text.append(f"{glyph} {word}", style=style)
        else:
            text.append(f"{glyph} {word} ", style=style)
            text.append(f"· polled {ago(self.clock() - last_poll)}")
        return text
