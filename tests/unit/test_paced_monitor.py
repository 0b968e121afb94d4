"""A paced monitor through a real ``sh``: the run events decide when slurmctld is asked.

The tick's command runs on this machine against the jobs' real events files, with ``squeue``
and ``sacct`` stand-ins on PATH that print the rows a test sets and count their calls. So the
shell text itself (the ``stat`` of the files, the comparison of sizes, squeue only when they
changed or the pace says so) is what is checked, with the monitor's clock under the test's
control. The paths a job can end by without its ``end`` line (cancelled while pending, a lost
node) are covered: slurmctld is still asked, at the pace.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tao_slurm_tui.core import pace
from tao_slurm_tui.core.layout import JobPaths
from tao_slurm_tui.core.models import Attempt, JobRecord, TaoStatus
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.core.slurm_poll import SACCT_FIELDS, SEP, SQUEUE_FIELDS
from tao_slurm_tui.remote.connection import CommandResult, RemoteError
from tao_slurm_tui.services.monitor import Monitor
from tao_slurm_tui.services.store import JobStore

SQUEUE = """#!/bin/sh
echo squeue >> "$STUB/calls"
cat "$STUB/squeue.rows" 2>/dev/null
"""
SACCT = """#!/bin/sh
echo sacct >> "$STUB/calls"
cat "$STUB/sacct.rows" 2>/dev/null
"""


def squeue_row(sid: str, state: str, **fields: str) -> str:
    values = {"job_id": sid, "state": state, "reason": "None", "name": "j", **fields}
    values.setdefault("time_limit", "1:00:00")
    values.setdefault("partition", "polar")
    return SEP.join(values.get(key, "N/A") for key, _ in SQUEUE_FIELDS)


def sacct_row(sid: str, state: str, exit_code: str = "0:0") -> str:
    values = {"job_id": sid, "state": state, "exit_code": exit_code, "name": "j"}
    values.update(partition="polar", nodes="n1", elapsed="00:01:00")
    return SEP.join(values.get(key, "Unknown") for key, _ in SACCT_FIELDS)


class LocalCluster:
    """Runs the monitor's commands with ``sh`` here; squeue/sacct are stand-ins."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.stub = root / "stub"
        self.stub.mkdir()
        for name, text in (("squeue", SQUEUE), ("sacct", SACCT)):
            path = self.stub / name
            path.write_text(text)
            path.chmod(0o755)
        self.env = {
            **os.environ,
            "STUB": str(self.stub),
            "PATH": f"{self.stub}:{os.environ['PATH']}",
        }
        self.round_trips = 0

    def squeue(self, *rows: str) -> None:
        (self.stub / "squeue.rows").write_text("".join(f"{r}\n" for r in rows))

    def sacct(self, *rows: str) -> None:
        (self.stub / "sacct.rows").write_text("".join(f"{r}\n" for r in rows))

    def calls(self, tool: str = "squeue") -> int:
        path = self.stub / "calls"
        return path.read_text().split().count(tool) if path.exists() else 0

    async def run_framed(self, command: Any, **_: Any) -> CommandResult:
        self.round_trips += 1
        return await self.run(command)

    async def run(self, command: Any, **_: Any) -> CommandResult:
        cmd = command if isinstance(command, str) else " ".join(command)
        done = await asyncio.to_thread(
            subprocess.run, ["sh", "-c", cmd], capture_output=True, text=True, env=self.env
        )
        return CommandResult(cmd, done.returncode, done.stdout, done.stderr, "here")


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def world(tmp_path: Path) -> tuple[LocalCluster, JobStore, Clock, Profile]:
    profile = Profile(user="u", hostnames=["h"], partition="polar", base_results_dir=str(tmp_path))
    return LocalCluster(tmp_path), JobStore(tmp_path / "state.db"), Clock(), profile


def submitted(store: JobStore, profile: Profile, name: str, sid: str) -> Path:
    """A submitted job and its log directory (made at submit, as the product does)."""
    store.create_job(
        JobRecord(
            id=name,
            profile="p",
            base_results_dir=profile.base_results_dir,
            submitted=True,
            attempts=[Attempt(number=0, slurm_job_id=sid)],
        )
    )
    events = Path(JobPaths(profile.base_results_dir, name).run_events(sid))
    events.parent.mkdir(parents=True)
    return events


