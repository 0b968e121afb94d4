"""A yes/no question (cancel a job, overwrite a file)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label

from tao_slurm_tui.widgets.plain import plain_line


class ConfirmModal(ModalScreen[bool]):
    """Ask a question; dismiss with True (confirm) or False."""

    BINDINGS = [
        Binding("y", "confirm", "Yes", id="confirm.yes"),
        Binding("n,escape", "refuse", "No", id="confirm.no"),
    ]

    def __init__(self, question: str, confirm_label: str = "Yes", *, danger: bool = False) -> None:
        """Create the modal.

        Args:
            question: One sentence.
            confirm_label: Label of the confirming button.
            danger: Style the confirm button as destructive.
        """
        super().__init__()
        self.question = question
        self.confirm_label = confirm_label
        self.danger = danger

    def compose(self) -> ComposeResult:
        """Question and two buttons."""
        with Vertical(id="dialog"):
            yield Label(self.question, id="question", markup=False)
            with Horizontal(id="buttons"):
                yield Button(
                    plain_line(self.confirm_label),
                    id="confirm",
                    variant="error" if self.danger else "primary",
                )
                yield Button("Keep", id="refuse")

    def on_mount(self) -> None:
        """Focus the safe choice."""
        self.query_one("#refuse", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """Dismiss with the answer."""
        self.dismiss(event.button.id == "confirm")

    def action_confirm(self) -> None:
        """Answer yes."""
        self.dismiss(True)

    def action_refuse(self) -> None:
        """Answer no."""
        self.dismiss(False)
