"""The footer of every screen: Textual's :class:`~textual.widgets.Footer`, made to fit 80 columns.

Below :data:`FULL_WIDTH` columns the footer is Textual's compact one, and the app-wide keys
(new job, set-up, GPUs, history) leave it: they work on every screen and are listed in the help
(``?``, which stays), the command palette and the README. What is left, the screen's own keys, shows
whole instead of being cut by the palette key docked on the right.
"""

from __future__ import annotations

from textual import events
from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey  # not exported; Textual is pinned exactly

FULL_WIDTH = 120
"""Columns from which the footer shows every key: the longest footer (the history's, 104
columns) and the palette key fit."""

ALWAYS_SHOWN = frozenset({"app.help"})
"""App-wide bindings (by id) the footer keeps at any width: the help lists all the others."""


class AppFooter(Footer):
    """Textual's footer; compact, and without the app-wide keys, below :data:`FULL_WIDTH`
    columns."""

    def compose(self) -> ComposeResult:
        """Textual's footer keys; those of the app's own bindings (help aside) are classed
        ``-everywhere``, which the narrow footer hides (styles/app.tcss)."""
        active = self.screen.active_bindings
        for widget in super().compose():
            if isinstance(widget, FooterKey) and not widget.has_class("-command-palette"):
                found = active.get(widget.key)
                if found and found.node is self.app and found.binding.id not in ALWAYS_SHOWN:
                    widget.add_class("-everywhere")
            yield widget

    def on_resize(self, event: events.Resize) -> None:
        """Compact below :data:`FULL_WIDTH` columns."""
        self.compact = event.size.width < FULL_WIDTH
