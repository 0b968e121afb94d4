"""Every configured cluster at a glance: the user's jobs and the free GPUs, per profile.

One back end (one connection) per profile, opened when the overview first asks about it; each
row refreshes on its own, so a slow or failing cluster never holds up the others and its failure
is shown in its row. Enter switches into the selected cluster (its connection is reused).
"""

from __future__ import annotations

from rich.text import Text
from textual import getters, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Static
from textual.widgets.data_table import ColumnKey, RowDoesNotExist

from tao_slurm_tui.core.capacity_report import type_label
from tao_slurm_tui.core.words import plural
from tao_slurm_tui.screens.context import UiContext
from tao_slurm_tui.services.overview import ClusterSummary, Overview
from tao_slurm_tui.widgets.app_footer import AppFooter
from tao_slurm_tui.widgets.app_header import AppHeader
from tao_slurm_tui.widgets.plain import plain, plain_line

COLUMNS: tuple[tuple[str, str], ...] = (
    ("profile", "Cluster"),
    ("free", "GPUs free"),
    ("running", "My running"),
    ("pending", "My pending"),
    ("block", "Largest free block"),
    ("state", "State"),
)


def summary_cells(s: ClusterSummary) -> dict[str, Text]:
    """The row of one cluster: numbers, or its failure in place."""
    name = plain_line(s.profile + (" (active)" if s.active else ""), style="bold")
    if s.report is None:
        waiting = not s.error
        return {
            "profile": name,
            "running": Text("…" if waiting else "-", style="dim"),
            "pending": Text("…" if waiting else "-", style="dim"),
            "free": Text("…" if waiting else "-", style="dim"),
            "block": Text("…" if waiting else "-", style="dim"),
            "state": Text("connecting…", style="dim")
            if waiting
            else Text("failed (below)", style="red"),
        }
    r = s.report
    best = max(
        (p.largest_block for p in r.partitions if p.largest_block),
        key=lambda b: b.gpus,
        default=None,
    )
    return {
        "profile": name,
        "running": plain_line(f"{r.mine.running_jobs} ({plural(r.mine.running_gpus, 'GPU')})"),
        "pending": plain_line(f"{r.mine.pending_jobs} ({plural(r.mine.pending_gpus, 'GPU')})"),
        "free": plain_line(r.gpus_free, style="bold green" if r.gpus_free else "dim"),
        # The node and GPU type are the cluster's words: one line, spelled out.
        "block": plain_line(f"{best.gpus} × {type_label(best.kind)} on {best.node}")  # noqa: RUF001
        if best
        else Text("none", style="dim"),
        "state": Text("ok", style="green"),
    }


class OverviewScreen(Screen[str | None]):
    """One row per configured cluster; Enter dismisses with the chosen profile's name (the app
    switches into it, reusing the overview's connection), Escape with None."""

    BINDINGS = [
        Binding("enter", "open", "Switch to cluster", id="overview.open"),
        Binding("r", "refresh", "Refresh", id="overview.refresh"),
        Binding("escape", "back", "Back", id="overview.back"),
    ]

    table = getters.query_one("#clusters", DataTable)

    def __init__(self, ctx: UiContext, overview: Overview) -> None:
        """Create the screen.

        Args:
            ctx: Back end, settings and clock.
            overview: the profiles' back ends (opened lazily by it).
        """
        super().__init__()
        self.ctx = ctx
        self.overview = overview
        self.summaries: dict[str, ClusterSummary] = {}

    def compose(self) -> ComposeResult:
        """Header, hint, table, footer."""
        yield AppHeader(self.ctx.backend, self.ctx.clock, "all clusters")
        yield Static(
            "Your jobs and the free GPUs on every configured cluster. "
            "Enter switches to the selected one.",
            id="overview-hint",
            markup=False,
        )
        yield DataTable(id="clusters", cursor_type="row", zebra_stripes=True)
        yield Static("", id="overview-detail", markup=False)
        yield AppFooter()

    def on_mount(self) -> None:
        """A row per profile at once ('connecting…'), then one refresh each."""
        for key, title in COLUMNS:
            self.table.add_column(title, key=key)
        for name in self.overview.names():
            self._show(ClusterSummary(name, name == self.ctx.backend.profile_name))
        self.table.focus()
        self.action_refresh()

    def detail_text(self, summary: ClusterSummary) -> str:
        """The highlighted cluster in a sentence or two (a failure in full)."""
        if summary.error:
            return f"{summary.profile}: {summary.error}"
        if summary.report is None:
            return f"{summary.profile}: connecting…"
        r = summary.report
        parts = ", ".join(f"{p.name} {p.gpus_free}/{p.gpus_total}" for p in r.partitions)
        return f"{summary.profile}: GPUs free per partition: {parts or 'none'}."

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """Say more about the highlighted cluster."""
        name = str(event.row_key.value)
        if name in self.summaries:
            self._detail(self.summaries[name])

    def _detail(self, summary: ClusterSummary) -> None:
        detail = self.query_one("#overview-detail", Static)
        detail.set_class(bool(summary.error), "-failed")
        detail.update(plain(self.detail_text(summary)))  # a failure quotes the cluster

    def _highlighted(self) -> str | None:
        if self.table.row_count == 0:
            return None
        cell = self.table.coordinate_to_cell_key(self.table.cursor_coordinate)
        return str(cell.row_key.value)

    def _show(self, summary: ClusterSummary) -> None:
        self.summaries[summary.profile] = summary
        if self._highlighted() in (None, summary.profile):
            self._detail(summary)
        cells = summary_cells(summary)
        self._fit_columns()
        try:
            self.table.get_row_index(summary.profile)
        except RowDoesNotExist:
            self.table.add_row(*(cells[k] for k, _ in COLUMNS), key=summary.profile)
            return
        for key, _ in COLUMNS:
            self.table.update_cell(summary.profile, key, cells[key], update_width=True)

    def _fit_columns(self) -> None:
        """Size every column to its widest cell before the cells change.

        DataTable measures updated cells later (on its idle) and keeps rows it rendered in
        between at the old widths, so an answer arriving after the first paint stayed cut
        by a character ("gpu-a0"). Widths set here apply with the update itself.
        """
        rows = [summary_cells(s) for s in self.summaries.values()]
        for key, title in COLUMNS:
            column = self.table.columns.get(ColumnKey(key))
            if column is None:
                continue
            widest = max([plain_line(title).cell_len, *(row[key].cell_len for row in rows)])
            column.auto_width = False
            column.width = max(column.width, widest)

    def action_refresh(self) -> None:
        """Refresh every cluster, each on its own worker."""
        for name in self.overview.names():
            self.refresh_cluster(name)

    @work(group="overview", exit_on_error=False)
    async def refresh_cluster(self, name: str) -> None:
        """One cluster's refresh; failures arrive as its summary's sentence."""
        self._show(await self.overview.summary(name))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """Enter on a row (the table handles the key itself): switch into that cluster."""
        event.stop()
        self.action_open()

    def action_open(self) -> None:
        """Switch into the selected cluster (today's screens, on its back end)."""
        name = self._highlighted()
        if name is not None:
            self.dismiss(None if name == self.ctx.backend.profile_name else name)

    def action_back(self) -> None:
        """Back to where the user came from."""
        self.dismiss(None)
