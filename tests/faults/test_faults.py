"""Fault injection on the real sandbox: the SSH session killed from the server side (during a
tick, staging, sbatch, a log follow), sshd / slurmctld restarted, slurmdbd stopped for a
minute, the client SIGKILLed at every submit stage and started again.

Every case checks the same promises: no duplicate SLURM job, no orphan (every live SLURM job
of ours is known to the store under its name), no lost record, one sentence for the user, and
monitoring that resumes by itself.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import time
from typing import Any

import pytest

from tao_slurm_tui.core.models import TaoStatus
from tao_slurm_tui.errors import TaoError
from tao_slurm_tui.services.logs import LogTailer
from tao_slurm_tui.services.submit import Submitter
from tests import sandbox
from tests.faults import daemons
from tests.faults.conftest import Cli
from tests.integration.monitor_helpers import IMAGE, PROFILE, Harness, job_spec, unique
from tests.integration.submit_helpers import submit

pytestmark = pytest.mark.slow


# ----------------------------------------------------------------------------------- oracles


def live_jobs(name: str) -> list[str]:
    """SLURM ids of the live (not finished) jobs named ``name`` of the sandbox user."""
    out = subprocess.run(
        ["squeue", "-h", "-u", sandbox.USER, f"--name={name}", "-o", "%i|%T"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout
    return [line.split("|")[0] for line in out.splitlines() if line.strip()]


def assert_no_orphan(name: str, known: set[str]) -> None:
    """At most one live job of that name, and it is one the store knows."""
    live = live_jobs(name)
    assert len(live) <= 1, f"duplicate SLURM jobs named {name}: {live}"
    assert set(live) <= known, f"orphaned SLURM job(s) {set(live) - known} named {name}"


def one_sentence(text: str) -> None:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    assert lines, "no message"
    assert "Traceback" not in text
    assert lines[-1].rstrip().endswith("."), lines[-1]


def local_port(h: Harness) -> int:
    """The client-side TCP port of the harness's SSH connection."""
    conn = h.conn._conn  # the live asyncssh connection
    assert conn is not None
    return int(conn.get_extra_info("sockname")[1])


def known_ids(h: Harness, name: str) -> set[str]:
    job = h.store.get(PROFILE, name)
    return {a.slurm_job_id for a in job.attempts} if job else set()


# ----------------------------------------------------------------------------------- SSH drops


async def test_session_killed_during_a_tick(h: Harness) -> None:
    name = unique("ftick")
    await h.submit(name, "sleep 600")
    await h.tick_until(name, lambda j: j.status is TaoStatus.RUNNING)
    port = local_port(h)
    tick = asyncio.ensure_future(h.monitor.tick())
    await asyncio.sleep(0.01)
    assert daemons.kill_session(port) >= 1
    try:
        await tick
    except TaoError as exc:
        one_sentence(str(exc))
    # Monitoring resumes by itself: the next ticks reconnect and see the job running.
    job = await h.tick_until(name, lambda j: j.status is TaoStatus.RUNNING, timeout=60)
    assert job.submitted and len(job.attempts) == 1
    assert_no_orphan(name, known_ids(h, name))


@pytest.mark.parametrize("stage", ["staging", "sbatch"])
async def test_session_killed_during_submit(h: Harness, stage: str) -> None:
    """The drop lands while the stage's remote commands run (staging uploads, or the one
    sbatch command whose answer is lost): the submit either finishes (adopting the job it
    finds by name) or says in one sentence what to do, and never leaves two jobs or one the
    store does not know."""
    name = unique(f"f{stage[:3]}")
    port = local_port(h)
    killed: list[int] = []

    def progress(at: str, detail: str) -> None:
        if at == stage and not killed:
            killed.append(daemons.kill_session(port))

    try:
        await submit(h.submitter, job_spec(name, "sleep 60"), on_progress=progress)
    except TaoError as exc:
        one_sentence(str(exc))
        # Submitting again reconciles: the job the lost command may have created is adopted,
        # or a fresh one is submitted, exactly once.
        await submit(h.submitter, job_spec(name, "sleep 60"))
    assert killed and killed[0] >= 1
    job = h.store.require(PROFILE, name)
    assert job.submitted and len(job.attempts) == 1
    assert_no_orphan(name, known_ids(h, name))
    await h.tick_until(name, lambda j: j.status in (TaoStatus.RUNNING, TaoStatus.PENDING))


