"""Helpers of the monitor/logs integration tests: submit real jobs, tick until a condition."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable
from typing import Any

from tao_slurm_tui.core.models import Attempt, JobRecord
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.core.quoting import join, quote
from tao_slurm_tui.core.spec import SpecDraft
from tao_slurm_tui.remote.connection import CommandResult, Connection
from tao_slurm_tui.services.monitor import Monitor, TickResult
from tao_slurm_tui.services.store import JobStore
from tao_slurm_tui.services.submit import Submitter
from tests import sandbox
from tests.integration.submit_helpers import submit

PROFILE = "sandbox"
IMAGE = "nvcr.io/nvidia/tao/tao-toolkit:6.26.3-pyt"

SETTLE = 180.0
"""Default bound of :meth:`Harness.tick_until`: a job may PEND ~2 minutes while parallel tests
hold the node's 8 CPUs / 4 GPUs, then run; the monitor also waits for slurmdbd to agree."""


def unique(kind: str) -> str:
    """A job name no other test (or run) uses."""
    return f"t-{kind}-{uuid.uuid4().hex[:10]}"


def status_line(status: str, message: str = "", **extra: Any) -> str:
    """A bash command appending one status.json line for the running job."""
    entry = {"date": "1/1/2026", "time": "00:00:00", "status": status, "verbosity": "INFO"}
    if message:
        entry["message"] = message
    entry.update(extra)
    target = '"$TAO_API_RESULTS_DIR/$TAO_JOB_ID"'
    return f"mkdir -p {target} && echo {quote(json.dumps(entry))} >> {target}/status.json"


class CountingConn:
    """Wraps a Connection and counts the remote commands a tick waits for (``calls``) apart
    from the background sacct follow-ups and site-state fetches it never waits for
    (``followups``)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.calls: list[str] = []
        self.followups: list[str] = []

    async def run_framed(self, command: Any, **kwargs: Any) -> CommandResult:
        self.calls.append(command if isinstance(command, str) else " ".join(command))
        return await self.conn.run_framed(command, **kwargs)

    async def run(self, command: Any, **kwargs: Any) -> CommandResult:
        cmd = command if isinstance(command, str) else " ".join(command)
        background = "sacct -X -D" in cmd or "scontrol show reservation" in cmd
        (self.followups if background else self.calls).append(cmd)
        return await self.conn.run(command, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.conn, name)


def job_spec(name: str, command: str, **spec: Any) -> SpecDraft:
    """A small CPU job on the sandbox (no GPU, no SQSH, a quarter hour)."""
    values: dict[str, Any] = {
        "name": name,
        "image": IMAGE,
        "command": command,
        "num_gpus": 0,
        "cpus_per_task": 1,
        "time_hours": 0.25,
        "use_sqsh": False,
        "container_mounts": [],
    }
    values.update(spec)
    return SpecDraft(values)


class Harness:
    """A connection, a store, a submitter and a monitor for one test."""

    def __init__(
        self, conn: Connection, store: JobStore, profile: Profile, *, paced: bool = False
    ) -> None:
        self.conn = conn
        self.paced = paced
        """The monitor asks slurmctld at its pace, from the jobs' run events (the TUI's)."""
        self.skew = 0.0
        """Seconds the monitor's clock is ahead of the real one (to reach the pace at once)."""
        self.counting = CountingConn(conn)
        self.store = store
        self.profile = profile
        self.submitter = Submitter(conn, store, PROFILE, profile)
        self.monitor = self.new_monitor()

    def new_monitor(self) -> Monitor:
        return Monitor(
            self.counting,  # type: ignore[arg-type]
            self.store,
            PROFILE,
            self.profile,
            resubmit=self.submitter.resubmit,
            reconcile=self.submitter.reconcile_interrupted,
            clock=lambda: time.time() + self.skew,
            paced=self.paced,
        )

    async def submit(self, name: str, command: str, **spec: Any) -> JobRecord:
        await submit(self.submitter, job_spec(name, command, **spec))
        return self.store.require(PROFILE, name)

    async def submit_raw(self, name: str, script: str, *sbatch_args: str) -> JobRecord:
        """sbatch a plain script (hold → mkdir → release) and record it in the store."""
        base = sandbox.RESULTS
        logdir = f"{base}/slurm-logs/{name}-"
        sbatch = join(
            [
                "sbatch",
                "--parsable",
                "--hold",
                "-J",
                name,
                "-p",
                "polar",
                "-c",
                "1",
                "-o",
                f"{base}/slurm-logs/%x-%j/main.out",
                "-e",
                f"{base}/slurm-logs/%x-%j/main.err",
                *sbatch_args,
                "--wrap",
                script,
            ]
        )
        cmd = (
            f'id=$({sbatch}) && mkdir -p {quote(logdir)}"$id" && scontrol release "$id" '
            '&& echo "$id"'
        )
        result = await self.conn.run(cmd, check=True)
        slurm_id = result.stdout.strip().splitlines()[-1]
        record = JobRecord(
            id=name,
            profile=PROFILE,
            base_results_dir=base,
            submitted=True,
            attempts=[Attempt(number=0, slurm_job_id=slurm_id)],
        )
        return self.store.create_job(record)

    async def tick_until(
        self,
        name: str,
        done: Callable[[JobRecord], bool],
        *,
        timeout: float = SETTLE,
        interval: float = 1.0,
        monitor: Monitor | None = None,
    ) -> JobRecord:
        """Tick until ``done(job)``; fail after ``timeout`` seconds."""
        mon = monitor or self.monitor
        deadline = time.monotonic() + timeout
        while True:
            await mon.tick()
            job = self.store.require(PROFILE, name)
            if done(job):
                return job
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out; job is {job.status_json()}")
            await asyncio.sleep(interval)

    async def tick(self) -> TickResult:
        return await self.monitor.tick()

    async def cleanup(self) -> None:
        """Cancel whatever is still active (best effort, one scancel per job)."""
        for job in self.store.active(PROFILE):
            await self.monitor.cancel(job.id)
