"""The paced monitor (the queue screen's and ``status --watch``'s) on the real sandbox.

Its ticks read the jobs' run events on the login host and ask slurmctld only when they changed
or the pace says so. These tests check that a job's start and end are seen from its events on
the next tick, with squeue asked a handful of times rather than on every tick, and that what
leaves no event is still seen: a job cancelled while pending, and (test_node_power.py) a job
whose node is powered off.
"""

from __future__ import annotations

import asyncio
import time

from tao_slurm_tui.core import pace
from tao_slurm_tui.core.layout import JobPaths
from tao_slurm_tui.core.models import JobRecord, TaoStatus
from tao_slurm_tui.core.run_events import parse_event_line
from tao_slurm_tui.services.monitor import TickResult
from tests.integration.monitor_helpers import PROFILE, Harness, status_line, unique

TICK = 1.0


async def events_of(h: Harness, job: JobRecord) -> list[str]:
    """The kinds of the lines in the job's events file (latest attempt)."""
    path = JobPaths(job.base_results_dir, job.id).run_events(job.slurm_job_id)
    text = (await h.conn.run(f"cat {path} 2>/dev/null || true")).stdout
    return [e.kind for e in map(parse_event_line, text.splitlines()) if e is not None]


async def watch(h: Harness, name: str, until: str, timeout: float = 180) -> list[TickResult]:
    """Tick every second (and at once after accounting's answer) until ``until`` holds of the
    job: 'running' or 'terminal'."""
    results: list[TickResult] = []
    deadline = time.monotonic() + timeout
    while True:
        results.append(await h.monitor.tick())
        job = h.store.require(PROFILE, name)
        done = job.status.terminal if until == "terminal" else job.status is TaoStatus.RUNNING
        if done:
            return results
        assert time.monotonic() < deadline, f"timed out; job is {job.status_json()}"
        if not await h.monitor.wait_followup():
            await asyncio.sleep(TICK)


async def test_start_and_end_are_seen_from_the_events(paced: Harness) -> None:
    h = paced
    name = unique("paced")
    await h.submit(name, f"sleep 15; {status_line('SUCCESS', 'paced ok')}")
    ticks = await watch(h, name, "running")
    job = h.store.require(PROFILE, name)
    # The start line is there: the tick that showed RUNNING asked squeue because of it (or it
    # was the first tick, which always asks).
    assert await events_of(h, job) == ["start"]
    assert ticks[-1].asked
    running = await watch(h, name, "terminal")
    job = h.store.require(PROFILE, name)
    assert job.status is TaoStatus.COMPLETE and job.message == "paced ok"
    assert await events_of(h, job) == ["start", "end"]
    # While it ran (~15 s of ticks every second) squeue was asked only for the end and the
    # settling after it, not on every tick.
    asked = sum(1 for t in running if t.asked)
    assert len(running) >= 8 and asked <= 4, [t.asked for t in running]
    assert all(t.round_trips <= 2 for t in running)


async def test_a_failure_is_seen_and_not_retried(paced: Harness) -> None:
    h = paced
    name = unique("paced-exit1")
    await h.submit(name, "echo 'Traceback (most recent call last):' >&2; exit 1")
    await watch(h, name, "terminal")
    job = h.store.require(PROFILE, name)
    assert job.status is TaoStatus.ERROR and job.slurm_state == "FAILED"
    assert job.retries == 0 and len(job.attempts) == 1


async def test_scancel_of_a_running_job_is_seen_from_its_end_line(paced: Harness) -> None:
    h = paced
    name = unique("paced-scancel")
    job = await h.submit(name, "sleep 300")
    await watch(h, name, "running")
    await h.conn.run(["scancel", job.slurm_job_id], check=True)
    # SIGTERM: the batch script's EXIT trap writes "end", so no pace has to come round.
    ticks = await watch(h, name, "terminal", timeout=60)
    job = h.store.require(PROFILE, name)
    assert job.status is TaoStatus.CANCELED and job.slurm_state == "CANCELLED"
    assert await events_of(h, job) == ["start", "end"]
    assert len(ticks) <= 10, f"{len(ticks)} ticks to see a cancel the job wrote down"


async def test_cancel_while_pending_is_seen_at_the_pace(paced: Harness) -> None:
    h = paced
    name = unique("paced-pd")
    # It never starts, so it never writes a line (a raw script writes none anyway).
    job = await h.submit_raw(name, "sleep 300", "--begin=now+3600")
    assert (await h.monitor.tick()).asked  # the first answer: at once
    assert h.store.require(PROFILE, name).status is TaoStatus.PENDING
    await h.conn.run(["scancel", job.slurm_job_id], check=True)
    squeue = ["squeue", "-h", "-t", "all", "-j", job.slurm_job_id, "-o", "%T"]
    deadline = time.monotonic() + 60
    while "CANCELLED" not in (await h.conn.run(squeue)).stdout:
        assert time.monotonic() < deadline, "squeue never said CANCELLED"
        await asyncio.sleep(0.5)
    # Nothing in the files: a tick within the pace does not ask, and the job looks pending.
    result = await h.monitor.tick()
    assert not result.asked
    assert h.store.require(PROFILE, name).status is TaoStatus.PENDING
    # When the pace comes round (the monitor's clock moved on), slurmctld is asked.
    h.skew += pace.PENDING_MAX
    result = await h.monitor.tick()
    assert result.asked
    assert h.store.require(PROFILE, name).slurm_state == "CANCELLED"
    await watch(h, name, "terminal", timeout=90)
    assert h.store.require(PROFILE, name).status is TaoStatus.CANCELED
