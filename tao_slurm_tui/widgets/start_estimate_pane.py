"""When the job in the composer would start: SLURM's estimate and what would be sooner."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from tao_slurm_tui.core.shown import shown
from tao_slurm_tui.core.start_estimate import StartEstimate
from tao_slurm_tui.widgets.plain import plain


class StartEstimatePane(Static):
    """SLURM's own start estimate (``sbatch --test-only``, no job created) and the hints."""

    def on_mount(self) -> None:
        """Title the pane."""
        self.border_title = "when would it start"
        self.border_subtitle = "sbatch --test-only"

    def show_waiting(self) -> None:
        """An estimate is on its way."""
        self.remove_class("-failed")
        self.update(Text("Asking SLURM…", style="dim"))

    def show_estimate(self, estimate: StartEstimate) -> None:
        """Show the estimate, then each hint on its own line."""
        self.remove_class("-failed")
        text = Text()
        # The headline may quote sbatch --test-only: the cluster's words, spelled out.
        head = shown(estimate.headline)
        text.append("As is: ", style="bold")
        text.append(head, style="bold green" if head.startswith("now") else "bold")
        for hint in estimate.hints:
            text.append("\nSooner: ", style="bold yellow")
            text.append(shown(hint))
        if estimate.block:
            text.append("\n" + shown(estimate.block), style="dim")
        self.update(text)

    def show_unavailable(self, why: str) -> None:
        """No estimate (invalid form, cluster unreachable): one sentence."""
        self.add_class("-failed")
        self.update(plain(why, style="dim"))
