"""Every test here drives the real app in tmux."""

from __future__ import annotations

import pytest

from tests.tools import require


@pytest.fixture(autouse=True)
def _tmux_installed() -> None:
    require("tmux")
