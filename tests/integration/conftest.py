"""Fixtures shared by the monitor/logs integration tests (real sandbox cluster)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.remote.connection import Connection
from tao_slurm_tui.services.store import JobStore
from tests import sandbox
from tests.integration.monitor_helpers import Harness
from tests.ready import ssh_agent_answers, wait_until


@contextlib.asynccontextmanager
async def harness(
    profile: Profile, store: JobStore, *, paced: bool = False
) -> AsyncIterator[Harness]:
    """A connection with ``profile``, and the monitor test harness over ``store`` (jobs it
    submitted are cancelled afterwards, the store closed)."""
    async with Connection(profile) as conn:
        h = Harness(conn, store, profile, paced=paced)
        try:
            yield h
        finally:
            await h.cleanup()
            store.close()


@pytest.fixture
async def h(sandbox_profile: Profile, tmp_path: Path) -> AsyncIterator[Harness]:
    """A connection to the sandbox, a fresh store, and the monitor test harness."""
    async with harness(sandbox_profile, JobStore(tmp_path / "state.db")) as hh:
        yield hh


@pytest.fixture
async def paced(sandbox_profile: Profile, tmp_path: Path) -> AsyncIterator[Harness]:
    """The harness with a paced monitor (the queue screen's): slurmctld asked when the jobs'
    run events change or the pace says so."""
    async with harness(sandbox_profile, JobStore(tmp_path / "state.db"), paced=True) as hh:
        yield hh


@pytest.fixture
def ssh_agent(tmp_path: Path) -> Iterator[str]:
    """An ssh-agent holding the sandbox key; yields its socket path."""
    if shutil.which("ssh-agent") is None or shutil.which("ssh-add") is None:
        pytest.skip("ssh-agent/ssh-add not installed")
    sock = str(tmp_path / "agent.sock")
    agent = subprocess.Popen(["ssh-agent", "-D", "-a", sock], stdout=subprocess.DEVNULL)
    try:
        # Not "the socket file exists": the agent creates it before it listens on it.
        wait_until(
            lambda: ssh_agent_answers(sock),
            f"ssh-agent on {sock}",
            alive=lambda: agent.poll() is None,
        )
        env = {**os.environ, "SSH_AUTH_SOCK": sock}
        subprocess.run(
            ["ssh-add", "-q", str(sandbox.SSH_KEY)], env=env, check=True, capture_output=True
        )
        yield sock
    finally:
        agent.terminate()
        agent.wait(timeout=5)
