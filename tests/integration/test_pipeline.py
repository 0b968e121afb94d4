"""TAO pipelines on the real sandbox: steps submitted at once with ``afterok``, run in order,
the previous step's results dir passed on; a failed step cancels the rest; a step retried
under a new SLURM id takes the next step's dependency along; cancelling the whole pipeline
leaves nothing in squeue."""

from __future__ import annotations

import asyncio
import itertools
import time
from datetime import datetime
from typing import Any

from tao_slurm_tui.core.layout import JobPaths
from tao_slurm_tui.core.models import JobRecord, TaoStatus
from tao_slurm_tui.core.spec import SpecDraft
from tests import sandbox
from tests.integration.monitor_helpers import IMAGE, PROFILE, Harness, status_line, unique
from tests.integration.submit_helpers import submit

SEEN = '"$TAO_API_RESULTS_DIR/$TAO_JOB_ID/seen"'
"""Where every step writes what it saw (its pipeline variables)."""


def record_and_succeed(extra: str = "") -> str:
    """A step command: write the pipeline variables to ``seen``, then report SUCCESS."""
    return (
        f'mkdir -p "$TAO_API_RESULTS_DIR/$TAO_JOB_ID"; {extra}'
        'printf "%s|%s|%s\\n" "$TAO_PIPELINE_ID" "$TAO_PIPELINE_STEP" '
        f'"${{TAO_PREVIOUS_RESULTS_DIR:-none}}" > {SEEN}; sleep 2; '
        + status_line("SUCCESS", "step done")
    )


def pipeline_spec(name: str, steps: list[dict[str, Any]], **spec: Any) -> SpecDraft:
    values: dict[str, Any] = {
        "name": name,
        "image": IMAGE,
        "command": record_and_succeed(),
        "num_gpus": 0,
        "cpus_per_task": 1,
        "time_hours": 0.25,
        "use_sqsh": False,
        "container_mounts": [],
        "then": steps,
    }
    values.update(spec)
    return SpecDraft(values)


def steps_of(h: Harness, pipeline_id: str) -> list[JobRecord]:
    return h.store.pipeline(PROFILE, pipeline_id)


def all_ended(h: Harness, pipeline_id: str) -> bool:
    return all(s.status.terminal for s in steps_of(h, pipeline_id))


async def tick_until_ended(h: Harness, pipeline_id: str, timeout: float = 420) -> list[JobRecord]:
    await h.tick_until(
        pipeline_id,
        lambda _job: all_ended(h, pipeline_id),
        timeout=timeout,
        interval=2,
    )
    return steps_of(h, pipeline_id)


async def sacct_times(h: Harness, slurm_id: str) -> tuple[datetime, datetime]:
    out = await h.conn.run(["sacct", "-X", "-n", "-P", "-j", slurm_id, "-o", "Start,End"])
    start, end = out.stdout.strip().splitlines()[-1].split("|")
    return datetime.fromisoformat(start), datetime.fromisoformat(end)


async def squeue_ids(h: Harness, ids: list[str]) -> str:
    out = await h.conn.run(["squeue", "-h", "-j", ",".join(ids), "-o", "%i %T %r"])
    return out.stdout.strip()


async def squeue_settled(h: Harness, ids: list[str], timeout: float = 60) -> str:
    """What squeue still lists of ``ids`` once no job is COMPLETING any more (a cancelled
    running job passes through it while its step is killed): '' when nothing is left."""
    deadline = time.monotonic() + timeout
    while True:
        listed = await squeue_ids(h, ids)
        if "COMPLETING" not in listed or time.monotonic() > deadline:
            return listed
        await asyncio.sleep(1)


async def test_three_steps_run_in_order_to_complete(h: Harness) -> None:
    name = unique("pipe")
    spec = pipeline_spec(
        name,
        [
            {"action": "evaluate", "command": record_and_succeed()},
            {"action": "export", "command": record_and_succeed(), "cpus_per_task": 2},
        ],
    )
    result = await submit(h.submitter, spec)
    ids = [result.id, *(s.id for s in result.steps)]
    assert ids == [name, f"{name}-evaluate", f"{name}-export"]
    # All three are in SLURM at once; the later ones wait for the one before them.
    first = h.store.require(PROFILE, name)
    for before, later in itertools.pairwise(ids):
        sid = h.store.require(PROFILE, before).slurm_job_id
        staged = JobPaths(sandbox.RESULTS, later).sbatch
        script = (await h.conn.run(["cat", staged], check=True)).stdout
        assert f"#SBATCH --dependency=afterok:{sid}\n" in script

    steps = await tick_until_ended(h, name)
    assert [s.status for s in steps] == [TaoStatus.COMPLETE] * 3, [s.status_json() for s in steps]
    assert [s.pipeline_step for s in steps] == [0, 1, 2]
    times = [await sacct_times(h, s.slurm_job_id) for s in steps]
    assert times[0][1] <= times[1][0] and times[1][1] <= times[2][0], times
    # Every step saw the pipeline and, from the second on, the previous step's results dir.
    for index, step in enumerate(steps):
        seen = JobPaths(sandbox.RESULTS, step.id).results_dir + "/seen"
        text = (await h.conn.run(["cat", seen], check=True)).stdout.strip()
        previous = JobPaths(sandbox.RESULTS, steps[index - 1].id).results_dir if index else "none"
        assert text == f"{name}|{index + 1}|{previous}"
    assert first.status_json()["pipeline_step"] == 1


