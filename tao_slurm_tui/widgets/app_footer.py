"""The footer of every screen: Textual's :class:`~textual.widgets.Footer`, made to fit 80 columns.

Below :data:`FULL_WIDTH` columns the footer is Textual's compact one, and the app-wide keys
(new job, set-up, GPUs, history) leave it: they work on every screen and are listed in the help
(``?``, which stays), the command palette and the README. What is left, the screen's own keys, shows
whole instead of being cut by the palette key docked on the right.
"""

from __future__ import annotations

from textual import events
from textual.widgets import Footer

FULL_WIDTH = 120
"""Columns from which the footer shows every key: the longest footer (the history's, 104
columns) and the palette key fit."""

ALWAYS_SHOWN = frozenset({"app.help"})
"""App-wide bindings (by id) the footer keeps at any width: the help lists all the others."""


class AppFooter(Footer):
    """Textual's footer; compact, and without the app-wide keys, below :data:`FULL_WIDTH`
    columns."""

    async def recompose(self) -> None:
        """Textual's footer keys (composed again whenever the bindings change); those of the
        app's own bindings (help aside) are classed ``-everywhere``, which the narrow footer
        hides (styles/app.tcss). One update: no frame shows the keys before they are classed."""
        with self.app.batch_update():
            await super().recompose()
            if self.is_attached:  # (its screen may have been closed meanwhile)
                self._class_app_keys()

    def _class_app_keys(self) -> None:
        active = self.screen.active_bindings
        # Textual styles its footer's keys by the CSS type "FooterKey" (public: stylesheets
        # select it) but does not export the class, so it is found by that name; `key` is the
        # key widget's public attribute.
        for widget in self.query("FooterKey"):
            if widget.has_class("-command-palette"):
                continue
            found = active.get(getattr(widget, "key", ""))
            if found and found.node is self.app and found.binding.id not in ALWAYS_SHOWN:
                widget.add_class("-everywhere")

    def on_resize(self, event: events.Resize) -> None:
        """Compact below :data:`FULL_WIDTH` columns."""
        self.compact = event.size.width < FULL_WIDTH
