"""The poll command on the real sandbox SLURM 22.05 over the real sshd: one round trip a tick."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Sequence

from tao_slurm_tui.core.models import TaoStatus
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.core.quoting import join
from tao_slurm_tui.core.slurm import StateAction
from tao_slurm_tui.core.slurm_poll import PollOutput, parse_poll_output, poll_command
from tao_slurm_tui.core.slurm_text import parse_sbatch_output
from tao_slurm_tui.remote.connection import Connection

UNKNOWN = "99999999"


async def _submit(conn: Connection, name: str, script: str, *extra: str) -> str:
    argv = ["sbatch", "--parsable", "-J", name, "-o", "/dev/null", "-t", "5", *extra]
    result = await conn.run(join([*argv, "--wrap", script]), check=True)
    return parse_sbatch_output(result.stdout)


async def _tick(conn: Connection, live: list[str], probe: Sequence[str] = ()) -> PollOutput:
    # A user's own SQUEUE_FORMAT/SACCT_FORMAT/SQUEUE_SORT must not change what we parse.
    env = "SQUEUE_FORMAT=%i SQUEUE_FORMAT2=JobID SACCT_FORMAT=JobID SQUEUE_SORT=-t "
    result = await conn.run(env + poll_command(live, list(probe)))
    assert result.ok, result.stderr
    return parse_poll_output(result.stdout)


async def test_poll_command_on_real_slurm(sandbox_profile: Profile) -> None:
    tag = uuid.uuid4().hex[:8]
    async with Connection(sandbox_profile) as conn:
        ok = await _submit(conn, f"poll-ok-{tag}", "true")
        bad = await _submit(conn, f"poll-bad-{tag}", "exit 3")
        held = await _submit(conn, f"poll-held-{tag}", "true", "--hold")
        long = await _submit(conn, f"poll-long-{tag}", "sleep 300")
        ids = [ok, bad, held, long, UNKNOWN]
        try:
            # Bounded on time, not on a count of ticks: the jobs may PEND ~2 minutes while
            # parallel tests hold the CPUs, and slurmdbd lags (settled = sacct agrees).
            deadline = time.monotonic() + 180
            while True:
                out = await _tick(conn, ids)
                snaps = out.snapshots(ids)
                if snaps[ok].settled and snaps[bad].settled and snaps[long].state == "RUNNING":
                    break
                assert time.monotonic() < deadline, snaps
                await asyncio.sleep(1)
            assert out.complete and out.error == "", out
            assert out.squeue_rc == 0
            # sacct was asked only about what squeue did not report live.
            assert set(out.sacct_ids) == {ok, bad, UNKNOWN}
            snaps = out.snapshots(ids)

            done = snaps[ok]
            assert (done.state, done.exit_code, done.source) == ("COMPLETED", "0:0", "both")
            assert done.mapped.action is StateAction.NEEDS_STATUS_JSON
            # The poll does not ask for names (a name could forge a row); we know jobs by id.
            assert done.name == "" and done.nodes and done.start_time

            failed = snaps[bad]
            assert (failed.state, failed.exit_code) == ("FAILED", "3:0")
            assert failed.mapped.action is StateAction.MAYBE_RETRY

            pending = snaps[held]
            assert (pending.state, pending.reason) == ("PENDING", "JobHeldUser")
            assert pending.mapped.status is TaoStatus.PENDING
            assert "scontrol release" in pending.reason_text

            running = snaps[long]
            assert running.state == "RUNNING" and running.partition == "polar"
            assert running.time_limit == "5:00" and running.restarts == 0
            assert running.mapped.status is TaoStatus.RUNNING

            assert not snaps[UNKNOWN].found

            # Finished ids straight to sacct, nothing to squeue.
            probe = await _tick(conn, [], [ok])
            assert probe.squeue_rc is None and probe.sacct_ids == [ok]
            assert probe.snapshot(ok).state == "COMPLETED"

            # squeue alone on an id it does not know fails for the whole list; the tick holds.
            lost = await _tick(conn, [UNKNOWN])
            assert lost.squeue_rc == 1 and lost.squeue_unknown_ids
            assert lost.error == "" and lost.sacct_ids == [UNKNOWN]
            assert not lost.snapshot(UNKNOWN).found
        finally:
            await conn.run(join(["scancel", held, long]))
        # Cancelled ids: squeue still knows them for MinJobAge, sacct gets the final record
        # a few seconds later (slurmdbd lags): poll, bounded, until both are settled.
        deadline = time.monotonic() + 60
        while True:
            out = await _tick(conn, [held, long])
            if all(s.settled for s in out.snapshots([held, long]).values()):
                break
            if time.monotonic() > deadline:
                break  # the assertions below say what is missing
            await asyncio.sleep(1)
        for job_id in (held, long):
            snap = out.snapshot(job_id)
            assert snap.state == "CANCELLED" and snap.settled
            assert snap.mapped.status is TaoStatus.CANCELED