async def test_session_killed_during_a_log_follow(h: Harness) -> None:
    name = unique("flog")
    await h.submit(name, "for i in $(seq 1 40); do echo line $i; sleep 0.5; done")
    job = await h.tick_until(name, lambda j: j.status is TaoStatus.RUNNING)
    tailer = LogTailer(h.conn, job, "out")
    seen: list[str] = []
    deadline = time.monotonic() + 120
    killed = False
    while time.monotonic() < deadline:
        try:
            for batch in await tailer.read_new():
                seen.extend(batch.lines)
        except TaoError as exc:
            one_sentence(str(exc))
        if not killed and len(seen) >= 3:
            assert daemons.kill_session(local_port(h)) >= 1
            killed = True
        if "line 40" in seen:
            break
        await asyncio.sleep(0.5)
    assert killed
    numbers = [int(line.split()[1]) for line in seen if line.startswith("line ")]
    assert numbers == list(range(1, 41)), "lines lost or repeated across the drop"


async def test_sshd_restarted(h: Harness) -> None:
    name = unique("fsshd")
    await h.submit(name, "sleep 600")
    # The app retries a lost login host for about two minutes (1 s doubling to 60 s, 8 times)
    # before it says the host is down; three attempts (3 s) reach the same state.
    h.conn.reconnect_attempts = 3
    daemons.stop("sshd")
    port = local_port(h)
    daemons.kill_session(port)  # the running session goes too (a reboot of the login host)
    try:
        with pytest.raises(TaoError) as info:
            await h.monitor.tick()
        one_sentence(str(info.value))
    finally:
        daemons.start("sshd")
    daemons.sshd_up()
    job = await h.tick_until(name, lambda j: j.status is TaoStatus.RUNNING, timeout=90)
    assert len(job.attempts) == 1 and not job.status.terminal
    assert_no_orphan(name, known_ids(h, name))


# ----------------------------------------------------------------------------------- SLURM daemons


async def test_slurmctld_restarted_mid_poll(h: Harness) -> None:
    name = unique("fctld")
    await h.submit(name, "sleep 600")
    await h.tick_until(name, lambda j: j.status is TaoStatus.RUNNING)
    daemons.stop("slurmctld")
    try:
        try:
            # squeue cannot reach the controller; sacct (slurmdbd) may still answer for it.
            await h.monitor.tick()
        except TaoError as exc:
            one_sentence(str(exc))
        job = h.store.require(PROFILE, name)
        assert job.status is TaoStatus.RUNNING, "a controller outage must not end the job"
    finally:
        daemons.start("slurmctld")
    daemons.slurmctld_up()
    job = await h.tick_until(name, lambda j: j.status is TaoStatus.RUNNING, timeout=90)
    assert len(job.attempts) == 1 and job.retries == 0
    assert_no_orphan(name, known_ids(h, name))


async def test_slurmdbd_stopped_while_a_job_ends(h: Harness) -> None:
    """sacct fails while the job finishes: no wrong final state meanwhile, and the job ends
    Complete once accounting is back."""
    await slurmdbd_stopped_while_a_job_ends(h, unique("fdbd"))


async def slurmdbd_stopped_while_a_job_ends(h: Harness, name: str) -> None:
    """A 5 s job runs and ends while slurmdbd is stopped for 25 s: it stays Running (or
    Complete) meanwhile and ends Complete, in one attempt, once accounting is back.

    25 s: the job ends within the first 10 and about eight ticks follow without accounting
    (a minute made these two tests the slowest of the suite and showed nothing more)."""
    await h.submit(name, "sleep 5")
    await h.tick_until(name, lambda j: j.status is TaoStatus.RUNNING)
    daemons.stop("slurmdbd")
    try:
        stop = time.monotonic() + 25
        while time.monotonic() < stop:
            try:
                await h.monitor.tick()
            except TaoError as exc:
                one_sentence(str(exc))
            job = h.store.require(PROFILE, name)
            assert job.status in (TaoStatus.RUNNING, TaoStatus.COMPLETE), job.status_json()
            await asyncio.sleep(2)
    finally:
        daemons.start("slurmdbd")
    daemons.slurmdbd_up()
    job = await h.tick_until(name, lambda j: j.status.terminal, timeout=120)
    assert job.status is TaoStatus.COMPLETE, job.status_json()
    assert len(job.attempts) == 1


