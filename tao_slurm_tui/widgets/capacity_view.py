"""A cluster's capacity: per-partition GPUs, the largest free block, out-of-service nodes, limits.

:class:`CapacityView` shows one :class:`~tao_slurm_tui.core.capacity_report.CapacityReport`;
the table is updated by row key (never cleared), so the cursor stays where it was.
"""

from __future__ import annotations

from rich.text import Text
from textual import getters
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import DataTable, Static
from textual.widgets.data_table import RowDoesNotExist

from tao_slurm_tui.core.capacity import NodeState
from tao_slurm_tui.core.capacity_report import CapacityReport, PartitionCapacity, type_label
from tao_slurm_tui.core.shown import shown
from tao_slurm_tui.core.words import plural
from tao_slurm_tui.widgets.plain import plain, plain_line

BAR_WIDTH = 6
"""Cells of the free-GPU bar (narrow: every column fits 120 terminal columns)."""

COLUMNS: tuple[tuple[str, str], ...] = (
    ("partition", "Partition"),
    ("free", "GPUs free"),
    ("bar", "Used"),
    ("block", "Largest free"),
    ("types", "Types free/total"),
    ("nodes", "Nodes i/m/a/out"),
    ("cpus", "CPUs free"),
    ("mem", "Mem free"),
    ("pending", "Pending"),
)
"""Column keys and titles of the partition table: all of it fits 120 terminal columns."""


def gpu_bar(p: PartitionCapacity, width: int = BAR_WIDTH) -> Text:
    """Allocated, free and out-of-service GPUs as one bar (``▮`` used, ``▯`` free, ``x`` out)."""
    total = p.gpus_total
    if total == 0:
        return Text("no GPUs", style="dim")
    used = round(width * p.gpus_allocated / total)
    out = round(width * p.gpus_unavailable / total)
    free = max(0, width - used - out)
    bar = Text()
    bar.append("▮" * used, style="bold yellow")
    bar.append("▯" * free, style="bold green")
    bar.append("x" * out, style="red")
    return bar


def _mem(mb: int) -> str:
    return f"{mb / 1024:.0f} GiB" if mb >= 1024 else f"{mb} MiB"


def partition_cells(p: PartitionCapacity) -> dict[str, Text]:
    """The table's cells for one partition (names of partitions, types and nodes are the
    cluster's: plain text, one line)."""
    n = p.nodes
    out = n[NodeState.DRAINED] + n[NodeState.DRAINING] + n[NodeState.DOWN]
    block = p.largest_block
    free_style = "bold green" if p.gpus_free else "dim"
    return {
        "partition": plain_line(p.name + (" *" if p.default else ""), style="bold"),
        "free": plain_line(f"{p.gpus_free}/{p.gpus_total}", style=free_style),
        "bar": gpu_bar(p),
        "types": plain_line(
            ", ".join(f"{type_label(t.kind)} {t.free}/{t.total}" for t in p.gpu_types) or "-"
        ),
        "block": plain_line(f"{block.gpus} × {type_label(block.kind)}, {block.node}")  # noqa: RUF001
        if block
        else Text("none", style="dim"),
        "nodes": plain_line(
            f"{n[NodeState.IDLE]}/{n[NodeState.MIXED]}/{n[NodeState.ALLOCATED]}/{out}",
            style="red" if out else "",
        ),
        "cpus": plain_line(f"{p.cpus_free}/{p.cpus_total}"),
        "mem": plain_line(_mem(p.mem_free_mb)),
        "pending": plain_line(f"{p.pending_jobs} ({plural(p.pending_gpus, 'GPU')})"),
    }


def summary_text(report: CapacityReport) -> Text:
    """The line above the table: free GPUs on the cluster and the user's share."""
    mine = report.mine
    text = Text()
    text.append(
        f"{plural(report.gpus_free, 'GPU')} free", style="bold green" if report.gpus_free else ""
    )
    text.append(
        f" · you ({shown(report.user)}): {mine.running_jobs} running "
        f"({plural(mine.running_gpus, 'GPU')}), "
        f"{mine.pending_jobs} pending ({plural(mine.pending_gpus, 'GPU')})"
    )
    return text


