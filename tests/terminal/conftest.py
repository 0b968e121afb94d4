"""Every test here drives the real app in tmux."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tao_slurm_tui.services.fakecluster.demo import Demo
from tao_slurm_tui.services.fakecluster.seed import PROFILE_NAME
from tao_slurm_tui.services.fakecluster.world import World
from tests.terminal.demo import demo_directory
from tests.terminal.tmux import Terminal
from tests.tools import require


@pytest.fixture(autouse=True)
def _tmux_installed() -> None:
    require("tmux")


@pytest.fixture
def demo_home(tmp_path: Path) -> Path:
    """A home whose config directory exists (a test writes the config it needs)."""
    home = tmp_path / "home"
    (home / ".config" / "tao-slurm-tui").mkdir(parents=True)
    return home


@pytest.fixture
def demo_world(demo_home: Path) -> Iterator[World]:
    """Demo mode's fake cluster, seeded where the app looks for it, its clock running."""
    demo = Demo(demo_directory(demo_home), now=None, poll_interval=2)
    yield demo.world(PROFILE_NAME)
    demo.close()


@pytest.fixture
def demo_terminals() -> Iterator[list[Terminal]]:
    """The terminals a test opens (closed afterwards)."""
    opened: list[Terminal] = []
    yield opened
    for terminal in opened:
        terminal.close()
