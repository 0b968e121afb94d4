"""The cluster asks for a one-time code (or another keyboard-interactive answer): a masked modal.

The prompt text is shown exactly as the server sent it, as data (a :class:`~rich.text.Text`,
never parsed as markup; control characters shown escaped). Each answer is typed into a
:class:`~tao_slurm_tui.widgets.secret_input.SecretInput` unless the server said it may be shown
(``echo``), handed back once and cleared: never stored, logged or written. While the modal is up
the queue and every command beside it wait for the login, and the modal says so.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from tao_slurm_tui.services.login_prompts import LoginPrompt
from tao_slurm_tui.widgets.plain import plain, plain_line
from tao_slurm_tui.widgets.secret_input import SecretInput


class CodePromptModal(ModalScreen[list[str] | None]):
    """Answer a login question of the cluster; dismissed with the answers or None (not now)."""

    BINDINGS = [Binding("escape", "not_now", "Not now", id="code.not_now")]

    def __init__(self, prompt: LoginPrompt) -> None:
        """Create the modal for ``prompt`` (the server's challenge)."""
        super().__init__()
        self.prompt = prompt

    def compose(self) -> ComposeResult:
        """Title, the server's words, one field per question, what waits, two buttons."""
        prompt = self.prompt
        with Vertical(id="dialog"):
            yield Label(plain_line(prompt.title), id="title", markup=False)
            if prompt.again:
                yield Static(
                    "That answer was not accepted. A code works once and changes every 30 s: "
                    "enter the next one.",
                    id="again",
                    markup=False,
                )
            for words in (prompt.name, prompt.instructions):
                if words.strip():
                    yield Static(plain(words.strip()), classes="server-text", markup=False)
            for index, line in enumerate(prompt.lines):
                question = line.text.strip() or "Answer:"
                yield Label(plain(question), classes="question", markup=False)
                if line.echo:
                    yield Input(id=f"answer-{index}", classes="answer")
                else:
                    yield SecretInput(id=f"answer-{index}", classes="answer")
            yield Static(
                "The queue and the commands started beside it wait for this login; one code "
                "serves them all.",
                id="advice",
                markup=False,
            )
            with Horizontal(id="buttons"):
                yield Button("Log in", id="submit", variant="primary")
                yield Button("Not now", id="not-now")

    def on_mount(self) -> None:
        """Focus the first answer."""
        self.query(".answer").first(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter: the next field, or log in from the last one."""
        event.stop()
        fields = list(self.query(".answer").results(Input))
        if event.input is fields[-1]:
            self._submit()
        else:
            fields[fields.index(event.input) + 1].focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """Log in, or not now."""
        event.stop()
        if event.button.id == "submit":
            self._submit()
        else:
            self.action_not_now()

    def _submit(self) -> None:
        answers = []
        for field in self.query(".answer").results(Input):
            answers.append(field.take() if isinstance(field, SecretInput) else field.value)
            field.clear()
        self.dismiss(answers)

    def action_not_now(self) -> None:
        """Decline: the login stops, and nobody is asked again until the user refreshes."""
        self._wipe()
        self.dismiss(None)

    def on_unmount(self) -> None:
        """Nothing typed outlives the modal (also when the login ended under it)."""
        self._wipe()

    def _wipe(self) -> None:
        for field in self.query(".answer").results(Input):
            field.clear()
