"""The queue's sort as the settings keep it (``Settings.queue_sort``), for the next start."""

from __future__ import annotations

from tao_slurm_tui.widgets.job_table import COLUMNS, SortOrder


def sort_setting(order: SortOrder) -> str:
    """``order`` as a setting: the column, ``-`` before it for the other way round; '' for
    the default (submitted, newest first)."""
    if order == SortOrder():
        return ""
    return f"{'-' if order.reverse else ''}{order.column}"


def sort_from_setting(text: str) -> SortOrder:
    """Read :func:`sort_setting`'s text (a column no longer known: the default)."""
    column = text.removeprefix("-")
    if column != "created" and column not in dict(COLUMNS):
        return SortOrder()
    return SortOrder(column, text.startswith("-"))
