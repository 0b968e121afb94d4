"""StdOut/StdErr of a job this tool did not submit (from the history), when readable.

The end of each file (bounded, see :data:`~tao_slurm_tui.core.accounting.OUTPUT_TAIL_BYTES`) is
fetched once in one call; ``r`` fetches it again.
"""

from __future__ import annotations

from textual import getters, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Log, Static

from tao_slurm_tui.core.accounting import HistoryEntry
from tao_slurm_tui.core.job_output import JobOutput
from tao_slurm_tui.core.shown import log_line, shown
from tao_slurm_tui.screens.context import UiContext
from tao_slurm_tui.widgets.app_footer import AppFooter
from tao_slurm_tui.widgets.app_header import AppHeader
from tao_slurm_tui.widgets.plain import plain_line


class JobOutputScreen(Screen[None]):
    """One job's StdOut (``o``) or StdErr (``e``)."""

    BINDINGS = [
        Binding("o", "show('out')", "StdOut", id="output.out"),
        Binding("e", "show('err')", "StdErr", id="output.err"),
        Binding("r", "reload", "Refresh", id="output.refresh"),
        Binding("escape", "back", "Back", id="output.back"),
    ]

    log_view = getters.query_one("#output-log", Log)
    where = getters.query_one("#output-where", Static)

    def __init__(self, ctx: UiContext, entry: HistoryEntry, *, max_lines: int = 10_000) -> None:
        """Create the screen for ``entry`` (keeping at most ``max_lines`` lines)."""
        super().__init__()
        self.ctx = ctx
        self.entry = entry
        self.max_lines = max_lines
        self.output: JobOutput | None = None
        self.stream = "out"

    def compose(self) -> ComposeResult:
        """Header, where the file is, the text, footer."""
        yield AppHeader(self.ctx.backend, self.ctx.clock, f"output of {self.entry.job_id}")
        yield Static("looking for the output…", id="output-where", markup=False)
        yield Log(max_lines=self.max_lines, id="output-log", auto_scroll=True)
        yield AppFooter()

    def on_mount(self) -> None:
        """Fetch the output."""
        self.log_view.focus()
        self.load()

    @work(exclusive=True, group="output", exit_on_error=False)
    async def load(self) -> None:
        """One call for both files' ends."""
        self.output = await self.ctx.backend.job_output(self.entry)
        self._show()

    def _show(self) -> None:
        output = self.output
        if output is None:
            return
        out = self.stream == "out"
        path = output.stdout_path if out else output.stderr_path
        readable = output.stdout_readable if out else output.stderr_readable
        label = "StdOut" if out else "StdErr"
        where = plain_line(f"{label}: {path or 'unknown'}", no_wrap=True, overflow="ellipsis")
        if output.source == "default":
            where.append("  (sbatch's default path)")
        self.where.update(where)
        self.log_view.clear()
        if not path:
            self.log_view.write_line("SLURM does not say where this job wrote its output.")
        elif not readable:
            self.log_view.write_line(
                shown(
                    f"{path} cannot be read (it was moved or deleted, or belongs to another user)."
                )
            )
        elif not out and output.same_file:
            self.log_view.write_line("StdErr went to the same file as StdOut (press o).")
        else:
            text = output.stdout if out else output.stderr
            # Any job of the user's wrote this: shown as a log viewer shows a log (escape
            # sequences dropped, control characters spelled out). Split on newlines only.
            lines = text.split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            self.log_view.write_lines([log_line(line) for line in lines] or ["(empty)"])

    def action_show(self, stream: str) -> None:
        """Switch between StdOut and StdErr."""
        self.stream = stream
        self._show()

    def action_reload(self) -> None:
        """Fetch again."""
        self.load()

    def action_back(self) -> None:
        """Back to the history."""
        self.dismiss()
