"""The last guard before the terminal: no rendered line carries a control character.

Widgets show data through :mod:`tao_slurm_tui.widgets.plain` (control characters spelled out,
markup off). This guard holds even where a widget forgets, or a Textual widget draws a string it
was given: every line Textual writes goes through ``Strip.render`` (the one place a line's
segments become the text sent to the terminal; cursor moves and styles are not segment text), so
:func:`install` wraps it to drop any control, DEL, C1 or invisible format character left in a
segment's text (:func:`~tao_slurm_tui.core.shown.terminal_safe`; they are zero cells wide, so the
layout does not move). Textual is pinned exactly; ``tests/unit/test_terminal_guard.py`` checks
the method is there and the guard in place.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.segment import Segment
from textual.strip import Strip

from tao_slurm_tui.core.shown import UNSAFE, terminal_safe

__all__ = ["install", "installed"]

_original_render = Strip.render


def _guarded_render(self: Strip, console: Console) -> str:
    """``Strip.render`` with every segment's text made terminal-safe first (once per strip:
    the rendered text is cached by the strip)."""
    if self._render_cache is None:
        segments: list[Segment] = self._segments
        if any(UNSAFE.search(text) for text, _, _ in segments):
            self._segments = [
                Segment(terminal_safe(text), style, control) for text, style, control in segments
            ]
    rendered: str = _original_render(self, console)
    return rendered


def install() -> None:
    """Put the guard in place (once per process; the app calls it when it is made)."""
    render: Any = _guarded_render
    Strip.render = render  # type: ignore[method-assign]


def installed() -> bool:
    """True when rendered lines go through the guard."""
    return Strip.render is _guarded_render
