"""Type the NGC API key into a masked field and install it as remote enroot credentials."""

from __future__ import annotations

from textual import getters, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label

from tao_slurm_tui.errors import TaoError
from tao_slurm_tui.services.backend import Backend
from tao_slurm_tui.widgets.plain import plain
from tao_slurm_tui.widgets.secret_input import SecretInput


class CredentialsModal(ModalScreen[bool]):
    """Masked NGC key entry; True when the credentials were installed.

    The key goes straight from the field to ``backend.install_credentials`` and is dropped; the
    field clears itself on success, on failure and when the modal closes.
    """

    BINDINGS = [Binding("escape", "close", "Close", id="credentials.close")]

    secret = getters.query_one("#ngc-key", SecretInput)
    status = getters.query_one("#status", Label)

    def __init__(self, backend: Backend) -> None:
        """Create the modal for ``backend``."""
        super().__init__()
        self.backend = backend

    def compose(self) -> ComposeResult:
        """Explanation, masked field, buttons, status."""
        with Vertical(id="dialog"):
            yield Label("Install your NGC API key for private images", id="title", markup=False)
            yield Label(
                "The key is written to ~/.config/enroot/.credentials on the cluster (mode 0600), "
                "keeping the other entries. It never touches this machine's disk or the screen.",
                id="advice",
                markup=False,
            )
            yield SecretInput(placeholder="NGC API key", id="ngc-key")
            yield Label("", id="status", markup=False)
            with Horizontal(id="buttons"):
                yield Button("Install", id="install", variant="primary")
                yield Button("Close", id="close")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """Install or close."""
        if event.button.id == "install":
            self._install()
        else:
            self.action_close()

    def on_input_submitted(self, event: SecretInput.Submitted) -> None:
        """Enter installs."""
        event.stop()
        self._install()

    def _install(self) -> None:
        # Hand the value over and clear the field at once: no copy stays in the widget.
        key = self.secret.take()
        if not key:
            self.status.update("Paste your NGC API key first.")
            return
        self.status.update("Installing…")
        self.install(key)
        del key

    # A fixed description: by default @work writes repr(args), the key, into the worker's
    # description, which its repr, devtools and error reports show.
    @work(
        exclusive=True,
        group="credentials",
        exit_on_error=False,
        description="install NGC credentials",
    )
    async def install(self, key: str) -> None:
        """Send the key to the back end; report the outcome without echoing anything of it."""
        try:
            await self.backend.install_credentials(key)
        except TaoError as error:
            self.status.update(plain(error))  # the cluster's answer, spelled out
            self.secret.wipe()
            return
        finally:
            del key
        self.notify("NGC credentials installed on the cluster.")
        self.dismiss(True)

    def action_close(self) -> None:
        """Close without installing (the field clears on unmount)."""
        self.secret.wipe()
        self.dismiss(False)