# ----------------------------------------------------------------------------------- SIGKILL


SUBMIT_STAGES = [
    "checking the wall time",
    "creating the job layout",
    "writing",
    "sbatch --hold",
    "SLURM job",
]


@pytest.mark.parametrize("at", SUBMIT_STAGES)
def test_client_sigkilled_at_each_submit_stage(cli: Cli, tmp_path: Any, at: str) -> None:
    """`tao-slurm-tui submit` killed with SIGKILL when it reports ``at``; the next start of the
    tool (status, then submit again) finds every job it may have created, and never a second."""
    name = unique("fkill")
    spec_file = tmp_path / "spec.toml"
    spec_file.write_text(
        f'name = "{name}"\nimage = "{IMAGE}"\ncommand = "sleep 60"\nnum_gpus = 0\n'
        "cpus_per_task = 1\ntime_hours = 0.25\nuse_sqsh = false\ncontainer_mounts = []\n"
    )
    proc = cli.popen("submit", str(spec_file))
    assert proc.stderr is not None
    deadline = time.monotonic() + 120
    for line in proc.stderr:
        if at in line:
            proc.send_signal(signal.SIGKILL)
            break
        assert time.monotonic() < deadline
    proc.wait(timeout=30)
    try:
        # Restart: one status tick reconciles what the killed process left.
        status = cli.run("status", "--json")
        assert "Traceback" not in status.stderr
        jobs = {j["id"]: j for j in json.loads(status.stdout or "[]")}
        known = {jobs[name]["slurm_job_id"]} if name in jobs else set()
        assert_no_orphan(name, known - {""})
        # Submitting again never makes a second job: it adopts, refuses clearly or submits.
        again = cli.run("submit", str(spec_file))
        if again.returncode != 0:
            one_sentence(again.stderr)
        status = cli.run("status", "--json")
        jobs = {j["id"]: j for j in json.loads(status.stdout or "[]")}
        assert name in jobs, "the record of the job was lost"
        assert_no_orphan(name, {jobs[name]["slurm_job_id"]})
        assert len(live_jobs(name)) == 1
    finally:
        cli.run("cancel", name)
        for slurm_id in live_jobs(name):
            subprocess.run(["scancel", slurm_id], check=False)


class CrashAfterSbatch:
    """A connection whose caller dies (Ctrl-C, a crash) right after SLURM accepted the job:
    the sbatch command ran to its end, its answer never reached the store."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    async def run(self, command: Any, **kwargs: Any) -> Any:
        result = await self.conn.run(command, **kwargs)
        if isinstance(command, str) and "sbatch" in command and "--hold" in command:
            raise KeyboardInterrupt
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self.conn, name)


@pytest.mark.parametrize("then", ["tick", "cancel"])
async def test_crash_between_sbatch_and_the_store(h: Harness, then: str) -> None:
    """The job SLURM accepted is found by name on the next start: a tick adopts it (and then
    monitors it), a cancel scancels it. Never an orphan holding GPUs."""
    name = unique("fcrash")
    crashing = Submitter(CrashAfterSbatch(h.conn), h.store, PROFILE, h.profile)  # type: ignore[arg-type]
    with pytest.raises(KeyboardInterrupt):
        await submit(crashing, job_spec(name, "sleep 600"))
    live = live_jobs(name)
    assert len(live) == 1, live
    restarted = h.new_monitor()  # a new process: nothing in memory
    if then == "tick":
        job = await h.tick_until(
            name, lambda j: j.submitted and not j.status.terminal, monitor=restarted, timeout=60
        )
        assert [a.slurm_job_id for a in job.attempts] == live
    else:
        job = await restarted.cancel(name)
        assert job.status is TaoStatus.CANCELED
        deadline = time.monotonic() + 60
        while live_jobs(name) and time.monotonic() < deadline:
            await asyncio.sleep(1)
        assert live_jobs(name) == [], "cancel left the SLURM job running"
    assert_no_orphan(name, known_ids(h, name))
