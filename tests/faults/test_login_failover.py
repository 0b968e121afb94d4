"""One login host of several dies in the middle of a session, and comes back.

The profile lists login2 first, then login1 (the comma list of a real site). login2 is killed
(``scripts/sandbox-cluster login-down login2``: its sshd and every session on it) while a tick
is under way, and while a submission's one sbatch command runs. The promises: the tick (or the
next) carries on through login1 by itself, the UI is told once which host took over, nothing
is submitted twice, and login2 serves again once it is back.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tao_slurm_tui.config import Config, Settings
from tao_slurm_tui.core.models import JobRecord, TaoStatus
from tao_slurm_tui.errors import TaoError
from tao_slurm_tui.remote.connection import Connection, ConnectionState
from tao_slurm_tui.services.cluster import ClusterBackend
from tao_slurm_tui.services.store import JobStore
from tests import sandbox
from tests.faults.test_faults import assert_no_orphan, live_jobs, one_sentence
from tests.integration.monitor_helpers import PROFILE, job_spec, unique
from tests.integration.submit_helpers import submit

pytestmark = pytest.mark.slow


def login2() -> str:
    hosts = {h["name"]: h for h in sandbox.info()["login_hosts"]}
    return str(hosts["login2"]["host"])


@contextlib.contextmanager
def login2_held() -> Iterator[None]:
    """login2 is ours to kill (exclusive lock) and is up again afterwards, whatever happens."""
    with sandbox.flocked(sandbox.LOGIN2_LOCK):
        try:
            yield
        finally:
            if not next(h for h in sandbox.fresh_info()["login_hosts"] if h["name"] == "login2")[
                "up"
            ]:
                up = sandbox.script("login-up", "login2")
                assert up.returncode == 0, up.stdout + up.stderr


def kill_login2() -> None:
    down = sandbox.script("login-down", "login2")
    assert down.returncode == 0, down.stdout + down.stderr


@contextlib.asynccontextmanager
async def backend_on_two_hosts(
    tmp_path: Path, *, only_login2: bool = False
) -> AsyncIterator[ClusterBackend]:
    """The back end the TUI and the CLI use, on a profile listing login2 then login1 (or
    login2 alone)."""
    hosts = [login2()] if only_login2 else [login2(), sandbox.HOST]
    profile = sandbox.sandbox_profile(hostnames=hosts)
    config = Config(tmp_path / "config.toml", Settings(default_profile=PROFILE))
    config.settings.profiles[PROFILE] = profile
    backend = ClusterBackend(config, PROFILE, store=JobStore(tmp_path / "state.db"))
    try:
        yield backend
    finally:
        for job in backend.store.active(PROFILE):
            with contextlib.suppress(TaoError):
                await backend.cancel(job.id)
            for slurm_id in live_jobs(job.id):  # (login2 may still be down)
                subprocess.run(["scancel", slurm_id], check=False)
        await backend.close()


class KillsLogin2OnPoll:
    """The monitor's connection: the tick's poll command finds login2 killed under it (the tick
    has read its jobs and built its command; the host dies before the answer)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.killed = False

    async def run_framed(self, command: Any, **kwargs: Any) -> Any:
        if not self.killed and "@@tao-poll" in str(command):
            self.killed = True
            await asyncio.to_thread(kill_login2)
        return await self.conn.run_framed(command, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.conn, name)


async def refresh_until_running(
    backend: ClusterBackend, name: str, *, site_away: bool = False
) -> JobRecord:
    """Refresh until ``name`` runs; with ``site_away`` a refresh that fails (the site not back
    yet) is tried again, else it fails the test."""
    job: JobRecord | None = None
    for _ in range(60):
        try:
            jobs = await backend.refresh()
        except TaoError:
            if not site_away:
                raise
            await asyncio.sleep(2)
            continue
        job = next(j for j in jobs if j.id == name)
        if job.status is TaoStatus.RUNNING:
            return job
        await asyncio.sleep(1)
    raise AssertionError(f"{name} is not running: {job.status_json() if job else 'no refresh'}")


async def test_login_host_dies_mid_tick_and_comes_back(tmp_path: Path) -> None:
    with login2_held():
        async with backend_on_two_hosts(tmp_path) as backend:
            states: list[tuple[ConnectionState, str]] = []
            backend.conn.add_state_listener(lambda s, m: states.append((s, m)))
            await backend.refresh()
            assert backend.conn.host == login2()
            assert backend.take_notices() == []
            name = unique("flogin")
            await submit(backend.submitter, job_spec(name, "sleep 600"))
            job = backend.store.require(PROFILE, name)
            assert job.attempts[0].login_host == login2()
            killer = KillsLogin2OnPoll(backend.conn)
            backend.monitor.conn = killer  # type: ignore[assignment]
            backend.monitor.accounting.conn = killer  # type: ignore[assignment]
            try:
                jobs = await backend.refresh()  # login2 dies under this tick
            except TaoError as exc:  # (the tick may give up once; the next one carries on)
                one_sentence(str(exc))
                jobs = await backend.refresh()
            assert killer.killed
            assert backend.conn.host == sandbox.HOST
            assert any(j.id == name and not j.status.terminal for j in jobs)
            # The UI is told once, in one sentence, which host took over.
            notices = backend.take_notices()
            assert notices == [
                f"The login host {login2()} went away; switched to {sandbox.HOST} (your jobs and "
                "their monitoring carry on)."
            ]
            assert backend.take_notices() == []
            assert (ConnectionState.CONNECTED, f"{login2()} stopped answering; switched to the "
                    f"login host {sandbox.HOST}") in states  # fmt: skip
            # Monitoring goes on through login1: the job runs, once.
            job = await refresh_until_running(backend, name)
            assert len(job.attempts) == 1
            assert_no_orphan(name, {job.attempts[0].slurm_job_id})
            # login2 comes back and serves again (a new session may use either host).
            up = await asyncio.to_thread(sandbox.script, "login-up", "login2")
            assert up.returncode == 0, up.stdout + up.stderr
            async with Connection.to_host(backend.profile, login2()) as again:
                assert (await again.run("squeue -h -o %j", check=True)).stdout.count(name) == 1


@pytest.mark.parametrize("stage", ["staging", "sbatch"])
async def test_login_host_dies_during_a_submission(tmp_path: Path, stage: str) -> None:
    """login2 dies while the submission stages its files or runs its one sbatch: the submit
    finishes through login1 (adopting a job the lost command created) or says in one sentence
    what happened; submitting again never makes a second job."""
    with login2_held():
        async with backend_on_two_hosts(tmp_path) as backend:
            await backend.conn.connect()
            assert backend.conn.host == login2()
            name = unique(f"fl{stage[:3]}")
            killed: list[bool] = []

            def progress(at: str, detail: str) -> None:
                if at == stage and not killed:
                    killed.append(True)
                    kill_login2()

            try:
                await submit(backend.submitter, job_spec(name, "sleep 120"), on_progress=progress)
            except TaoError as exc:
                one_sentence(str(exc))
                await submit(backend.submitter, job_spec(name, "sleep 120"))
            assert killed
            job = backend.store.require(PROFILE, name)
            assert job.submitted and len(job.attempts) == 1
            assert backend.conn.host == sandbox.HOST
            await backend.refresh()
            assert_no_orphan(name, {job.attempts[0].slurm_job_id})
            assert len(live_jobs(name)) == 1
