"""Why the pending job the details pane shows waits: what to do, priority, rank, fair share.

Asked once when the pane starts showing a pending job, and again when its pending reason changes
(``fetch``: the back end's ``why_pending``, one round trip; never in the poll).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from rich.text import Text

from tao_slurm_tui.core.models import JobRecord, TaoStatus
from tao_slurm_tui.core.shown import shown, shown_text
from tao_slurm_tui.core.start_estimate import short_time
from tao_slurm_tui.core.why_wait import FACTOR_WORDS, FACTORS, WaitReport
from tao_slurm_tui.errors import TaoError
from tao_slurm_tui.widgets.live_pane import LivePane
from tao_slurm_tui.widgets.plain import plain

WaitFetch = Callable[[str], Awaitable[WaitReport]]
"""The back end's ``why_pending``."""


def _percent(value: float | None) -> str:
    return "?" if value is None else f"{value:.0%}"


def render_wait(report: WaitReport) -> Text:
    """The report as text lines (plain text: reasons and names come from the cluster); one
    ``Text``, so the pane sizes itself to it beside the details."""
    text = Text()
    text.append("Why it waits  ", style="bold")
    text.append(f"sprio and sshare for job {shown(report.slurm_job_id)}")
    if report.advice:
        text.append(f"\nWhat you can do: {report.advice}")
    for row in report.priorities:
        # Spaces end a styled piece rather than start the next: SVG renderers drop the
        # leading spaces of a piece (the README screenshots).
        text.append(f"\nPriority {row.priority} ", style="bold")
        text.append(f"in {shown(row.partition)}")
        rank = report.ranks.get(row.partition)
        if rank is not None:
            text.append(f": {rank[0]} of {rank[1]} pending jobs ranked")
        factors = []
        for name in FACTORS:
            weight = report.weights.get(name)
            of = f"/{weight}" if weight else ""
            factors.append(f"{FACTOR_WORDS[name]} {row.factors.get(name, 0)}{of}")
        if row.nice:
            factors.append(f"nice {row.nice}")
        text.append("\nFactors: " + " · ".join(factors))
    if report.problem:
        text.append(f"\n{shown_text(report.problem)}", style="italic")
    share = report.fairshare
    if share is not None:
        factor = "?" if share.factor is None else f"{share.factor:.3f}"
        text.append(
            f"\nYour fair share in {shown(share.account)}: {factor} (1 is best); you used "
            f"{_percent(share.usage)} of its recent usage, your share is {_percent(share.share)}."
        )
    if report.est_start:
        text.append(f"\nSLURM's start estimate: {short_time(report.est_start)}")
    return text


class WaitPane(LivePane):
    """Why the shown job waits, while it is pending (hidden otherwise)."""

    def __init__(self, fetch: WaitFetch, *, id: str | None = None) -> None:
        """Create the pane.

        Args:
            fetch: Asks SLURM why a job waits (the back end's ``why_pending``).
            id: Widget id.
        """
        super().__init__(id=id)
        self.fetch = fetch
        self.report: WaitReport | None = None
        """The latest answer about the shown job (None: none yet)."""

    def wanted(self, job: JobRecord) -> bool:
        """A job pending in SLURM."""
        return job.status is TaoStatus.PENDING and job.slurm_job_id.isdigit()

    def key(self, job: JobRecord) -> Any:
        """A new pending reason (or SLURM job) is worth asking again."""
        return (job.slurm_job_id, job.reason)

    def waiting_text(self) -> str:
        """Said until the answer comes."""
        return "Why it waits  asking SLURM (sprio, sshare)…"

    async def ask(self, job_id: str) -> None:
        """Ask SLURM and show the answer."""
        try:
            report = await self.fetch(job_id)
        except TaoError as error:
            if job_id == self.asked_for:
                self.update(plain(f"Why it waits  not read: {error}", style="italic"))
            return
        if job_id == self.asked_for:
            self.report = report
            self.update(render_wait(report))
