"""Cancel a step of a pipeline: this step (and so the steps after it), or the whole pipeline."""

from __future__ import annotations

from typing import Literal

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label

from tao_slurm_tui.core.models import JobRecord
from tao_slurm_tui.core.pipelines import Pipeline, step_label
from tao_slurm_tui.widgets.plain import plain_line

CancelChoice = Literal["step", "pipeline"]
"""What the user chose to cancel."""


def cancel_question(step: JobRecord, pipeline: Pipeline) -> str:
    """The question, naming what each choice cancels."""
    later = [s for s in pipeline.steps if s.pipeline_step > step.pipeline_step]
    alive = [s for s in pipeline.steps if not s.status.terminal]
    after = (
        f" and the {len(later)} step{'s' if len(later) > 1 else ''} after it (they could never "
        "start)"
        if later
        else ""
    )
    return (
        f"{step.id} is step {step.pipeline_step + 1} of {len(pipeline.steps)} of pipeline "
        f"{pipeline.pipeline_id}. Cancel this step{after}, or every step that has not ended "
        f"({len(alive)})?"
    )


class PipelineCancelModal(ModalScreen[CancelChoice | None]):
    """Ask "this step / the whole pipeline"; dismiss with the choice, or None to keep it."""

    DEFAULT_CSS = """
    PipelineCancelModal {
        align: center middle;
        background: $background 60%;
        & #dialog {
            width: 76; max-width: 100%; height: auto; padding: 1 2; background: $surface;
            border: thick $warning;
        }
        & #question { width: 100%; }
        & #buttons { height: auto; margin-top: 1; }
        & #buttons Button { margin-right: 2; }
    }
    """

    BINDINGS = [
        Binding("s", "choose('step')", "This step", id="pipeline_cancel.step"),
        Binding("p", "choose('pipeline')", "Whole pipeline", id="pipeline_cancel.pipeline"),
        Binding("n,escape", "keep", "Keep", id="pipeline_cancel.keep"),
    ]

    def __init__(self, step: JobRecord, pipeline: Pipeline) -> None:
        """Create the modal for ``step`` of ``pipeline``."""
        super().__init__()
        self.step = step
        self.pipeline = pipeline

    def compose(self) -> ComposeResult:
        """The question and three buttons (the safe one focused)."""
        with Vertical(id="dialog"):
            yield Label(cancel_question(self.step, self.pipeline), id="question", markup=False)
            with Horizontal(id="buttons"):
                yield Button(
                    plain_line(f"This step ({step_label(self.step)})"),
                    id="cancel-step",
                    variant="warning",
                )
                yield Button("Whole pipeline", id="cancel-pipeline", variant="error")
                yield Button("Keep", id="keep")

    def on_mount(self) -> None:
        """Focus the safe choice."""
        self.query_one("#keep", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """Dismiss with the pressed choice."""
        choices: dict[str, CancelChoice] = {
            "cancel-step": "step",
            "cancel-pipeline": "pipeline",
        }
        self.dismiss(choices.get(event.button.id or ""))

    def action_choose(self, choice: CancelChoice) -> None:
        """Answer by key."""
        self.dismiss(choice)

    def action_keep(self) -> None:
        """Cancel nothing."""
        self.dismiss(None)
