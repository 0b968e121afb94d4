"""One training's runs as the screens and ``status --json`` show them: the ledger, the KPI series,
the latest and best values, and the forecast of the running slice.

Pure: no I/O (the back end loads the ledger and the points from the state DB).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tao_slurm_tui.core.forecast import Forecast, SliceClock, forecast
from tao_slurm_tui.core.kpi_series import EpochPoint, Series, run_starts, series
from tao_slurm_tui.core.models import JobRecord, TaoStatus
from tao_slurm_tui.core.runs import RunLedger
from tao_slurm_tui.core.slurm_text import parse_duration


def tao_table(job: JobRecord) -> dict[str, Any]:
    """The job's ``[tao]`` table as stored (empty for other jobs)."""
    table = job.spec.get("tao") if isinstance(job.spec, dict) else None
    return table if isinstance(table, dict) else {}


def is_training(job: JobRecord) -> bool:
    """A TAO training whose runs are followed: a ``[tao]`` train job, a plan that names where
    it checkpoints, or runs were read for it."""
    plan = job.plan if isinstance(job.plan, dict) else {}
    return (
        tao_table(job).get("action") == "train"
        or bool(plan.get("checkpoint_dir"))
        or bool(job.progress.runs)
    )


def slice_clock(job: JobRecord) -> SliceClock | None:
    """Where the job's current run stands in its slice, from SLURM's elapsed time of the run and
    the plan's timeout (None when the job is not running or either is unknown)."""
    attempt = job.latest
    if attempt is None or job.status is not TaoStatus.RUNNING:
        return None
    into = parse_duration(attempt.elapsed) if attempt.elapsed else None
    plan = job.plan if isinstance(job.plan, dict) else {}
    minutes = plan.get("timeout_minutes")
    if not isinstance(minutes, int):
        hours = job.spec.get("timeout_hours")
        minutes = int(float(hours) * 60) if isinstance(hours, (int, float)) else None
    if into is None or not minutes:
        return None
    requeue = bool(plan.get("use_requeue", job.spec.get("use_requeue", True)))
    cap = plan.get("max_timeout_requeues")
    left = max(0, cap - attempt.timeout_restarts) if isinstance(cap, int) else None
    return SliceClock(
        into_run=float(into), timeout=minutes * 60.0, requeue=requeue, timeouts_left=left
    )


@dataclass(frozen=True)
class JobRuns:
    """Everything known about one training's runs."""

    job_id: str
    ledger: RunLedger = field(default_factory=RunLedger)
    points: tuple[EpochPoint, ...] = ()
    """KPIs per epoch of every run, in training order."""
    forecast: Forecast | None = None
    """The running slice's forecast (None when not running, or too early to tell)."""

    @classmethod
    def of(cls, job: JobRecord, ledger: RunLedger, points: list[EpochPoint], now: float) -> JobRuns:
        """The view of ``job`` at ``now`` (this machine's clock)."""
        clock = slice_clock(job)
        ahead = forecast(ledger, clock, now) if clock is not None else None
        return cls(job.id, ledger, tuple(points), ahead)

    @property
    def series(self) -> list[Series]:
        """Every KPI over the epochs (losses first)."""
        return series(self.points)

    @property
    def resumes(self) -> list[tuple[int, int]]:
        """``(run, 1-based epoch)`` where each run after the first took up the training."""
        return run_starts(self.points)

    def lines(self) -> list[tuple[str, str]]:
        """``(label, sentence)`` of what a researcher reads first: the run, the forecast, a
        run that restarted without progress, why the job is not requeued again."""
        ledger, out = self.ledger, []
        run = ledger.run
        if run is not None:
            text = f"{run.number}"
            if run.number > 1 and run.start is not None:
                text += f", from epoch {run.start}"
            interval = ledger.checkpoint_interval
            if interval:
                text += f" · checkpoint every {interval} epoch{'s' if interval != 1 else ''}"
            out.append(("Run", text))
        if self.forecast is not None:
            out.append(("Forecast", self.forecast.text))
        if ledger.stop:
            out.append(("Stopped", ledger.stop))
        elif ledger.problem:
            out.append(("Resume", ledger.problem))
        return out

    def latest(self) -> dict[str, float]:
        """The last value of every KPI."""
        return {s.name: s.last for s in self.series}

    def best(self) -> dict[str, float]:
        """The best value of every KPI (lowest loss, highest accuracy or mAP)."""
        return {s.name: s.best() for s in self.series}

    def to_json(self) -> dict[str, Any]:
        """``status --json``'s ``runs`` and ``compare --json``'s per-job data."""
        return {
            "runs": [r.to_json() for r in self.ledger.runs],
            "no_progress": self.ledger.no_progress,
            "problem": self.ledger.problem,
            "stop": self.ledger.stop,
            "checkpoint_interval": self.ledger.checkpoint_interval,
            "kpi_latest": self.latest(),
            "kpi_best": self.best(),
            "forecast": self.forecast.to_json() if self.forecast else None,
        }
