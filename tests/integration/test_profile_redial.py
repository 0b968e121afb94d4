"""The set-up screen against the real sandbox: a saved port is the one the app talks to next.

Driven like a researcher with Pilot keys on a real :class:`ClusterBackend`: the profile first
names a port nobody listens on (the doctor fails), then the sandbox's sshd, then a second sshd
of the same machine on another port (:func:`tests.integration.fresh_account.password_sshd`),
then the dead port again, each fixed in the form and saved with Ctrl+S, never restarting the
app. Which sshd a command reached is the server port in the remote ``$SSH_CONNECTION``.
"""

from __future__ import annotations

import gc
import logging
import shutil
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from tao_slurm_tui.app import make_app
from tao_slurm_tui.config import Config, Settings
from tao_slurm_tui.core.preflight import CheckStatus
from tao_slurm_tui.screens.onboarding import OnboardingScreen
from tao_slurm_tui.screens.queue import QueueScreen
from tao_slurm_tui.services.cluster import ClusterBackend
from tao_slurm_tui.services.store import JobStore
from tests import sandbox
from tests.integration.fresh_account import free_port, password_sshd
from tests.tui.waits import record_notifications, settle, wait_for

TIMEOUT = 90.0
"""Seconds a doctor run may take on the shared cluster."""


def login_status(screen: OnboardingScreen) -> CheckStatus | None:
    """What the set-up screen's login check shows (None before the doctor reached it)."""
    found = [r.status for r in screen.results if r.check == "login"]
    return found[0] if found else None


async def save_port(pilot: Pilot[Any], screen: OnboardingScreen, port: int) -> None:
    """Type ``port`` into the form, Ctrl+S, and wait for the doctor run the save starts."""
    screen.results = []
    screen.query_one("#p-port", Input).value = str(port)
    await pilot.press("ctrl+s")
    await wait_for(pilot, lambda: login_status(screen) is not None, "the doctor", TIMEOUT)
    await settle(pilot, TIMEOUT)


async def test_a_fixed_port_saved_in_the_set_up_screen_is_dialled_at_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    known_hosts = tmp_path / "known_hosts"
    shutil.copyfile(sandbox.KNOWN_HOSTS, known_hosts)
    dead = free_port()
    profile = sandbox.sandbox_profile(port=dead, known_hosts=str(known_hosts), connect_timeout=5)
    config = Config(
        tmp_path / "config.toml", Settings(default_profile="sb", profiles={"sb": profile})
    )
    config.save()
    backend = ClusterBackend(config, "sb", store=JobStore(tmp_path / "state.db"))
    app = make_app(backend, settings=Settings(poll_interval=3600), cursor_blink=False)

    async def server_port() -> int:
        answer = await backend.conn.run("echo $SSH_CONNECTION", check=True)
        return int(answer.stdout.split()[3])

    notes = record_notifications(app)
    caplog.set_level(logging.ERROR, logger="asyncio")
    sshd_root = tmp_path / "sshd2"
    sshd_root.mkdir()
    with password_sshd(sshd_root, sandbox.USER) as (other_port, host_key_pub):
        with known_hosts.open("a") as out:
            out.write(f"[{sandbox.HOST}]:{other_port} {host_key_pub.read_text().strip()}\n")
        try:
            async with app.run_test(size=(120, 36)) as pilot:
                await wait_for(pilot, lambda: isinstance(app.screen, QueueScreen), "the queue")
                await pilot.press("d")
                await wait_for(pilot, lambda: isinstance(app.screen, OnboardingScreen), "set-up")
                screen = app.screen
                assert isinstance(screen, OnboardingScreen)
                await wait_for(pilot, lambda: login_status(screen) is not None, "doctor", TIMEOUT)
                assert login_status(screen) is CheckStatus.FAIL  # nobody listens there

                await save_port(pilot, screen, sandbox.PORT)
                assert login_status(screen) is CheckStatus.PASS
                assert not [r for r in screen.results if r.status is CheckStatus.FAIL]
                assert await server_port() == sandbox.PORT

                # Connected to the sandbox's sshd: another port must not keep using it.
                await save_port(pilot, screen, other_port)
                assert login_status(screen) is CheckStatus.PASS
                assert await server_port() == other_port

                await save_port(pilot, screen, dead)
                assert login_status(screen) is CheckStatus.FAIL, "the old connection was used"
                assert Config.load(config.path).settings.profiles["sb"].port == dead
                said = [n.message for n in notes]
                assert said.count("Profile 'sb' saved.") == 3
                assert not [n for n in said if "Traceback" in n]
        finally:
            await backend.close()
    gc.collect()
    assert not [r for r in caplog.records if "never retrieved" in r.getMessage()]