def unavailable_text(report: CapacityReport) -> Text:
    """Down / drained / draining nodes with their reason."""
    if not report.unavailable:
        return Text("Every node takes jobs.", style="dim")
    text = Text()
    for i, n in enumerate(report.unavailable):
        if i:
            text.append("\n")
        # Node names and the admins' reasons: the cluster's words, one line each.
        text.append(shown(f"{n.name} "), style="bold")
        text.append(str(n.state), style="red" if n.state is NodeState.DOWN else "yellow")
        text.append(shown(f": {n.reason or 'no reason given'}"))
        if n.by:
            text.append(shown(f" ({n.by}, {n.since})"), style="dim")
    return text


def limits_text(report: CapacityReport) -> Text:
    """QOS and association limits against use; reached ones stand out."""
    if not report.accounting:
        return Text("Accounting did not answer: limits unknown.", style="dim")
    if not report.limits:
        return Text("No QOS or account limit applies to you.", style="dim")
    text = Text()
    for i, lim in enumerate(report.limits):
        if i:
            text.append("\n")
        used = "per job" if lim.used is None else f"{lim.used}/{lim.limit}"
        text.append(shown(f"{lim.scope} "), style="bold")
        text.append(shown(f"{lim.kind} {lim.resource}: {used}"))
        if lim.reached:
            text.append("  reached: new jobs wait", style="bold red")
    return text


class CapacityView(Vertical):
    """Summary line, partition table, and two panes: nodes out of service, limits."""

    table = getters.query_one("#cap-table", DataTable)
    summary = getters.query_one("#cap-summary", Static)

    def __init__(self, *, id: str | None = None) -> None:
        """Create an empty view (:meth:`show` fills it)."""
        super().__init__(id=id)
        self.report: CapacityReport | None = None

    def compose(self) -> ComposeResult:
        """The parts, empty until the first report."""
        yield Static("Reading the cluster's capacity…", id="cap-summary", markup=False)
        yield DataTable(id="cap-table", cursor_type="row", zebra_stripes=True)
        with Horizontal(id="cap-bottom"):
            with VerticalScroll(id="cap-out"):
                yield Static(id="cap-out-text", markup=False)
            with VerticalScroll(id="cap-limits"):
                yield Static(id="cap-limits-text", markup=False)

    def on_mount(self) -> None:
        """Columns and pane titles."""
        for key, title in COLUMNS:
            self.table.add_column(title, key=key)
        self.table.border_title = "Partitions (* default)"
        self.query_one("#cap-out").border_title = "Nodes out of service"
        self.query_one("#cap-limits").border_title = "Your limits"

    def show(self, report: CapacityReport) -> None:
        """Show ``report``: rows updated in place by partition name."""
        self.report = report
        self.summary.remove_class("-error")
        self.summary.update(summary_text(report))
        wanted = [p.name for p in report.partitions]
        for key in [str(k.value) for k in self.table.rows]:
            if key not in wanted:
                self.table.remove_row(key)
        for p in report.partitions:
            cells = partition_cells(p)
            try:
                self.table.get_row_index(p.name)
            except RowDoesNotExist:
                self.table.add_row(*(cells[k] for k, _ in COLUMNS), key=p.name)
                continue
            for key, _ in COLUMNS:
                self.table.update_cell(p.name, key, cells[key])
        self.query_one("#cap-out-text", Static).update(unavailable_text(report))
        self.query_one("#cap-limits-text", Static).update(limits_text(report))
        if report.notes:
            self.summary.update(summary_text(report).append("\n" + shown(" ".join(report.notes))))

    def show_error(self, message: str) -> None:
        """The refresh failed: say so, keep the last numbers."""
        self.summary.add_class("-error")
        stale = " (the numbers below are from the last refresh)" if self.report else ""
        self.summary.update(plain(f"Could not refresh: {message}{stale}"))
