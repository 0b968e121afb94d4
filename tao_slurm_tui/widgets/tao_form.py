"""The composer's TAO job: a network and an action instead of an image and a command.

With "TAO job" on, the job runs ``<network> <action>`` in the catalogue's image with a checked
experiment spec (the spec's ``[tao]`` table, docs/TAO.md):

- **Network** and **Action**: pickers over the profile's TAO catalogue (type to search);
- **Spec file**: an optional local YAML experiment spec the editor starts from;
- the **editor** (YAML, highlighted): the whole experiment spec the job runs with -- the
  action's defaults (``tao spec``), the file over them, the job's overrides over that -- under
  NVIDIA's popular settings for the action. What the user changes is kept as overrides
  (``[tao.spec]``, dotted keys): Save writes only those;
- the spec's **problems**, checked as you type against the network's schema, each with its full
  key and its line in the editor.

The catalogue is opened and a network's schema built (NVIDIA's config dataclasses run) in a
worker thread: until then the pickers say "loading" and the back end's resolve waits for it.
The rest of the job (resources, partition, image override, follow-up actions) stays in the
spec form below. Off, the form is today's free image + command job.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Input, Label, Select, Switch, TextArea

from tao_slurm_tui.errors import TaoError

if TYPE_CHECKING:
    from tao_slurm_tui.core.tao.schema import TaoSchema
    from tao_slurm_tui.services.backend import Backend
    from tao_slurm_tui.services.tao import TaoCatalogue

CHECK_DELAY = 0.3
"""Seconds of quiet typing before the editor's spec is checked again."""

PROBLEMS_SHOWN = 6
"""Problems listed under the editor (the rest counted)."""

DEFAULT_NETWORK = "classification_pyt"
"""The network a new TAO job starts with (one every TAO version has)."""


