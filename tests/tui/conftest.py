"""Fixtures for Pilot and snapshot tests: the real back end over a fake cluster, frozen clock.

The world API other tests set up with (see ``tao_slurm_tui.services.fakecluster``):

- ``fake``: the app's back end, a real :class:`ClusterBackend` (store, monitor, submitter,
  history, capacity, doctor...) over the seeded fake cluster of profile ``fake``;
- ``world``: that cluster. Steer it as time, an admin or the network would:
  ``world.advance(s)``, ``world.train("dino-train-1")``, ``world.fail("squeue")`` /
  ``world.heal()``, ``world.link = "down"``, ``world.drop()``, ``world.edit()`` (the state);
  ``world.commands`` lists what the services sent;
- ``demo``: the directory of both (``open_demo(tmp_path, pipeline=True, profiles=...)`` for
  another seed).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tao_slurm_tui.app import TaoSlurmApp, make_app
from tao_slurm_tui.config import Settings
from tao_slurm_tui.services.cluster import ClusterBackend
from tao_slurm_tui.services.fakecluster.demo import Demo
from tao_slurm_tui.services.fakecluster.seed import FROZEN_TIME, PROFILE_NAME
from tao_slurm_tui.services.fakecluster.world import World
from tests.tui.snapshot_home import snapshot_home

SIZE = (120, 36)
"""Terminal size of every snapshot."""


def frozen() -> float:
    """The frozen clock."""
    return FROZEN_TIME


def open_demo(folder: Path, **options: Any) -> Demo:
    """A fresh demo in ``folder`` (frozen clock; the tests' HOME holds its SSH key)."""
    return Demo(folder, workstation=False, **options)


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[Demo]:
    """The seeded fake cluster and the workstation's store."""
    made = open_demo(tmp_path / "demo")
    yield made
    made.close()


@pytest.fixture
def world(demo: Demo) -> World:
    """The fake cluster of profile ``fake``."""
    return demo.world(PROFILE_NAME)


@pytest.fixture
def fake(demo: Demo, world: World) -> ClusterBackend:
    """The real back end on the fake cluster."""
    return demo.backend()


def build_app(backend: Any, **settings: object) -> TaoSlurmApp:
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
def app(fake: ClusterBackend) -> TaoSlurmApp:
    """The app on the fake cluster."""
    return build_app(fake)


@pytest.fixture(autouse=True)
def _empty_home(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A home without ~/.ssh/config: the set-up screen's Host choices must not depend on the
    machine the snapshots are taken on. A snapshot's home is fixed (``snapshot_home``)."""
    if "snap_compare" in request.fixturenames:
        monkeypatch.setenv("HOME", str(snapshot_home()))
    else:
        monkeypatch.setenv("HOME", str(tmp_path_factory.mktemp("home")))


def polls(world: World) -> int:
    """Queue polls the cluster answered so far (``squeue -u <me> -t all`` commands)."""
    return sum("squeue -h -r -t all" in command for command in world.commands)


def history_pages(world: World) -> int:
    """History pages the cluster was asked for (one ``sacct`` pipeline each)."""
    return sum("page count=" in command for command in world.commands)


def capacity_refreshes(world: World) -> int:
    """Capacity refreshes the cluster answered (one command each)."""
    return sum("@@tao-cap:" in command for command in world.commands)


def estimates(world: World) -> int:
    """Start estimates the cluster was asked for (one ``sbatch --test-only`` command each)."""
    return sum("tao-test-only." in command for command in world.commands)


def credentials_installed(world: World) -> bool:
    """The account's enroot credentials file exists on the cluster (and is not empty)."""
    path = world.local(f"{world.home}/.config/enroot/.credentials")
    return path.exists() and path.stat().st_size > 0
