"""Going home, to the logs and to another profile by the home screen's reference (Textual's
``pop_until_active``), never by counting the screen stack."""

from __future__ import annotations

from pathlib import Path

from tao_slurm_tui.app import TaoSlurmApp
from tao_slurm_tui.screens.capacity import CapacityScreen
from tao_slurm_tui.screens.help import HelpScreen
from tao_slurm_tui.screens.history import HistoryScreen
from tao_slurm_tui.screens.logs import LogsScreen
from tao_slurm_tui.screens.onboarding import OnboardingScreen
from tao_slurm_tui.services.cluster import ClusterBackend
from tao_slurm_tui.widgets.app_header import AppHeader
from tests.tui.conftest import SIZE, build_app
from tests.tui.test_capacity import Clusters, _app
from tests.tui.test_queue import _queue
from tests.tui.waits import settle, shown, wait_for


async def test_queue_from_deep_in_the_stack_dismisses_what_is_above(fake: ClusterBackend) -> None:
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        home = await _queue(pilot)
        await pilot.press("h")
        await shown(pilot, HistoryScreen)
        await pilot.press("question_mark")
        await shown(pilot, HelpScreen)
        app.action_queue()
        await wait_for(pilot, lambda: home.is_active, "the queue on top again")
        await settle(pilot)
        assert app.screen is home and len(app.screen_stack) == 2


async def test_logs_from_another_screen_open_the_selected_jobs(fake: ClusterBackend) -> None:
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        home = await _queue(pilot)
        await pilot.press("down")
        await wait_for(pilot, lambda: home.table.cursor_row == 1, "the second row")
        selected = home.table.cursor_job_id
        await pilot.press("p")
        await shown(pilot, CapacityScreen)
        app.action_logs()  # the palette's "Logs of selected job"
        logs: LogsScreen = await shown(pilot, LogsScreen)
        assert logs.job_id == selected
        await settle(pilot)
        assert app.screen_stack[-2] is home  # the capacity screen was dismissed on the way


async def test_a_profile_switch_replaces_the_home_queue_and_its_listener(tmp_path: Path) -> None:
    factory = Clusters(tmp_path / "clusters")
    app: TaoSlurmApp = _app(tmp_path, factory)
    async with app.run_test(size=SIZE) as pilot:
        old_home = await _queue(pilot)
        old_backend = app.backend
        assert isinstance(old_backend, ClusterBackend)
        await pilot.press("question_mark")
        await shown(pilot, HelpScreen)

        app.switch_profile("dgx-east")
        await wait_for(
            pilot,
            lambda: app.home is not old_home and app.screen is app.home,
            "the new queue on top",
        )
        new_home = await _queue(pilot)
        assert not old_home.is_attached and len(app.screen_stack) == 2
        assert new_home.query_one(AppHeader).status.profile == "dgx-east"
        new_backend = app.backend
        assert isinstance(new_backend, ClusterBackend) and new_backend is not old_backend

        # The old profile's cluster stays up while the new one's network goes: only the new
        # connection is listened to, so the session ends 'down'.
        factory.demo.world("fake").drop()
        new_world = factory.demo.world("dgx-east")
        new_world.link = "down"
        new_world.drop()
        await wait_for(pilot, lambda: app.session.connection == "down", "the new state")
        await settle(pilot)
        assert app.session.connection == "down"


async def test_escape_on_the_set_up_goes_back_to_the_queue(fake: ClusterBackend) -> None:
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        home = await _queue(pilot)
        await pilot.press("d")
        await shown(pilot, OnboardingScreen)
        await settle(pilot)
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is home, "the queue again")
