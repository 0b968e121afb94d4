"""The queue table: one row per job, keyed by job id, updated by diff.

The table shows :attr:`JobTable.job_rows` (the queue screen binds its filtered rows to it): each
change is applied by :meth:`JobTable.apply`, which compares each cell with what is shown and
calls ``update_cell`` only for the cells that changed, ``add_row`` for new jobs and
``remove_row`` for jobs that left the view (never ``clear``), all inside one ``batch_update`` —
so the cursor stays on the same job and the scroll position stays put (dolphie's habit).

The table owns its sort order (:attr:`JobTable.sorted_by`) and tells its parent by messages: the
order changed (:class:`JobTable.Sorted`), the job under the cursor changed
(:class:`JobTable.Highlighted`, also when a diff or a sort moved another job under it).

Every column has a fixed width that only grows: set here from the plain text of the cells (the
widest value seen, at least the header), never measured by DataTable. An auto-width DataTable
measures every cell of every new row with Rich on idle (2,000 x 11 measurements before the
first frame of a big queue) and every updated cell on each tick.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.reactive import var
from textual.widgets import DataTable
from textual.widgets.data_table import CellDoesNotExist, ColumnKey, RowDoesNotExist, RowKey

from tao_slurm_tui.core.models import JobRecord, TaoStatus
from tao_slurm_tui.core.shown import Shown, shown
from tao_slurm_tui.widgets.drawn_cells import DrawnCellsTable
from tao_slurm_tui.widgets.job_cells import job_plain_cells
from tao_slurm_tui.widgets.pipeline_rows import PipelineRow, row_order
from tao_slurm_tui.widgets.plain import plain_line

SLURM_STATES = (
    "PENDING", "RUNNING", "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "PREEMPTED",
    "REQUEUED", "SUSPENDED", "NODE_FAIL",
)  # fmt: skip
"""The SLURM states the SLURM column is sized for up front (a rarer, longer one still grows it)."""

COLUMNS: list[tuple[str, str]] = [
    ("id", "Job"),
    ("status", "Status"),
    ("progress", "Progress"),
    ("reason", "Reason"),
    ("time", "Elapsed/max"),
    ("start", "Est. start"),
    ("retries", "Retry"),
    ("state", "SLURM"),
    ("slurm_id", "Id"),
    ("partition", "Part."),
    ("shape", "N×G"),  # noqa: RUF001
]
"""(column key, header) in display order: what a researcher reads first (where it is, how far
it got, why it waits) before what SLURM calls it and what it asked for, so on 80 and 120
columns those are the ones in view."""

MAX_WIDTHS = {"id": 24, "reason": 24}
"""Columns that do not grow past this many cells: a long name or a pipeline's row ends in "…"
instead of pushing every other column out of view."""

FIRST_ROWS = 200
"""Rows an empty table shows first (more than any terminal shows); the rest follow right after
the frame is drawn (adding 2,000 DataTable rows takes a while; nobody sees row 2,000 first)."""

_STATUS_ORDER = {s: i for i, s in enumerate(TaoStatus)}


def sort_value(job: JobRecord, column: str) -> Any:
    """The value a column sorts by (numbers as numbers)."""
    if column == "status":
        return _STATUS_ORDER[job.status]
    if column == "retries":
        return job.retries
    if column == "progress":
        return job.progress.fraction if job.progress.fraction is not None else -1.0
    if column == "slurm_id":
        return int(job.slurm_job_id) if job.slurm_job_id.isdigit() else 0
    if column == "created":
        return -job.created_at
    return job_plain_cells(job)[column].lower()


class SortOrder(NamedTuple):
    """What the rows are sorted by."""

    column: str = "created"
    """A column key, or "created": the store's order, newest first."""
    reverse: bool = False
    """The other way round."""

    @property
    def label(self) -> str:
        """The order in words, with the direction: 'Status ↑', 'submitted ↓'."""
        label = dict(COLUMNS).get(self.column)
        if label is None:  # "created": the store's order, newest first
            return f"submitted {'↑' if self.reverse else '↓'}"  # ↓: newest first
        return f"{label} {'↓' if self.reverse else '↑'}"

    def by(self, column: str) -> SortOrder:
        """Sorted by ``column``: ascending, or the other way round if it already is."""
        return SortOrder(column, not self.reverse if column == self.column else False)


