"""TAO runs side by side (``v`` on the queue): pick two or more trainings, see the spec keys
that differ and every KPI's last and best value, as ``tao-slurm-tui compare`` prints them."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.reactive import var
from textual.screen import Screen
from textual.widgets import SelectionList, Static
from textual.widgets.selection_list import Selection

from tao_slurm_tui.core.compare import Comparison
from tao_slurm_tui.core.job_runs import is_training
from tao_slurm_tui.core.models import JobRecord
from tao_slurm_tui.errors import TaoError
from tao_slurm_tui.screens.context import UiContext
from tao_slurm_tui.widgets.app_footer import AppFooter
from tao_slurm_tui.widgets.app_header import AppHeader
from tao_slurm_tui.widgets.plain import plain, plain_line


def comparison_view(found: Comparison) -> RenderableType:
    """The runs, the differing keys and the KPIs in one table, so the columns line up (plain
    text cells: keys and values come from the cluster)."""
    ids = [job.job_id for job in found.jobs]
    table = Table(box=None, header_style="bold", pad_edge=False, expand=False)
    table.add_column("job", no_wrap=True, overflow="ellipsis", max_width=40)
    for job_id in ids:
        table.add_column(plain_line(job_id), no_wrap=True, overflow="ellipsis", max_width=30)
    blank = [""] * len(ids)

    def section(title: str) -> None:
        table.add_row(plain_line(title, style="bold"), *blank)

    table.add_row("status", *(plain_line(job.status) for job in found.jobs))
    table.add_row("epochs", *(job.epochs or "-" for job in found.jobs))
    table.add_row("slices", *(str(len(job.runs.ledger.runs) or "-") for job in found.jobs))
    table.add_row("spec from", *(job.source for job in found.jobs))
    table.add_section()
    if found.differences:
        section(f"Spec: {len(found.differences)} keys differ")
        for key, values in found.differences:
            table.add_row(
                plain_line(key), *(plain_line(v if v is not None else "-") for v in values)
            )
    else:
        section("Spec: the same")
    table.add_section()
    if found.kpis:
        section("KPIs: last (best, if better earlier)")
        for name, _pairs in found.kpis:
            table.add_row(plain_line(name), *(found.kpi_cell(i, name) for i in range(len(ids))))
    else:
        section("KPIs: none yet")
    notes = [plain(f"Note: {note}", style="italic") for note in found.notes]
    return Group(table, *notes)


class CompareScreen(Screen[None]):
    """Trainings to pick on the left, their comparison on the right (below when narrow)."""

    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back", id="compare.back"),
        Binding("q", "app.pop_screen", "Back", show=False, id="compare.close"),
    ]

    picked: var[tuple[str, ...]] = var((), init=False)
    """The jobs compared, in the list's order."""

    def __init__(self, ctx: UiContext, jobs: list[JobRecord], selected: list[str]) -> None:
        """Create the screen.

        Args:
            ctx: Back end, settings and clock.
            jobs: The profile's jobs (the trainings among them are offered).
            selected: Ids picked at the start (the queue's highlighted job).
        """
        super().__init__()
        self.ctx = ctx
        self.offered = [j for j in jobs if is_training(j) or j.id in selected]
        self.start = [i for i in selected if any(j.id == i for j in self.offered)]

    def compose(self) -> ComposeResult:
        """Header, the picker and the comparison, footer."""
        yield AppHeader(self.ctx.backend, self.ctx.clock, "compare runs")
        with Horizontal(id="compare-body"):
            yield SelectionList[str](
                *(
                    Selection(plain_line(f"{j.id} ({j.status})"), j.id, j.id in self.start)
                    for j in self.offered
                ),
                id="compare-pick",
            )
            with VerticalScroll(id="compare-result"):
                yield Static(id="compare-tables", markup=False)
        yield AppFooter()

    def on_mount(self) -> None:
        """Titles, focus on the picker, the first comparison if two are picked already."""
        pick = self.query_one("#compare-pick", SelectionList)
        pick.border_title = "Trainings (space picks)"
        self.query_one("#compare-result").border_title = "Side by side"
        pick.focus()
        self.picked = tuple(self.start)

    @on(SelectionList.SelectedChanged, "#compare-pick")
    def _picked(self, event: SelectionList.SelectedChanged[str]) -> None:
        order = [j.id for j in self.offered]
        self.picked = tuple(sorted(event.selection_list.selected, key=order.index))

    def watch_picked(self, picked: tuple[str, ...]) -> None:
        """Compare what is picked (two or more)."""
        if len(picked) < 2:
            count = len(self.offered)
            hint = (
                "Pick two or more trainings (space) to see their spec differences and KPIs."
                if count >= 2
                else "Compare needs two TAO trainings; this profile has "
                f"{'one' if count == 1 else 'none'} so far."
            )
            self.query_one("#compare-tables", Static).update(plain(hint, style="italic"))
            return
        self.load(list(picked))

    @work(exclusive=True, group="compare", exit_on_error=False)
    async def load(self, ids: list[str]) -> None:
        """The comparison from the back end (dropped if the picks changed meanwhile)."""
        try:
            found = await self.ctx.backend.compare(ids)
        except TaoError as error:
            self.notify(str(error), severity="error")
            return
        if list(self.picked) == ids:
            self.query_one("#compare-tables", Static).update(comparison_view(found))
