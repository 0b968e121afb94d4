"""A fatal error explained in one sentence (never a traceback)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label

from tao_slurm_tui.widgets.plain import plain


class ErrorModal(ModalScreen[None]):
    """Shows what went wrong and what to do; closes with Enter or Escape."""

    BINDINGS = [Binding("escape,enter", "close", "Close", id="error.close")]

    def __init__(self, title: str, message: str) -> None:
        """Create the modal.

        Args:
            title: A few words.
            message: One or two sentences for the user.
        """
        super().__init__()
        self.title_text = title
        self.message = message

    def compose(self) -> ComposeResult:
        """Title, message, a close button."""
        with Vertical(id="dialog"):
            yield Label(self.title_text, id="title", markup=False)
            # The message may quote an exception that quotes the cluster: data, spelled out.
            yield Label(plain(self.message), id="message", markup=False)
            yield Button("Close", id="close", variant="error")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """Close."""
        self.dismiss(None)

    def action_close(self) -> None:
        """Close."""
        self.dismiss(None)
