"""Where the GPUs are free: the cluster's capacity, refreshed while the screen is visible."""

from __future__ import annotations

from textual import getters, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.timer import Timer

from tao_slurm_tui.errors import TaoError
from tao_slurm_tui.screens.context import UiContext
from tao_slurm_tui.widgets.app_footer import AppFooter
from tao_slurm_tui.widgets.app_header import AppHeader
from tao_slurm_tui.widgets.capacity_view import CapacityView

MIN_INTERVAL = 10.0
"""Capacity changes slowly and the command reads every node: never more often than this."""


class CapacityScreen(Screen[None]):
    """Per-partition GPUs free by type, the largest free block, nodes out of service, limits."""

    BINDINGS = [
        Binding("r", "refresh", "Refresh", id="capacity.refresh"),
        Binding("a", "app.overview", "All clusters", id="capacity.overview"),
        Binding("escape", "back", "Back", id="capacity.back"),
    ]

    view = getters.query_one("#capacity", CapacityView)

    def __init__(self, ctx: UiContext) -> None:
        """Create the screen.

        Args:
            ctx: Back end, settings and clock.
        """
        super().__init__()
        self.ctx = ctx
        self._timer: Timer | None = None
        self._suspended = True

    @property
    def interval(self) -> float:
        """Seconds between refreshes (the poll interval, at least :data:`MIN_INTERVAL`)."""
        return max(MIN_INTERVAL, self.ctx.settings.poll_interval)

    def compose(self) -> ComposeResult:
        """Header, the capacity view, footer."""
        yield AppHeader(self.ctx.backend, self.ctx.clock, "capacity")
        yield CapacityView(id="capacity")
        yield AppFooter()

    def on_screen_resume(self) -> None:
        """Visible: refresh now and keep refreshing."""
        self._suspended = False
        self.load()

    def on_screen_suspend(self) -> None:
        """Hidden: stop refreshing."""
        self._suspended = True
        if self._timer is not None:
            self._timer.stop()
            self._timer = None

    @work(exclusive=True, group="capacity", exit_on_error=False)
    async def load(self) -> None:
        """One refresh (one round trip); re-armed only after it finished, so none overlap."""
        try:
            report = await self.ctx.backend.capacity()
        except TaoError as error:
            self.view.show_error(str(error))
        else:
            self.view.show(report)
        if not self._suspended:
            if self._timer is not None:
                self._timer.stop()
            self._timer = self.set_timer(self.interval, self.load, name="capacity-refresh")

    def action_refresh(self) -> None:
        """Refresh now."""
        self.load()

    def action_back(self) -> None:
        """Back to where the user came from."""
        self.app.pop_screen()