class TaoForm(Vertical):
    """The ``[tao]`` table as a form: mode switch, pickers, spec file, YAML editor, problems."""

    class Changed(Message):
        """The TAO part of the job changed (mode, network, action, file or text)."""

    DEFAULT_CSS = """
    TaoForm {
        height: auto;
        & #tao-body { height: auto; }
        & #tao-body.-off { display: none; }
        & Select { width: 1fr; }
        & #tao-status { color: $text-muted; width: 1fr; padding: 0 0 0 1; }
        & #tao-popular { color: $text-muted; padding: 0 1 0 0; width: 100%; }
        & #tao-editor { height: 14; border: none; padding: 0 1; background: $boost; }
        & #tao-editor:focus { background: $primary 15%; }
        & #tao-problems { color: $error; width: 100%; display: none; }
        & #tao-problems.-shown { display: block; }
    }
    """

    def __init__(self, backend: Backend, *, id: str | None = None) -> None:
        """Create the form (off until :meth:`load` gets a ``[tao]`` table or the switch is
        turned on).

        Args:
            backend: opens the TAO catalogue and builds schemas (in a worker).
            id: Widget id.
        """
        super().__init__(id=id)
        self.backend = backend
        self.catalogue: TaoCatalogue | None = None
        self.schema: TaoSchema | None = None
        self.base_dir: Path | None = None
        """Where a relative spec file is read from (the loaded spec file's directory)."""
        self.wanted: dict[str, Any] = {}
        """The table to show once the catalogue and schema are loaded."""
        self.base: dict[str, Any] = {}
        """The spec the editor's overrides are measured against (defaults + file)."""
        self.file_spec: dict[str, Any] = {}
        self.overrides: dict[str, Any] = {}
        """The last overrides the editor parsed to."""
        self.parse_error = ""
        self.loading = False
        self._shown_for: tuple[str, str, str] | None = None
        """(network, action, spec file) the editor's text was made for."""
        self._check_timer: Timer | None = None
        self._own_problems = False
        """The problems label shows the editor's own check (not the back end's sentence)."""

    # ------------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        """The switch, then (on) the pickers, the spec file, the editor and its problems."""
        with Horizontal(classes="field-row"):
            yield Label("TAO job", classes="field-label", markup=False)
            yield Switch(id="tao-on", tooltip="A TAO network and action instead of a command")
            status = Label("", id="tao-status", markup=False)
            status.display = False
            yield status
        with Vertical(id="tao-body", classes="-off"):
            with Horizontal(classes="field-row"):
                yield Label("Network", classes="field-label", markup=False)
                yield Select(
                    [], prompt="loading the TAO catalogue…", id="tao-network", compact=True
                )
            with Horizontal(classes="field-row"):
                yield Label("Action", classes="field-label", markup=False)
                yield Select([], prompt="pick a network first", id="tao-action", compact=True)
            with Horizontal(classes="field-row"):
                yield Label("Spec file", classes="field-label", markup=False)
                yield Input(
                    placeholder="e.g. specs/train.yaml (optional)",
                    id="tao-spec-file",
                    select_on_focus=False,
                )
            yield Label("", id="tao-popular", markup=False)
            editor = TextArea(id="tao-editor", soft_wrap=False, tab_behavior="focus")
            if "yaml" in editor.available_languages:
                editor.language = "yaml"
            editor.show_line_numbers = True
            yield editor
            yield Label("", id="tao-problems", markup=False)

    # ------------------------------------------------------------------ the table

    @property
    def is_tao(self) -> bool:
        """True when the job is a TAO job."""
        return self.query_one("#tao-on", Switch).value

    def load(self, table: Mapping[str, Any] | None, base_dir: Path | None = None) -> None:
        """Show ``table`` (a spec's ``[tao]`` as its user wrote it); None: a job with a
        command (the switch off)."""
        self.base_dir = base_dir
        self.wanted = dict(table or {})
        self.overrides = dict(self.wanted.get("spec") or {})
        self._shown_for = None
        self._quietly(lambda: self._set_switch(table is not None))
        self.query_one("#tao-spec-file", Input).value = str(self.wanted.get("spec_file") or "")
        if table is not None:
            self.open()

    def table(self) -> tuple[dict[str, Any] | None, str]:
        """(the ``[tao]`` table as typed, or None when the switch is off; the problem of the
        editor's text, '' when it reads)."""
        if not self.is_tao:
            return None, ""
        network = self._selected("#tao-network") or self.wanted.get("network") or ""
        action = self._selected("#tao-action") or self.wanted.get("action") or ""
        table: dict[str, Any] = {"network": network, "action": action}
        spec_file = self.query_one("#tao-spec-file", Input).value.strip()
        if spec_file:
            table["spec_file"] = spec_file
        if self.overrides:
            table["spec"] = dict(self.overrides)
        return table, self.parse_error

    def _selected(self, selector: str) -> str:
        value = self.query_one(selector, Select).value
        return value if isinstance(value, str) else ""

    # ------------------------------------------------------------------ loading

    def open(self) -> None:
        """Open the catalogue and build the schema (a worker), then fill the pickers."""
        network = self._selected("#tao-network") or self.wanted.get("network") or DEFAULT_NETWORK
        if self.schema is not None and self.schema.network.name == network:
            self._show()
            return
        self.loading = True
        self._status(f"loading the {network} schema…")
        self._load(str(network))

    @work(thread=True, exclusive=True, group="tao-schema", exit_on_error=False)
    def _load(self, network: str) -> None:
        """Blocking: the catalogue (the first ever fetches the pinned wheel) and the schema."""
        try:
            catalogue = self.backend.tao()
            known = network in catalogue.catalog.names
            schema = catalogue.schema(network if known else DEFAULT_NETWORK)
        except TaoError as error:
            self.app.call_from_thread(self._failed, str(error))
            return
        self.app.call_from_thread(self._loaded, catalogue, schema)

    def _failed(self, message: str) -> None:
        self.loading = False
        self._status(message)
        self.post_message(self.Changed())

    def _loaded(self, catalogue: TaoCatalogue, schema: TaoSchema) -> None:
        self.loading = False
        self.catalogue, self.schema = catalogue, schema
        self._status(f"TAO {catalogue.version}")
        self._show()

    def _status(self, text: str) -> None:
        """The line beside the switch (the TAO version, loading, why it cannot load); no line
        while there is nothing to say (a narrow terminal stacks it under the switch)."""
        label = self.query_one("#tao-status", Label)
        label.update(text)
        label.display = bool(text)

    def _show(self) -> None:
        """Fill the pickers and (for a new network, action or file) the editor."""
        assert self.catalogue is not None and self.schema is not None
        network = self.schema.network
        actions = network.action_names
        action = self._selected("#tao-action") or self.wanted.get("action") or ""
        if action not in actions:
            action = "train" if "train" in actions else actions[0]
        self._quietly(lambda: self._fill_pickers(network.name, action))
        key = (network.name, action, self.query_one("#tao-spec-file", Input).value.strip())
        if key != self._shown_for:
            self._fill_editor(action)
            self._shown_for = key
        self.post_message(self.Changed())

    def _fill_pickers(self, network: str, action: str) -> None:
        assert self.catalogue is not None
        names = sorted(n.name for n in self.catalogue.catalog.networks)
        pick = self.query_one("#tao-network", Select)
        pick.set_options([(n, n) for n in names])
        pick.prompt = "type to search"
        pick.value = network
        choose = self.query_one("#tao-action", Select)
        net = self.catalogue.catalog.network(network)
        choose.set_options([(self._action_label(net, a.name), a.name) for a in net.actions])
        choose.prompt = "pick an action"
        choose.value = action

    def _action_label(self, network: Any, action: str) -> str:
        act = network.action(action)
        other = f"  ({act.kind})" if act.kind != network.kind else ""
        return f"{action}{other}"

    def _fill_editor(self, action: str) -> None:
        """The whole experiment spec of ``action``: defaults, the file, the overrides."""
        from tao_slurm_tui.core.tao.spec_edit import base_data, editor_text

        assert self.schema is not None and self.catalogue is not None
        self.file_spec, file_error = self._read_file()
        try:
            text = editor_text(self.schema, action, self.file_spec, self.overrides)
            self.base = base_data(self.schema, action, self.file_spec)
        except TaoError as error:
            text, self.base = "", {}
            file_error = file_error or str(error)
        self._quietly(lambda: self.query_one("#tao-editor", TextArea).load_text(text))
        self.parse_error = file_error
        self._popular(action)
        self._check()

    def _read_file(self) -> tuple[dict[str, Any], str]:
        assert self.catalogue is not None
        name = self.query_one("#tao-spec-file", Input).value.strip()
        if not name:
            return {}, ""
        path = Path(name).expanduser()
        if not path.is_absolute() and self.base_dir is not None:
            path = self.base_dir / path
        try:
            return self.catalogue.read_spec(path), ""
        except TaoError as error:
            return {}, str(error)

    # ------------------------------------------------------------------ edits

    def _set_switch(self, value: bool) -> None:
        self.query_one("#tao-on", Switch).value = value
        self.query_one("#tao-body").set_class(not value, "-off")

    def _quietly(self, change: Any) -> None:
        """Make a change whose events are not the user's edits."""
        with self.prevent(Select.Changed, Switch.Changed, TextArea.Changed, Input.Changed):
            change()

    @on(Switch.Changed, "#tao-on")
    def _mode(self, event: Switch.Changed) -> None:
        event.stop()
        self.query_one("#tao-body").set_class(not event.value, "-off")
        if event.value:
            self.open()
        self.post_message(self.Changed())

    @on(Select.Changed, "#tao-network")
    def _network(self, event: Select.Changed) -> None:
        event.stop()
        if isinstance(event.value, str) and (
            self.schema is None or event.value != self.schema.network.name
        ):
            self.overrides = {}  # another network's keys
            self.wanted = {"network": event.value}
            self.query_one("#tao-action", Select).clear()
            self.open()

    @on(Select.Changed, "#tao-action")
    def _action(self, event: Select.Changed) -> None:
        event.stop()
        if self.schema is not None and isinstance(event.value, str):
            self._show()

    @on(Input.Changed, "#tao-spec-file")
    def _spec_file(self, event: Input.Changed) -> None:
        event.stop()
        self._schedule(reread=True)

    @on(TextArea.Changed, "#tao-editor")
    def _edited(self, event: TextArea.Changed) -> None:
        event.stop()
        self._schedule(reread=False)

    def _schedule(self, *, reread: bool) -> None:
        if self._check_timer is not None:
            self._check_timer.stop()
        self._check_timer = self.set_timer(
            CHECK_DELAY, (lambda: self._show_file()) if reread else self._parse
        )

    def _show_file(self) -> None:
        if self.schema is not None:
            self._shown_for = None
            self._show()

    def _parse(self) -> None:
        """The editor's text as overrides against the defaults and the file."""
        from tao_slurm_tui.core.tao.schema import parse_spec_yaml
        from tao_slurm_tui.core.tao.spec_edit import overrides_from

        text = self.query_one("#tao-editor", TextArea).text
        try:
            edited = parse_spec_yaml(text, "the experiment spec")
        except TaoError as error:
            self.parse_error = str(error)
        else:
            self.parse_error = ""
            self.overrides = overrides_from(edited, self.base)
        self._check()
        self.post_message(self.Changed())

    # ------------------------------------------------------------------ problems

    def _check(self) -> None:
        """Check the spec as it is now; list each problem at its line."""
        from tao_slurm_tui.core.tao.schema import key_lines
        from tao_slurm_tui.core.tao.spec_check import check_spec
        from tao_slurm_tui.core.tao.spec_edit import line_of

        action = self._selected("#tao-action")
        if self.schema is None or not action or self.parse_error:
            self._problems([self.parse_error] if self.parse_error else [])
            return
        check = check_spec(self.schema, action, self.file_spec, self.overrides)
        lines = key_lines(self.query_one("#tao-editor", TextArea).text)
        shown = []
        for problem in check.problems:
            line = line_of(problem.key, lines)
            shown.append(f"line {line}: {problem.sentence}" if line else problem.sentence)
        self._problems(shown)

    def show_problem(self, text: str) -> None:
        """A problem the back end found with the TAO job (a GPU count the spec contradicts, a
        network not loaded), shown when the editor's own check has none."""
        if self._own_problems:
            return
        label = self.query_one("#tao-problems", Label)
        label.update(text)
        label.set_class(bool(text), "-shown")

    def _problems(self, lines: list[str]) -> None:
        more = len(lines) - PROBLEMS_SHOWN
        text = "\n".join(lines[:PROBLEMS_SHOWN]) + (f"\n… and {more} more" if more > 0 else "")
        self._own_problems = bool(text)
        label = self.query_one("#tao-problems", Label)
        label.update(text)
        label.set_class(bool(text), "-shown")

    def _popular(self, action: str) -> None:
        """NVIDIA's popular settings of the action, with their values now."""
        from tao_slurm_tui.core.tao.schema import parse_spec_yaml
        from tao_slurm_tui.core.tao.spec_edit import popular

        assert self.schema is not None
        try:
            data = parse_spec_yaml(self.query_one("#tao-editor", TextArea).text)
        except TaoError:
            data = {}
        shown = [f"{s.info.key} = {s.value}" for s in popular(self.schema, action, data)]
        text = f"Often changed: {' · '.join(shown)}" if shown else ""
        self.query_one("#tao-popular", Label).update(text)
