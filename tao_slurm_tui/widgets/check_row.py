"""One doctor check in the onboarding list: outcome, detail, fix and the fix's button."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Button, Label

from tao_slurm_tui.core.preflight import CheckResult
from tao_slurm_tui.widgets.secret_input import SecretInput

GLYPHS = {"pass": "✔", "fail": "✘", "warn": "!", "skip": "–"}  # noqa: RUF001

BUTTON_LABELS = {
    "generate_key": "Generate key",
    "install_key": "Install key",
    "trust_host": "Show fingerprint…",
    "fix_permissions": "Fix permissions",
    "install_credentials": "Install NGC key…",
    "set_account": "Use this account",
}
"""Fix action → button label."""

SECRET_PROMPTS = {
    "install_key": "one-time password of your cluster account",
    "generate_key": "passphrase (optional)",
}
"""Actions that need a secret typed next to their button."""


class CheckRow(Vertical):
    """A check result; a failing one carries its fix as a button."""

    DEFAULT_CSS = """
    CheckRow {
        height: auto;
        padding: 0 1;
        & .check-head { height: 1; }
        & .glyph { width: 2; }
        &.-pass .glyph { color: $success; }
        &.-fail .glyph { color: $error; text-style: bold; }
        &.-warn .glyph { color: $warning; text-style: bold; }
        &.-skip .glyph, &.-skip .name { color: $text-muted; }
        & .name { width: 1fr; }
        /* width 100%: long details and fixes wrap instead of running off the pane. */
        & .detail { color: $text-muted; padding-left: 2; width: 100%; }
        & .fix { color: $warning; padding-left: 2; width: 100%; }
        & .fix-row { height: auto; padding-left: 2; }
        & .fix-row Button.fix-button {
            margin-right: 1; height: 1; min-width: 10; border-top: none; border-bottom: none;
        }
        & .fix-row SecretInput {
            height: 1; border: none; padding: 0 1; background: $boost; margin-right: 1;
        }
    }
    """

    class FixRequested(Message):
        """The user pressed the fix button of a check."""

        def __init__(self, row: CheckRow) -> None:
            super().__init__()
            self.row = row

        @property
        def control(self) -> CheckRow:
            """The row whose fix was asked for."""
            return self.row

    def __init__(self, result: CheckResult) -> None:
        """Create a row for ``result``."""
        super().__init__(classes=f"-{result.status}")
        self.result = result

    def compose(self) -> ComposeResult:
        """Glyph + name, detail, fix and its button."""
        result = self.result
        with Horizontal(classes="check-head"):
            yield Label(GLYPHS[result.status], classes="glyph")
            yield Label(result.title, classes="name")
        if result.detail:
            yield Label(result.detail, classes="detail")
        if result.status in ("fail", "warn") and result.fix:
            yield Label(result.fix, classes="fix")
        if result.status in ("fail", "warn") and result.action in BUTTON_LABELS:
            with Horizontal(classes="fix-row"):
                if result.action in SECRET_PROMPTS:
                    yield SecretInput(placeholder=SECRET_PROMPTS[result.action], classes="secret")
                yield Button(BUTTON_LABELS[result.action], classes="fix-button", variant="warning")

    def take_secret(self) -> str:
        """The secret typed in this row (the field is cleared)."""
        fields = self.query(SecretInput)
        return fields.first().take() if fields else ""

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """Ask the screen to run the fix."""
        event.stop()
        self.post_message(self.FixRequested(self))
