"""Demo mode's fake cluster watched as a real one is: its jobs write run events, the monitor
asks squeue at its pace, and the ends that write no event are still seen.

The fake's jobs move on their own there (``World.paced``: brought up to the clock before every
command), write ``start``/``end`` lines as the batch script does, and write none when the
script never ran (cancelled while pending) or its node died (NODE_FAIL). The pace itself is
tested through a real shell in ``test_paced_monitor.py``; here the fake keeps its side of it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tao_slurm_tui.core import pace
from tao_slurm_tui.core.layout import JobPaths
from tao_slurm_tui.core.models import JobRecord, TaoStatus
from tao_slurm_tui.services.cluster import ClusterBackend
from tao_slurm_tui.services.fakecluster import engine
from tao_slurm_tui.services.fakecluster.demo import Demo
from tao_slurm_tui.services.fakecluster.world import World
from tao_slurm_tui.services.monitor import TickResult
from tests.contract import _submit, spec, unique

STEP = 15.0
"""Cluster seconds between two ticks while waiting for the pace."""


@dataclass
class Paced:
    backend: ClusterBackend
    world: World


@pytest.fixture
async def p(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Paced]:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    demo = Demo(tmp_path / "demo", workstation=False, paced=True)
    backend = demo.backend()
    try:
        yield Paced(backend, demo.world(backend.profile_name))
    finally:
        await backend.close()
        demo.close()
    # Closing stops what no tick awaits (a sacct follow-up left running hung the loop's end).
    assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []


async def submitted(p: Paced, *, delay: float = 15.0) -> JobRecord:
    """A new job, ``delay`` seconds from its start; the monitor has answered about it."""
    p.world.set(start_delay=delay)
    name = unique("paced")
    await _submit(p.backend, spec(name))
    await p.backend.monitor.tick()
    return p.backend.store.require(p.backend.profile_name, name)


def events_of(p: Paced, job: JobRecord) -> list[str]:
    """The kinds of the run event lines the fake wrote for the job's latest attempt."""
    sid = job.attempts[-1].slurm_job_id
    local = p.world.local(JobPaths(job.base_results_dir or "", job.id).run_events(sid))
    return [line.split()[0] for line in local.read_text().splitlines()] if local.exists() else []


async def tick_until(p: Paced, job_id: str, status: TaoStatus, within: float) -> TickResult:
    """Tick every :data:`STEP` cluster seconds until ``job_id`` shows ``status``."""
    waited = 0.0
    while waited <= within:
        result = await p.backend.monitor.tick()
        await p.backend.followup()  # the sacct that settles an end, as the screen waits for it
        if p.backend.store.require(p.backend.profile_name, job_id).status is status:
            return result
        p.world.advance(STEP)
        waited += STEP
    raise AssertionError(f"{job_id} was not {status} within {within:g} s")


def end_on_cluster(p: Paced, job: JobRecord, how: str, exit_code: str) -> None:
    """End the job as slurmctld would without our monitor (another user's scancel, a node)."""
    with p.world.edit() as state:
        engine.end_job(state, state["jobs"][job.attempts[-1].slurm_job_id], how, engine.now(state),
                       exit_code)  # fmt: skip


async def test_a_start_and_an_end_are_seen_from_the_events_in_the_next_tick(p: Paced) -> None:
    job = await submitted(p)
    quiet = await p.backend.monitor.tick()
    assert not quiet.asked  # nothing moved: slurmctld is not asked
    p.world.advance(16)  # the job starts: its "start" line
    started = await p.backend.monitor.tick()
    assert started.asked and started.asked_by == "events"
    assert p.backend.store.require(p.backend.profile_name, job.id).status is TaoStatus.RUNNING
    end_on_cluster(p, job, "CANCELLED", "0:15")  # scancel of a running job: its trap ran
    ended = await p.backend.monitor.tick()
    assert ended.asked and ended.asked_by == "events"
    assert events_of(p, job) == ["start", "end"]


async def test_a_cancel_while_pending_is_seen_at_the_pace(p: Paced) -> None:
    job = await submitted(p, delay=10_000)
    end_on_cluster(p, job, "CANCELLED", "0:0")
    assert events_of(p, job) == []  # no batch script ran: nothing tells but slurmctld
    await tick_until(p, job.id, TaoStatus.CANCELED, within=pace.PENDING_MAX + STEP)


async def test_a_node_failure_is_seen_at_the_running_pace(p: Paced) -> None:
    job = await submitted(p)
    p.world.advance(16)
    await p.backend.monitor.tick()
    end_on_cluster(p, job, "NODE_FAIL", "0:0")
    assert events_of(p, job) == ["start"]  # the node died with the script: no "end"
    seen = await tick_until(p, job.id, TaoStatus.PENDING, within=pace.RUNNING_QUIET + 2 * STEP)
    assert seen.asked
