"""Maintenance: a reservation that blocks the partition, a node an admin drained, and the cluster
unreachable during its announced window.

The promises: the pending reason in words with the reservation's window or the admin's reason
(not just "ReqNodeNotAvail"), taken away once the job runs; during an announced maintenance an
unreachable cluster is said to be that, and monitoring resumes by itself afterwards.

To disturb the other users of the sandbox as little as possible, the reservation starts an
hour from now (only a job asking for nearly four hours is blocked by it) or holds one node, the
drained node is one no job runs on (a job only asks for it by name), and every change is undone
in ``finally``.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tao_slurm_tui.core.models import TaoStatus
from tao_slurm_tui.errors import OperationFailed
from tests import sandbox
from tests.faults.test_faults import assert_no_orphan, known_ids, one_sentence
from tests.faults.test_login_failover import (
    backend_on_two_hosts,
    login2,
    login2_held,
    refresh_until_running,
)
from tests.integration.monitor_helpers import PROFILE, Harness, job_spec, unique
from tests.integration.submit_helpers import submit

pytestmark = pytest.mark.slow


def scontrol(*args: str) -> None:
    result = subprocess.run(
        ["scontrol", *args], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr


@contextlib.contextmanager
def reservation(start: str, minutes: int, nodes: str) -> Iterator[str]:
    name = f"tao-maint-{uuid.uuid4().hex[:6]}"
    scontrol(
        "create", "reservation", f"ReservationName={name}", f"StartTime={start}",
        f"Duration={minutes}", f"Nodes={nodes}", "Users=root", "Flags=MAINT,IGNORE_JOBS",
    )  # fmt: skip
    try:
        yield name
    finally:
        scontrol("delete", f"ReservationName={name}")


@contextlib.contextmanager
def drained_idle_node(why: str) -> Iterator[str]:
    """An admin drains a node no job runs on (yields it), resumed afterwards whatever happens.

    A node with jobs on it is only DRAINING, and a job that needs it waits for 'Resources'
    until they end: on the shared sandbox the node is one that is really drained at once."""
    deadline = time.monotonic() + 300
    while True:
        idle = subprocess.run(
            ["sinfo", "-h", "-N", "-p", "polar", "-t", "idle", "-o", "%N"],
            capture_output=True, text=True, timeout=60, check=True,
        ).stdout.split()  # fmt: skip
        for node in dict.fromkeys(idle):
            scontrol("update", f"NodeName={node}", "State=DRAIN", f"Reason={why}")
            state = subprocess.run(
                ["sinfo", "-h", "-n", node, "-o", "%T"],
                capture_output=True, text=True, timeout=60, check=True,
            ).stdout.split()  # fmt: skip
            if state and state[0] == "drained":
                try:
                    yield node
                finally:
                    scontrol("update", f"NodeName={node}", "State=RESUME")
                return
            scontrol("update", f"NodeName={node}", "State=RESUME")  # a job got there first
        assert time.monotonic() < deadline, "no node of polar was idle for 5 minutes"
        time.sleep(5)


def first_in_line(job_id: str) -> None:
    """The scheduler looks at this job first (an admin's priority), so its pending reason is
    the maintenance or the drain, not the other users' jobs ahead of it (a busy sandbox)."""
    scontrol("update", f"JobId={job_id}", "Priority=100000000")


async def tick_until_message(h: Harness, name: str, prefix: str) -> str:
    """Tick (waiting for the background site fetch between ticks) until the job's message."""
    for _ in range(90):
        await h.monitor.tick()
        await h.monitor.site.wait()
        job = h.store.require(PROFILE, name)
        if job.message.startswith(prefix):
            return job.message
        await asyncio.sleep(1)
    raise AssertionError(f"no {prefix!r} message; job is {job.status_json()}")


async def test_a_maintenance_reservation_is_told_with_its_window(h: Harness) -> None:
    with sandbox.flocked(sandbox.CLUSTER_LOCK), reservation("now+60minutes", 10, "ALL") as resv:
        name = unique("fmaint")
        first_in_line((await h.submit(name, "sleep 20", time_hours=3.9)).slurm_job_id)
        job = await h.tick_until(name, lambda j: "maintenance" in j.reason, timeout=60)
        assert job.status is TaoStatus.PENDING
        message = await tick_until_message(h, name, "Waiting for the maintenance")
        assert f"reservation '{resv}' holds tao-n[1-3] from " in message, message
        one_sentence(message)
    # Maintenance cancelled: the job starts and the waiting sentence goes.
    job = await h.tick_until(name, lambda j: j.status is not TaoStatus.PENDING, timeout=120)
    assert not job.message.startswith("Waiting for"), job.message
    assert_no_orphan(name, known_ids(h, name))


async def test_a_drained_node_is_named_with_the_admin_s_reason(h: Harness) -> None:
    why = "tao-slurm-tui fault test: disk replacement"
    name = unique("fdrain")
    with sandbox.flocked(sandbox.CLUSTER_LOCK), drained_idle_node(why) as node:
        # A request only the drained node can hold (sbatch itself: the product's --test-only
        # refuses such a request, see the report of issue 24), as a job already queued meets
        # a drain.
        job = await h.submit_raw(name, "sleep 5", "-w", node, "-t", "10")
        first_in_line(job.slurm_job_id)
        job = await h.tick_until(name, lambda j: "UnavailableNodes" in j.reason, timeout=60)
        assert node in job.reason
        message = await tick_until_message(h, name, "Waiting for nodes")
        assert f"{node} is drained: {why} (set by root at " in message, message
        one_sentence(message)
    job = await h.tick_until(name, lambda j: j.status is not TaoStatus.PENDING, timeout=120)
    assert not job.message.startswith("Waiting for"), job.message
    assert_no_orphan(name, known_ids(h, name))


async def test_an_unreachable_cluster_during_its_announced_window(tmp_path: Path) -> None:
    """The only login host goes away while a maintenance reservation is under way: the refresh
    says it is the announced maintenance (one sentence), and once the host is back the same
    back end monitors the job on, once."""
    node = sandbox.info()["nodes"][0]
    with login2_held(), sandbox.flocked(sandbox.CLUSTER_LOCK):
        async with backend_on_two_hosts(tmp_path, only_login2=True) as backend:
            backend.conn.reconnect_attempts = 1  # the app retries for minutes; a test need not
            name = unique("fwindow")
            await submit(backend.submitter, job_spec(name, "sleep 300"))
            with reservation("now", 3, node) as resv:
                await backend.refresh()
                await backend.monitor.site.wait()
                down = await asyncio.to_thread(sandbox.script, "login-down", "login2")
                assert down.returncode == 0, down.stderr
                with pytest.raises(OperationFailed) as info:
                    await backend.refresh()
                text = str(info.value)
                one_sentence(text)
                assert text.startswith(
                    f"The cluster is in its announced maintenance (reservation '{resv}' until "
                ), text
                assert f"no login host answers ({login2()}: " in text, text
                assert text.endswith("monitoring resumes by itself when it is back.")
                up = await asyncio.to_thread(sandbox.script, "login-up", "login2")
                assert up.returncode == 0, up.stderr
            job = await refresh_until_running(backend, name, site_away=True)
            assert len(job.attempts) == 1
            assert_no_orphan(name, {job.attempts[0].slurm_job_id})
