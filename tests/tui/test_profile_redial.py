"""A profile saved with new login settings is dialled anew, without restarting the app.

The app runs on a real :class:`ClusterBackend` whose login host is :mod:`tests.fakesshd`: two of
them, each with its own port and remote home, stand for the old and the new cluster. Which one a
command reached is what ``pwd`` answers there.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.widgets import Input

from tao_slurm_tui.app import make_app
from tao_slurm_tui.config import Config, Settings
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.remote.connection import ConnectionState
from tao_slurm_tui.screens.onboarding import OnboardingScreen
from tao_slurm_tui.screens.queue import QueueScreen
from tao_slurm_tui.services.cluster import ClusterBackend
from tao_slurm_tui.services.store import JobStore
from tests import fakesshd
from tests.tui.waits import record_notifications, settle, wait_for


@pytest.fixture
def two_hosts(tmp_path: Path) -> Iterator[tuple[tuple[int, Path], tuple[int, Path]]]:
    """Two running fake login hosts: ((port, remote home), (port, remote home))."""
    with (
        fakesshd.running(tmp_path / "old") as old_port,
        fakesshd.running(tmp_path / "new") as new_port,
    ):
        yield (old_port, tmp_path / "old" / "home"), (new_port, tmp_path / "new" / "home")


async def test_saving_a_new_port_redials_and_an_unchanged_one_does_not(
    tmp_path: Path,
    two_hosts: tuple[tuple[int, Path], tuple[int, Path]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    (old_port, old_home), (new_port, new_home) = two_hosts
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text(
        (tmp_path / "old" / "known_hosts").read_text()
        + (tmp_path / "new" / "known_hosts").read_text()
    )
    profile = Profile(
        user="fake",
        hostnames=["127.0.0.1"],
        port=old_port,
        ssh_key_path=str(tmp_path / "old" / "client_key"),
        known_hosts=str(known_hosts),
        use_ssh_config=False,
        partition="polar",
        base_results_dir="/tmp/tao",
        container_runtime="none",
        connect_timeout=5,
        command_timeout=15,
    )
    config = Config(
        tmp_path / "config.toml", Settings(default_profile="fake", profiles={"fake": profile})
    )
    config.save()
    backend = ClusterBackend(config, "fake", store=JobStore(tmp_path / "state.db"))
    dials: list[str] = []
    backend.conn.add_state_listener(
        lambda state, _message: dials.append(state) if state is ConnectionState.CONNECTING else None
    )
    app = make_app(backend, settings=Settings(poll_interval=3600), cursor_blink=False)

    async def where() -> str:
        return (await backend.conn.run("pwd", check=True)).stdout.strip()

    notes = record_notifications(app)
    caplog.set_level(logging.ERROR, logger="asyncio")
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, QueueScreen), "the queue")
        await wait_for(pilot, lambda: backend.conn.connected, "the first connection")
        assert await where() == str(old_home)
        assert len(dials) == 1

        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, OnboardingScreen), "the set-up")
        screen = app.screen
        assert isinstance(screen, OnboardingScreen)
        await settle(pilot)

        # A field that is not about logging in: the open connection is kept, no new dial.
        screen.query_one("#p-partition", Input).value = "batch"
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert backend.profile.partition == "batch"
        assert await where() == str(old_home)
        assert len(dials) == 1, "saving an unchanged login dialled again"

        # Another port: the old connection goes and the next command reaches the new host.
        screen.query_one("#p-port", Input).value = str(new_port)
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert backend.profile.port == new_port
        assert Config.load(config.path).settings.profiles["fake"].port == new_port
        assert await where() == str(new_home)
        assert len(dials) == 2
        said = [n.message for n in notes]
        assert said.count("Profile 'fake' saved.") == 2
        assert not [m for m in said if "Traceback" in m]
    await backend.close()
    gc.collect()
    assert not [r for r in caplog.records if "never retrieved" in r.getMessage()]
