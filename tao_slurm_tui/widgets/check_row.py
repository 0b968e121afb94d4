"""One doctor check in the onboarding list: outcome, detail, fix and the fix's button."""

from __future__ import annotations

from dataclasses import dataclass

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Button, Label

from tao_slurm_tui.core.preflight import CheckResult, CheckStatus
from tao_slurm_tui.widgets.plain import plain, plain_line
from tao_slurm_tui.widgets.secret_input import SecretInput


@dataclass(frozen=True)
class StatusLook:
    """How one check status is drawn: glyph, word (screen readers, monochrome) and whether
    the row offers its fix."""

    glyph: str
    word: str
    offers_fix: bool


STATUS_LOOKS: dict[CheckStatus, StatusLook] = {
    CheckStatus.PASS: StatusLook("✔", "ok", offers_fix=False),
    CheckStatus.FAIL: StatusLook("✘", "to fix", offers_fix=True),
    CheckStatus.WARN: StatusLook("!", "worth fixing", offers_fix=True),
    CheckStatus.SKIP: StatusLook("–", "not checked", offers_fix=False),  # noqa: RUF001
}
"""The one table from the core's CheckStatus to its look (a test holds it to every member;
the colour is the row's ``-<status>`` class in DEFAULT_CSS)."""


def status_look(status: CheckStatus | str) -> StatusLook:
    """The look of ``status``; a value this table does not know yet still renders (as '?')."""
    try:
        return STATUS_LOOKS[CheckStatus(status)]
    except (ValueError, KeyError):
        return StatusLook("?", str(status), offers_fix=True)


BUTTON_LABELS = {
    "generate_key": "Generate key",
    "install_key": "Install key",
    "trust_host": "Show fingerprint…",
    "fix_permissions": "Fix permissions",
    "install_credentials": "Install NGC key…",
    "set_account": "Use this account",
    "create_results_dir": "Create it",
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
        & .status-word { width: auto; color: $text-muted; text-style: italic; }
        &.-fail .status-word { color: $error; }
        &.-warn .status-word { color: $warning; }
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
        look = status_look(result.status)
        with Horizontal(classes="check-head"):
            yield Label(look.glyph, classes="glyph", markup=False)
            yield Label(result.title, classes="name", markup=False)
            yield Label(look.word, classes="status-word", markup=False)
        if result.detail:
            # A detail may quote what the login host answered: data, spelled out.
            yield Label(plain(result.detail), classes="detail", markup=False)
        if look.offers_fix and result.fix:
            yield Label(plain(result.fix), classes="fix", markup=False)
        if look.offers_fix and result.action in BUTTON_LABELS:
            with Horizontal(classes="fix-row"):
                if result.action in SECRET_PROMPTS:
                    yield SecretInput(placeholder=SECRET_PROMPTS[result.action], classes="secret")
                yield Button(
                    plain_line(BUTTON_LABELS[result.action]),
                    classes="fix-button",
                    variant="warning",
                )

    def take_secret(self) -> str:
        """The secret typed in this row (the field is cleared)."""
        fields = self.query(SecretInput)
        return fields.first().take() if fields else ""

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """Ask the screen to run the fix."""
        event.stop()
        self.post_message(self.FixRequested(self))

    def on_input_submitted(self, event: SecretInput.Submitted) -> None:
        """Enter in the fix's field (the password, the passphrase) runs the fix, as its
        button does: keyboard users need not Tab over to it."""
        event.stop()
        self.post_message(self.FixRequested(self))
