"""Shared fixtures: isolated XDG dirs for every test, and the sandbox cluster."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import sandbox
from tests.tools import in_ci


@pytest.fixture(autouse=True)
def _isolated_xdg(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Every test gets its own config/data/cache/runtime dirs and no platform env overrides."""
    root = tmp_path_factory.mktemp("xdg")
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        path = root / var.lower()
        path.mkdir()
        monkeypatch.setenv(var, str(path))
    # Shared-connection sockets: each test its own place (a dashboard under test must not lend
    # its connection to another test's commands), short enough for a socket address.
    runtime = root / "run"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("TAO_SLURM_TUI_RUNTIME_DIR", str(runtime))
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
    (tests/faults) disturbs the whole cluster (daemons restarted, sessions killed): serial,
    but for the faults marked ``own_fault`` (a locked state DB, the small file system only
    those tests use), which run beside the parallel suite."""
    for item in items:
        parts = Path(str(item.fspath)).parts
        if "integration" in parts or "faults" in parts:
            item.add_marker(pytest.mark.cluster)
        if "faults" in parts and item.get_closest_marker("own_fault") is None:
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


# ----------------------------------------------------------------------------- TAO wheel

TAO_TEST_WHEELS_ENV = "TAO_SLURM_TUI_TEST_WHEELS"
"""Directory the test suite keeps its copy of the pinned nvidia-tao-core wheel in."""


def tao_test_dir() -> Path:
    """One directory for the whole run (and the next ones), outside the per-test XDG dirs:
    the pinned wheel is downloaded once and the extracted release shared by every test."""
    configured = os.environ.get(TAO_TEST_WHEELS_ENV)
    if configured:
        return Path(configured)
    import tempfile

    return Path(tempfile.gettempdir()) / f"tao-slurm-tui-test-wheels-{os.getuid()}"


@pytest.fixture(scope="session")
def tao_wheel() -> Path:
    """The pinned nvidia-tao-core wheel as a local file, downloaded from PyPI on first use.

    A run that cannot fetch it fails (never skips): the TAO tests are the product's knowledge
    of TAO, and CI has PyPI.
    """
    from tao_slurm_tui.errors import TaoError
    from tao_slurm_tui.services.tao_cache import ensure_wheel_file

    try:
        return ensure_wheel_file(tao_test_dir())
    except TaoError as exc:
        pytest.fail(
            f"the TAO tests need the pinned nvidia-tao-core wheel: {exc} (or set "
            f"{TAO_TEST_WHEELS_ENV} to a directory holding it)",
            pytrace=False,
        )


@pytest.fixture(scope="session")
def tao_release(tao_wheel: Path):  # type: ignore[no-untyped-def]
    """The pinned TAO release extracted once into the shared test directory."""
    from tao_slurm_tui.services.tao_cache import open_release

    return open_release(wheel=str(tao_wheel), cache_root=tao_test_dir() / "cache")
