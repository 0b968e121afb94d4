"""The composer's follow-up actions: a small list editor for a pipeline's ``[[then]]`` steps.

One row per step: the action's name, its command and "✕" (remove), then its own GPUs per node,
GPU type, nodes and wall time (empty: the job's). "+ Follow-up action" adds a row. The rows
become the spec's ``then`` list (:meth:`StepsEditor.steps`); the back end's validation judges
them, and the preview then shows every step's batch script.
"""

from __future__ import annotations

from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Button, Input, Label

from tao_slurm_tui.widgets.field_input import FieldInput

STEP_INPUTS: tuple[tuple[str, str, str, int], ...] = (
    # (spec key, placeholder, kind, line of the row)
    ("action", "action, e.g. evaluate", "text", 0),
    ("command", "command, e.g. dino evaluate -e /specs/eval.yaml", "text", 0),
    ("num_gpus", "job", "int", 1),
    ("gpu_type", "job", "text", 1),
    ("num_nodes", "job", "int", 1),
    ("time_hours", "job", "float", 1),
)
"""The inputs of a step row (two lines: name and command, then its own resources, each after
its label; empty, shown as "job": the job's)."""

STEP_LABELS = {"num_gpus": "GPUs", "gpu_type": "type", "num_nodes": "nodes", "time_hours": "hours"}
"""The word before each resource input: a value (``0``, ``0.25``) says nothing alone."""

STEP_INPUT_NAMES = {
    "num_gpus": "GPUs per node",
    "gpu_type": "GPU type, e.g. a100",
    "num_nodes": "nodes",
    "time_hours": "wall time",
}
"""What a resource input is, in full: its tooltip (with "empty: the job's") and the name a
message about it uses (the placeholders are short, to fit 80 columns)."""

_OTHER_KEYS = ("cpus_per_task", "timeout_hours", "partition", "env", "specs", "image", "tao")
"""Step keys without an input of their own: kept as loaded (a spec file may set them)."""


class StepRow(Vertical):
    """One follow-up action: its name and command on one line, its resources on the next."""

    def __init__(self, step: dict[str, Any], *, id: str) -> None:
        super().__init__(id=id, classes="step-row")
        self.step = step
        self.kept = {k: v for k, v in step.items() if k in _OTHER_KEYS}
        """Keys a loaded spec set that have no input here (kept unchanged)."""
        self.number = 0
        """The step's number in the pipeline (2 for the first follow-up action)."""
        self.typed = False
        """The user typed into one of its inputs (a loaded or added row is not an edit yet)."""

    def on_input_changed(self, event: Input.Changed) -> None:
        """A change in the focused input is the user's typing (loading sets values too)."""
        if event.input.has_focus:
            self.typed = True

    def compose(self) -> ComposeResult:
        """Number, name, command and a remove button; then the resources."""
        for line in (0, 1):
            with Horizontal(classes="step-line"):
                number = f"{self.number}." if line == 0 and self.number else ""
                yield Label(
                    number, classes="step-number" if line == 0 else "step-indent", markup=False
                )
                for key, placeholder, _, on_line in STEP_INPUTS:
                    if on_line != line:
                        continue
                    if key in STEP_LABELS:
                        yield Label(STEP_LABELS[key], classes="step-label", markup=False)
                    value = self.step.get(key)
                    yield FieldInput(
                        "" if value is None else str(value),
                        example=placeholder,
                        classes=f"step-{key} step-input",
                        select_on_focus=False,
                        compact=True,
                        tooltip=(
                            f"{STEP_INPUT_NAMES[key]} (empty: the job's)"
                            if key in STEP_INPUT_NAMES
                            else None
                        ),
                    )
                if line == 0:
                    # Beside the command (which gives way), so the resources below keep the
                    # whole width: four inputs fit their placeholders at 80 columns.
                    yield Button(
                        "✕ remove",
                        classes="step-remove",
                        compact=True,
                        tooltip="Remove this action",
                    )

    def value(self) -> tuple[dict[str, Any], str]:
        """The step as a spec table, and the first input that does not parse ('' if none)."""
        if not self.query(Input):
            return dict(self.step), ""  # just loaded, its inputs not mounted yet
        step: dict[str, Any] = {}
        problem = ""
        for key, placeholder, kind, _ in STEP_INPUTS:
            raw = self.query_one(f".step-{key}", Input).value.strip()
            if not raw:
                if key in ("action", "command"):
                    step[key] = ""
                continue
            if kind == "text":
                step[key] = raw
                continue
            try:
                step[key] = int(raw) if kind == "int" else float(raw)
            except ValueError:
                what = "a whole number" if kind == "int" else "a number of hours"
                name = STEP_INPUT_NAMES.get(key, placeholder)
                problem = problem or f"{name} must be {what} (got {raw!r})"
        step.update(self.kept)
        return step, problem


