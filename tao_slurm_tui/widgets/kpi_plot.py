"""A training's KPI curves over its epochs, across every run (slice), with the values beside.

Plotted by textual-plotext (Textualize's widget around plotext, pinned in pyproject): the losses
on one plot, the other KPIs (accuracy, mAP) on a second one when there is room, a dotted line
where a requeued run took up the training, and the last and best value of each KPI in a table.
The KPI names come from the cluster: only plain names are kept (core.kpi_series), and the table
is built as plain text.
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.events import Resize
from textual.reactive import var
from textual.widget import Widget
from textual.widgets import Static
from textual_plotext import PlotextPlot

from tao_slurm_tui.core.job_runs import JobRuns
from tao_slurm_tui.core.kpi_series import Series, format_value, is_loss
from tao_slurm_tui.core.shown import shown

COLORS = (("cyan", "cyan"), ("orange", "dark_orange"), ("green", "green"), ("magenta", "magenta"))
"""Curve colours in the order KPIs are listed: (plotext's name, Rich's name for the table)."""
WIDE = 96
"""From this width on the metrics get a plot of their own beside the losses."""


def palette(runs: JobRuns) -> dict[str, tuple[str, str]]:
    """Each KPI's colours, the same on every plot and in the table."""
    return {s.name: COLORS[index % len(COLORS)] for index, s in enumerate(runs.series)}


def values_table(runs: JobRuns) -> Table:
    """Each KPI's last and best value (losses: lowest; others: highest)."""
    table = Table(
        box=None, pad_edge=False, show_edge=False, header_style="bold", padding=(0, 0, 0, 2)
    )
    table.add_column("KPI", no_wrap=True, overflow="ellipsis", max_width=18)
    table.add_column("last", justify="right", no_wrap=True)
    table.add_column("best", justify="right", no_wrap=True)
    colors = palette(runs)
    for item in runs.series:
        name = Text("● ", style=colors[item.name][1])
        name.append(shown(item.name))
        table.add_row(name, format_value(item.last), format_value(item.best()))
    return table


def epoch_ticks(first: int, last: int, most: int = 6) -> list[int]:
    """Whole epochs to label on the x axis (at most ``most``, evenly spaced)."""
    if last <= first:
        return [first]
    step = max(1, -(-(last - first) // (most - 1)))
    ticks = list(range(first, last + 1, step))
    return ticks if ticks[-1] == last else [*ticks, last]


def draw(
    plot: PlotextPlot,
    title: str,
    lines: list[Series],
    resumes: list[int],
    colors: dict[str, tuple[str, str]],
) -> None:
    """Put ``lines`` on ``plot`` (its figure cleared first) with a line at each resume; when
    losses and other KPIs share the plot, the others go on the right axis. An empty ``title``
    leaves out the title and the axis label (every row for the curves)."""
    plt = plot.plt
    plt.clear_figure()
    if title:
        plt.title(title)
    mixed = len({is_loss(s.name) for s in lines}) > 1
    for item in lines:
        color = colors[item.name][0]
        marker = "braille" if len(item.epochs) > 1 else "dot"
        side = "right" if mixed and not is_loss(item.name) else "left"
        plt.plot(
            list(item.epochs),
            list(item.values),
            label=item.name if title else None,  # compact: the table's dots say which
            marker=marker,
            color=color,
            yside=side,
        )
    for epoch in resumes:
        plt.vline(epoch, "gray")
    epochs = sorted({e for item in lines for e in item.epochs})
    if epochs:
        ticks = epoch_ticks(epochs[0], epochs[-1])
        plt.xticks([float(t) for t in ticks], [str(t) for t in ticks])
    if title:
        plt.xlabel("epoch")
    plot.refresh()


class KpiPlot(Widget):
    """Shows :attr:`runs` (None or no KPI: a one-line note)."""

    DEFAULT_CSS = """
    KpiPlot {
        layout: horizontal;
        height: 7;
    }
    KpiPlot > PlotextPlot {
        width: 1fr;
        height: 100%;
    }
    KpiPlot > #kpi-values {
        width: auto;
        max-width: 40;
        padding: 0 0 0 1;
    }
    """

    runs: var[JobRuns | None] = var(None, init=False)
    """The training shown."""

    def __init__(self, *, compact: bool = False, id: str | None = None) -> None:
        """Create the plot.

        Args:
            compact: No titles or axis label (the queue's details: every row for the curves).
            id: Widget id.
        """
        super().__init__(id=id)
        self.compact = compact

    def compose(self) -> ComposeResult:
        """The losses' plot, the metrics' plot, the values."""
        yield PlotextPlot(id="kpi-loss")
        yield PlotextPlot(id="kpi-metric")
        yield Static(id="kpi-values", markup=False)

    def on_mount(self) -> None:
        """Nothing to plot yet."""
        self._show(None)

    def watch_runs(self, runs: JobRuns | None) -> None:
        """Plot the new runs."""
        self._show(runs)

    def on_resize(self, event: Resize) -> None:
        """The metrics' plot only where there is room for two."""
        self._show(self.runs)

    def _show(self, runs: JobRuns | None) -> None:
        loss_plot = self.query_one("#kpi-loss", PlotextPlot)
        metric_plot = self.query_one("#kpi-metric", PlotextPlot)
        values = self.query_one("#kpi-values", Static)
        every = runs.series if runs is not None else []
        if not every:
            loss_plot.display = metric_plot.display = False
            values.update(Text("No KPIs yet: they appear after the first epoch.", style="italic"))
            return
        assert runs is not None
        resumes = [epoch for _run, epoch in runs.resumes]
        losses = [s for s in every if is_loss(s.name)]
        metrics = [s for s in every if not is_loss(s.name)]
        two = bool(losses and metrics) and self.size.width >= WIDE
        first = losses or metrics
        loss_plot.display = True
        title = (
            ("loss" if losses else "metrics")
            if two
            else " · ".join(
                part for part, some in (("loss", losses), ("metrics →", metrics)) if some
            )
        )
        colors = palette(runs)
        draw(loss_plot, "" if self.compact else title, first if two else every, resumes, colors)
        metric_plot.display = two
        if two:
            draw(metric_plot, "" if self.compact else "metrics", metrics, resumes, colors)
        values.update(values_table(runs))