class Cell:
    """One table cell: its plain text and style; the Rich ``Text`` is made only when DataTable
    draws the cell (visible rows only), not for each of 2,000 rows up front."""

    __slots__ = ("plain", "row", "style")

    def __init__(self, plain: Shown, style: Style | str = "", row: str = "") -> None:
        self.plain = plain
        self.style = style
        self.row = row
        """The row's key (set on the Job column's cell: what the sort orders by)."""

    def __rich__(self) -> Text:
        # Cut at the column's width with "…" (MAX_WIDTHS), never silently.
        return Text(shown(self.plain), style=self.style, no_wrap=True, overflow="ellipsis", end="")

    def __str__(self) -> str:
        return self.plain

    def __repr__(self) -> str:
        return f"Cell({self.plain!r})"


@dataclass
class DiffStats:
    """What one :meth:`JobTable.apply` changed."""

    added: int = 0
    updated_cells: int = 0
    removed: int = 0


class JobTable(DrawnCellsTable[Cell]):
    """The jobs of the queue, one row per job id."""

    class Sorted(Message):
        """The sort column or direction changed (a fact)."""

        def __init__(self, table: JobTable, order: SortOrder) -> None:
            """Create the message.

            Args:
                table: The table that was sorted.
                order: How its rows are sorted now.
            """
            super().__init__()
            self.table = table
            self.order = order

        @property
        def control(self) -> JobTable:
            """The table that was sorted."""
            return self.table

    class Highlighted(Message):
        """Another row is under the cursor: the cursor moved, or a diff, a filter or a sort put
        another job under it (a fact; DataTable's RowHighlighted covers only the first)."""

        def __init__(self, table: JobTable, row_key: str | None) -> None:
            """Create the message.

            Args:
                table: The table.
                row_key: The key of the row under the cursor (None: the table is empty).
            """
            super().__init__()
            self.table = table
            self.row_key = row_key

        @property
        def control(self) -> JobTable:
            """The table."""
            return self.table

    COMPONENT_CLASSES = DataTable.COMPONENT_CLASSES | {
        "job-table--pending",
        "job-table--running",
        "job-table--complete",
        "job-table--error",
        "job-table--canceled",
        "job-table--paused",
        "job-table--progress",
        "job-table--pipeline",
        "job-table--note",
    }

    DEFAULT_CSS = """
    JobTable {
        height: 1fr;
        /* Waiting (amber, dim) and working (blue, bold) must differ in every theme: by
           colour and by weight, so a colour-blind reader or a monochrome theme still tells. */
        & > .job-table--pending { color: $warning; text-style: italic; }
        & > .job-table--running { color: $secondary; text-style: bold; }
        & > .job-table--complete { color: $success; }
        & > .job-table--error { color: $error; text-style: bold; }
        & > .job-table--canceled { color: $text-muted; }
        & > .job-table--paused { color: $accent; text-style: italic; }
        & > .job-table--progress { color: $primary; }
        & > .job-table--pipeline { text-style: bold; }
        & > .job-table--note { color: $warning; text-style: bold; }
    }
    """

    BINDINGS = [
        Binding("s", "cycle_sort", "Sort", show=False, id="queue.sort"),
        Binding("S", "reverse_sort", "Reverse sort", show=False, id="queue.reverse_sort"),
        Binding("j", "cursor_down", "Down", show=False, id="queue.down"),
        Binding("k", "cursor_up", "Up", show=False, id="queue.up"),
        Binding("g,home", "scroll_top", "First job", show=False, id="queue.first"),
        Binding("G,end", "scroll_bottom", "Last job", show=False, id="queue.last"),
    ]

    job_rows: var[Sequence[JobRecord]] = var((), init=False)
    """The rows to show, already filtered (the queue screen binds its rows here)."""
    sorted_by: var[SortOrder] = var(SortOrder(), init=False)
    """How the rows are sorted; setting it sorts them (the cursor stays on its job)."""
    subtitle: var[str] = var("", init=False)
    """What the table's border says under it (counts, sort, filter)."""
    cursor_job: var[str | None] = var(None, init=False)
    """Key of the row under the cursor; each change is posted as :class:`Highlighted`."""
    notes: var[dict[str, str]] = var(dict, init=False)
    """A word on running jobs by id, shown in their reason column (GPUs sitting idle)."""

    def __init__(self, *, id: str | None = None) -> None:
        """Create the table with its columns."""
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.jobs: dict[str, JobRecord] = {}
        """Jobs shown now, by id."""
        self._shown: dict[str, dict[str, Shown]] = {}
        """Plain text of every shown cell by job id: what a tick is compared against (cheap)."""
        self._styles: dict[str, Style] = {}
        """Component styles looked up this tick (each lookup is a CSS query: not per job)."""
        self._widths: dict[str, int] = {key: cell_len(label) for key, label in COLUMNS}
        """Width of every column: the widest cell seen (plain text), at least the header."""
        # The status columns fit their longest word from the start, so a job going from
        # "Running" to "Complete" never shows "Complet" nor shifts the columns to its right.
        self._widths["status"] = max(self._widths["status"], *map(len, TaoStatus))
        self._widths["state"] = max(self._widths["state"], *map(len, SLURM_STATES))
        self._wanted: str | None = None
        """A row to put the cursor on as soon as it is shown (:meth:`reveal`)."""
        self._noted: set[str] = set()
        """Rows whose note changed since they were drawn (drawn again by the next diff)."""

    def on_mount(self) -> None:
        """Add the columns, each with a fixed width, and the rows bound so far."""
        for key, label in COLUMNS:
            self.add_column(label, key=key, width=self._widths[key])
        if self.job_rows:
            self.watch_job_rows(self.job_rows)

    @property
    def sort_column(self) -> str:
        """Column the rows are sorted by ("created": newest first, the store's order)."""
        return self.sorted_by.column

    @property
    def sort_reverse(self) -> bool:
        """True when sorted the other way round."""
        return self.sorted_by.reverse

    @property
    def sort_label(self) -> str:
        """What the rows are sorted by, in words, with the direction: 'Status ↑'."""
        return self.sorted_by.label

    # ------------------------------------------------------------------ reactives
    def watch_job_rows(self, rows: Sequence[JobRecord]) -> None:
        """Show ``rows``: an empty table shows a screenful first, the rest after the frame."""
        if not self.columns:
            return  # on_mount shows them
        if not self.jobs and len(rows) > FIRST_ROWS:
            self.apply(rows[:FIRST_ROWS])
            self.call_after_refresh(self._show_all_rows)
        else:
            self.apply(rows)
        self._reveal_wanted()

    def _show_all_rows(self) -> None:
        self.apply(self.job_rows)
        self._reveal_wanted()

    def watch_notes(self, old: dict[str, str], new: dict[str, str]) -> None:
        """Show the notes that changed (their rows are drawn again)."""
        changed = {k for k in old.keys() | new.keys() if old.get(k) != new.get(k)}
        for job_id in changed & self.jobs.keys():
            self._noted.add(job_id)
        if changed & self.jobs.keys():
            self.apply(self.job_rows)

    def watch_sorted_by(self, order: SortOrder) -> None:
        """Sort the rows; the cursor stays on its job."""
        keep = self.cursor_job_id
        self._mark_sorted_header()
        self._sort()
        if keep is not None:
            self._restore_cursor(keep)
        self.post_message(self.Sorted(self, order))

    def watch_subtitle(self, subtitle: str) -> None:
        """Show it on the border."""
        self.border_subtitle = plain_line(subtitle)  # names the filter typed: not markup

    def watch_cursor_job(self, row_key: str | None) -> None:
        """Tell the parent which row is under the cursor now."""
        self.post_message(self.Highlighted(self, row_key))

    def on_data_table_row_highlighted(self) -> None:
        """The cursor moved."""
        self.cursor_job = self.cursor_job_id

    # ------------------------------------------------------------------ dimensions
    # DataTable measures every cell of every new row with Rich on idle (`_update_dimensions`)
    # to size auto-width columns; ours are all fixed-width (sized in `apply` from the plain
    # text), so measuring would only cost time (~0.2 s for 2,000 rows). DataTable offers no
    # public switch for it: this overrides its (private) hook, keeping the one thing it must
    # do, the virtual size, which `_resize_virtual` computes from public attributes. Relies on
    # the pinned Textual version (tests/tui cover scrolling and the first frame of a big queue).
    def _update_dimensions(self, new_rows: Iterable[RowKey]) -> None:
        self._resize_virtual()

    def _resize_virtual(self) -> None:
        """The scrollable size: every column's width, one line a row, the header."""
        width = sum(column.get_render_width(self) for column in self.columns.values())
        header = self.header_height if self.show_header else 0
        self.virtual_size = Size(width, self.row_count + header)

    def _grow(self, plain: dict[str, Shown]) -> bool:
        """Widen the columns a row does not fit in; True if any grew."""
        grew = False
        widths = self._widths
        for key, value in plain.items():
            width = len(value) if value.isascii() else cell_len(value)
            width = min(width, MAX_WIDTHS.get(key, width))
            if width > widths[key]:
                widths[key] = width
                grew = True
        return grew

    def _width(self, key: str) -> int:
        """A column's width: its widest cell, and the header with its sort arrow while sorted
        by it (the arrow goes with the sort: sorting elsewhere gives the cells back)."""
        width = self._widths[key]
        if key == self.sort_column:
            width = max(width, cell_len(dict(COLUMNS)[key]) + 2)
        return width

    def _set_widths(self) -> None:
        """Give the columns their widths (after some grew) and the table its new size."""
        for key in self._widths:
            column = self.columns.get(ColumnKey(key))
            if column is not None:
                column.width = self._width(key)
        # Cached renderings are keyed by DataTable's update count, which the cell updates,
        # added rows or sort of the same change moved on: they are drawn again at the new width.
        self._resize_virtual()

    # ------------------------------------------------------------------ cells
    def _style(self, name: str) -> Style:
        style = self._styles.get(name)
        if style is None:
            style = self._styles[name] = self.get_component_rich_style(
                f"job-table--{name}", partial=True
            )
        return style

    def notify_style_update(self) -> None:
        """Styles changed (theme): look them up again."""
        super().notify_style_update()
        self._styles.clear()

    def _cell(self, job: JobRecord, key: str, value: Shown) -> Cell:
        if key == "id":
            style = self._style("pipeline") if isinstance(job, PipelineRow) else ""
            return Cell(value, style, row=job.id)
        if key == "status":
            return Cell(value, self._style(job.status.value.lower()))
        if key == "progress":
            return Cell(value, self._style("progress"))
        if key == "reason" and value and job.status is not TaoStatus.PENDING:
            return Cell(value, self._style("note"))
        return Cell(value)

    def cells(self, job: JobRecord) -> dict[str, Cell]:
        """Styled cells for ``job``."""
        plain = job_plain_cells(job, self.notes.get(job.id, ""))
        return {key: self._cell(job, key, value) for key, value in plain.items()}

    @property
    def cursor_job_id(self) -> str | None:
        """Id of the job under the cursor."""
        if not self.row_count:
            return None
        try:
            row_key, _ = self.coordinate_to_cell_key(self.cursor_coordinate)
        except CellDoesNotExist:
            return None
        return row_key.value

    # ------------------------------------------------------------------ diff
    def apply(self, jobs: Iterable[JobRecord]) -> DiffStats:
        """Show exactly ``jobs``, touching only what changed.

        Args:
            jobs: The jobs to show (already filtered).

        Returns:
            Counts of added rows, updated cells and removed rows.
        """
        stats = DiffStats()
        self._styles.clear()  # a theme switch since the last tick shows in the changed cells
        keep_cursor = self.cursor_job_id
        new = {job.id: job for job in jobs}
        order_changed = grew = False
        with self.app.batch_update():
            for job_id in [k for k in self.jobs if k not in new]:
                self.remove_row(job_id)
                del self.jobs[job_id]
                self._shown.pop(job_id, None)
                stats.removed += 1
            for job_id, job in new.items():
                if self.jobs.get(job_id) is job and job_id not in self._noted:
                    continue  # the very record shown (the monitor hands out unchanged ones)
                self._noted.discard(job_id)
                # Compare plain strings; make cells only for the ones that changed.
                plain = job_plain_cells(job, self.notes.get(job_id, ""))
                drawn = self._shown.get(job_id)
                if plain != drawn:
                    grew = self._grow(plain) or grew
                if drawn is None:
                    cells = [self._cell(job, key, plain[key]) for key, _ in COLUMNS]
                    self.add_row(*cells, key=job_id)
                    stats.added += 1
                    order_changed = True
                else:
                    old = self.jobs[job_id]
                    if sort_value(old, self.sort_column) != sort_value(job, self.sort_column):
                        order_changed = True
                    for key, value in plain.items():
                        if drawn.get(key) != value:
                            self.update_cell(job_id, key, self._cell(job, key, value))
                            stats.updated_cells += 1
                self.jobs[job_id] = job
                self._shown[job_id] = plain
            if grew:
                self._set_widths()
            if order_changed:
                self._sort()
            if keep_cursor is not None and keep_cursor in self.jobs and stats.removed + stats.added:
                self._restore_cursor(keep_cursor)
        self.cursor_job = self.cursor_job_id
        return stats

    def reveal(self, row_key: str) -> None:
        """Put the cursor on ``row_key``'s row now, or as soon as it is shown (a job just
        submitted: its row comes with the next poll)."""
        self._wanted = row_key
        self._reveal_wanted()

    def _reveal_wanted(self) -> None:
        wanted = self._wanted
        if wanted is not None and wanted in self.jobs:
            self._wanted = None
            self.move_cursor(row=self.get_row_index(wanted))
            self.cursor_job = self.cursor_job_id

    def _restore_cursor(self, job_id: str) -> None:
        try:
            row = self.get_row_index(job_id)
        except RowDoesNotExist:
            return
        if row != self.cursor_row:
            self.move_cursor(row=row, scroll=False)

    # ------------------------------------------------------------------ sort
    def _sort(self) -> None:
        column = self.sort_column
        # A pipeline's steps stay right under its row, in step order, in either direction.
        order = row_order(self.jobs, lambda job: sort_value(job, column), reverse=self.sort_reverse)
        index = {job_id: i for i, job_id in enumerate(order)}
        key: Callable[[Any], Any] = lambda cell: index[cell.row]  # noqa: E731
        self.sort("id", key=key)

    def sort_by(self, column: str, reverse: bool | None = None) -> None:
        """Sort by a column (same column again flips the order); the cursor stays on its job."""
        self.sorted_by = (
            self.sorted_by.by(column) if reverse is None else SortOrder(column, reverse)
        )

    def _mark_sorted_header(self) -> None:
        # The sorted column's header carries the arrow (k9s' habit); the others lose theirs,
        # and the cells the arrow took (it is never cut off): widths follow the sort.
        resized = False
        for key, label in COLUMNS:
            column = self.columns.get(ColumnKey(key))
            if column is None:
                continue
            arrow = (" ↓" if self.sort_reverse else " ↑") if key == self.sort_column else ""
            column.label = plain_line(label + arrow)
            resized |= column.width != self._width(key)
        if resized:
            self._set_widths()  # the sort that follows draws the header again
        self.refresh()

    def action_cycle_sort(self) -> None:
        """Sort by the next column (the border's subtitle says which: no toast per press)."""
        keys = ["created"] + [key for key, _ in COLUMNS]
        index = keys.index(self.sort_column) if self.sort_column in keys else 0
        self.sorted_by = SortOrder(keys[(index + 1) % len(keys)])

    def action_reverse_sort(self) -> None:
        """The same column, the other way round."""
        self.sorted_by = SortOrder(self.sort_column, not self.sort_reverse)

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        """Click a header to sort by it."""
        event.stop()
        self.sort_by(str(event.column_key.value))