class StepsEditor(Vertical):
    """The follow-up actions of a job: a pipeline when there is at least one."""

    class Changed(Message):
        """A step was added or removed (typing sends ``Input.Changed`` as usual)."""

    DEFAULT_CSS = """
    StepsEditor {
        height: auto;
        margin-top: 1;
        & .steps-title { color: $text-muted; width: 1fr; padding: 0 1 0 0; }
        & .steps-head { height: auto; }
        & #step-rows { height: auto; }
        & .step-row { height: auto; margin-top: 1; }
        & .step-line { height: 1; }
        & .step-number, & .step-indent { width: 3; color: $text-muted; }
        & .step-line Input { margin-right: 1; width: 1fr; background: $panel; }
        & .step-line Input:focus { background: $primary 25%; }
        & .step-label { color: $text-muted; padding: 0 1 0 0; width: auto; }
        & .step-action { max-width: 20; }
        /* Sized for 80 columns: 3 cells hold "job" (empty: the job's) or two digits. */
        & .step-line .step-num_gpus, & .step-line .step-num_nodes { width: 3; }
        & .step-line .step-time_hours { width: 4; margin-right: 0; }
        & .step-line .step-gpu_type { min-width: 3; }
        & .step-remove { min-width: 10; width: 10; }
        & #steps-error { color: $error; display: none; }
        & #steps-error.-shown { display: block; }
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._serial = 0
        self._removed = False

    def compose(self) -> ComposeResult:
        """A title with the add button, the rows, an error line."""
        with Horizontal(classes="steps-head"):
            yield Label(
                "Then, each once the one before completed (empty resources: the job's):",
                classes="steps-title",
                markup=False,
            )
            yield Button("+ Follow-up action", id="add-step", compact=True)
        yield Vertical(id="step-rows")
        yield Label("", id="steps-error", markup=False)

    @property
    def rows(self) -> list[StepRow]:
        """The step rows, in order."""
        return list(self.query(StepRow))

    @property
    def edited(self) -> bool:
        """An action was typed into or removed since the steps were loaded."""
        return self._removed or any(row.typed for row in self.rows)

    def load(self, steps: list[dict[str, Any]] | None) -> None:
        """Show exactly ``steps`` (a spec's ``then``), replacing the rows."""
        box = self.query_one("#step-rows", Vertical)
        box.remove_children()
        self._removed = False
        rows = [self._row(dict(step)) for step in steps or [] if isinstance(step, dict)]
        for index, row in enumerate(rows, start=2):
            row.number = index
        box.mount_all(rows)

    def _row(self, step: dict[str, Any]) -> StepRow:
        self._serial += 1
        return StepRow(step, id=f"step-{self._serial}")

    def _number(self) -> None:
        for index, row in enumerate(self.rows, start=2):
            row.number = index
            for label in row.query(".step-number").results(Label):  # none until composed
                label.update(f"{index}.")

    def steps(self) -> tuple[list[dict[str, Any]], str]:
        """The ``then`` list as typed, and the first input that does not parse ('' if none)."""
        steps: list[dict[str, Any]] = []
        problem = ""
        for index, row in enumerate(self.rows, start=2):
            step, bad = row.value()
            steps.append(step)
            if bad and not problem:
                problem = f"step {index}: {bad}"
        return steps, problem

    def show_error(self, message: str) -> None:
        """Show (or clear, with '') the steps' problem under the rows."""
        label = self.query_one("#steps-error", Label)
        label.update(message)
        label.set_class(bool(message), "-shown")

    @on(Button.Pressed, "#add-step")
    async def add_step(self, event: Button.Pressed) -> None:
        """Add an empty action and put the cursor in its name."""
        event.stop()
        row = self._row({})
        row.number = len(self.rows) + 2
        await self.query_one("#step-rows", Vertical).mount(row)
        self._number()
        row.query_one(".step-action", Input).focus()
        self.post_message(self.Changed())

    @on(Button.Pressed, ".step-remove")
    async def remove_step(self, event: Button.Pressed) -> None:
        """Remove the row of the pressed button."""
        event.stop()
        row = next((a for a in event.button.ancestors if isinstance(a, StepRow)), None)
        if row is not None:
            self._removed = True
            await row.remove()
            self._number()
            self.post_message(self.Changed())
