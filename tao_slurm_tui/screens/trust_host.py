"""Show a login host's key fingerprint and ask whether to trust it."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label

from tao_slurm_tui.core.models import HostKeyInfo


class TrustHostModal(ModalScreen[bool]):
    """The host, its key type and SHA256 fingerprint; True when the user trusts it."""

    BINDINGS = [Binding("escape", "refuse", "Don't trust", id="trust.no")]

    def __init__(self, key: HostKeyInfo) -> None:
        """Create the modal for ``key`` (nothing is written until the user confirms)."""
        super().__init__()
        self.key = key

    def compose(self) -> ComposeResult:
        """Fingerprint and the two choices."""
        key = self.key
        with Vertical(id="dialog"):
            yield Label(f"Trust the host key of {key.host}:{key.port}?", id="title", markup=False)
            yield Label(f"Key type     {key.key_type}", classes="fact", markup=False)
            yield Label(
                f"Fingerprint  {key.fingerprint}", classes="fact", id="fingerprint", markup=False
            )
            yield Label(
                "Compare it with the fingerprint your cluster's documentation or admin gives "
                "(ssh-keygen -lf prints the same form). Trust it only if they match.",
                id="advice",
                markup=False,
            )
            with Horizontal(id="buttons"):
                yield Button("Trust", id="trust", variant="warning")
                yield Button("Don't trust", id="refuse")

    def on_mount(self) -> None:
        """Focus the safe choice."""
        self.query_one("#refuse", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """Dismiss with the answer."""
        self.dismiss(event.button.id == "trust")

    def action_refuse(self) -> None:
        """Do not trust."""
        self.dismiss(False)
