"""The composer's slice check of a TAO training (issue 21): once a similar run exists (the same
network on as many nodes and GPUs), its seconds per epoch tell whether ``checkpoint_interval``
epochs fit in one wall-time slice (``timeout_hours``). When they do not and the training is
longer than a slice, every requeue would restart from the same checkpoint: say so before the
job is submitted, with the interval that fits.

Pure: no I/O (the back end puts the similar runs into the resolve context).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tao_slurm_tui.core.launch import LaunchPlan
from tao_slurm_tui.core.models import JobRecord
from tao_slurm_tui.core.runs import experiment_facts, human_duration
from tao_slurm_tui.core.spec.model import JobSpec

RunShape = tuple[str, int, int]
"""(network, nodes, GPUs per node)."""


@dataclass(frozen=True)
class SimilarRun:
    """What a finished or running training of one shape says about its epochs."""

    job_id: str
    epoch_seconds: float


def shape_of(job: JobRecord) -> RunShape | None:
    """A stored job's network, nodes and GPUs per node (None: not a TAO job)."""
    spec: dict[str, Any] = job.spec if isinstance(job.spec, dict) else {}
    tao: dict[str, Any] = spec["tao"] if isinstance(spec.get("tao"), dict) else {}
    network = str(tao.get("network") or "") or str(spec.get("command") or "").split(" ")[0]
    plan: dict[str, Any] = job.plan if isinstance(job.plan, dict) else {}
    shape: dict[str, Any] = plan["shape"] if isinstance(plan.get("shape"), dict) else {}
    nodes = shape.get("nodes", spec.get("num_nodes"))
    gpus = shape.get("gpus_per_node", spec.get("num_gpus"))
    if not network or not isinstance(nodes, int) or not isinstance(gpus, int):
        return None
    return network, nodes, gpus


def similar_runs(jobs: Iterable[JobRecord]) -> dict[RunShape, SimilarRun]:
    """The latest training of each shape whose seconds per epoch are known."""
    found: dict[RunShape, tuple[float, SimilarRun]] = {}
    for job in jobs:
        seconds = job.progress.runs.get("epoch_seconds") if job.progress.runs else None
        shape = shape_of(job)
        if shape is None or not isinstance(seconds, (int, float)) or seconds <= 0:
            continue
        if shape not in found or job.updated_at >= found[shape][0]:
            found[shape] = (job.updated_at, SimilarRun(job.id, float(seconds)))
    return {shape: run for shape, (_when, run) in found.items()}


def checkpoint_problem(
    spec: JobSpec, plan: LaunchPlan | None, similar: Mapping[RunShape, Any]
) -> str:
    """'' when a TAO training's checkpoint interval fits in a slice by a similar run's epochs
    (or nothing is known), else the sentence saying what to change."""
    tao = spec.tao
    if tao is None or tao.action != "train" or plan is None or not similar:
        return ""
    shape = plan.shape
    found = similar.get((tao.network, shape.nodes, shape.gpus_per_node))
    if not isinstance(found, SimilarRun):
        return ""
    facts = experiment_facts(tao.experiment) if tao.experiment else None
    interval = facts.checkpoint_interval if facts else None
    seconds, slice_seconds = found.epoch_seconds, plan.timeout_minutes * 60.0
    epochs = facts.num_epochs if facts else None
    if not interval or interval * seconds <= slice_seconds:
        return ""
    if epochs is not None and epochs * seconds <= slice_seconds:
        return ""  # the whole training fits in one slice: no requeue needed
    fits = math.floor(slice_seconds / seconds)
    what = (
        f"set train.checkpoint_interval to {fits} or less, or raise timeout_hours"
        if fits >= 1
        else "one epoch is longer than the slice: raise timeout_hours (and time_hours)"
    )
    return (
        f"A similar run ({found.job_id}: {tao.network} on {shape.nodes} node(s) with "
        f"{shape.gpus_per_node} GPUs each) took ~{human_duration(seconds)} an epoch, so a "
        f"checkpoint every {interval} epochs (~{human_duration(interval * seconds)}) does "
        "not fit in the "
        f"{human_duration(slice_seconds)} slice (timeout_hours): every requeue would restart "
        f"from the same checkpoint; {what}."
    )
