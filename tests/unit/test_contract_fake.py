"""The contract scenarios (tests/contract.py) on the fake cluster: what the sandbox gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from tao_slurm_tui.services.fakecluster.demo import Demo
from tests.contract import EXPECTED, SCENARIOS


@pytest.mark.parametrize("name", list(SCENARIOS))
async def test_the_fake_cluster_keeps_the_contract(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    demo = Demo(tmp_path / "demo", workstation=False)
    backend = demo.backend()
    try:
        assert await SCENARIOS[name](backend) == EXPECTED[name]
    finally:
        await backend.close()
        demo.close()