async def test_a_failing_middle_step_cancels_the_last(h: Harness) -> None:
    name = unique("pipe-fail")
    spec = pipeline_spec(
        name,
        [
            {"action": "evaluate", "command": "echo 'evaluation broke' >&2; exit 1"},
            {"action": "export", "command": record_and_succeed()},
        ],
    )
    await submit(h.submitter, spec)
    steps = await tick_until_ended(h, name)
    assert [s.status for s in steps] == [TaoStatus.COMPLETE, TaoStatus.ERROR, TaoStatus.CANCELED]
    last = steps[2]
    assert "the previous step failed" in last.message, last.message
    assert f"{name}-evaluate" in last.message
    # Nothing left pending in SLURM (no DependencyNeverSatisfied leftover).
    assert await squeue_settled(h, [last.slurm_job_id]) == ""
    assert any(e.kind == "cancel" for e in h.store.events(PROFILE, last.id))


async def test_a_step_retried_after_an_infrastructure_failure_keeps_the_pipeline(
    h: Harness,
) -> None:
    name = unique("pipe-infra")
    flag = '"$TAO_API_RESULTS_DIR/$TAO_JOB_ID/failed-once"'
    flaky = (
        f'mkdir -p "$TAO_API_RESULTS_DIR/$TAO_JOB_ID"; if [ ! -e {flag} ]; then touch {flag}; '
        "echo 'NCCL error in: socket.cc:540, unhandled system error' >&2; exit 1; fi; "
        + record_and_succeed()
    )
    # Without the batch script's own requeue the monitor retries the step as a NEW SLURM job,
    # which the last step's afterok does not know about: the monitor re-points it.
    spec = pipeline_spec(
        name,
        [
            {"action": "evaluate", "command": flaky},
            {"action": "export", "command": record_and_succeed()},
        ],
        use_requeue=False,
    )
    await submit(h.submitter, spec)
    steps = await tick_until_ended(h, name, timeout=540)
    assert [s.status for s in steps] == [TaoStatus.COMPLETE] * 3, [s.status_json() for s in steps]
    middle, last = steps[1], steps[2]
    assert len(middle.attempts) == 2 and middle.attempts[0].state == "FAILED"
    retried = middle.attempts[1].slurm_job_id
    moved = [e.text for e in h.store.events(PROFILE, last.id) if e.kind == "dependency"]
    assert moved and moved[0].endswith(f"afterok:{retried}"), moved
    retry_end = (await sacct_times(h, retried))[1]
    assert retry_end <= (await sacct_times(h, last.slurm_job_id))[0]
    seen = JobPaths(sandbox.RESULTS, last.id).results_dir + "/seen"
    text = (await h.conn.run(["cat", seen], check=True)).stdout.strip()
    assert text == f"{name}|3|{JobPaths(sandbox.RESULTS, middle.id).results_dir}"


async def test_a_step_the_batch_script_requeues_keeps_the_pipeline(h: Harness) -> None:
    name = unique("pipe-requeue")
    # The first run of the middle step hits an infrastructure failure; with use_requeue (the
    # default) its batch script requeues it under the SAME SLURM id, and the last step's
    # afterok survives that: no re-point needed.
    flaky = (
        'if [ "${SLURM_RESTART_COUNT:-0}" = 0 ]; then '
        "echo 'NCCL error in: socket.cc:540, unhandled system error' >&2; exit 1; fi; "
        + record_and_succeed()
    )
    spec = pipeline_spec(
        name,
        [
            {"action": "evaluate", "command": flaky},
            {"action": "export", "command": record_and_succeed()},
        ],
    )
    await submit(h.submitter, spec)
    steps = await tick_until_ended(h, name, timeout=540)
    assert [s.status for s in steps] == [TaoStatus.COMPLETE] * 3, [s.status_json() for s in steps]
    middle, last = steps[1], steps[2]
    assert len(middle.attempts) == 1 and middle.attempts[0].restarts == 1
    assert not [e for e in h.store.events(PROFILE, last.id) if e.kind == "dependency"]
    middle_end = (await sacct_times(h, middle.slurm_job_id))[1]
    assert middle_end <= (await sacct_times(h, last.slurm_job_id))[0]


async def submit_long_pipeline(h: Harness, kind: str) -> str:
    """Submit a 3-step pipeline whose first step runs for minutes; its name."""
    name = unique(kind)
    steps = [{"action": a, "command": record_and_succeed()} for a in ("evaluate", "export")]
    await submit(h.submitter, pipeline_spec(name, steps, command="sleep 300"))
    return name


async def test_cancel_the_whole_pipeline_leaves_nothing_in_squeue(h: Harness) -> None:
    name = await submit_long_pipeline(h, "pipe-cancel")
    steps = steps_of(h, name)
    ids = [s.slurm_job_id for s in steps]
    await h.tick()
    canceled = await h.monitor.cancel_pipeline(name)
    assert [s.status for s in canceled] == [TaoStatus.CANCELED] * 3
    assert await squeue_settled(h, ids) == ""


async def test_cancel_one_step_cancels_the_steps_after_it(h: Harness) -> None:
    name = await submit_long_pipeline(h, "pipe-step")
    await h.monitor.cancel(f"{name}-evaluate")
    steps = steps_of(h, name)
    assert steps[0].status is not TaoStatus.CANCELED
    assert [s.status for s in steps[1:]] == [TaoStatus.CANCELED] * 2
    assert "the previous step was canceled" in steps[2].message
    assert await squeue_settled(h, [s.slurm_job_id for s in steps[1:]]) == ""
    await h.monitor.cancel(name)
