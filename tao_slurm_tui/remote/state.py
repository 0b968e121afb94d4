"""Where a connection is, and who hears about it: every change is one sentence for the UI.

The status bar, the CLI's progress line and the app's reconnect notice all listen to the one
:class:`~tao_slurm_tui.remote.connection.Connection` of a profile; a change (and only a change)
is logged and passed to every listener.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from enum import StrEnum

log = logging.getLogger(__name__)


class ConnectionState(StrEnum):
    """Where a :class:`Connection` is; reported to ``on_state`` on every change."""

    DISCONNECTED = "disconnected"
    """Never connected, or closed on purpose."""
    CONNECTING = "connecting"
    """First connect in progress (trying the login hosts in order)."""
    CONNECTED = "connected"
    """Usable."""
    RECONNECTING = "reconnecting"
    """The connection dropped; reconnecting with backoff."""
    AWAITING_CODE = "awaiting code"
    """A login waits for the user's one-time code (or other keyboard-interactive answer):
    everything that needs the connection waits with it."""
    DOWN = "down"
    """Connecting failed (every host, or a problem only the user can fix); next command retries."""


StateCallback = Callable[[ConnectionState, str], None]
"""``(state, message)``: the message is one sentence for a status bar."""


class StateListeners:
    """The callbacks that hear every state change of one connection."""

    def __init__(self, first: StateCallback | None = None) -> None:
        self._callbacks: list[StateCallback] = [first] if first else []

    def add(self, callback: StateCallback) -> Callable[[], None]:
        """Also report changes to ``callback``; returns a function that removes it."""
        self._callbacks.append(callback)

        def remove() -> None:
            with contextlib.suppress(ValueError):
                self._callbacks.remove(callback)

        return remove

    def tell(self, state: ConnectionState, message: str) -> None:
        """Log the change and pass it to every listener (one may remove itself meanwhile)."""
        log.info("%s: %s", state, message)
        for callback in list(self._callbacks):
            callback(state, message)
