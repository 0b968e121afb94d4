"""A compute node powered off under a running job, as SLURM really sees it (REAL-CLUSTER §1).

``scripts/sandbox-cluster node-down NODE`` kills every process of the node's namespace (slurmd,
slurmstepd, the job): SLURM marks it not responding, then DOWN, and the job NODE_FAILs. A
requeueable job is requeued by SLURM under the same id and must not land on the dead node; a
``--no-requeue`` job is retried by the client under a new SLURM id with ``--exclude``. Both
must complete, and the attempt history must name the node.

These tests power a node off, which kills whatever else runs there, so they are ``serial``:
``make test`` runs them alone after the parallel suite. The node is powered on again in a
``finally``. Set TAO_SKIP_NODE_DOWN=1 to skip them.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time

import pytest

from tao_slurm_tui.core.layout import JobPaths
from tao_slurm_tui.core.models import JobRecord, TaoStatus
from tests import sandbox
from tests.integration.monitor_helpers import PROFILE, Harness, status_line, unique

pytestmark = [pytest.mark.slow, pytest.mark.serial]


@pytest.fixture(autouse=True)
def _may_power_off_a_node() -> None:
    if os.environ.get("TAO_SKIP_NODE_DOWN"):
        pytest.skip("TAO_SKIP_NODE_DOWN is set")
    if os.geteuid() != 0:
        pytest.skip("needs root to power a sandbox node off")


def script(*args: str) -> None:
    result = subprocess.run(
        [str(sandbox.SCRIPT), *args], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def node_of(slurm_id: str) -> str:
    return subprocess.run(
        ["squeue", "-h", "-j", slurm_id, "-o", "%N"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout.strip()


def ran_on(slurm_id: str) -> list[str]:
    """Nodes of every run of the SLURM job (sacct -D: requeued runs too), oldest first."""
    rows = subprocess.run(
        ["sacct", "-X", "-D", "-n", "-P", "-j", slurm_id, "--format=State,NodeList"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout.split()
    return [r.split("|")[1] for r in rows if "|" in r]


def command() -> str:
    # The first run waits to be killed with its node; the run after the failure completes.
    marker = '"$TAO_API_RESULTS_DIR/$TAO_JOB_ID/first-run"'
    return (
        f'mkdir -p "$TAO_API_RESULTS_DIR/$TAO_JOB_ID"; echo "run on $(hostname)"; '
        f"if [ ! -e {marker} ]; then touch {marker}; sleep 300; fi; "
        f"{status_line('SUCCESS', 'ran after the power-off')}"
    )


async def power_off_under(h: Harness, name: str, *, use_requeue: bool) -> tuple[JobRecord, str]:
    job = await h.submit(name, command(), use_requeue=use_requeue)
    await h.tick_until(name, lambda j: j.status is TaoStatus.RUNNING)
    node = node_of(job.slurm_job_id)
    assert node.startswith("tao-n"), node
    # RUNNING comes before the command starts (Pyxis imports the image first): power the node
    # off only once the first run has left its marker, or the retry would be a "first" run too.
    marker = JobPaths(sandbox.RESULTS, name).results_dir + "/first-run"
    deadline = time.monotonic() + 180
    while not (await h.conn.run(["test", "-e", marker])).ok:
        assert time.monotonic() < deadline, f"the first run never started its command on {node}"
        await asyncio.sleep(1)
    try:
        script("node-down", node)
        job = await h.tick_until(
            name, lambda j: j.retries > 0 or j.status.terminal, timeout=150, interval=2
        )
        job = await h.tick_until(name, lambda j: j.status.terminal, timeout=240, interval=2)
    finally:
        script("node-up", node)
    return job, node


async def test_requeueable_job_is_requeued_off_the_dead_node(h: Harness) -> None:
    name = unique("poweroff-rq")
    job, node = await power_off_under(h, name, use_requeue=True)
    assert job.status is TaoStatus.COMPLETE, job.status_json()
    assert job.message == "ran after the power-off"
    # SLURM requeued it under the same id; the second run was elsewhere.
    assert len(job.attempts) == 1 and job.attempts[0].restarts >= 1
    runs = ran_on(job.slurm_job_id)
    assert runs[0] == node and node not in runs[-1], runs
    events = [e.text for e in h.store.events(PROFILE, name) if e.kind == "requeued"]
    assert any(f"after it ran on {node}" in text for text in events), events


async def test_no_requeue_job_is_retried_by_the_client_with_exclude(h: Harness) -> None:
    name = unique("poweroff-nrq")
    job, node = await power_off_under(h, name, use_requeue=False)
    assert job.status is TaoStatus.COMPLETE, job.status_json()
    assert len(job.attempts) == 2 and job.retries == 1
    first, second = job.attempts
    assert first.state == "NODE_FAIL" and first.nodes == node
    assert "NODE_FAIL" in first.retry_reason
    assert second.slurm_job_id != first.slurm_job_id and node not in second.nodes
    events = [e.text for e in h.store.events(PROFILE, name)]
    assert any(f"as SLURM job {second.slurm_job_id} excluding {node}" in t for t in events), events


async def test_a_paced_monitor_sees_the_lost_node(paced: Harness) -> None:
    # The queue screen's monitor: the dead node's job wrote no "end" line, so only the pace
    # (a running job: slurmctld asked every minute) can find the NODE_FAIL.
    name = unique("poweroff-paced")
    job, node = await power_off_under(paced, name, use_requeue=False)
    assert job.status is TaoStatus.COMPLETE, job.status_json()
    first, second = job.attempts
    assert first.state == "NODE_FAIL" and first.nodes == node
    assert second.slurm_job_id != first.slurm_job_id and node not in second.nodes