def event(path: Path, kind: str, restart: int, at: float, detail: str) -> None:
    with path.open("a") as handle:
        handle.write(f"{kind} {restart} {at:.6f} {detail}\n")


def monitor(cluster: LocalCluster, store: JobStore, profile: Profile, clock: Clock) -> Monitor:
    return Monitor(cluster, store, "p", profile, clock=clock, paced=True)  # type: ignore[arg-type]


async def running(world: Any, **fields: str) -> tuple[Path, Monitor]:
    """Job ``a`` (SLURM id 41) has started on n1 and written so; a paced monitor saw it."""
    cluster, store, clock, profile = world
    events = submitted(store, profile, "a", "41")
    event(events, "start", 0, clock.now, "n1")
    cluster.squeue(squeue_row("41", "RUNNING", nodes="n1", **fields))
    mon = monitor(cluster, store, profile, clock)
    await mon.tick()
    return events, mon


async def test_quiet_ticks_ask_nothing_and_events_ask_at_once(world: Any) -> None:
    cluster, store, clock, profile = world
    events = submitted(store, profile, "a", "41")
    cluster.squeue(squeue_row("41", "PENDING", reason="Priority"))
    mon = monitor(cluster, store, profile, clock)
    result = await mon.tick()
    assert result.asked and cluster.calls() == 1  # the first answer: at once
    assert result.asked_by == "first"
    assert result.jobs[0].status is TaoStatus.PENDING
    for _ in range(5):  # nothing changed, the pace is not due: the files alone
        clock.now += 2
        result = await mon.tick()
        assert not result.asked and result.round_trips == 1 and result.changed == []
    assert cluster.calls() == 1
    # It starts: the run's "start" line is seen, and squeue asked in the same round trip.
    cluster.squeue(squeue_row("41", "RUNNING", nodes="n1", elapsed="0:03"))
    event(events, "start", 0, clock.now, "n1")
    clock.now += 2
    result = await mon.tick()
    assert result.asked and result.round_trips == 1 and cluster.calls() == 2
    assert result.asked_by == "events"
    assert result.jobs[0].status is TaoStatus.RUNNING and result.jobs[0].slurm_state == "RUNNING"
    clock.now += 2
    assert not (await mon.tick()).asked
    # It ends: its "end" line asks squeue, which already says so; accounting settles it.
    cluster.squeue(squeue_row("41", "FAILED", nodes="n1"))
    cluster.sacct(sacct_row("41", "FAILED", "1:0"))
    event(events, "end", 0, clock.now, "rc=1")
    clock.now += 2
    result = await mon.tick()
    assert result.asked and result.jobs[0].slurm_state == "FAILED"
    assert result.accounting == ["41"]
    assert await mon.wait_followup()
    clock.now += 0.1
    result = await mon.tick()
    assert result.jobs[0].status is TaoStatus.ERROR


async def test_an_end_slurm_has_not_seen_yet_is_asked_again_next_tick(world: Any) -> None:
    cluster, _, clock, _ = world
    events, mon = await running(world)
    # The script wrote "end" a moment before slurmctld heard of it: squeue still says RUNNING.
    event(events, "end", 0, clock.now, "rc=0")
    clock.now += 2
    assert (await mon.tick()).asked
    clock.now += 2
    assert (await mon.tick()).asked  # the events disagree with SLURM: ask again
    cluster.squeue(squeue_row("41", "COMPLETING", nodes="n1"))
    clock.now += 2
    result = await mon.tick()
    assert result.asked and result.jobs[0].slurm_state == "COMPLETING"


async def test_a_tick_cut_short_leaves_the_events_change_for_the_next(world: Any) -> None:
    cluster, _, clock, _ = world
    events, mon = await running(world)
    clock.now += pace.FAST_FOR + 5  # long in RUNNING: a disagreement alone would wait
    # The run ends; the round trip that prints its line dies before squeue has answered.
    event(events, "end", 0, clock.now, "rc=0")
    stub = cluster.stub / "squeue"
    working = stub.read_text()
    stub.write_text('#!/bin/sh\nkill -9 "$PPID"\n')
    with pytest.raises(RemoteError, match="cut short"):
        await mon.tick()
    stub.write_text(working)
    cluster.squeue(squeue_row("41", "COMPLETING", nodes="n1"))
    clock.now += 2
    result = await mon.tick()  # the same change is news again: asked at once
    assert result.asked_by == "events" and result.jobs[0].slurm_state == "COMPLETING"


