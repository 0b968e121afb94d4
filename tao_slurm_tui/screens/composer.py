"""Compose a job: the spec form with inline validation, a live sbatch preview, submit."""

from __future__ import annotations

from collections.abc import Callable
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
from textual.widgets import Button, Input, Label, Switch, TextArea

from tao_slurm_tui.core.partitions import PartitionLimits
from tao_slurm_tui.core.spec import Resolution, ResolvedJob, SpecDraft
from tao_slurm_tui.core.spec.cluster_rules import draft_paths
from tao_slurm_tui.core.spec.model import TIMEOUT_FRACTION
from tao_slurm_tui.core.spec.problems import Refused
from tao_slurm_tui.core.spec.tao_stage import editable
from tao_slurm_tui.errors import BadInput, TaoError
from tao_slurm_tui.screens.confirm import ConfirmModal
from tao_slurm_tui.screens.context import UiContext
from tao_slurm_tui.screens.path_modal import PathModal
from tao_slurm_tui.services.backend import SubmitStage
from tao_slurm_tui.widgets.app_footer import AppFooter
from tao_slurm_tui.widgets.app_header import AppHeader
from tao_slurm_tui.widgets.plain import plain
from tao_slurm_tui.widgets.sbatch_preview import SbatchPreview
from tao_slurm_tui.widgets.spec_form import FIELDS, SpecForm, in_words
from tao_slurm_tui.widgets.start_estimate_pane import StartEstimatePane
from tao_slurm_tui.widgets.steps_editor import StepsEditor
from tao_slurm_tui.widgets.tao_form import TaoForm

PREVIEW_DELAY = 0.25
"""Seconds of quiet typing before the preview is rendered again."""

ESTIMATE_DELAY = 1.5
"""Seconds of quiet after a change of resources or partition before SLURM is asked again."""

ESTIMATE_FIELDS = (
    "partition",
    "num_nodes",
    "num_gpus",
    "gpu_type",
    "cpus_per_task",
    "time_hours",
    "account",
    "use_requeue",
)
"""Fields that change when a job can start (others do not warrant asking SLURM again)."""


REVEALS: dict[str, frozenset[str]] = {
    "time_hours": frozenset({"timeout_hours"}),
    "num_nodes": frozenset({"num_gpus", "cpus_per_task"}),
    "num_gpus": frozenset({"cpus_per_task"}),
    "gpu_type": frozenset({"num_gpus", "cpus_per_task"}),
    "partition": frozenset({"num_gpus", "cpus_per_task", "time_hours", "gpu_type"}),
}
"""An edit of the key also shows the problems of these fields (lowering the wall time below the
timeout makes the timeout wrong; more GPUs make the CPUs asked of one node too many)."""

FOLLOWERS = ("num_gpus", "cpus_per_task")
"""Defaults a new job fits to the nodes of its partition once the cluster told their size."""


def field_label(key: str) -> str:
    """A spec key as the form labels it (``then``: the follow-up actions)."""
    if key == "then":
        return "Follow-up actions"
    return next((f.label for f in FIELDS if f.key == key), key or "the spec")


