"""The GPUs of the running job the details pane shows: utilisation and memory, live.

The queue binds the shown job to :attr:`GpuPane.view`; while that job runs and the pane is seen
(:mod:`~tao_slurm_tui.widgets.live_pane`), the pane asks for its figures (``fetch``: the back
end's ``gpu_report``, one bounded round trip) right away and then every ``every`` seconds, and
posts each report (:class:`GpuPane.Sampled`) so the queue can flag a job whose GPUs sit idle.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from rich.text import Text
from textual.message import Message

from tao_slurm_tui.core.gpu_usage import GpuReading, GpuReport, idle_words
from tao_slurm_tui.core.models import JobRecord, TaoStatus
from tao_slurm_tui.core.shown import shown, shown_text
from tao_slurm_tui.errors import TaoError
from tao_slurm_tui.widgets.live_pane import LivePane
from tao_slurm_tui.widgets.plain import plain

BAR = 10
"""Width of a utilisation bar (characters)."""

MAX_LINES = 16
"""GPUs listed one a line at most; more are summed up in one line."""

GpuFetch = Callable[[str], Awaitable[GpuReport]]
"""The back end's ``gpu_report``."""


def _bar(percent: int | None) -> str:
    if percent is None:
        return "·" * BAR
    filled = round(max(0, min(100, percent)) / 100 * BAR)
    return "█" * filled + "░" * (BAR - filled)


def _gib(mib: int | None) -> str:
    return "?" if mib is None else f"{mib / 1024:.1f}"


def _row(gpu: GpuReading) -> tuple[str, ...]:
    util = "n/a" if gpu.utilization is None else f"{gpu.utilization} %"
    memory = f"{_gib(gpu.memory_used)}/{_gib(gpu.memory_total)} GiB"
    return (shown(f"{gpu.node}:{gpu.index}"), _bar(gpu.utilization), util.rjust(5), memory)


def flag_idle(idle: dict[str, float], report: GpuReport) -> dict[str, float]:
    """``idle`` (seconds idle of each flagged job) with what ``report`` says of its job."""
    out = {job_id: seconds for job_id, seconds in idle.items() if job_id != report.job_id}
    if report.flagged and report.idle_seconds is not None:
        out[report.job_id] = report.idle_seconds
    return out


def render_gpus(report: GpuReport, every: float) -> Text:
    """The report as text: the model, one line per GPU (bar, percent, memory), the idle run.

    One ``Text`` (columns padded here): the pane sizes itself to it beside the details. Node
    and model names and nvidia-smi's complaints come from the cluster: shown as data.
    """
    sample = report.sample
    text = Text()
    text.append("GPUs  ", style="bold")
    models = sorted({shown(gpu.name) for gpu in sample.gpus})
    if models:
        text.append(f"{len(sample.gpus)}x {', '.join(models)} · ")
    text.append(f"every {every:g} s")
    rows = [_row(gpu) for gpu in sample.gpus[:MAX_LINES]]
    widths = [max((len(row[i]) for row in rows), default=0) for i in range(4)]
    for gpu, row in zip(sample.gpus, rows, strict=False):
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=True)]
        text.append("\n" + " ".join(cells).rstrip(), style="bold yellow" if gpu.idle else "")
    rest = sample.gpus[MAX_LINES:]
    if rest:
        known = [g.utilization for g in rest if g.utilization is not None]
        mean = f", {sum(known) / len(known):.0f} % on average" if known else ""
        text.append(f"\n… {len(rest)} more GPUs{mean}")
    if sample.problem:
        text.append(f"\nNo GPU figures: {shown_text(sample.problem)}.", style="italic")
    if report.idle_seconds is not None:
        words = f"Every GPU idle (under 5 %) for {idle_words(report.idle_seconds)}"
        if report.idle_limit is not None:
            words += f"; flagged after {idle_words(report.idle_limit)}"
        text.append(f"\n{words}.", style="bold yellow" if report.flagged else "yellow")
    return text


class GpuPane(LivePane):
    """GPU figures of the shown job while it runs (hidden otherwise)."""

    class Sampled(Message):
        """New GPU figures of a job (a fact: the queue flags idle jobs with it)."""

        def __init__(self, pane: GpuPane, report: GpuReport) -> None:
            """Create the message.

            Args:
                pane: The pane that asked.
                report: What came back.
            """
            super().__init__()
            self.pane = pane
            self.report = report

        @property
        def control(self) -> GpuPane:
            """The pane that asked."""
            return self.pane

    def __init__(self, fetch: GpuFetch, every: float, *, id: str | None = None) -> None:
        """Create the pane.

        Args:
            fetch: Samples a job's GPUs now (the back end's ``gpu_report``).
            every: Seconds between samples while the pane shows a running job.
            id: Widget id.
        """
        super().__init__(id=id)
        self.fetch = fetch
        self.every = every
        self.report: GpuReport | None = None
        """The latest figures of the shown job (None: none yet)."""

    def on_mount(self) -> None:
        """Sample again every ``every`` seconds while a running job is shown and seen."""
        super().on_mount()
        self.set_interval(self.every, self.refresh_now, name="gpu-pane")

    def wanted(self, job: JobRecord) -> bool:
        """A running job."""
        return job.status is TaoStatus.RUNNING

    def waiting_text(self) -> str:
        """Said until the first figures come."""
        return "GPUs  asking nvidia-smi in the job…"

    async def ask(self, job_id: str) -> None:
        """Sample the job's GPUs, show them and post them."""
        try:
            report = await self.fetch(job_id)
        except TaoError as error:
            if job_id == self.asked_for:
                self.update(plain(f"GPUs  not read: {error}", style="italic", overflow="fold"))
            return
        if job_id == self.asked_for:
            self.report = report
            self.update(render_gpus(report, self.every))
            self.post_message(self.Sampled(self, report))
