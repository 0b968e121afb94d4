"""The contract scenarios (tests/contract.py) on the sandbox cluster: what the fake must match."""

from __future__ import annotations

from pathlib import Path

import pytest

from tao_slurm_tui.config import Config, Settings
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.services.cluster import ClusterBackend
from tao_slurm_tui.services.store import JobStore
from tests.contract import EXPECTED, SCENARIOS


@pytest.mark.parametrize("name", list(SCENARIOS))
async def test_the_sandbox_keeps_the_contract(
    name: str, sandbox_profile: Profile, tmp_path: Path
) -> None:
    config = Config(
        tmp_path / "config.toml", Settings(default_profile="sb", profiles={"sb": sandbox_profile})
    )
    config.save()
    backend = ClusterBackend(config, "sb", store=JobStore(tmp_path / "state.db"))
    try:
        assert await SCENARIOS[name](backend) == EXPECTED[name]
    finally:
        for job in backend.jobs():  # nothing left queued on the shared sandbox
            if not job.status.terminal:
                await backend.cancel(job.id)
        await backend.close()
