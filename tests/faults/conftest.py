"""Fixtures of the fault-injection suite (real sandbox; every test is `serial`)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import sandbox
from tests.faults import daemons
from tests.integration.conftest import h, paced  # noqa: F401 - the same harness fixtures

ROOT = Path(__file__).resolve().parents[2]

CONFIG = sandbox.config_toml()


@pytest.fixture(autouse=True)
def _daemons_back() -> Iterator[None]:
    """Whatever a test stopped is running again afterwards (as sandbox-cluster records it)."""
    yield
    for name in ("sshd", "slurmdbd", "slurmctld"):
        if daemons.recorded(name) is None:
            daemons.start(name)
    daemons.sshd_up()
    daemons.slurmctld_up()
    daemons.slurmdbd_up()


@dataclass
class Cli:
    """``tao-slurm-tui`` as a separate process with its own config and state DB."""

    env: dict[str, str]
    config: Path

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "tao_slurm_tui", "--config", str(self.config), *args]

    def run(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.argv(*args),
            env=self.env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def popen(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.argv(*args),
            env=self.env,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )


@pytest.fixture
def cli(cluster: None, tmp_path: Path) -> Cli:
    config = tmp_path / "config.toml"
    config.write_text(CONFIG)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SSH_KEY"))}
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"):
        path = tmp_path / var.lower()
        path.mkdir(exist_ok=True)
        env[var] = str(path)
    return Cli(env, config)
