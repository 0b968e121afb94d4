"""Follow a job's main.out and main.err live, with search and attempt separators."""

from __future__ import annotations

from textual import getters, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Input, TabbedContent, TabPane

from tao_slurm_tui.core.models import TaoStatus
from tao_slurm_tui.core.retry import first_error
from tao_slurm_tui.screens.context import UiContext
from tao_slurm_tui.services.backend import LogStreamName
from tao_slurm_tui.widgets.app_footer import AppFooter
from tao_slurm_tui.widgets.app_header import AppHeader
from tao_slurm_tui.widgets.log_pane import LogPane

STREAMS: tuple[LogStreamName, ...] = ("out", "err")


class LogsScreen(Screen[None]):
    """main.out and main.err as tabs, each followed by its own worker."""

    BINDINGS = [
        Binding("f", "toggle_follow", "Follow", id="logs.follow"),
        Binding("slash", "search", "Search", id="logs.search"),
        Binding("n", "next_match", "Next", show=False, id="logs.next"),
        Binding("N", "previous_match", "Previous", show=False, id="logs.previous"),
        Binding("o", "show_tab('out')", "main.out", id="logs.out"),
        Binding("e", "show_tab('err')", "main.err", id="logs.err"),
        Binding("escape", "back", "Back", id="logs.back"),
        Binding("q", "close", "Back", show=False, id="logs.close"),
    ]

    tabs = getters.query_one(TabbedContent)
    search_input = getters.query_one("#search", Input)

    def __init__(self, ctx: UiContext, job_id: str, *, max_lines: int = 20_000) -> None:
        """Create the screen.

        Args:
            ctx: Back end, settings and clock.
            job_id: The job whose logs to follow.
            max_lines: Lines kept per pane.
        """
        super().__init__()
        self.ctx = ctx
        self.job_id = job_id
        self.max_lines = max_lines
        self.failed = False

    def compose(self) -> ComposeResult:
        """Header, search bar, two tabs, footer."""
        yield AppHeader(self.ctx.backend, self.ctx.clock, f"logs of {self.job_id}")
        yield Input(
            placeholder="search (Enter: go; n / N: next / previous)", id="search", compact=True
        )
        with TabbedContent(initial="tab-out"):
            for stream in STREAMS:
                with TabPane(f"main.{stream}", id=f"tab-{stream}"):
                    yield LogPane(stream, self.max_lines, id=f"pane-{stream}")
        yield AppFooter()

    def on_mount(self) -> None:
        """Start one follower per stream; a failed job opens on main.err."""
        job = next((j for j in self.ctx.backend.jobs() if j.id == self.job_id), None)
        self.failed = job is not None and job.status is TaoStatus.ERROR
        """The job failed: main.err is shown first, at its first error."""
        if self.failed:
            self.tabs.active = "tab-err"
        for stream in STREAMS:
            self.follow(stream)
        self.active_pane.view.focus()

    @property
    def active_pane(self) -> LogPane:
        """The pane of the visible tab."""
        stream = (self.tabs.active or "tab-out").removeprefix("tab-")
        return self.pane(stream)

    def pane(self, stream: str) -> LogPane:
        """The pane of ``stream``."""
        return self.query_one(f"#pane-{stream}", LogPane)

    @work(group="logs", exit_on_error=False)
    async def follow(self, stream: LogStreamName) -> None:
        """Append each batch the back end yields (batches, never line by line)."""
        pane = self.pane(stream)
        opened = False
        async for batch in self.ctx.backend.follow_logs(self.job_id, stream):
            pane.add_batch(batch)
            if not opened and stream == "err" and self.failed and batch.lines:
                opened = True
                # The explaining line is near the top (Pyxis, a traceback), not at the end.
                where = first_error(pane.view.lines)
                if where is not None:
                    self.call_after_refresh(pane.view.show_line, where)

    # ------------------------------------------------------------------ actions
    def action_toggle_follow(self) -> None:
        """Toggle following in the visible pane."""
        self.active_pane.view.action_toggle_follow()

    def action_show_tab(self, stream: str) -> None:
        """Switch to main.out or main.err."""
        self.tabs.active = f"tab-{stream}"
        self.active_pane.view.focus()

    @on(TabbedContent.TabActivated)
    def _tab_changed(self) -> None:
        # Each tab keeps its own search: the bar shows the visible tab's term (or closes).
        term = self.active_pane.view.search_term
        self.search_input.value = term
        self.search_input.set_class(bool(term), "-visible")

    def action_search(self) -> None:
        """Open the search bar (with the visible tab's term, selected to be typed over)."""
        self.search_input.value = self.active_pane.view.search_term
        self.search_input.add_class("-visible")
        self.search_input.focus()
        self.search_input.select_all()

    @on(Input.Submitted, "#search")
    def _search(self, event: Input.Submitted) -> None:
        pane = self.active_pane
        count = pane.view.search(event.value.strip())
        if event.value.strip() and not count:
            self.notify(f"No line contains '{event.value.strip()}'.", severity="warning", timeout=3)
        pane.view.focus()

    def _step(self, step: int) -> None:
        pane = self.active_pane
        if not pane.view.search_term:
            # Not a jump into the search bar: the key after n would be typed into it.
            self.notify(f"No search in main.{pane.stream}: press / to search.", timeout=3)
            return
        pane.view.next_match(step)

    def action_next_match(self) -> None:
        """Go to the next match."""
        self._step(1)

    def action_previous_match(self) -> None:
        """Go to the previous match."""
        self._step(-1)

    def action_back(self) -> None:
        """Close the search bar, or go back to the queue."""
        if self.search_input.has_class("-visible"):
            self.search_input.remove_class("-visible")
            self.active_pane.view.focus()
            return
        self.app.pop_screen()

    def action_close(self) -> None:
        """Back to the queue (q, as on the help screen)."""
        self.app.pop_screen()
