"""The monitor against the real sandbox cluster: every status mapping seen for real, retries,
cancel, restart, and one round trip for 50 jobs."""

from __future__ import annotations

import asyncio
import time

import pytest

from tao_slurm_tui.core.layout import JobPaths
from tao_slurm_tui.core.models import TaoStatus
from tao_slurm_tui.core.quoting import quote
from tao_slurm_tui.core.slurm import is_terminal
from tao_slurm_tui.services.store import JobStore
from tests.integration.monitor_helpers import PROFILE, Harness, status_line, unique


def terminal(job) -> bool:  # type: ignore[no-untyped-def]
    return bool(job.status.terminal)


async def sacct_state(h: Harness, slurm_id: str, timeout: float = 30) -> str:
    """sacct's final State of ``slurm_id``.

    slurmdbd lags the controller: right after a change sacct may have no row yet, or still the
    previous state (PENDING after an scancel), so wait (bounded) until the row is final.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        result = await h.conn.run(["sacct", "-X", "-n", "-P", "-j", slurm_id, "-o", "State"])
        state = result.stdout.strip()
        final = bool(state) and is_terminal(state.split()[0])
        if final or loop.time() > deadline:
            return state
        await asyncio.sleep(0.5)


async def test_completed_with_success_is_complete(h: Harness) -> None:
    name = unique("ok")
    await h.submit(
        name,
        f"echo hi; {status_line('RUNNING', epoch=1, max_epoch=2)}; "
        f"{status_line('SUCCESS', 'training finished')}",
    )
    job = await h.tick_until(name, terminal)
    assert job.status is TaoStatus.COMPLETE
    assert job.slurm_state == "COMPLETED"
    assert job.message == "training finished"
    assert job.retries == 0
    assert job.attempts[0].exit_code == "0:0"
    assert job.status_json()["reason"] == ""


async def test_completed_with_failure_is_error_with_its_message(h: Harness) -> None:
    name = unique("fail-json")
    await h.submit(name, status_line("FAILURE", "Dataset has no images"))
    job = await h.tick_until(name, terminal)
    assert job.status is TaoStatus.ERROR
    assert job.slurm_state == "COMPLETED"
    assert job.message == "Dataset has no images"


async def test_exit_1_is_error_not_retried(h: Harness) -> None:
    name = unique("exit1")
    await h.submit(name, "echo 'Traceback (most recent call last):' >&2; exit 1")
    job = await h.tick_until(name, terminal)
    assert job.status is TaoStatus.ERROR
    assert job.slurm_state == "FAILED"
    assert job.retries == 0 and len(job.attempts) == 1


async def test_cuda_out_of_memory_is_error_with_no_retry(h: Harness) -> None:
    name = unique("oom")
    await h.submit(
        name,
        "echo 'torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB' >&2;"
        " exit 1",
    )
    job = await h.tick_until(name, terminal)
    assert job.status is TaoStatus.ERROR
    assert job.retries == 0 and len(job.attempts) == 1
    assert "program error" in job.message


async def test_cancel_pending_job(h: Harness) -> None:
    name = unique("cancel-pd")
    job = await h.submit_raw(name, "sleep 300", "--begin=now+3600")
    # squeue says (None) until the scheduler's next pass (sched_interval=5, later under load).
    job = await h.tick_until(name, lambda j: j.reason == "BeginTime", timeout=60)
    assert job.status is TaoStatus.PENDING
    assert "start time" in job.message
    job = await h.monitor.cancel(name)
    assert job.status is TaoStatus.CANCELED
    # SLURM agrees (sacct's row reaches slurmdbd a moment later: wait for it, bounded), and
    # later ticks do not ask about it any more.
    assert (await sacct_state(h, job.slurm_job_id)).startswith("CANCELLED")
    h.counting.calls.clear()
    await h.tick()
    assert h.counting.calls == []
    # Cancelling again (a finished job, an id SLURM may have forgotten) is a success.
    assert (await h.monitor.cancel(name)).status is TaoStatus.CANCELED


async def test_cancel_running_job(h: Harness) -> None:
    name = unique("cancel-r")
    await h.submit(name, "sleep 300")
    await h.tick_until(name, lambda j: j.status is TaoStatus.RUNNING)
    job = await h.monitor.cancel(name)
    assert job.status is TaoStatus.CANCELED
    # SLURM agrees once slurmdbd has caught up (bounded wait, not a fixed sleep); later ticks
    # keep it Canceled.
    assert (await sacct_state(h, job.slurm_job_id)).startswith("CANCELLED")
    await h.tick()
    assert h.store.require(PROFILE, name).status is TaoStatus.CANCELED


async def test_scancel_outside_the_app_is_canceled(h: Harness) -> None:
    name = unique("scancel")
    job = await h.submit(name, "sleep 300")
    await h.tick_until(name, lambda j: j.status is TaoStatus.RUNNING)
    await h.conn.run(["scancel", job.slurm_job_id], check=True)
    job = await h.tick_until(name, terminal)
    assert job.status is TaoStatus.CANCELED
    assert job.slurm_state == "CANCELLED"


async def test_monitor_restarted_midway_carries_on(h: Harness, tmp_path) -> None:  # type: ignore[no-untyped-def]
    name = unique("restart")
    # The job runs until the test opens its gate (bounded), so the restart surely happens
    # midway: a fixed "sleep 4" could end between two ticks on a loaded machine.
    gate = f"{JobPaths(h.profile.results_root, name).results_dir}/gate-{name}"
    wait_gate = f"for i in $(seq 600); do [ -e {quote(gate)} ] && break; sleep 1; done"
    await h.submit(name, f"{wait_gate}; {status_line('SUCCESS', 'done after restart')}")
    await h.tick_until(name, lambda j: j.status is TaoStatus.RUNNING)
    # A new process: a new store on the same DB file and a new monitor.
    h.store.close()
    h.store = JobStore(tmp_path / "state.db")
    h.submitter.store = h.store
    fresh = h.monitor = h.new_monitor()  # cleanup cancels through the live store
    assert (await fresh.tick()).jobs[0].status is TaoStatus.RUNNING
    await h.conn.run(f"mkdir -p {quote(gate.rsplit('/', 1)[0])} && touch {quote(gate)}", check=True)
    job = await h.tick_until(name, terminal, monitor=fresh)
    assert job.status is TaoStatus.COMPLETE
    assert job.message == "done after restart"


async def test_fifty_jobs_polled_in_one_round_trip(h: Harness) -> None:
    names = [unique(f"many{i}") for i in range(50)]
    for name in names:
        await h.submit_raw(name, "true", "--begin=now+3600")
    h.counting.calls.clear()
    result = await h.tick()
    assert len(h.counting.calls) == 1 and result.round_trips == 1
    jobs = {j.id: j for j in result.jobs}
    assert all(jobs[n].status is TaoStatus.PENDING for n in names)
    assert all(jobs[n].reason in ("None", "BeginTime") for n in names)
    assert all(jobs[n].slurm_job_id for n in names)
    # Cancel them all: every tick needs one round trip until all are Canceled (the monitor
    # waits, bounded, for slurmdbd to agree with squeue's CANCELLED)... and none after.
    await h.conn.run(["scancel", *(jobs[n].slurm_job_id for n in names)], check=True)
    deadline = time.monotonic() + 90
    while True:
        h.counting.calls.clear()
        result = await h.tick()
        assert len(h.counting.calls) == 1
        left = [j.id for j in result.jobs if j.id in names and j.status is not TaoStatus.CANCELED]
        if not left:
            break
        assert time.monotonic() < deadline, f"{len(left)} jobs not Canceled: {left[:3]}"
        await asyncio.sleep(1)
    h.counting.calls.clear()
    await h.tick()
    assert h.counting.calls == []


@pytest.mark.slow
async def test_timeout_is_error(h: Harness) -> None:
    name = unique("timeout")
    await h.submit_raw(name, "sleep 300", "--time=1")
    # Up to ~2 min pending behind parallel tests, then ~90 s until SLURM's coarse limit check.
    job = await h.tick_until(name, terminal, timeout=300, interval=5)
    assert job.status is TaoStatus.ERROR
    assert job.slurm_state == "TIMEOUT"
    assert "time limit" in job.message
    assert job.retries == 0


@pytest.mark.slow
async def test_nccl_failure_is_retried_then_complete(h: Harness) -> None:
    name = unique("nccl")
    # The first run prints an NCCL error and fails; the batch script requeues itself (same SLURM
    # id, SLURM_RESTART_COUNT=1) and the second run succeeds.
    command = (
        'if [ "${SLURM_RESTART_COUNT:-0}" = 0 ]; then '
        "echo 'NCCL error in: socket.cc:540, unhandled system error' >&2; exit 1; fi; "
        + status_line("SUCCESS", "second run ok")
    )
    await h.submit(name, command)
    # Pending before each run (parallel tests), plus the requeue's BeginTime delay (31 s).
    job = await h.tick_until(name, terminal, timeout=360, interval=3)
    assert job.status is TaoStatus.COMPLETE, job.status_json()
    assert job.retries == 1
    assert len(job.attempts) == 1 and job.attempts[0].restarts == 1
    events = [e.text for e in h.store.events(PROFILE, name)]
    assert any("requeued" in e.lower() for e in events), events
