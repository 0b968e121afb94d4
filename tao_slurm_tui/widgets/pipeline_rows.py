"""Rows of the queue for TAO pipelines: one parent row per pipeline (expand/collapse), its steps
indented under it.

The queue table shows :class:`~tao_slurm_tui.core.models.JobRecord` rows keyed by id. A pipeline
becomes a :class:`PipelineRow` (key ``pipeline:<id>``: the step in progress's state, times and
progress, the pipeline's status) followed, when expanded, by one :class:`StepRow` per step (key:
the step's own job id, so logs, details and cancel act on the step). :func:`group_key` keeps a
pipeline's rows together, in step order, whatever column the table is sorted by.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, fields
from typing import Any

from tao_slurm_tui.core.models import JobRecord
from tao_slurm_tui.core.pipelines import Pipeline, group, step_label

PIPELINE_KEY = "pipeline:"
"""Prefix of a pipeline row's key (job ids cannot contain ':')."""


@dataclass
class PipelineRow(JobRecord):
    """A pipeline's parent row: its step in progress, under the pipeline's name and status."""

    pipeline: Pipeline | None = None
    expanded: bool = True


@dataclass
class StepRow(JobRecord):
    """One step of a pipeline, shown under its parent row."""

    count: int = 0
    """Steps in the pipeline."""
    parent_key: str = ""
    """The parent row's key."""


def _copy_into(cls: type[JobRecord], job: JobRecord, **more: Any) -> Any:
    values = {f.name: getattr(job, f.name) for f in fields(JobRecord)}
    return cls(**values, **more)


def pipeline_row(pipeline: Pipeline, expanded: bool) -> PipelineRow:
    """The parent row of ``pipeline``."""
    current = pipeline.current
    row: PipelineRow = _copy_into(PipelineRow, current, pipeline=pipeline, expanded=expanded)
    row.id = f"{PIPELINE_KEY}{pipeline.pipeline_id}"
    row.status = pipeline.status
    row.message = pipeline.summary
    row.created_at = max(step.created_at for step in pipeline.steps)
    return row


def step_row(step: JobRecord, count: int, parent_key: str) -> StepRow:
    """The row of one step."""
    row: StepRow = _copy_into(StepRow, step, count=count, parent_key=parent_key)
    return row


def queue_rows(jobs: Iterable[JobRecord], collapsed: AbstractSet[str]) -> list[JobRecord]:
    """``jobs`` as queue rows: single jobs as they are; each pipeline as its parent row and,
    unless its id is in ``collapsed``, its steps."""
    rows: list[JobRecord] = []
    for item in group(list(jobs)):
        if isinstance(item, JobRecord):
            rows.append(item)
            continue
        expanded = item.pipeline_id not in collapsed
        parent = pipeline_row(item, expanded)
        rows.append(parent)
        if expanded:
            rows.extend(step_row(step, len(item.steps), parent.id) for step in item.steps)
    return rows


def row_label(job: JobRecord) -> str:
    """The Job column: ``▾ rtdetr  2/3 evaluate`` for a pipeline, ``  ├ 2 evaluate`` for a
    step (``└`` for the last), the id for a single job."""
    if isinstance(job, PipelineRow) and job.pipeline is not None:
        arrow = "▾" if job.expanded else "▸"
        pipeline = job.pipeline
        return (
            f"{arrow} {pipeline.pipeline_id} · {pipeline.position} {step_label(pipeline.current)}"
        )
    if isinstance(job, StepRow):
        branch = "└" if job.pipeline_step == job.count - 1 else "├"
        return f"  {branch} {job.pipeline_step + 1} {step_label(job)}"
    return job.id


def row_order(
    rows: Mapping[str, JobRecord], value: Callable[[JobRecord], Any], *, reverse: bool
) -> list[str]:
    """Row keys in display order: top-level rows (single jobs, pipelines) sorted by ``value``
    (then key), each pipeline's steps right under it in step order, whatever the direction."""
    top = [key for key, job in rows.items() if not isinstance(job, StepRow)]
    top.sort(key=lambda key: (value(rows[key]), key), reverse=reverse)
    children: dict[str, list[StepRow]] = {}
    for job in rows.values():
        if isinstance(job, StepRow):
            children.setdefault(job.parent_key, []).append(job)
    order: list[str] = []
    for key in top:
        order.append(key)
        order.extend(s.id for s in sorted(children.get(key, []), key=lambda s: s.pipeline_step))
    return order


def pipeline_id_of(row_key: str) -> str:
    """The pipeline id of a parent row's key ('' for any other row)."""
    return row_key[len(PIPELINE_KEY) :] if row_key.startswith(PIPELINE_KEY) else ""
