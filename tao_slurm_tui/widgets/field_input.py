"""A one-line form input that never hides that it is cut: its example and its value end in "…".

Textual's ``Input`` wraps its placeholder at word boundaries and shows the first line only, so
``e.g. lustre:///lustre/data/train.json`` in a narrow field reads "e.g."; and a value wider than
the field is cut at the edge with nothing to show it, so
``nvcr.io/nvidia/tao/tao-toolkit:6.26.3-pyt`` reads as the complete ``…tao-toolkit:6``.
:class:`FieldInput` keeps the whole example (its tooltip says it in full) and shortens what it
shows to the field's width with an ellipsis; a value wider than the field ends in "…" while the
field is not focused (focused, the cursor scrolls through it as usual).
"""

from __future__ import annotations

from typing import Any

from rich.cells import cell_len
from rich.segment import Segment
from textual import events
from textual.strip import Strip
from textual.widgets import Input

from tao_slurm_tui.widgets.plain import plain_line

ELLIPSIS = "…"


def shorten(text: str, width: int) -> str:
    """``text`` cut to ``width`` cells, ending in "…" when it was cut."""
    if width <= 0:
        return ""
    if cell_len(text) <= width:
        return text
    out = ""
    for char in text:
        if cell_len(out + char) > width - 1:
            break
        out += char
    return out.rstrip() + ELLIPSIS


class FieldInput(Input):
    """An ``Input`` whose example and value say when they are cut (see the module)."""

    def __init__(self, value: str = "", *, example: str = "", **kwargs: Any) -> None:
        """Create the input.

        Args:
            value: The initial value.
            example: The whole placeholder (shown shortened to the field's width).
            **kwargs: ``Input``'s own arguments.
        """
        super().__init__(value, placeholder=example, **kwargs)
        self.example = example
        """The placeholder in full."""
        if example and "tooltip" not in kwargs:
            self.tooltip = plain_line(example)

    def on_resize(self, event: events.Resize) -> None:
        """Fit the example to the new width (one line, never wrapped)."""
        self._fit_example()

    def _fit_example(self) -> None:
        width = self.scrollable_content_region.width
        if width > 0 and self.example:
            self.placeholder = shorten(self.example, width)

    def render_line(self, y: int) -> Strip:
        """The line as ``Input`` draws it; a value wider than the field, unfocused, ends in
        an ellipsis at the right edge."""
        strip = super().render_line(y)
        if y != 0 or self.has_focus or not self.value:
            return strip
        width = self.scrollable_content_region.width
        if width <= 1 or cell_len(self.value) <= width:
            return strip
        # The line is the content (the padding is drawn around it) and one cell more for the
        # cursor, cut off at the edge: the last cell in view becomes "…".
        end = width
        head = strip.crop(0, end - 1)
        style = next((seg.style for seg in reversed(list(head)) if seg.text.strip()), None)
        return Strip.join([head, Strip([Segment(ELLIPSIS, style)]), strip.crop(end)])
