"""The job spec as a form: one field per spec key, each with its inline error line.

The form converts what is typed into a spec table (:meth:`SpecForm.spec`), reporting fields that
do not even parse (a letter in a number); the back end's ``resolve`` judges the rest. A
failed submit never clears anything: the form is only written by :meth:`SpecForm.load`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.suggester import SuggestFromList
from textual.widgets import Input, Label, Switch, TextArea

from tao_slurm_tui.core.spec import DEFAULT_IMAGE
from tao_slurm_tui.widgets.field_input import FieldInput
from tao_slurm_tui.widgets.steps_editor import StepsEditor

Kind = Literal["text", "int", "float", "list", "bool", "env", "json"]


@dataclass(frozen=True)
class Field:
    """One spec field in the form."""

    key: str
    label: str
    kind: Kind
    placeholder: str = ""


def example(field: Field) -> str:
    """The placeholder as shown: visibly an example, never mistaken for a value."""
    return f"e.g. {field.placeholder}" if field.placeholder else ""


def in_words(message: str) -> str:
    """A validation message with spec keys (``time_hours``) replaced by the form's labels.

    Only the identifiers (with an underscore): plain words such as "name" or "partition" read
    as English already and may be part of a quoted value.
    """
    for field in FIELDS:
        if "_" in field.key:
            message = re.sub(rf"\b{field.key}\b", field.label, message)
    return message


FIELDS: list[Field] = [
    Field("name", "Name (job id)", "text", "dino-train-1"),
    Field("image", "Image", "text", DEFAULT_IMAGE),
    Field("command", "Command", "text", "dino train -e /specs/train.yaml"),
    Field("partition", "Partition", "text"),
    Field("num_nodes", "Nodes", "int", "1"),
    Field("num_gpus", "GPUs per node", "int", "4"),
    Field("gpu_type", "GPU type", "text", "a100 (empty: any)"),
    Field("cpus_per_task", "CPUs per task", "int", "16"),
    Field("time_hours", "Wall time (h)", "float", "4"),
    Field("timeout_hours", "Command timeout (h)", "float", "3.8"),
    Field("account", "Account", "text", "edgeai (empty: none)"),
    Field("container_mounts", "Mounts", "list", "/lustre/datasets, /data:/data"),
    Field("inputs", "Inputs", "list", "lustre:///lustre/data/train.json"),
    Field("use_requeue", "Requeue", "bool"),
    Field("use_sqsh", "SQSH image cache", "bool"),
    Field("env", "Env (KEY=VALUE lines)", "env"),
    Field("specs", "Specs (JSON)", "json"),
]
"""Every spec field, in form order."""


SWITCH_WORDS: dict[str, tuple[str, str]] = {
    "use_requeue": (
        "on: requeued after a timeout or node failure",
        "off: ends at its first failure",
    ),
    "use_sqsh": ("on: image cached as a SQSH file", "off: every job pulls the image"),
}
"""What a switch's position means, said beside it (a switch alone does not say which way is
on)."""


def _parse(field: Field, raw: Any) -> tuple[Any, str | None]:
    """(value, parse error) for one field's raw widget value."""
    if field.kind == "bool":
        return bool(raw), None
    text = str(raw).strip()
    if field.kind == "text":
        return text, None
    if field.kind == "int":
        try:
            return int(text), None
        except ValueError:
            return text, "Must be a whole number."
    if field.kind == "float":
        try:
            return float(text), None
        except ValueError:
            return text, "Must be a number of hours, e.g. 4 or 3.5."
    if field.kind == "list":
        return [part.strip() for part in text.split(",") if part.strip()], None
    if field.kind == "env":
        env: dict[str, str] = {}
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            key, sep, value = line.partition("=")
            if not sep or not key.strip():
                return env, f"Line {number} is not KEY=VALUE."
            env[key.strip()] = value
        return env, None
    # json
    if not text:
        return {}, None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        return {}, f"Not valid JSON: {error.msg} (line {error.lineno})."
    if not isinstance(value, dict):
        return {}, "Must be a JSON object ({...})."
    return value, None


def _display(field: Field, value: Any) -> Any:
    """The widget value for a spec value."""
    if field.kind == "bool":
        return bool(value)
    if value is None:
        return ""
    if field.kind == "list":
        return ", ".join(str(v) for v in value) if isinstance(value, list) else str(value)
    if field.kind == "env":
        # A loaded file may hold anything here: shown as written for the inline error.
        if not isinstance(value, dict):
            return str(value)
        return "\n".join(f"{k}={v}" for k, v in value.items())
    if field.kind == "json":
        # default=str: TOML dates and times are not JSON.
        return json.dumps(value, indent=2, default=str) if value else ""
    if field.kind == "float" and isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


