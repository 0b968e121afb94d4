"""Shared fixtures: isolated XDG dirs for every test, and the sandbox cluster."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import sandbox
from tests.tools import in_ci


@pytest.fixture(autouse=True)
def _isolated_xdg(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Every test gets its own config/data/cache dirs and no platform env overrides."""
    root = tmp_path_factory.mktemp("xdg")
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        path = root / var.lower()
        path.mkdir()
        monkeypatch.setenv(var, str(path))
    for var in (
        "SLURM_USER",
        "SLURM_HOSTNAME",
        "SLURM_PARTITION",
        "SSH_KEY_PATH",
        "SLURM_BASE_RESULTS_DIR",
        "SLURM_ACCOUNT",
        "SLURM_TIME_HOURS",
        "SLURM_TIMEOUT_HOURS",
        "SLURM_USE_REQUEUE",
        "SQUEUE_FORMAT",
        "SACCT_FORMAT",
    ):
        monkeypatch.delenv(var, raising=False)
    return root


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests under tests/integration need the cluster: mark them. The fault-injection suite
    (tests/faults) disturbs the whole cluster (daemons restarted, sessions killed): serial."""
    for item in items:
        parts = Path(str(item.fspath)).parts
        if "integration" in parts or "faults" in parts:
            item.add_marker(pytest.mark.cluster)
        if "faults" in parts:
            item.add_marker(pytest.mark.serial)


@pytest.fixture(scope="session")
def cluster() -> Iterator[None]:
    """The sandbox cluster must be up. In CI an unreachable cluster FAILS the test."""
    why = sandbox.reachable()
    if why:
        if in_ci():
            pytest.fail(f"sandbox cluster required in CI: {why}")
        pytest.skip(f"sandbox cluster not up: {why}")
    yield


@pytest.fixture
def sandbox_profile(cluster: None):  # type: ignore[no-untyped-def]
    """A :class:`~tao_slurm_tui.config.Profile` for the sandbox cluster."""
    return sandbox.sandbox_profile()
