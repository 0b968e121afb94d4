"""One followed log file: a :class:`LogView` with a status line and the "N new lines" hint."""

from __future__ import annotations

from textual import getters
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Label

from tao_slurm_tui.services.backend import LogBatch
from tao_slurm_tui.widgets.log_view import DEFAULT_MAX_LINES, LogView


class LogPane(Vertical):
    """A log view with its own status line (lines, follow state) and new-lines hint."""

    DEFAULT_CSS = """
    LogPane {
        height: 1fr;
        & > LogView { height: 1fr; }
        & > #hint {
            dock: bottom;
            width: 100%;
            background: $accent;
            color: $text;
            padding: 0 1;
            display: none;
        }
        & > #hint.-visible { display: block; }
        & > #status { width: 100%; color: $text-muted; padding: 0 1; }
    }
    """

    view = getters.query_one("LogView", LogView)
    hint = getters.query_one("#hint", Label)
    status = getters.query_one("#status", Label)

    def __init__(
        self, stream: str, max_lines: int = DEFAULT_MAX_LINES, *, id: str | None = None
    ) -> None:
        """Create a pane.

        Args:
            stream: "out" or "err" (shown in the status line).
            max_lines: Lines kept in memory.
            id: Widget id.
        """
        super().__init__(id=id)
        self.stream = stream
        self._max_lines = max_lines

    def compose(self) -> ComposeResult:
        """A status line, the view and the hint."""
        yield Label("", id="status", markup=False)
        yield LogView(self._max_lines)
        yield Label("", id="hint", markup=False)

    def on_mount(self) -> None:
        """Keep the status line and the hint in step with the view."""
        self.watch(self.view, "follow", self._update_status)
        self.watch(self.view, "new_lines", self._update_hint)
        self._update_status()

    def on_log_view_changed(self, event: LogView.Changed) -> None:
        """New lines or another search: the status line says so."""
        event.stop()
        self._update_status()

    def add_batch(self, batch: LogBatch) -> None:
        """Append a batch from the back end."""
        self.view.write_lines(batch.lines, batch.separator)

    def _update_status(self, _: object = None) -> None:
        view = self.view
        lines = f"{view.line_count:,} lines" if view.line_count else "no lines yet"
        parts = [f"main.{self.stream}", lines]
        if view.dropped:
            parts.append(f"{view.dropped:,} older dropped")
        parts.append("following" if view.follow else "paused (f to follow)")
        if view.search_term:
            current = view.current_match
            where = f"{current + 1}/" if current is not None else ""
            parts.append(f"'{view.search_term}': {where}{view.match_count} matches")
        self.status.update(" · ".join(parts))

    def _update_hint(self, count: int) -> None:
        self.hint.set_class(count > 0, "-visible")
        if count:
            self.hint.update(f"↓ {count:,} new lines — press f or End to follow")
