"""The Textual application (placeholder until the screens land)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import App, ComposeResult
from textual.widgets import Footer, Header, Static

from tao_slurm_tui.resources import styles_dir

if TYPE_CHECKING:
    from tao_slurm_tui.commands.context import CliContext


class TaoSlurmApp(App[None]):
    """tao-slurm-tui."""

    TITLE = "tao-slurm-tui"
    CSS_PATH = [str(styles_dir() / "app.tcss")]
    BINDINGS = [("q", "quit", "Quit")]

    def __init__(self, profile_name: str = "") -> None:
        super().__init__()
        self.sub_title = profile_name

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("tao-slurm-tui", id="placeholder")
        yield Footer()


def run_app(ctx: CliContext) -> int:
    """Open the TUI for the CLI context's profile."""
    TaoSlurmApp(ctx.profile_name).run()
    return 0
