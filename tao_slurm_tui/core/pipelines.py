"""TAO pipelines as the user sees them: steps of one pipeline grouped, its overall status and
the step in progress. Pure (no I/O); the CLI's ``status`` and the queue use it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tao_slurm_tui.core.models import JobRecord, TaoStatus
from tao_slurm_tui.core.slurm import explain_reason
from tao_slurm_tui.core.spec import STEP_FIELDS as THEN_KEYS

STEP_FIELDS = tuple(key for key in THEN_KEYS if key not in ("action", "env"))
"""The job-spec fields a ``[[then]]`` step may set (besides ``action`` and ``env``)."""


@dataclass(frozen=True)
class Pipeline:
    """The steps of one pipeline, in step order."""

    pipeline_id: str
    """The pipeline's id (its first step's id)."""
    steps: tuple[JobRecord, ...]

    @property
    def status(self) -> TaoStatus:
        """Complete when every step completed; Error/Canceled when a step ended so (the
        earliest such step decides); else the status of the step in progress."""
        for step in self.steps:
            if step.status in (TaoStatus.ERROR, TaoStatus.CANCELED):
                return step.status
        if all(step.status is TaoStatus.COMPLETE for step in self.steps):
            return TaoStatus.COMPLETE
        current = self.current
        if current.status is TaoStatus.COMPLETE:
            return TaoStatus.PENDING
        return current.status

    @property
    def current(self) -> JobRecord:
        """The step in progress: the first that has not completed (the last one when all did)."""
        for step in self.steps:
            if step.status is not TaoStatus.COMPLETE:
                return step
        return self.steps[-1]

    @property
    def position(self) -> str:
        """``2/3``: the step in progress and the number of steps."""
        return f"{self.steps.index(self.current) + 1}/{len(self.steps)}"

    @property
    def summary(self) -> str:
        """One phrase: ``step 2/3 evaluate running`` / ``3 steps complete`` / ``step 2/3
        failed``."""
        status = self.status
        if status is TaoStatus.COMPLETE:
            return f"all {len(self.steps)} steps complete"
        return f"step {self.position} {step_label(self.current)} {str(status).lower()}"


def step_label(job: JobRecord) -> str:
    """The step's action: its id without the pipeline's ``<id>-`` prefix (the first step: its
    id)."""
    prefix = f"{job.pipeline_id}-"
    if job.pipeline_step and job.id.startswith(prefix):
        return job.id[len(prefix) :]
    return job.id


def group(jobs: Sequence[JobRecord]) -> list[JobRecord | Pipeline]:
    """``jobs`` with the steps of each pipeline gathered into one :class:`Pipeline`, placed
    where its first listed step was; single jobs stay as they are, in their order."""
    steps: dict[str, list[JobRecord]] = {}
    for job in jobs:
        if job.pipeline_id:
            steps.setdefault(job.pipeline_id, []).append(job)
    out: list[JobRecord | Pipeline] = []
    placed: set[str] = set()
    for job in jobs:
        if not job.pipeline_id:
            out.append(job)
        elif job.pipeline_id not in placed:
            placed.add(job.pipeline_id)
            ordered = sorted(steps[job.pipeline_id], key=lambda j: j.pipeline_step)
            out.append(Pipeline(job.pipeline_id, tuple(ordered)))
    return out


def step_words(pipeline: Pipeline, step: JobRecord) -> str:
    """What ``step`` of ``pipeline`` is doing, in a researcher's words: ``done``, ``running``,
    ``waiting for step 1 to finish``, ``will never start: step 1 did not complete``, ..."""
    index = pipeline.steps.index(step)
    status = step.status
    if status is TaoStatus.COMPLETE:
        return "done"
    if status is TaoStatus.RUNNING:
        return "running"
    if status is TaoStatus.PAUSED:
        return "paused (suspended by SLURM)"
    if status is TaoStatus.ERROR:
        return "failed"
    if status is TaoStatus.CANCELED:
        return "canceled"
    reason = step.reason.strip("()")
    if reason.startswith("DependencyNeverSatisfied"):
        return f"will never start: step {index} did not complete"
    if reason.startswith("Dependency") and index:
        return f"waiting for step {index} to finish"
    if not step.submitted:
        return "not submitted yet"
    return f"queued: {explain_reason(reason)}" if reason else "queued"


def pipeline_spec(steps: Sequence[JobRecord]) -> dict[str, Any]:
    """The spec of a whole pipeline again (its first step's spec with a ``then`` table for
    every later step), from the steps' stored specs in step order: what a clone submits.

    A later step's table holds only what differs from the first step (``env``: the variables
    it adds or changes), as one would write it by hand.
    """
    ordered = sorted(steps, key=lambda job: job.pipeline_step)
    parent = {key: value for key, value in ordered[0].spec.items() if key != "then"}
    base_env = dict(parent.get("env") or {})
    then: list[dict[str, Any]] = []
    for step in ordered[1:]:
        table: dict[str, Any] = {"action": step_label(step)}
        for key in STEP_FIELDS:
            value = step.spec.get(key)
            if value is not None and (key == "command" or value != parent.get(key)):
                table[key] = value
        env = {
            key: value
            for key, value in dict(step.spec.get("env") or {}).items()
            if base_env.get(key) != value
        }
        if env:
            table["env"] = env
        then.append(table)
    if then:
        parent["then"] = then
    return parent
