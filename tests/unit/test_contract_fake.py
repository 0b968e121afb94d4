"""The contract scenarios (tests/contract.py) on the fake cluster: what the sandbox gives.

Both ways the fake runs: a test's world, which moves when a tool asks and is polled every
tick, and demo mode's, whose jobs move on their own and write run events, watched at the pace
the sandbox (a real cluster) is."""

from __future__ import annotations

from pathlib import Path

import pytest

from tao_slurm_tui.services.fakecluster.demo import Demo
from tests.contract import EXPECTED, SCENARIOS


@pytest.mark.parametrize("paced", [False, True], ids=["polled", "paced"])
@pytest.mark.parametrize("name", list(SCENARIOS))
async def test_the_fake_cluster_keeps_the_contract(
    name: str, paced: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    demo = Demo(tmp_path / "demo", workstation=False, paced=paced)
    backend = demo.backend()
    assert backend.monitor.watch is not None if paced else backend.monitor.watch is None
    try:
        assert await SCENARIOS[name](backend) == EXPECTED[name]
    finally:
        await backend.close()
        demo.close()
