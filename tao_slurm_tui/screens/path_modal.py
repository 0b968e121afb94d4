"""Ask for a file path (load / save a spec TOML)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label


class PathModal(ModalScreen[str | None]):
    """One path input; dismisses with the path, or None on Escape."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="path.cancel")]

    def __init__(self, prompt: str, value: str = "") -> None:
        """Create the modal.

        Args:
            prompt: What the path is for.
            value: Initial value.
        """
        super().__init__()
        self.prompt = prompt
        self.value = value

    def compose(self) -> ComposeResult:
        """Prompt and input."""
        with Vertical(id="dialog"):
            yield Label(self.prompt, id="title", markup=False)
            yield Input(self.value, placeholder="path/to/spec.toml", id="path")
            yield Label("Enter to confirm · Escape to cancel", id="advice", markup=False)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Dismiss with the path."""
        event.stop()
        value = event.value.strip()
        self.dismiss(value or None)

    def action_cancel(self) -> None:
        """Dismiss without a path."""
        self.dismiss(None)
