"""The contract between the fake cluster and a real one: the same scenarios, the same outcomes.

Each scenario drives a :class:`~tao_slurm_tui.services.cluster.ClusterBackend` the way the
fronts do and returns what a user would see of it (statuses, stages, sentences), with the
names and SLURM ids that differ between clusters put back as ``{job}``, ``{id}``,
``{profile}``. ``tests/unit/test_contract_fake.py`` runs them on the fake cluster (the TUI and
demo's world), ``tests/integration/test_contract_sandbox.py`` on the sandbox cluster; both
assert the same :data:`EXPECTED`. A difference is a bug of the fake (or a finding about SLURM).
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from typing import Any

from tao_slurm_tui.core.models import JobRecord
from tao_slurm_tui.core.spec import SpecDraft
from tao_slurm_tui.core.spec.problems import Refused
from tao_slurm_tui.errors import BadInput, TaoError
from tao_slurm_tui.services.backend import SubmitStage
from tao_slurm_tui.services.cluster import ClusterBackend

Outcome = dict[str, Any]

IMAGE = "nvcr.io/nvidia/tao/tao-toolkit:6.26.3-pyt"


def spec(name: str, **over: Any) -> dict[str, Any]:
    """A small job every cluster takes: no GPU, no SQSH, no mounts, a quarter of an hour."""
    values: dict[str, Any] = {
        "name": name,
        "image": IMAGE,
        "command": "sleep 600",
        "num_nodes": 1,
        "num_gpus": 0,
        "cpus_per_task": 1,
        "time_hours": 0.25,
        "timeout_hours": 0.2,
        "use_sqsh": False,
        "container_mounts": [],
    }
    values.update(over)
    return values


def unique(prefix: str) -> str:
    """A job name no earlier run used (the sandbox keeps its history)."""
    return f"{prefix}-{secrets.token_hex(3)}"


def _words(text: str, job: str = "", slurm_id: str = "", profile: str = "") -> str:
    for value, mark in ((job, "{job}"), (f"'{profile}'", "'{profile}'"), (slurm_id, "{id}")):
        if value and value != "''":
            text = text.replace(value, mark)
    return text


async def _submit(
    backend: ClusterBackend, data: dict[str, Any], stages: list[str] | None = None
) -> tuple[list[str], Any]:
    stages = [] if stages is None else stages

    def progress(stage: SubmitStage, detail: str) -> None:
        if stage.value not in stages:
            stages.append(stage.value)

    # As the CLI's submit does: the cluster's limits, then one resolve, then the submission.
    await backend.partition_limits()
    job = backend.resolve(SpecDraft(data, source="contract.toml")).require()
    result = await backend.submit(job, progress)
    return stages, result


async def _settle(backend: ClusterBackend) -> list[JobRecord]:
    """Poll until the accounting follow-up brings nothing new (what the queue shows then)."""
    jobs = await backend.refresh()
    for _ in range(5):
        if not await backend.followup():
            break
        jobs = await backend.refresh()
    return jobs


async def submit_and_cancel(backend: ClusterBackend) -> Outcome:
    """Submit one job, see it queued, cancel it, cancel it again."""
    name = unique("contract")
    stages, result = await _submit(backend, spec(name))
    queued = {j.id: j for j in await backend.refresh()}[name]
    canceled = await backend.cancel(name)
    again = await backend.cancel(name)
    after = {j.id: j for j in await _settle(backend)}[name]
    return {
        "stages": stages,
        "slurm id is a number": result.slurm_job_id.isdigit(),
        "queued": str(queued.status) in ("Pending", "Running"),
        "canceled": (str(canceled.status), canceled.message),
        "again": (str(again.status), again.message),
        "after a poll": (str(after.status), after.slurm_state),
    }


async def pipeline_cancel(backend: ClusterBackend) -> Outcome:
    """Submit a three-step pipeline and cancel all of it in one go."""
    name = unique("contract-pipe")
    then = [
        {"action": "evaluate", "command": "sleep 60"},
        {"action": "export", "command": "sleep 60"},
    ]
    _, result = await _submit(backend, spec(name, then=then))
    steps = await backend.cancel_pipeline(name)
    after = {j.id: j for j in await _settle(backend)}
    return {
        "steps submitted": 1 + len(result.steps),
        "steps": [(j.id.replace(name, "{job}"), str(j.status), j.message) for j in steps],
        "after a poll": sorted(str(after[j.id].status) for j in steps),
    }


async def name_collision(backend: ClusterBackend) -> Outcome:
    """Submitting a name this workstation already submitted: refused, in words."""
    name = unique("contract-twice")
    _, first = await _submit(backend, spec(name))
    try:
        await _submit(backend, spec(name, command="sleep 5"))
        refusal = ""
    except BadInput as exc:
        refusal = _words(str(exc), name, first.slurm_job_id, backend.profile_name)
    await backend.cancel(name)
    return {"refusal": refusal}


async def unknown_job(backend: ClusterBackend) -> Outcome:
    """Cancelling a job id nobody submitted: one sentence."""
    try:
        await backend.cancel("no-such-job")
    except TaoError as exc:
        return {
            "error": type(exc).__name__,
            "words": _words(str(exc), profile=backend.profile_name),
        }
    return {"error": ""}


async def refused_before_staging(backend: ClusterBackend) -> Outcome:
    """What the cluster cannot do is refused before anything is written to it, with the field
    to change: an unknown partition, more CPUs than any node has, a missing mount source."""
    outcome: Outcome = {}
    # Mounts are Pyxis's: the sandbox's contract profile runs bare srun.
    pyxis = backend.profile.model_copy(update={"container_runtime": "pyxis"})
    backend.save_profile(backend.profile_name, pyxis)
    cases = {
        "partition": {"partition": "no-such-partition"},
        "cpus": {"num_gpus": 1, "cpus_per_task": 4096},
        "mount": {"container_mounts": ["/no-such-mount-source"]},
    }
    for case, over in cases.items():
        stages: list[str] = []
        try:
            await _submit(backend, spec(unique("contract-refused"), **over), stages)
            fields: list[str] = []
        except Refused as exc:
            fields = [p.field for p in exc.problems]
        # "checking inputs" is the one round trip of test -e: nothing staged after it.
        outcome[case] = (fields, [s for s in stages if s != "checking inputs"])
    return outcome


SCENARIOS: dict[str, Callable[[ClusterBackend], Awaitable[Outcome]]] = {
    "submit and cancel": submit_and_cancel,
    "refused before staging": refused_before_staging,
    "pipeline cancel": pipeline_cancel,
    "name collision": name_collision,
    "unknown job": unknown_job,
}

EXPECTED: dict[str, Outcome] = {
    "refused before staging": {
        "partition": (["partition"], []),
        "cpus": (["cpus_per_task"], []),
        "mount": (["container_mounts"], []),
    },
    "submit and cancel": {
        "stages": ["checking inputs", "staging", "sbatch", "done"],
        "slurm id is a number": True,
        "queued": True,
        "canceled": ("Canceled", "Canceled by the user."),
        "again": ("Canceled", "Canceled by the user."),
        "after a poll": ("Canceled", "CANCELLED"),
    },
    "pipeline cancel": {
        "steps submitted": 3,
        "steps": [
            ("{job}", "Canceled", "Canceled by the user (the whole pipeline)."),
            ("{job}-evaluate", "Canceled", "Canceled by the user (the whole pipeline)."),
            ("{job}-export", "Canceled", "Canceled by the user (the whole pipeline)."),
        ],
        "after a poll": ["Canceled", "Canceled", "Canceled"],
    },
    "name collision": {
        "refusal": "A job named '{job}' was already submitted in profile '{profile}' (SLURM job "
        "{id}); give the new job another name."
    },
    "unknown job": {
        "error": "BadInput",
        "words": "There is no job 'no-such-job' in profile '{profile}'; run 'tao-slurm-tui "
        "status' to list the jobs.",
    },
}
