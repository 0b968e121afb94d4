"""The queue's habits that are not about its rows: what the view remembers for the next start
(finished hidden, the sort), copying a job's SLURM id and asking before quitting (issue 26)."""

from __future__ import annotations

from typing import Any

from textual.reactive import var
from textual.screen import Screen

from tao_slurm_tui.core.models import JobRecord
from tao_slurm_tui.screens.confirm import ConfirmModal
from tao_slurm_tui.screens.context import UiContext


class QueueHabits(Screen[None]):
    """Base of :class:`~tao_slurm_tui.screens.queue.QueueScreen`: the keys above."""

    ctx: UiContext
    show_finished: var[bool] = var(True, init=False)
    """Show jobs that are Complete, Error or Canceled."""

    def _selected(self) -> JobRecord | None:
        """The job under the cursor (the queue's)."""
        raise NotImplementedError

    def _remember(self, **changes: Any) -> None:
        error = self.ctx.remember(**changes)
        if error:
            self.notify(f"The queue's view is used but not saved: {error}", severity="warning")

    def action_toggle_finished(self) -> None:
        """Hide or show jobs that are Complete, Error or Canceled."""
        self.show_finished = not self.show_finished
        self._remember(show_finished=self.show_finished)
        self.notify(
            "Finished jobs shown." if self.show_finished else "Finished jobs hidden.", timeout=2
        )

    def action_copy_id(self) -> None:
        """Copy the selected job's SLURM id (what scontrol, sacct and seff take) to the
        clipboard (OSC 52: works over SSH too); its name while it has none yet."""
        job = self._selected()
        if job is None:
            return
        if job.slurm_job_id:
            self.app.copy_to_clipboard(job.slurm_job_id)
            self.notify(f"Copied SLURM id {job.slurm_job_id} ({job.id}).", timeout=2)
        else:
            self.app.copy_to_clipboard(job.id)
            self.notify(f"Copied {job.id} (no SLURM id yet).", timeout=2)

    def action_ask_quit(self) -> None:
        """Quit after a yes (``q`` is "back" on other screens: two presses must not leave the
        app); ctrl+q quits at once."""

        def answered(yes: bool | None) -> None:
            if yes:  # the app closes the back end on its way out (TaoSlurmApp.on_unmount)
                self.app.exit()

        self.app.push_screen(
            ConfirmModal("Quit tao-slurm-tui? Your jobs keep running on the cluster.", "Quit"),
            answered,
        )
