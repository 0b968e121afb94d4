"""The last guard before the terminal (widgets/terminal_guard.py): a rendered line never carries
a control character, whatever a widget was given."""

from __future__ import annotations

import inspect

from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from tao_slurm_tui.widgets import terminal_guard


def test_the_textual_method_it_wraps_is_there() -> None:
    # Textual is pinned exactly; an upgrade that renames or reshapes this fails here first.
    terminal_guard.install()
    assert terminal_guard.installed()
    original = inspect.signature(terminal_guard._original_render)
    assert list(original.parameters) == ["self", "console"]


def test_a_line_with_control_characters_reaches_the_terminal_without_them() -> None:
    terminal_guard.install()
    console = Console(color_system="truecolor", force_terminal=True)
    raw = "a\x1b]52;c;cm0gLXJmIH4v\x07b\x9b1A\u202ec\x1b[1A\x1b[2Kd\ud800"
    strip = Strip([Segment(raw, Style(bold=True)), Segment("plain\x07")])
    cells = strip.cell_length
    out = strip.render(console)
    assert "\x1b]52" not in out and "\x9b" not in out and "\u202e" not in out
    assert "\x07" not in out and "\x1b[1A" not in out
    assert "a]52;c;cm0gLXJmIH4vb1Ac[1A[2Kd\ufffd" in out and "plain" in out
    assert strip.cell_length == cells  # the layout does not move
    # The style's own escape codes are still there: the guard keeps the text's, not Textual's.
    assert "\x1b[1m" in out


def test_a_clean_line_is_rendered_as_before() -> None:
    terminal_guard.install()
    console = Console(color_system="truecolor", force_terminal=True)
    strip = Strip([Segment("hello ", Style(color="red")), Segment("world")])
    assert terminal_guard._original_render(Strip(list(strip)), console) == strip.render(console)
