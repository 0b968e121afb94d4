"""A pane of the details box that asks the back end about the shown job while it is seen.

:class:`LivePane` is the shared half of the GPU and "why it waits" panes: the queue binds its
detail view (the shown job) to :attr:`LivePane.view`; a subclass says which jobs it is for
(:meth:`wanted`) and how to ask (:meth:`ask`, a worker, one at a time: a newer job's question
replaces an older one's). The pane shows only for such jobs, and asks only while it is on the
active screen with every container up to it displayed (``i`` hides the details: nothing is
asked then).
"""

from __future__ import annotations

from typing import Any

from textual.reactive import var
from textual.widget import Widget
from textual.widgets import Static

from tao_slurm_tui.core.models import JobRecord
from tao_slurm_tui.widgets.job_detail import DetailView
from tao_slurm_tui.widgets.plain import plain


def seen(widget: Widget) -> bool:
    """``widget`` is on the active screen with every container up to it displayed."""
    if not widget.is_attached or widget.app.screen is not widget.screen:
        return False
    return all(node.display for node in widget.ancestors_with_self if isinstance(node, Widget))


class LivePane(Static):
    """The shared behaviour of the details box's live panes (see the module docstring)."""

    DEFAULT_CSS = """
    LivePane {
        height: auto;
        padding: 0 1;
        display: none;
    }
    LivePane.-shown {
        display: block;
    }
    """

    view: var[DetailView] = var(DetailView(), init=False)
    """What the details pane shows (bound by the queue): its job is the pane's."""

    def __init__(self, *, id: str | None = None) -> None:
        """Create the pane (hidden until :attr:`job` is one it is for)."""
        super().__init__(id=id)
        self.asked_for: str | None = None
        """The job the pane is about now (None: no such job shown)."""
        self._owed = False
        """A question is due but the pane was not seen: asked as soon as it is."""

    def on_mount(self) -> None:
        """Ask what is owed once the pane is seen again (another screen on top, ``i``)."""
        self.set_interval(1.0, self._catch_up, name="live-pane")

    def _catch_up(self) -> None:
        if self._owed:
            self.refresh_now()

    def wanted(self, job: JobRecord) -> bool:
        """The pane is for ``job`` (a subclass says which)."""
        raise NotImplementedError

    def key(self, job: JobRecord) -> Any:
        """What makes the pane ask again about the same job (default: nothing)."""
        return None

    async def ask(self, job_id: str) -> None:
        """Ask the back end about ``job_id`` and show the answer (a subclass says how)."""
        raise NotImplementedError

    def waiting_text(self) -> str:
        """What the pane says while the first answer is on its way."""
        return "asking…"

    def watch_view(self, old_view: DetailView, view: DetailView) -> None:
        """Another job (or the same one changed): show or hide, ask again when needed."""
        old, job = old_view.job, view.job
        wanted = job is not None and self.wanted(job)
        self.set_class(wanted, "-shown")
        job_id = job.id if wanted and job is not None else None
        again = (
            job is not None
            and old is not None
            and old.id == job.id
            and self.key(old) != self.key(job)
        )
        if job_id == self.asked_for and not again:
            return
        self.asked_for = job_id
        if job_id is not None:
            if not again:
                self.update(plain(self.waiting_text(), style="dim"))
            self.refresh_now()

    def refresh_now(self) -> None:
        """Ask about the shown job now if it is seen, else as soon as it is."""
        self._owed = self.asked_for is not None and not seen(self)
        if self.asked_for is not None and not self._owed:
            self.run_worker(
                self.ask(self.asked_for),
                group=f"pane-{self.id}",
                exclusive=True,
                exit_on_error=False,
            )
