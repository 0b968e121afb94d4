"""One line above the queue saying what the last poll could not read (hidden while all is well)."""

from __future__ import annotations

import re

from textual.reactive import var
from textual.widgets import Static

from tao_slurm_tui.widgets.plain import plain_line

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]+")


def notice_text(warning: str, next_poll: float) -> str:
    """The queue's one-line notice for a poll that SLURM answered only in part (``squeue
    failed: ...``, sacct printing lines that are no job rows): what is wrong first (a narrow
    terminal cuts the end), then when it is tried again. Control characters (a remote banner's
    escape sequences) become spaces."""
    what = " ".join(_CONTROL.sub(" ", warning).split()).rstrip(".")
    return (
        f"⚠ Not fully refreshed: {what}. Rows may be out of date; "
        f"next poll in {next_poll:.0f} s (r: now)."
    )


class PollNotice(Static):
    """Shows :attr:`text` (the queue screen binds its notice here); '' hides the line."""

    text: var[str] = var("", init=False)
    """The notice ('' while the last poll read everything)."""

    def __init__(self, *, id: str | None = None) -> None:
        """Create the (hidden) line.

        Args:
            id: Widget id.
        """
        super().__init__(id=id, markup=False)

    def watch_text(self, text: str) -> None:
        """Show the notice, or hide the line; the whole sentence is the tooltip (a narrow
        terminal cuts the line short)."""
        self.set_class(bool(text), "-visible")
        if text:
            # From the remote: plain text, never markup (a tooltip string is markup too).
            self.update(plain_line(text))
            self.tooltip = plain_line(text)