async def test_cancel_while_pending_is_seen_at_the_pace(world: Any) -> None:
    cluster, store, clock, profile = world
    submitted(store, profile, "a", "41")
    cluster.squeue(squeue_row("41", "PENDING", reason="Resources"))
    mon = monitor(cluster, store, profile, clock)
    await mon.tick()
    # scancel by someone else: no run ever started, so no line says so; only SLURM can tell.
    cluster.squeue(squeue_row("41", "CANCELLED"))
    cluster.sacct(sacct_row("41", "CANCELLED by 0", "0:0"))
    clock.now += pace.PENDING_UNKNOWN - 1
    assert not (await mon.tick()).asked
    clock.now += 1
    result = await mon.tick()
    assert result.asked and result.jobs[0].slurm_state == "CANCELLED"
    assert result.asked_by == "pending"
    assert await mon.wait_followup()
    result = await mon.tick()
    assert result.jobs[0].status is TaoStatus.CANCELED


async def test_a_lost_node_is_seen_at_the_running_pace(world: Any) -> None:
    cluster, store, clock, _ = world
    _, mon = await running(world, elapsed="1:00")
    # The node died with the job: no "end" line. SLURM calls it NODE_FAIL.
    cluster.squeue(squeue_row("41", "NODE_FAIL", nodes="n1"))
    cluster.sacct(sacct_row("41", "NODE_FAIL", "0:0"))
    why = []
    for _ in range(int(pace.RUNNING_QUIET // 2)):
        clock.now += 2
        why.append((await mon.tick()).asked_by)
    assert why[-1] == "running" and not any(why[:-1])
    assert store.require("p", "a").slurm_state == "NODE_FAIL"


async def test_elapsed_moves_on_between_answers(world: Any) -> None:
    _, _, clock, _ = world
    _, mon = await running(world, elapsed="1:00")
    clock.now += 4
    result = await mon.tick()
    assert not result.asked and result.changed == []  # less than a step: nothing to write
    clock.now += 7
    result = await mon.tick()
    assert not result.asked and result.jobs[0].attempts[0].elapsed == "1:10"


async def test_a_job_without_events_is_asked_at_the_old_pace(world: Any) -> None:
    cluster, store, clock, profile = world
    submitted(store, profile, "a", "41")  # an older batch script: no events file
    cluster.squeue(squeue_row("41", "RUNNING", nodes="n1"))
    mon = monitor(cluster, store, profile, clock)
    await mon.tick()
    clock.now += pace.LEGACY - 1
    assert not (await mon.tick()).asked
    clock.now += 1
    assert (await mon.tick()).asked_by == "legacy"


async def test_full_asks_whatever_the_pace(world: Any) -> None:
    cluster, store, clock, profile = world
    submitted(store, profile, "a", "41")
    cluster.squeue(squeue_row("41", "PENDING", reason="Priority"))
    mon = monitor(cluster, store, profile, clock)
    await mon.tick()
    clock.now += 1
    assert not (await mon.tick()).asked
    assert (await mon.tick(full=True)).asked_by == "full"
    assert cluster.calls() == 2


async def test_a_failed_answer_is_asked_again_after_a_while(world: Any) -> None:
    cluster, store, clock, profile = world
    submitted(store, profile, "a", "41")
    (cluster.stub / "squeue").write_text(
        '#!/bin/sh\necho squeue >> "$STUB/calls"\n'
        "echo 'slurm_load_jobs error: Socket timed out on send/recv operation' >&2; exit 1\n"
    )
    mon = monitor(cluster, store, profile, clock)
    result = await mon.tick()
    assert result.asked and "controller did not answer" in result.warning
    clock.now += pace.AFTER_FAILURE - 1
    assert not (await mon.tick()).asked
    clock.now += 1
    assert (await mon.tick()).asked


async def test_an_unpaced_monitor_asks_every_tick(world: Any) -> None:
    cluster, store, clock, profile = world
    submitted(store, profile, "a", "41")
    cluster.squeue(squeue_row("41", "PENDING", reason="Priority"))
    mon = Monitor(cluster, store, "p", profile, clock=clock)  # type: ignore[arg-type]
    for _ in range(3):
        assert (await mon.tick()).asked_by == "every"
    assert cluster.calls() == 3
