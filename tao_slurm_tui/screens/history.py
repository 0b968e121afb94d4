"""The user's SLURM history: every job from sacct (ours and others), paged, with usage.

One page (200 jobs) is one back end call, run in a worker: the screen stays responsive however
many jobs the window holds, and only one page of rows is ever in the table.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text
from textual import getters, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.reactive import var
from textual.screen import Screen
from textual.widgets import DataTable, Input, Label, Static

from tao_slurm_tui.core.accounting import (
    HistoryEntry,
    HistoryPage,
    HistoryQuery,
    format_memory,
    linked_record,
    links_by_slurm_id,
)
from tao_slurm_tui.core.history_query import check_name_filter, parse_since, parse_states
from tao_slurm_tui.core.models import JobRecord
from tao_slurm_tui.core.shown import shown
from tao_slurm_tui.core.slurm_text import format_duration
from tao_slurm_tui.screens.context import UiContext
from tao_slurm_tui.widgets.app_footer import AppFooter
from tao_slurm_tui.widgets.app_header import AppHeader
from tao_slurm_tui.widgets.field_input import FieldInput
from tao_slurm_tui.widgets.plain import plain, plain_line
from tao_slurm_tui.widgets.usage import usage_lines

COLUMNS = (
    ("SLURM ID", "id"),
    ("Name", "name"),
    ("State", "state"),
    ("Partition", "partition"),
    ("Elapsed/limit", "elapsed"),
    ("CPU", "cpu"),
    ("GPU-h", "gpu"),
    ("Peak mem", "mem"),
    ("Wait", "wait"),
    ("Exit", "exit"),
    ("TAO job", "tao"),
)

_STATE_STYLE = {
    "COMPLETED": "green",
    "RUNNING": "cyan",
    "PENDING": "yellow",
    "CANCELLED": "magenta",
}


def history_cells(entry: HistoryEntry, linked: JobRecord | None) -> list[Text]:
    """The table cells of one history entry: plain text, one line each (a ``str`` cell would
    be read as markup: a job named ``exp[/data]`` would end the app, and any job of the user's
    is here, named anyhow)."""
    u = entry.usage
    elapsed = format_duration(u.elapsed_s) or "-"
    limit = format_duration(u.time_limit_s) or "none"
    style = _STATE_STYLE.get(entry.state, "red" if entry.finished else "")
    state = plain_line(entry.state, style=style)
    if u.hint:
        state.append(" ↓", style="bold yellow")
    name = shown(entry.name)
    return [
        plain_line(entry.job_id),
        plain_line(name if len(name) <= 28 else name[:27] + "…"),
        state,
        *(
            plain_line(value)
            for value in (
                entry.partition,
                f"{elapsed}/{limit}",
                "" if u.cpu_efficiency is None else f"{u.cpu_efficiency:.0%}",
                f"{u.gpu_hours:.1f}" if u.gpus else "",
                format_memory(u.peak_rss_bytes),
                format_duration(u.queue_wait_s),
                entry.exit_code,
                linked.id if linked else "",
            )
        ),
    ]


def render_entry(entry: HistoryEntry, linked: JobRecord | None) -> RenderableType:
    """The detail pane of one history entry."""
    head = Text(no_wrap=True, overflow="ellipsis")
    head.append(shown(f"{entry.job_id}  "), style="bold")
    head.append(shown(f"{entry.name}  ·  {entry.raw_state}"))
    if entry.partition:
        head.append(shown(f"  ·  {entry.partition}"))
    if entry.nodes:
        head.append(shown(f"  ·  {entry.nodes}"))
    times = plain_line(
        f"Submitted {entry.submit_time or '-'} · started {entry.start_time or '-'} · "
        f"ended {entry.end_time or '-'} · exit {entry.exit_code or '-'}",
        no_wrap=True,
        overflow="ellipsis",
    )
    parts: list[RenderableType] = [head, times, *usage_lines(entry.usage)]
    if linked is not None:
        retries = f", {linked.retries} retries" if linked.retries else ""
        parts.append(
            plain_line(
                f"TAO job {linked.id} ({linked.status}{retries}): l opens its logs.", style="bold"
            )
        )
    else:
        parts.append(Text("Not submitted by tao-slurm-tui: l opens its StdOut/StdErr."))
    return Group(*parts)


class HistoryScreen(Screen[None]):
    """Every job of the user from SLURM accounting, a page at a time, with filters."""

    BINDINGS = [
        Binding("slash", "filter", "Filter", id="history.filter"),
        Binding("right_square_bracket", "older", "Older", id="history.older"),
        Binding("left_square_bracket", "newer", "Newer", id="history.newer"),
        Binding("l", "logs", "Logs", id="history.logs"),
        Binding("r", "reload", "Refresh", id="history.refresh"),
        Binding("escape", "back", "Back", id="history.back"),
    ]

    table = getters.query_one("#history-table", DataTable)
    detail = getters.query_one("#history-detail", Static)
    summary = getters.query_one("#history-summary", Static)

    page: var[HistoryPage | None] = var(None, init=False, always_update=True)
    """The page shown; setting it (a reload too: links may be new) fills the table."""
    highlighted: var[str | None] = var(None, init=False, always_update=True)
    """Row key under the cursor; the usage pane shows its job."""

    def __init__(self, ctx: UiContext, *, page_size: int = 200) -> None:
        """Create the screen.

        Args:
            ctx: Back end, settings and clock.
            page_size: Jobs per page (one back end call each).
        """
        super().__init__()
        self.ctx = ctx
        self.page_size = page_size
        self.history_query: HistoryQuery = HistoryQuery(since="now-7days", limit=page_size)
        """The filters in force (``before`` is the current page's cursor)."""
        self.cursors: list[int | None] = [None]
        """The cursor of every page shown so far; the last is the current page's."""
        self.entries: dict[str, HistoryEntry] = {}
        """The current page's entries by row key (raw id)."""
        self.links: dict[str, JobRecord] = {}
        self.fetching = False

    def compose(self) -> ComposeResult:
        """Header, filter bar, summary, table, detail, footer."""
        yield AppHeader(self.ctx.backend, self.ctx.clock, "history")
        with Horizontal(id="history-filters"):
            yield Label("since", markup=False)
            yield Input(value="7d", placeholder="7d, 12h, 2026-11-01", id="h-since")
            yield Label("state", markup=False)
            # Empty filters say "any": a grey example alone read like a filter in force.
            yield FieldInput(example="any: e.g. FAILED,CANCELLED", id="h-state")
            yield Label("name", markup=False)
            yield FieldInput(example="any: part of the name", id="h-name")
        yield Static(id="history-summary", markup=False)
        yield DataTable(id="history-table", cursor_type="row", zebra_stripes=True)
        with VerticalScroll(id="history-detail-box"):
            yield Static(id="history-detail", markup=False)
        yield AppFooter()

    def on_mount(self) -> None:
        """Columns, then the first page."""
        self.query_one("#history-detail-box").border_title = "Usage"
        for label, key in COLUMNS:
            self.table.add_column(label, key=key)
        self.table.focus()
        self.load()

    # ------------------------------------------------------------------ loading
    @work(exclusive=True, group="history", exit_on_error=False)
    async def load(self) -> None:
        """Fetch the current page (one call) and show it; a newer request replaces this one."""
        self.fetching = True
        self.table.border_subtitle = "loading…"
        try:
            page = await self.ctx.backend.history_page(self.history_query)
        finally:
            self.fetching = False
        self.links = links_by_slurm_id(self.ctx.backend.jobs())
        self.page = page

    def watch_page(self, page: HistoryPage | None) -> None:
        """Fill the table, the summary and the page line with ``page``."""
        if page is None:
            return
        self.entries = {e.raw_id + "/" + e.job_id: e for e in page.entries}
        self.table.clear()
        for key, entry in self.entries.items():
            self.table.add_row(*history_cells(entry, linked_record(entry, self.links)), key=key)
        if page.summary is not None:
            self.summary.update(plain(page.summary.text, style="bold"))
        number = len(self.cursors)
        first = (number - 1) * self.page_size + 1 if page.entries else 0
        last = first + len(page.entries) - 1 if page.entries else 0
        total = (number - 1) * self.page_size + (page.total or 0)
        more = " · older jobs follow" if page.more else ""
        self.table.border_subtitle = plain_line(
            f"page {number} · jobs {first}-{last} of {total}{more}"
        )
        self.highlighted = self._cursor_key()

    def _cursor_key(self) -> str | None:
        if not self.table.row_count:
            return None
        return self.table.coordinate_to_cell_key(self.table.cursor_coordinate).row_key.value

    def _selected(self) -> HistoryEntry | None:
        return self.entries.get(self._cursor_key() or "")

    def watch_highlighted(self, key: str | None) -> None:
        """Show the highlighted job's usage (or say the window is empty)."""
        entry = self.entries.get(key or "")
        if entry is None:
            self.detail.update(Text("No jobs in this window; widen it (since: 30d).", "italic"))
        else:
            self.detail.update(render_entry(entry, linked_record(entry, self.links)))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """Another job under the cursor."""
        self.highlighted = self._cursor_key()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """Enter opens the output."""
        self.action_logs()

    # ------------------------------------------------------------------ filters
    @on(Input.Submitted)
    def _filters_submitted(self, event: Input.Submitted) -> None:
        since = self.query_one("#h-since", Input).value.strip() or "7d"
        try:
            query = HistoryQuery(
                since=parse_since(since),
                states=parse_states(self.query_one("#h-state", Input).value),
                name=check_name_filter(self.query_one("#h-name", Input).value.strip()),
                limit=self.page_size,
            )
        except ValueError as exc:
            self.notify(f"{exc}.", severity="error")
            return
        self.history_query = query
        self.cursors = [None]
        self.table.focus()
        self.load()

    def action_filter(self) -> None:
        """Focus the filter bar (Enter applies)."""
        self.query_one("#h-since", Input).focus()

    def action_older(self) -> None:
        """The next (older) page."""
        cursor = self.page.next_before if self.page else None
        if cursor is None or self.fetching:
            self.notify("No older jobs in this window.", timeout=2)
            return
        self.cursors.append(cursor)
        self.history_query = HistoryQuery(
            since=self.history_query.since,
            states=self.history_query.states,
            name=self.history_query.name,
            before=cursor,
            limit=self.page_size,
        )
        self.load()

    def action_newer(self) -> None:
        """The previous (newer) page."""
        if len(self.cursors) < 2 or self.fetching:
            self.notify("This is the newest page.", timeout=2)
            return
        self.cursors.pop()
        self.history_query = HistoryQuery(
            since=self.history_query.since,
            states=self.history_query.states,
            name=self.history_query.name,
            before=self.cursors[-1],
            limit=self.page_size,
        )
        self.load()

    def action_reload(self) -> None:
        """Fetch the current page again."""
        self.load()

    def action_back(self) -> None:
        """Back to where the history was opened from."""
        self.dismiss()

    def action_logs(self) -> None:
        """Our job: its TAO logs. Anybody else's: its StdOut/StdErr when readable."""
        from tao_slurm_tui.screens.job_output import JobOutputScreen
        from tao_slurm_tui.screens.logs import LogsScreen

        entry = self._selected()
        if entry is None:
            self.notify("Select a job first.", severity="warning")
            return
        linked = linked_record(entry, self.links)
        if linked is not None:
            self.app.push_screen(LogsScreen(self.ctx, linked.id))
        else:
            self.app.push_screen(JobOutputScreen(self.ctx, entry))
