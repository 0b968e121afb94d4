"""Fixtures shared by the monitor/logs integration tests (real sandbox cluster)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.remote.connection import Connection
from tao_slurm_tui.services.store import JobStore
from tests.integration.monitor_helpers import Harness


@pytest.fixture
async def h(sandbox_profile: Profile, tmp_path: Path) -> AsyncIterator[Harness]:
    """A connection to the sandbox, a fresh store, and the monitor test harness (jobs it
    submitted are cancelled afterwards)."""
    store = JobStore(tmp_path / "state.db")
    async with Connection(sandbox_profile) as conn:
        harness = Harness(conn, store, sandbox_profile)
        try:
            yield harness
        finally:
            await harness.cleanup()
            store.close()
