"""A shell inside the selected running job, from the queue: the TUI steps aside until it exits.

:func:`start_job_shell` checks the job (a toast says why not), asks which node when the job has
several (:class:`NodePickerModal`), then suspends the app (``App.suspend``: the terminal as it
was before the app started), runs the back end's ``open_shell`` on the user's terminal and comes
back as it was when the shell exits. A shell that ended with an error (SLURM refused the step,
the job ended) leaves its last words on the screen until a key is pressed.
"""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult, SuspendNotSupported
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from tao_slurm_tui.core.job_shell import ShellTarget
from tao_slurm_tui.errors import TaoError
from tao_slurm_tui.screens.context import UiContext
from tao_slurm_tui.services.job_shell import LocalTerminal
from tao_slurm_tui.widgets.plain import plain_line


class NodePickerModal(ModalScreen[str | None]):
    """Which node of a multi-node job the shell opens on (None: none, closed)."""

    BINDINGS = [Binding("escape", "close", "Close", id="node_picker.close")]

    def __init__(self, target: ShellTarget) -> None:
        """Create the modal.

        Args:
            target: The job's shell target (its nodes; the first is pre-selected).
        """
        super().__init__()
        self.target = target

    def compose(self) -> ComposeResult:
        """The question and the nodes."""
        with Vertical(id="dialog"):
            yield Label(
                plain_line(f"A shell in {self.target.job_id} on which node?"),
                id="title",
                markup=False,
            )
            yield OptionList(
                *(Option(plain_line(node), id=node) for node in self.target.nodes),
                id="nodes",
                markup=False,
            )

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        """Open it on the chosen node."""
        self.dismiss(event.option.id)

    def action_close(self) -> None:
        """No shell."""
        self.dismiss(None)


def start_job_shell(screen: Screen[Any], ctx: UiContext, job_id: str | None) -> None:
    """Open a shell in the job ``job_id`` (see the module docstring; None: none selected)."""
    if job_id is None:
        screen.notify("Select a job first.", severity="warning")
        return
    try:
        target = ctx.backend.shell_target(job_id)
    except TaoError as error:
        screen.notify(str(error), severity="warning")
        return

    def chosen(node: str | None) -> None:
        if node is not None:
            screen.run_worker(
                _run_shell(screen, ctx, ctx.backend.shell_target(job_id, node)),
                group="shell",
                exclusive=True,
                exit_on_error=False,
            )

    if len(target.nodes) > 1:
        screen.app.push_screen(NodePickerModal(target), chosen)
    else:
        chosen(target.node)


async def _run_shell(screen: Screen[Any], ctx: UiContext, target: ShellTarget) -> None:
    app = screen.app
    terminal = LocalTerminal()
    try:
        with app.suspend():
            status = await ctx.backend.open_shell(target, terminal)
            if status:
                terminal.write(
                    f"\r\ntao-slurm-tui: the shell ended with exit status {status}; press a "
                    "key to return to the queue.\r\n".encode()
                )
                await terminal.wait_key()
    except SuspendNotSupported:
        screen.notify(
            f"This terminal cannot hand over to a shell; run 'tao-slurm-tui shell {target.job_id}' "
            "in one instead.",
            severity="error",
        )
        return
    screen.notify(f"Back from the shell in {target.job_id} on {target.node}.", timeout=3)
