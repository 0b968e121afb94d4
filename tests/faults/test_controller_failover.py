"""The primary slurmctld dies and the backup takes over (``SlurmctldHost`` listed twice).

``scripts/sandbox-cluster ctl-down`` SIGKILLs the primary as a crash would; for the takeover
(``SlurmctldTimeout``, 6 s here) every SLURM command waits or fails. The promises: the monitor
waits it out with one clear state (no error storm, no job state changed by the outage), a
submission during or after it is exactly-once, and a job the dying primary never saved (it
accepted the sbatch, then crashed before writing its state) is found lost by name and submitted
again, once. Every case holds ``tests.sandbox.CLUSTER_LOCK`` and brings the primary back.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tao_slurm_tui.core.models import TaoStatus
from tao_slurm_tui.errors import TaoError
from tao_slurm_tui.services import accounting_followup
from tests import sandbox
from tests.faults.test_faults import assert_no_orphan, known_ids, live_jobs, one_sentence
from tests.integration.monitor_helpers import PROFILE, Harness, job_spec, unique
from tests.integration.submit_helpers import submit

pytestmark = pytest.mark.slow

STATE_FILE = Path("/var/lib/slurm/slurmctld/job_state")
"""The controllers' shared StateSaveLocation (the primary writes it, the backup reads it)."""


def in_control() -> str | None:
    controller: str | None = sandbox.fresh_info()["controllers"]["in_control"]
    return controller


@contextlib.contextmanager
def primary_killed() -> Iterator[float]:
    """Kill the primary (yields when); it is started again afterwards, whatever happens."""
    down = sandbox.script("ctl-down")
    assert down.returncode == 0, down.stdout + down.stderr
    try:
        yield time.monotonic()
    finally:
        up = sandbox.script("ctl-up", timeout=180)
        assert up.returncode == 0, up.stdout + up.stderr
        assert in_control() == "tao-ctl"
        # Back for everyone only once its nodes registered again: a request is placeable.
        sandbox.wait_for(
            lambda: (
                sandbox.ssh("sbatch --test-only -p polar -c 1 -t 1 --wrap true").returncode == 0
            ),
            90,
            "the primary schedules again",
            interval=1,
        )


def state_saved_now() -> None:
    """Make the primary save its job state (a change to save: a held job, then its scancel)
    and wait until it did, so a kill loses only what comes after."""
    moment = time.time()
    held = sandbox.ssh("sbatch --parsable --hold -J tao-state-save -o /dev/null --wrap true")
    assert held.returncode == 0, held.stderr
    try:
        sandbox.wait_for(
            lambda: STATE_FILE.stat().st_mtime > moment + 0.5, 60, "slurmctld saved its job state"
        )
    finally:
        sandbox.ssh(f"scancel {held.stdout.strip()}")


def known_to_the_controller(slurm_id: str) -> bool:
    """squeue -t all: the controller in charge knows the job (sacct may keep a placeholder
    'allocation' row for a job the controller lost, so it is no oracle here)."""
    out = sandbox.ssh(f"squeue -h -t all -j {slurm_id} -o %T")
    return out.returncode == 0 and bool(out.stdout.strip())


async def test_the_monitor_waits_out_the_takeover_without_an_error_storm(h: Harness) -> None:
    with sandbox.flocked(sandbox.CLUSTER_LOCK):
        assert in_control() == "tao-ctl"
        name = unique("fha")
        await h.submit(name, "sleep 600")
        await h.tick_until(name, lambda j: j.status is TaoStatus.RUNNING)
        state_saved_now()  # this case is about the takeover, not a lost job
        errors: list[str] = []
        warnings: list[str] = []
        with primary_killed() as killed:
            while time.monotonic() - killed < 60:
                try:
                    result = await h.monitor.tick()
                    warnings.append(result.warning)
                except TaoError as exc:
                    one_sentence(str(exc))
                    errors.append(str(exc))
                job = h.store.require(PROFILE, name)
                assert job.status is TaoStatus.RUNNING, "a controller outage must not end a job"
                if in_control() == "tao-ctl2" and warnings and not warnings[-1]:
                    break
                await asyncio.sleep(2)
            assert in_control() == "tao-ctl2"
            # At most one failed tick (the takeover's), and any warning says it in words.
            assert len(errors) <= 1, errors
            for warning in filter(None, warnings):
                assert warning.startswith("SLURM's controller did not answer"), warning
            # A submission through the backup goes through, exactly once.
            other = unique("fha2")
            await submit(h.submitter, job_spec(other, "sleep 60"))
            assert len(h.store.require(PROFILE, other).attempts) == 1
        # Handed back to the primary: the same jobs, monitored on.
        job = await h.tick_until(name, lambda j: j.status is TaoStatus.RUNNING, timeout=90)
        assert len(job.attempts) == 1 and job.retries == 0
        for n in (name, other):
            assert_no_orphan(n, known_ids(h, n))
            assert len(live_jobs(n)) == 1


async def test_a_job_the_crashed_primary_never_saved_is_submitted_again_once(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """sbatch answered with an id, then the primary died before saving its state: the backup
    never heard of the job and accounting has no row. The monitor finds it lost (the queue
    answers without it, sacct keeps answering without it) and resubmits it once."""
    monkeypatch.setattr(accounting_followup, "LOST_SECONDS", 15.0)  # the default is minutes
    with sandbox.flocked(sandbox.CLUSTER_LOCK):
        assert in_control() == "tao-ctl"
        # What happened before this test (other jobs ending, cancels) is saved first: only
        # this test's own jobs may be lost with the primary.
        state_saved_now()
        names = [unique("flost"), unique("flost")]
        kill = contextlib.ExitStack()

        def progress(stage: str, detail: str) -> None:
            if stage == "done" and not kill._exit_callbacks:
                kill.enter_context(primary_killed())  # the instant sbatch answered

        with kill:
            await submit(h.submitter, job_spec(names[0], "sleep 300"))
            await submit(h.submitter, job_spec(names[1], "sleep 300"), on_progress=progress)
            first_ids = {n: h.store.require(PROFILE, n).slurm_job_id for n in names}
            sandbox.wait_for(
                lambda: sandbox.ssh("squeue -h -o %i", timeout=60).returncode == 0,
                90,
                "the backup answers",
            )
            lost = [n for n in names if not known_to_the_controller(first_ids[n])]
            assert lost, "the primary had saved both jobs: the crash lost nothing this time"
            for name in names:
                job = await h.tick_until(
                    name, lambda j: bool(live_jobs(j.id)) and not j.status.terminal, timeout=150
                )
                if name in lost:
                    assert len(job.attempts) == 2, job.status_json()
                    assert job.attempts[0].slurm_job_id == first_ids[name]
                    assert "SLURM lost job" in job.attempts[0].retry_reason
                    assert any(e.kind == "retried" for e in h.store.events(PROFILE, name)) or (
                        "lost" in job.message
                    )
                else:
                    assert [a.slurm_job_id for a in job.attempts] == [first_ids[name]]
        for name in names:
            assert_no_orphan(name, known_ids(h, name))
            assert len(live_jobs(name)) == 1
