"""Every key binding per screen, generated from the screens' BINDINGS and the user's keymap."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Static

from tao_slurm_tui.screens.context import UiContext
from tao_slurm_tui.screens.help_tables import binding_tables
from tao_slurm_tui.widgets.app_footer import AppFooter
from tao_slurm_tui.widgets.app_header import AppHeader
from tao_slurm_tui.widgets.plain import plain_line


class HelpScreen(Screen[None]):
    """Key tables (what the footer shows, and everything it hides)."""

    BINDINGS = [Binding("escape,question_mark,q", "close", "Close", id="help.close")]

    def __init__(self, ctx: UiContext) -> None:
        """Create the screen."""
        super().__init__()
        self.ctx = ctx

    def compose(self) -> ComposeResult:
        """One table per screen."""
        yield AppHeader(self.ctx.backend, self.ctx.clock, "help")
        with VerticalScroll(id="tables"):
            yield Static(
                Text(
                    "Keys can be remapped in config.toml under [keys], by id, "
                    'e.g.  "queue.cancel" = "x".  Ctrl+P opens the command palette.'
                ),
                id="intro",
                markup=False,
            )
            for title, rows in binding_tables(self.ctx.settings.keys):
                table = Table(title=title, title_justify="left", expand=True, box=None)
                table.add_column("Key", no_wrap=True, ratio=1)
                table.add_column("Action", ratio=3)
                table.add_column("Id", no_wrap=True, ratio=2)
                for row in rows:
                    table.add_row(
                        plain_line(row.keys),
                        plain_line(row.description),
                        plain_line(row.binding_id),
                    )
                yield Static(table, classes="key-table", markup=False)
        yield AppFooter()

    def action_close(self) -> None:
        """Back to where help was opened."""
        self.app.pop_screen()
