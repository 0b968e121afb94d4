"""Fixtures shared by the monitor/logs integration tests (real sandbox cluster)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.remote.connection import Connection
from tao_slurm_tui.services.store import JobStore
from tests.integration.monitor_helpers import Harness


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
