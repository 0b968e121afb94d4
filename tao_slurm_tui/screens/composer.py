"""Compose a job: the spec form with inline validation, a live sbatch preview, submit."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import tomli_w
from textual import getters, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Button, Footer, Input, Label, Switch, TextArea

from tao_slurm_tui.core.partitions import PartitionLimits
from tao_slurm_tui.core.spec import validate_spec
from tao_slurm_tui.errors import BadInput, TaoError
from tao_slurm_tui.screens.context import UiContext
from tao_slurm_tui.screens.path_modal import PathModal
from tao_slurm_tui.services.backend import SubmitStage
from tao_slurm_tui.widgets.app_header import AppHeader
from tao_slurm_tui.widgets.sbatch_preview import SbatchPreview
from tao_slurm_tui.widgets.spec_form import FIELDS, SpecForm

PREVIEW_DELAY = 0.25
"""Seconds of quiet typing before the preview is rendered again."""


def spec_for_form(data: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """A loaded spec with every field, as the form shows it.

    A valid file gets the spec's own defaults for the keys it leaves out (a shortened wall time
    brings its matching timeout); an invalid one is shown as written over ``defaults`` so the
    inline errors point at what to fix.
    """
    try:
        return validate_spec(data).model_dump(mode="json")
    except BadInput:
        return {**defaults, **data}


class ComposerScreen(Screen[str | None]):
    """Every spec field, validated as you type, beside the sbatch it renders to."""

    class JobSubmitted(Message):
        """A job was submitted from the composer (sent to the app)."""

        def __init__(self, job_id: str) -> None:
            super().__init__()
            self.job_id = job_id
            """The new job's id."""

    BINDINGS = [
        Binding("ctrl+s", "submit", "Submit", id="composer.submit"),
        Binding("ctrl+o", "load", "Load TOML", id="composer.load"),
        Binding("ctrl+t", "save", "Save TOML", id="composer.save"),
        Binding("escape", "back", "Back", id="composer.back"),
    ]

    form = getters.query_one("#form", SpecForm)
    preview = getters.query_one("#preview", SbatchPreview)
    problems = getters.query_one("#problems", Label)
    stages = getters.query_one("#stages", Label)
    submit_button = getters.query_one("#submit", Button)

    def __init__(self, ctx: UiContext, spec: dict[str, Any] | None = None) -> None:
        """Create the composer.

        Args:
            ctx: Back end, settings and clock.
            spec: Initial spec (a clone, a loaded file); the profile's defaults otherwise.
        """
        super().__init__()
        self.ctx = ctx
        self.initial = spec if spec is not None else ctx.backend.default_spec()
        self.limits: PartitionLimits = {}
        self.errors: dict[str, str] = {}
        """Current problems by field ('' key: not tied to a field)."""
        self.submitting = False
        self._preview_timer: Timer | None = None

    def compose(self) -> ComposeResult:
        """Form on the left, preview and submit status on the right."""
        yield AppHeader(self.ctx.backend, self.ctx.clock, "new job")
        with Horizontal(id="body"):
            yield SpecForm(self.ctx.backend.profile.partitions, id="form")
            with Vertical(id="side"):
                yield SbatchPreview(id="preview")
                yield Label("", id="problems")
                yield Label("", id="stages")
                with Horizontal(id="actions"):
                    # Compact (one line, no border): all three fit beside the form at 80x24.
                    yield Button("Submit", id="submit", variant="primary", compact=True)
                    yield Button("Load…", id="load", compact=True)
                    yield Button("Save…", id="save", compact=True)
        yield Footer()

    def on_mount(self) -> None:
        """Fill the form, validate, preview; fetch the partitions' MaxTime."""
        self.form.load(self.initial)
        # Typing starts in the name field: unfocused, letters would reach the app's bindings.
        self.query_one("#f-name", Input).focus()
        self.call_after_refresh(self._changed, True)
        self.load_limits()

    @work(exclusive=True, group="limits", exit_on_error=False)
    async def load_limits(self) -> None:
        """Have the back end fetch the partitions' MaxTime, then check the wall time again."""
        self.limits = await self.ctx.backend.partition_limits()
        self._validate()

    # ------------------------------------------------------------------ validation & preview
    @on(Input.Changed)
    @on(Switch.Changed)
    @on(TextArea.Changed)
    def _on_field_changed(self) -> None:
        self._changed()

    def _changed(self, immediate: bool = False) -> None:
        self._validate()
        if self._preview_timer is not None:
            self._preview_timer.stop()
        if immediate:
            self._render_preview()
        else:
            self._preview_timer = self.set_timer(PREVIEW_DELAY, self._render_preview)

    def current_spec(self) -> dict[str, Any]:
        """The spec as typed now."""
        return self.form.spec()[0]

    def _validate(self) -> dict[str, str]:
        spec, parse_errors = self.form.spec()
        # The back end checks the wall time too, against the limits it knows (see load_limits).
        errors = self.ctx.backend.validate_spec(spec)
        errors.update(parse_errors)
        self.errors = errors
        self.form.show_errors(errors)
        keys = {field.key for field in FIELDS}
        loose = [f"{k}: {m}" for k, m in errors.items() if k not in keys]
        self.problems.update("\n".join(loose))
        self.submit_button.disabled = self.submitting
        return errors

    def _render_preview(self) -> None:
        count = len(self.errors)
        try:
            script = self.ctx.backend.render(self.current_spec())
        except TaoError as error:
            # Keep the last good script on screen, flagged stale, with the reason.
            self.preview.show_problem(
                f"{count} field{'s' if count > 1 else ''} to fix" if count else str(error)
            )
            return
        self.preview.show_script(script)
        if count:
            self.preview.show_problem(f"{count} field{'s' if count > 1 else ''} to fix")

    # ------------------------------------------------------------------ submit
    def on_button_pressed(self, event: Button.Pressed) -> None:
        """Submit / Load / Save buttons."""
        actions = {"submit": self.action_submit, "load": self.action_load, "save": self.action_save}
        action = actions.get(event.button.id or "")
        if action is not None:
            action()

    def action_submit(self) -> None:
        """Submit the spec unless a field needs fixing."""
        if self.submitting:
            return
        errors = self._validate()
        if errors:
            first = self.form.first_error_widget(errors)
            if first:
                self.query_one(f"#{first}").focus()
            self.notify("Fix the fields marked in red first.", severity="error")
            return
        self.submitting = True
        self.submit_button.disabled = True
        self.submit_spec(self.current_spec())

    def _stage(self, stage: SubmitStage, detail: str = "") -> None:
        order = list(SubmitStage)
        index = order.index(stage)
        marks = [
            f"{'✔' if i < index or stage is SubmitStage.DONE else '▶'} {s}"
            for i, s in enumerate(order[:-1])
            if i <= index
        ]
        self.stages.update("\n".join(marks))

    # A fixed description rather than repr(spec): the env values may hold tokens.
    @work(exclusive=True, group="submit", exit_on_error=False, description="submit the job")
    async def submit_spec(self, spec: dict[str, Any]) -> None:
        """Submit with visible stages; a refusal keeps the form and shows SLURM's message."""
        self.stages.remove_class("-failed")
        try:
            job = await self.ctx.backend.submit(spec, self._stage)
        except TaoError as error:
            self.stages.add_class("-failed")
            self.stages.update(f"Not submitted: {error}")
            self.notify(str(error), title="Submit failed", severity="error")
            return
        finally:
            self.submitting = False
            self.submit_button.disabled = False
        self.notify(
            f"{job.id} submitted as SLURM job {job.slurm_job_id or '?'}.", title="Submitted"
        )
        # The app puts the queue's cursor on the new job; the result is the id too.
        self.app.post_message(self.JobSubmitted(job.id))
        self.dismiss(job.id)

    # ------------------------------------------------------------------ files
    def action_load(self) -> None:
        """Load a spec TOML into the form."""

        def chosen(path: str | None) -> None:
            if not path:
                return
            try:
                data = tomllib.loads(Path(path).expanduser().read_text(encoding="utf-8"))
            except OSError as error:
                self.notify(f"Cannot read {path}: {error.strerror}.", severity="error")
                return
            except tomllib.TOMLDecodeError as error:
                self.notify(f"{path} is not valid TOML: {error}.", severity="error")
                return
            self.form.load(spec_for_form(data, self.ctx.backend.default_spec()))
            self._changed(immediate=True)
            self.notify(f"Loaded {path}.")

        self.app.push_screen(PathModal("Load a spec TOML file"), chosen)

    def action_save(self) -> None:
        """Save the form as a spec TOML."""
        spec = self.current_spec()

        def chosen(path: str | None) -> None:
            if not path:
                return
            try:
                Path(path).expanduser().write_text(tomli_w.dumps(spec), encoding="utf-8")
            except OSError as error:
                self.notify(f"Cannot write {path}: {error.strerror}.", severity="error")
                return
            self.notify(f"Saved {path}.")

        self.app.push_screen(
            PathModal("Save the spec as", f"{spec.get('name') or 'job'}.toml"), chosen
        )

    def action_back(self) -> None:
        """Back to the queue (nothing is submitted)."""
        self.app.pop_screen()