def estimate_key(spec: dict[str, Any]) -> tuple[str, ...]:
    """What the start estimate depends on."""
    return tuple(str(spec.get(key, "")) for key in ESTIMATE_FIELDS)


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
    tao_form = getters.query_one("#tao", TaoForm)
    preview = getters.query_one("#preview", SbatchPreview)
    estimate = getters.query_one("#estimate", StartEstimatePane)
    problems = getters.query_one("#problems", Label)
    stages = getters.query_one("#stages", Label)
    submit_button = getters.query_one("#submit", Button)

    def __init__(
        self, ctx: UiContext, spec: dict[str, Any] | None = None, *, base_dir: Path | None = None
    ) -> None:
        """Create the composer.

        Args:
            ctx: Back end, settings and clock.
            spec: Initial spec table (a clone, a file); the profile's defaults otherwise.
            base_dir: The directory relative paths in ``spec`` are read from (a file's).
        """
        super().__init__()
        self.ctx = ctx
        self.initial = spec if spec is not None else ctx.backend.default_spec()
        self.base_dir = base_dir
        """Where relative paths of the spec are read from (set by Load)."""
        self.limits: PartitionLimits = {}
        self.errors: dict[str, str] = {}
        """Current problems by field ('' key: not tied to a field)."""
        self.resolution = Resolution("spec")
        """What the back end made of the form last (its job, when every field is right)."""
        self.submitting = False
        self._preview_timer: Timer | None = None
        self.touched: set[str] = set()
        """Fields the user changed: only their problems show until a submit or a load."""
        self.show_all = False
        """Show every problem (after a submit attempt or loading a file)."""
        self.loaded: dict[str, Any] = {}
        """The form's spec right after the last load: a field that differs was edited."""
        self.saved: dict[str, Any] = {}
        """The spec as last loaded, saved or submitted: leaving with anything else asks first."""
        self._estimate_timer: Timer | None = None
        self._estimated: tuple[str, ...] | None = None
        """The estimate key last asked about (None: never)."""
        self.estimate_delay = ESTIMATE_DELAY
        """Seconds of quiet before SLURM is asked again (:data:`ESTIMATE_DELAY`)."""
        self.remote_errors: dict[str, str] = {}
        """What the cluster refused at the last submit, by field (each goes once edited)."""
        self.new_job = spec is None
        """A new job (the profile's defaults): its untouched defaults follow the cluster."""
        self._paths_timer: Timer | None = None
        self._asked_paths: set[str] = set()
        """Cluster paths already checked (or being checked) for this form."""

    def compose(self) -> ComposeResult:
        """Form on the left, preview and submit status on the right."""
        yield AppHeader(self.ctx.backend, self.ctx.clock, "new job")
        with Horizontal(id="body"):
            yield SpecForm(self.ctx.backend.profile.partitions, id="form")
            with Vertical(id="side"):
                yield SbatchPreview(id="preview")
                yield StartEstimatePane(id="estimate")
                yield Label("", id="problems", markup=False)
                yield Label("", id="stages", markup=False)
                yield Button(
                    "Remove unknown keys", id="drop-extra", variant="warning", compact=True
                )
                with Horizontal(id="actions"):
                    # Compact (one line, no border): all three fit beside the form at 80x24.
                    yield Button("Submit", id="submit", variant="primary", compact=True)
                    yield Button("Load…", id="load", compact=True)
                    yield Button("Save…", id="save", compact=True)
        yield AppFooter()

    async def on_mount(self) -> None:
        """Fill the form, validate, preview; fetch the partitions' MaxTime."""
        # The TAO job (network, action, experiment spec) heads the form, in its scroll.
        await self.form.mount(TaoForm(self.ctx.backend, id="tao"), before=0)
        self._load_form(self.form_values(SpecDraft(self.initial, base_dir=self.base_dir)))
        # Typing starts in the name field: unfocused, letters would reach the app's bindings.
        self.query_one("#f-name", Input).focus()
        self.call_after_refresh(self._changed, True)
        self.load_limits()

    @work(exclusive=True, group="limits", exit_on_error=False)
    async def load_limits(self) -> None:
        """Have the back end fetch the partitions' MaxTime and node sizes, then check the form
        again (a new job's untouched defaults are fitted to the nodes first)."""
        self.limits = await self.ctx.backend.partition_limits()
        if self.new_job:
            fitted = self.ctx.backend.default_spec()
            for key in FOLLOWERS:
                widget = self.query_one(f"#f-{key}", Input)
                if key not in self.touched and widget.value != str(fitted[key]):
                    self.loaded[key] = fitted[key]  # the default, not an edit
                    widget.value = str(fitted[key])
        self._validate()

    def form_values(self, draft: SpecDraft) -> dict[str, Any]:
        """A draft with every field, as the form shows it.

        A spec (even one a rule refuses: a name taken) gets the spec's own defaults for the
        keys it leaves out (a shortened wall time brings its matching timeout); a table that
        is not a spec is shown as written over the profile's defaults, so the inline errors
        point at what to fix.
        """
        if draft.table.get("tao") is not None:
            # A TAO job as its user wrote it (a clone's stored spec too): the image and the
            # command are the catalogue's unless it names them.
            table = editable(draft.table)
            defaults = self.ctx.backend.default_spec()
            kept = {k: v for k, v in defaults.items() if k not in ("image", "command", "specs")}
            hours = table.get("time_hours")
            if "timeout_hours" not in table and isinstance(hours, int | float):
                # A wall time alone brings its matching timeout, as a resolved spec's does.
                kept["timeout_hours"] = round(hours * TIMEOUT_FRACTION, 4)
            return {**kept, **table}
        spec = self.ctx.backend.resolve(draft, load_tao=False).spec
        if spec is not None:
            return spec.model_dump(mode="json")
        return {**self.ctx.backend.default_spec(), **draft.table}

    def _load_form(self, spec: dict[str, Any]) -> None:
        spec = dict(spec)
        tao = spec.pop("tao", None)
        self.tao_form.load(tao if isinstance(tao, dict) else None, self.base_dir)
        self.form.set_tao(tao is not None)
        self.form.load(spec)
        # Widgets take their values at once: this is the baseline edits are measured from.
        self.loaded = self.saved = self.current_spec()

    @property
    def dirty(self) -> bool:
        """True when the form differs from what was last loaded or saved."""
        return bool(self.saved) and self.current_spec() != self.saved

    # ------------------------------------------------------------------ validation & preview
    @on(Input.Changed)
    @on(Switch.Changed)
    @on(TextArea.Changed)
    def _on_field_changed(self, event: Input.Changed | Switch.Changed | TextArea.Changed) -> None:
        if event.control is self.preview:  # the preview's own reloads are not edits
            return
        key = (event.control.id or "").removeprefix("f-")
        self.remote_errors.pop(key, None)
        if key == "time_hours":
            self._follow_wall_time()
        self._changed()

    def _follow_wall_time(self) -> None:
        """An untouched timeout follows the wall time (the platform's 4 h → 3.8 h), so
        lowering the wall time never leaves a timeout above it; a timeout the user typed stays
        as typed (and is named if it is no longer below)."""
        if "timeout_hours" in self.touched:
            return
        try:
            hours = float(self.query_one("#f-time_hours", Input).value)
        except ValueError:
            return
        if hours <= 0:
            return
        timeout = round(hours * TIMEOUT_FRACTION, 4)
        self.loaded["timeout_hours"] = timeout  # follows: not an edit of the user's
        self.query_one("#f-timeout_hours", Input).value = f"{timeout:g}"

    @on(TaoForm.Changed)
    def _tao_changed(self) -> None:
        self.touched.add("tao")
        self.form.set_tao(self.tao_form.is_tao)
        self._changed()

    @on(StepsEditor.Changed)
    def _steps_changed(self) -> None:
        self._changed()

    def _changed(self, immediate: bool = False) -> None:
        if self.stages.has_class("-failed"):
            # "Not submitted: ..." was about the form before this edit.
            self.stages.remove_class("-failed")
            self.stages.update("")
        self._validate()
        if self._preview_timer is not None:
            self._preview_timer.stop()
        if immediate:
            self._render_preview()
        else:
            # Said at once: for the quarter second of debounce the script is not the form's.
            self.preview.border_subtitle = "updating…"
            self._preview_timer = self.set_timer(PREVIEW_DELAY, self._render_preview)
        self._schedule_estimate(immediate)

    # ------------------------------------------------------------------ start estimate
    def _schedule_estimate(self, immediate: bool) -> None:
        """Ask SLURM again once resources or partition changed and typing paused (debounced)."""
        if self.errors:
            if self._estimate_timer is not None:
                self._estimate_timer.stop()
            self._estimated = None
            self.estimate.show_unavailable("Fix the form to see when it would start.")
            return
        key = estimate_key(self.current_spec())
        if key == self._estimated:
            return
        if self._estimate_timer is not None:
            self._estimate_timer.stop()
        self._estimated = key
        self.estimate.show_waiting()
        if immediate:
            self._estimate_now()
        else:
            self._estimate_timer = self.set_timer(self.estimate_delay, self._estimate_now)

    def _estimate_now(self) -> None:
        # The form as it is now (every change re-validates, and stops this timer when a
        # field went wrong meanwhile).
        job = self.resolution.job
        if job is not None and not self.errors:
            self.run_estimate(job, estimate_key(self.current_spec()))

    # A fixed description rather than repr(job): the env values may hold tokens.
    @work(exclusive=True, group="estimate", exit_on_error=False, description="start estimate")
    async def run_estimate(self, job: ResolvedJob, key: tuple[str, ...]) -> None:
        """One estimate (one round trip); an answer for an older form is dropped."""
        try:
            result = await self.ctx.backend.start_estimate(job)
        except TaoError as error:
            if key == self._estimated:
                self.estimate.show_unavailable(f"No estimate: {error}")
            return
        if key == self._estimated:
            self.estimate.show_estimate(result)
        self._validate()  # the capacity fetched alongside knows the partitions' GPU types

    def current_spec(self) -> dict[str, Any]:
        """The spec as typed now."""
        return self._typed()[0]

    def _typed(self) -> tuple[dict[str, Any], dict[str, str]]:
        """The spec as typed (the TAO form's ``[tao]`` table in it), and what does not parse."""
        spec, errors = self.form.spec()
        tao, problem = self.tao_form.table()
        if tao is not None:
            # TAO's command and experiment spec; the catalogue's image unless one is typed.
            spec = {k: v for k, v in spec.items() if k not in ("command", "specs")}
            if not str(spec.get("image") or "").strip():
                spec.pop("image", None)
            spec["tao"] = tao
        if problem:
            errors["tao"] = problem
        return spec, errors

    def _validate(self) -> dict[str, str]:
        spec, parse_errors = self._typed()
        # A follow-up action counts as edited once typed in or removed (an added empty row is
        # not yet: its "action is required" would greet the user before any typing).
        self.touched |= {
            key for key, value in spec.items() if key != "then" and value != self.loaded.get(key)
        }
        if self.query_one(StepsEditor).edited:
            self.touched.add("then")
        # Every rule is the back end's (the CLI's too): the wall time against the limits it
        # knows (see load_limits), the GPU type against the capacity once an estimate or a
        # view fetched it, the name against the jobs submitted.
        # The UI thread never opens the TAO catalogue or builds a schema: the TAO form's worker
        # does, and asks again once it has.
        draft = SpecDraft(spec, base_dir=self.base_dir)
        self.resolution = self.ctx.backend.resolve(draft, load_tao=False)
        errors = {**self.remote_errors, **self.resolution.by_field()}
        errors.update(parse_errors)  # what does not even parse, in the form's own words
        self.errors = errors
        # Not a wall of red for a form nobody typed in yet: a field's problem shows once it
        # (or a field it depends on) was edited, every problem once a submit was tried or a
        # file loaded.
        seen = self.touched | {k for t in self.touched for k in REVEALS.get(t, ())}
        shown = errors if self.show_all else {k: m for k, m in errors.items() if k in seen}
        self.form.show_errors(shown)
        self.tao_form.show_problem(errors.get("tao", "") if "tao" in shown else "")
        # The steps editor and the TAO form show their own.
        keys = {field.key for field in FIELDS} | {"then", "tao"}
        loose = [f"{k}: {m}" if k else m for k, m in errors.items() if k not in keys]
        self.problems.update(plain("\n".join(in_words(line) for line in loose)))
        self.query_one("#drop-extra").display = bool(self.form.extra)
        self.submit_button.disabled = self.submitting
        self._schedule_paths(spec)
        return errors

    # ------------------------------------------------------------------ cluster paths
    def _schedule_paths(self, table: dict[str, Any]) -> None:
        """Ask the cluster (debounced, once per path) whether the mount sources and inputs
        exist, so a missing one is named in the form before any submit."""
        paths = [
            p for p in draft_paths(table, self.ctx.backend.profile) if p not in self._asked_paths
        ]
        if self._paths_timer is not None:
            self._paths_timer.stop()
        if paths:
            self._paths_timer = self.set_timer(self.estimate_delay, lambda: self.check_paths(paths))

    @work(group="paths", exit_on_error=False, description="check cluster paths")
    async def check_paths(self, paths: list[str]) -> None:
        """One ``test -e`` round trip; the next validation names what is missing."""
        self._asked_paths.update(paths)
        try:
            await self.ctx.backend.check_paths(paths)
        except TaoError:
            self._asked_paths.difference_update(paths)  # asked again after the next edit
            return  # the submission checks them anyway, before staging
        self._validate()

    def _render_preview(self) -> None:
        count = len(self.errors)
        job = self.resolution.job
        if count or job is None:
            shown = self.show_all or bool(self.touched & set(self.errors))
            self.preview.show_problem(
                f"{count} field{'s' if count > 1 else ''} to fix",
                alarm=shown,
                fields=[field_label(key) for key in self.errors],
            )
            return
        script = self.ctx.backend.render(job)
        if job.spec.tao is not None:
            # A TAO job's command is TAO's own: show what runs in the container too.
            entry = self.ctx.backend.render(job, entrypoint=True)
            script += f"\n# ---- the staged entrypoint (runs in the container) ----\n{entry}"
        self.preview.show_script(script)

    # ------------------------------------------------------------------ submit
    def on_button_pressed(self, event: Button.Pressed) -> None:
        """Submit / Load / Save / Remove unknown keys buttons."""
        actions = {
            "submit": self.action_submit,
            "load": self.action_load,
            "save": self.action_save,
            "drop-extra": self.action_drop_extra,
        }
        action = actions.get(event.button.id or "")
        if action is not None:
            action()

    def action_submit(self) -> None:
        """Submit the spec unless a field needs fixing."""
        if self.submitting:
            return
        self.show_all = True
        errors = self._validate()
        if errors:
            self._point_at(errors)
            nothing_red = not self.form.first_error_widget(errors)
            if nothing_red and "tao" in errors and self.tao_form.is_tao:
                self.query_one("#tao-editor").focus()  # the experiment spec's problem
            return
        job = self.resolution.job
        if job is None:  # every field right, yet not resolved: cannot happen
            return
        self.submitting = True
        self.submit_button.disabled = True
        self.submit_spec(job)

    def _point_at(self, errors: dict[str, str]) -> None:
        """Put the cursor in the first field in red and its message in view, and say which
        fields they are."""
        first = self.form.first_error_widget(errors)
        if first:
            self.query_one(f"#{first}").focus()
            self.call_after_refresh(self.form.show_error_of, first)
        names = ", ".join(field_label(key) for key in errors)
        count = len(errors)
        self.notify(
            f"Fix {count} field{'s' if count > 1 else ''} first: {names}."
            + (" The cursor is in the first." if first else ""),
            title="Not submitted",
            severity="error",
        )

    def _stage(self, stage: SubmitStage, detail: str = "") -> None:
        order = list(SubmitStage)
        index = order.index(stage)
        marks = [
            f"{'✔' if i < index or stage is SubmitStage.DONE else '▶'} {s}"
            for i, s in enumerate(order[:-1])
            if i <= index
        ]
        self.stages.update("\n".join(marks))

    # A fixed description rather than repr(job): the env values may hold tokens.
    @work(exclusive=True, group="submit", exit_on_error=False, description="submit the job")
    async def submit_spec(self, resolved: ResolvedJob) -> None:
        """Submit with visible stages; a refusal keeps the form and shows SLURM's message."""
        self.stages.remove_class("-failed")
        try:
            job = await self.ctx.backend.submit(resolved, self._stage)
        except TaoError as error:
            self.stages.add_class("-failed")
            self.stages.update(plain(f"Not submitted: {error}"))  # may quote sbatch
            if isinstance(error, Refused):
                # What only the cluster could say (a missing mount source): under its field.
                self.remote_errors = {p.field: p.text for p in error.problems}
                self._validate()
                self._point_at(self.errors)
            else:
                self.notify(str(error), title="Submit failed", severity="error")
            return
        finally:
            self.submitting = False
            self.submit_button.disabled = False
        self.saved = self.current_spec()  # submitted: nothing to lose on leaving
        if job.steps:
            ids = ", ".join(step.slurm_job_id for step in (job, *job.steps))
            text = f"Pipeline {job.id} submitted: {len(job.steps) + 1} steps (SLURM jobs {ids})."
        else:
            text = f"{job.id} submitted as SLURM job {job.slurm_job_id or '?'}."
        self.notify(text, title="Submitted")
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
                draft = SpecDraft.from_file(Path(path).expanduser())
            except BadInput as error:
                # A binary file, bad TOML, nesting too deep: say so, keep the form as it is.
                self.notify(str(error), severity="error")
                return
            self.base_dir = draft.base_dir
            self._load_form(self.form_values(draft))
            self.show_all = True  # a file's problems are worth showing at once
            self._changed(immediate=True)
            self.notify(f"Loaded {path}.")

        def load() -> None:
            self.app.push_screen(PathModal("Load a spec TOML file"), chosen)

        self._unless_dirty("Load a file over your unsaved changes?", "Load", load)

    def _unless_dirty(self, question: str, label: str, then: Callable[[], None]) -> None:
        """Run ``then`` at once, or after the user confirmed that unsaved edits may go."""
        if not self.dirty:
            then()
            return

        def answered(yes: bool | None) -> None:
            if yes:
                then()

        self.app.push_screen(ConfirmModal(question, label, danger=True), answered)

    def action_drop_extra(self) -> None:
        """Forget the keys a loaded file had that the spec does not know."""
        dropped = ", ".join(sorted(self.form.extra))
        self.form.extra = {}
        self._changed(immediate=True)
        self.notify(f"Removed {dropped}.", timeout=3)

    def action_save(self) -> None:
        """Save the form as a spec TOML."""
        spec = self.current_spec()

        def write(path: str) -> None:
            try:
                Path(path).expanduser().write_text(tomli_w.dumps(spec), encoding="utf-8")
            except OSError as error:
                self.notify(f"Cannot write {path}: {error.strerror}.", severity="error")
                return
            self.saved = spec
            self.notify(f"Saved {path}.")

        def chosen(path: str | None) -> None:
            if not path:
                return
            if not Path(path).expanduser().exists():
                write(path)
                return

            def answered(yes: bool | None) -> None:
                if yes:
                    write(path)

            self.app.push_screen(
                ConfirmModal(f"{path} exists. Replace it?", "Replace", danger=True), answered
            )

        self.app.push_screen(
            PathModal("Save the spec as", f"{spec.get('name') or 'job'}.toml"), chosen
        )

    def action_back(self) -> None:
        """Back to the queue (nothing is submitted); unsaved edits are confirmed first."""
        self._unless_dirty("Leave and discard your changes to this job?", "Discard", self._leave)

    def _leave(self) -> None:
        self.dismiss(None)
