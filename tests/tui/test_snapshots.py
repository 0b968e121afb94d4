"""Snapshots of every screen and modal at 120x36 on the fake back end with a frozen clock.

Update with ``make snapshot-update`` and LOOK at the SVGs before accepting them.
"""

from __future__ import annotations

from typing import Any

from textual.pilot import Pilot
from textual.widgets import Input

from tao_slurm_tui.app import TaoSlurmApp
from tao_slurm_tui.screens.composer import ComposerScreen
from tao_slurm_tui.screens.credentials import CredentialsModal
from tao_slurm_tui.screens.logs import LogsScreen
from tao_slurm_tui.services.fake import FakeBackend
from tests.tui.conftest import SIZE, build_app, frozen
from tests.tui.test_composer import GOOD


def _app() -> TaoSlurmApp:
    return build_app(FakeBackend(clock=frozen))


async def _settle(pilot: Pilot[Any]) -> None:
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause(0.3)


def test_queue_many_states(snap_compare: Any) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await _settle(pilot)

    assert snap_compare(_app(), terminal_size=SIZE, run_before=run_before)


def test_queue_retried_job_detail(snap_compare: Any) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await _settle(pilot)
        await pilot.press("down", "down", "down", "down")
        await _settle(pilot)

    assert snap_compare(_app(), terminal_size=SIZE, run_before=run_before)


def test_queue_filtered(snap_compare: Any) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await _settle(pilot)
        await pilot.press("slash", *"pending")
        await _settle(pilot)

    assert snap_compare(_app(), terminal_size=SIZE, run_before=run_before)


def test_confirm_cancel_modal(snap_compare: Any) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await _settle(pilot)
        await pilot.press("down", "c")
        await _settle(pilot)

    assert snap_compare(_app(), terminal_size=SIZE, run_before=run_before)


def test_logs_mid_stream_with_separator_and_search(snap_compare: Any) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        app = pilot.app
        await _settle(pilot)
        await app.push_screen(LogsScreen(app.ctx, "bert-retried"))  # type: ignore[attr-defined]
        await pilot.pause(0.3)
        await pilot.press("slash", *"NCCL", "enter")
        await pilot.pause(0.3)

    assert snap_compare(_app(), terminal_size=SIZE, run_before=run_before)


def test_composer_with_errors(snap_compare: Any) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        app = pilot.app
        await _settle(pilot)
        screen = ComposerScreen(app.ctx, dict(GOOD))  # type: ignore[attr-defined]
        await app.push_screen(screen)
        await _settle(pilot)
        screen.query_one("#f-name", Input).value = "bad name!"
        screen.query_one("#f-num_gpus", Input).value = "four"
        screen.query_one("#f-time_hours", Input).value = "10"
        await _settle(pilot)
        screen.query_one("#f-image", Input).focus()
        await _settle(pilot)

    assert snap_compare(_app(), terminal_size=SIZE, run_before=run_before)


def test_onboarding_with_failing_checks(snap_compare: Any) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await _settle(pilot)
        await pilot.press("d")
        await _settle(pilot)

    assert snap_compare(_app(), terminal_size=SIZE, run_before=run_before)


def test_trust_host_modal(snap_compare: Any) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await _settle(pilot)
        await pilot.press("d")
        await _settle(pilot)
        screen = pilot.app.screen
        screen.trust("login1.example.org")  # type: ignore[attr-defined]
        await pilot.pause(0.3)

    assert snap_compare(_app(), terminal_size=SIZE, run_before=run_before)


def test_credentials_modal_shows_only_the_mask(snap_compare: Any) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        app = pilot.app
        await _settle(pilot)
        await app.push_screen(CredentialsModal(app.ctx.backend))  # type: ignore[attr-defined]
        await pilot.pause()
        await pilot.press(*"SENTINEL-ngc-4f9a7c")
        await pilot.pause(0.3)

    assert snap_compare(_app(), terminal_size=SIZE, run_before=run_before)


def test_help(snap_compare: Any) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await _settle(pilot)
        await pilot.press("question_mark")
        await _settle(pilot)

    assert snap_compare(_app(), terminal_size=SIZE, run_before=run_before)


def test_error_modal(snap_compare: Any) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await _settle(pilot)
        pilot.app.report_error(RuntimeError("the store is locked"))  # type: ignore[attr-defined]
        await _settle(pilot)

    assert snap_compare(_app(), terminal_size=SIZE, run_before=run_before)