class SpecForm(VerticalScroll):
    """Inputs for every spec field with an error line under each."""

    DEFAULT_CSS = """
    SpecForm {
        & .field-row { height: auto; }
        & .field-label { width: 22; color: $text-muted; padding: 0 1 0 0; }
        & Input { border: none; height: 1; padding: 0 1; background: $boost; width: 1fr; }
        & Input:focus { border: none; background: $primary 20%; }
        & TextArea { height: 4; width: 1fr; border: none; padding: 0 1; background: $boost; }
        & TextArea:focus { border: none; background: $primary 20%; }
        /* A focused switch keeps its slider visible (Textual's focus style is a tall border
           that a one-line switch has no room for: it drew an empty box). */
        & Switch, & Switch:focus { border: none; height: 1; padding: 0; background: $boost; }
        & .switch-row:focus-within { background: $primary 20%; }
        & .switch-row:focus-within .switch-words { color: $text; }
        & .switch-row { height: 1; width: 1fr; }
        & .switch-words { color: $text-muted; padding: 0 1; width: 1fr; }
        & .field-error { color: $error; padding-left: 22; width: 100%; display: none; }
        & .field-error.-shown { display: block; }
        & Input.-bad, & TextArea.-bad { background: $error 25%; }
    }
    """

    def __init__(self, partitions: list[str], *, id: str | None = None) -> None:
        """Create the form.

        Args:
            partitions: Partition names to suggest.
            id: Widget id.
        """
        super().__init__(id=id)
        self.partitions = partitions
        self.extra: dict[str, Any] = {}
        """Keys of a loaded spec that are not form fields (kept so validation names them)."""

    def compose(self) -> ComposeResult:
        """One row per field: label, widget; an error line under it."""
        for field in FIELDS:
            with Horizontal(classes="field-row"):
                yield Label(field.label, classes="field-label", markup=False)
                if field.kind == "bool":
                    with Horizontal(classes="switch-row"):
                        yield Switch(id=f"f-{field.key}")
                        yield Label("", id=f"w-{field.key}", classes="switch-words", markup=False)
                elif field.kind in ("env", "json"):
                    yield TextArea(id=f"f-{field.key}", soft_wrap=True, tab_behavior="focus")
                else:
                    suggester = (
                        SuggestFromList(self.partitions) if field.key == "partition" else None
                    )
                    yield FieldInput(
                        example=example(field),
                        id=f"f-{field.key}",
                        suggester=suggester,
                        select_on_focus=False,
                    )
            yield Label("", id=f"e-{field.key}", classes="field-error", markup=False)
        yield StepsEditor(id="steps")

    def load(self, spec: dict[str, Any]) -> None:
        """Fill every field from ``spec`` (unknown keys are kept aside for validation)."""
        known = {field.key for field in FIELDS} | {"then"}
        self.extra = {k: v for k, v in spec.items() if k not in known}
        steps = spec.get("then")
        if isinstance(steps, list):
            self.query_one(StepsEditor).load(steps)
        else:
            self.query_one(StepsEditor).load([])
            if steps is not None:
                self.extra["then"] = steps  # not a list: validation names it
        for field in FIELDS:
            widget = self.query_one(f"#f-{field.key}")
            value = _display(field, spec.get(field.key))
            if isinstance(widget, Switch):
                widget.value = bool(value)
                self._say_switch(widget)
            elif isinstance(widget, TextArea):
                widget.load_text(str(value))
            elif isinstance(widget, Input):
                widget.value = str(value)

    def on_switch_changed(self, event: Switch.Changed) -> None:
        """Say what the switch's new position means beside it."""
        self._say_switch(event.switch)

    def _say_switch(self, switch: Switch) -> None:
        key = (switch.id or "").removeprefix("f-")
        words = SWITCH_WORDS.get(key)
        if words is not None:
            self.query_one(f"#w-{key}", Label).update(words[0] if switch.value else words[1])

    def spec(self) -> tuple[dict[str, Any], dict[str, str]]:
        """The spec as typed, and the fields that do not parse."""
        spec: dict[str, Any] = {}
        errors: dict[str, str] = {}
        for field in FIELDS:
            widget = self.query_one(f"#f-{field.key}")
            if isinstance(widget, Switch):
                raw: Any = widget.value
            elif isinstance(widget, TextArea):
                raw = widget.text
            else:
                raw = widget.value  # type: ignore[attr-defined]
            value, error = _parse(field, raw)
            spec[field.key] = value
            if error:
                errors[field.key] = error
        steps, problem = self.query_one(StepsEditor).steps()
        if steps:
            spec["then"] = steps  # a pipeline (a single job has no "then" at all)
        if problem:
            errors["then"] = problem
        spec.update(self.extra)
        return spec, errors

    def show_errors(self, errors: dict[str, str]) -> None:
        """Show each field's message under it (field names in words); clear the others."""
        for field in FIELDS:
            message = in_words(errors.get(field.key, ""))
            label = self.query_one(f"#e-{field.key}", Label)
            label.update(message)
            label.set_class(bool(message), "-shown")
            self.query_one(f"#f-{field.key}").set_class(bool(message), "-bad")
        self.query_one(StepsEditor).show_error(in_words(errors.get("then", "")))

    def show_error_of(self, widget_id: str) -> None:
        """Scroll so the field ``widget_id`` and the message under it are both in view."""
        key = widget_id.removeprefix("f-")
        target = self.query(f"#e-{key}") if key != "add-step" else self.query("#steps-error")
        widget = target.first() if target else self.query_one(f"#{widget_id}")
        self.scroll_to_widget(widget, animate=False)

    def set_tao(self, on: bool) -> None:
        """A TAO job (``[tao]``, the composer's TAO form): its command and experiment spec are
        TAO's, so their fields are hidden, and an empty image means the catalogue's."""
        for key in ("command", "specs"):
            row = self.query_one(f"#f-{key}").parent
            if row is not None:
                row.display = not on
            if on:
                self.query_one(f"#e-{key}").display = False
            else:
                self.query_one(f"#e-{key}").styles.clear_rule("display")
        image = next(f for f in FIELDS if f.key == "image")
        words = "empty: the TAO catalogue's image" if on else example(image)
        field = self.query_one("#f-image", FieldInput)
        field.example = field.placeholder = words

    def first_error_widget(self, errors: dict[str, str]) -> str | None:
        """Id of the first field with an error (to focus it)."""
        for field in FIELDS:
            if field.key in errors:
                return f"f-{field.key}"
        return "add-step" if "then" in errors else None
