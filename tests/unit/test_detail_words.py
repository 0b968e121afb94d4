"""The details pane's words: no Python or SLURM placeholder reaches the screen (issue 26)."""

from __future__ import annotations

import pytest
from rich.console import Console

from tao_slurm_tui.core.models import Attempt, JobRecord, TaoStatus
from tao_slurm_tui.widgets.job_detail import render_detail


def pending(reason: str) -> JobRecord:
    job = JobRecord(id="j", profile="p", status=TaoStatus.PENDING, slurm_state="PENDING")
    job.attempts.append(Attempt(1, slurm_job_id="7", state="PENDING", reason=reason))
    return job


def shown(job: JobRecord) -> str:
    console = Console(width=200, record=True, color_system=None)
    console.print(render_detail(job))
    return console.export_text()


@pytest.mark.parametrize("reason", ["None", "(None)"])
def test_a_job_squeue_has_not_looked_at_says_so_without_none(reason: str) -> None:
    """The issue's "waiting for the scheduler's first look at the job (None)"."""
    text = shown(pending(reason))
    assert "Pending: waiting for the scheduler's first look at the job\n" in text
    assert "None" not in text


def test_a_known_reason_keeps_slurms_code_after_the_words() -> None:
    text = shown(pending("(Resources)"))
    assert "Pending: waiting for nodes/GPUs to become free (Resources)" in text
