"""Data on screen: remote text as plain Rich ``Text``, never markup, never raw control characters.

The TUI's half of :mod:`tao_slurm_tui.core.shown`. A ``str`` handed to a Textual ``Static``,
``Label``, ``DataTable`` cell, tooltip or notification is parsed as markup: a job named
``exp[/data]`` ends the app with a ``MarkupError``, ``[@click=app.quit]`` becomes a button and
``sweep[lr=0.1]`` loses its brackets. And a Rich ``Text`` keeps ESC: a log line's OSC 52 would be
sent to the terminal on every redraw. So every widget shows what came from outside (job names,
states, reasons, messages, log lines, node names, error sentences that quote the cluster) as a
``Text`` made here:

- :func:`plain` for text that may span lines (newline and tab kept),
- :func:`plain_line` for a one-line value (newline and tab spelled out too),

and the app's :meth:`~tao_slurm_tui.app.TaoSlurmApp.notify` turns markup off for every toast.
``tests/unit/test_data_not_markup.py`` keeps the widgets and screens to this (no markup strings
built from data, no ``markup=True``), and :mod:`~tao_slurm_tui.widgets.terminal_guard` drops,
as a last guard, any control character that still reaches a rendered line.
"""

from __future__ import annotations

from typing import Any

from rich.style import StyleType
from rich.text import Text

from tao_slurm_tui.core.shown import shown, shown_text

__all__ = ["plain", "plain_line"]


def plain(value: object, style: StyleType = "", **options: Any) -> Text:
    """``value`` as plain text (never markup) that may span lines; control characters other
    than newline and tab are spelled out (``\\x1b``).

    Args:
        value: Anything; ``str()`` of it is shown.
        style: The whole text's style.
        options: More ``Text`` options (``no_wrap``, ``overflow``, ``end``, ...).
    """
    return Text(shown_text(value), style=style, **options)


def plain_line(value: object, style: StyleType = "", **options: Any) -> Text:
    """``value`` as plain text on one line: newline and tab are spelled out too (a name with a
    newline shows ``\\n`` instead of breaking the row it is in)."""
    return Text(shown(value), style=style, **options)
