"""Fixtures for Pilot and snapshot tests: the fake back end and the app on it, frozen clock."""

from __future__ import annotations

import pytest

from tao_slurm_tui.app import TaoSlurmApp, make_app
from tao_slurm_tui.config import Settings
from tao_slurm_tui.services.fake import FROZEN_TIME, FakeBackend

SIZE = (120, 36)
"""Terminal size of every snapshot."""


def frozen() -> float:
    """The frozen clock."""
    return FROZEN_TIME


@pytest.fixture
def fake() -> FakeBackend:
    """A fresh deterministic back end."""
    return FakeBackend(clock=frozen)


def build_app(backend: FakeBackend, **settings: object) -> TaoSlurmApp:
    """The app on ``backend`` with a long poll interval (tests drive refreshes themselves).

    Text cursors do not blink: a snapshot must not depend on the instant it is taken.
    """
    return make_app(
        backend,
        settings=Settings(poll_interval=3600, **settings),  # type: ignore[arg-type]
        clock=frozen,
        cursor_blink=False,
    )


@pytest.fixture
def app(fake: FakeBackend) -> TaoSlurmApp:
    """The app on the fake back end."""
    return build_app(fake)


@pytest.fixture(autouse=True)
def _empty_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """A home without ~/.ssh/config: the set-up screen's Host choices must not depend on the
    machine the snapshots are taken on."""
    monkeypatch.setenv("HOME", str(tmp_path_factory.mktemp("home")))
