"""The header line: app title, profile and connection indicator with the last poll time.

The header never asks the back end how things stand. The app keeps the session's status (its
reactive ``session``, a :class:`SessionStatus`) and updates it from messages: the back end's
connection listener posts :class:`ConnectionStateChanged`, the queue posts its ``Refreshed``
after each poll. Every header watches the app's ``session`` (as Textual's own ``Header`` watches
the app's title), so a change redraws every header at once, and an idle header draws nothing:
the "polled 40s ago" age is redrawn by a timer set for the moment its text changes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rich.text import Text
from textual.message import Message
from textual.reactive import reactive
from textual.timer import Timer
from textual.widget import Widget

from tao_slurm_tui.core.shown import shown
from tao_slurm_tui.services.backend import Backend

STATE_LABELS: dict[str, tuple[str, str]] = {
    "connected": ("●", "connected"),
    "connecting": ("◌", "connecting"),
    "reconnecting": ("◐", "reconnecting"),
    "awaiting code": ("◐", "waiting for your code"),
    "down": ("○", "down"),
    "disconnected": ("○", "disconnected"),
}
"""Connection state → (glyph, word)."""

MIN_AGE_WAIT = 0.25
"""Shortest wait before the age is looked at again (a timer firing a hair early must not spin)."""


def ago(seconds: float) -> str:
    """'0s ago', '40s ago', '3m ago', '2h ago' (seconds in steps of 10: the header redraws when
    the text changes, and a 10 s poll keeps it at '0s ago')."""
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds // 10 * 10}s ago"
    if seconds < 3600:
        return f"{seconds // 60}m ago"
    return f"{seconds // 3600}h ago"


def until_ago_changes(seconds: float) -> float:
    """Seconds from an age of ``seconds`` until :func:`ago` reads differently."""
    seconds = max(0.0, seconds)
    step = 10 if seconds < 60 else 60 if seconds < 3600 else 3600
    return max(MIN_AGE_WAIT, step - seconds % step)


@dataclass(frozen=True)
class SessionStatus:
    """What the header shows of the active back end."""

    profile: str
    """The active profile's name."""
    connection: str
    """One of :data:`~tao_slurm_tui.services.backend.ConnectionStateName`."""
    last_poll: float | None
    """When the queue last reached the cluster (``time.time()``), None before the first poll."""

    @classmethod
    def of(cls, backend: Backend) -> SessionStatus:
        """How ``backend`` stands now (read once, when it becomes the active one)."""
        return cls(backend.profile_name, backend.connection_state, backend.last_poll)


class ConnectionStateChanged(Message):
    """The back end's connection changed state (a fact, posted from its listener)."""

    def __init__(self, state: str) -> None:
        """Create the message.

        Args:
            state: The new state (one of ``ConnectionStateName``).
        """
        super().__init__()
        self.state = state


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

    status: reactive[SessionStatus] = reactive(SessionStatus("", "disconnected", None), init=False)
    """What is shown: the app's ``session`` (watched), redrawn when it changes."""

    def __init__(
        self, backend: Backend, clock: Callable[[], float], screen_title: str = ""
    ) -> None:
        """Create the header.

        Args:
            backend: The active back end: what the header shows until the app's ``session``
                (which follows it) is watched.
            clock: Returns 'now' (frozen in tests).
            screen_title: Name of the screen it sits on.
        """
        super().__init__()
        self.clock = clock
        self.screen_title = screen_title
        self.set_reactive(AppHeader.status, SessionStatus.of(backend))
        self._age_timer: Timer | None = None
        self._age_drawn = ""
        """The age text last drawn ('' without a poll)."""

    def on_mount(self) -> None:
        """Follow the app's session status; redraw the age when its text changes."""
        self.watch(self.app, "session", self._session_changed)
        self._arm_age_timer()

    def _session_changed(self, session: object) -> None:
        # An app without a session (a widget test) leaves the header on its back end's status.
        if isinstance(session, SessionStatus):
            self.status = session

    def watch_status(self) -> None:
        """A new poll time: the age starts over."""
        self._arm_age_timer()

    def _age(self) -> str:
        last_poll = self.status.last_poll
        return "" if last_poll is None else ago(self.clock() - last_poll)

    def _arm_age_timer(self) -> None:
        if self._age_timer is not None:
            self._age_timer.stop()
            self._age_timer = None
        last_poll = self.status.last_poll
        if last_poll is not None and self.is_mounted:
            wait = until_ago_changes(self.clock() - last_poll)
            self._age_timer = self.set_timer(wait, self._age_passed, name="header-age")

    def _age_passed(self) -> None:
        self._age_timer = None
        # An idle queue must not redraw the header for the same text (a frozen clock never moves).
        if self._age() != self._age_drawn:
            self.refresh()
        self._arm_age_timer()

    def render(self) -> Text:
        """The header line."""
        status = self.status
        state = status.connection
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
            text.append(shown(f"· {self.screen_title}  "))  # may name a job from sacct
        else:
            text.append("tao-slurm-tui  ", style=title)
        text.append(f"profile {status.profile or '-'}  ")
        self._age_drawn = age = self._age()
        if not age:
            text.append(f"{glyph} {word}", style=style)
        else:
            text.append(f"{glyph} {word} ", style=style)
            text.append(f"· polled {age}")
        return text
