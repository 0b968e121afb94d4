"""The NGC key and passwords never reach the screen, the clipboard, or the widget after use."""

from __future__ import annotations

from typing import Any

from tao_slurm_tui.screens.credentials import CredentialsModal
from tao_slurm_tui.services.fake import FakeBackend
from tao_slurm_tui.widgets.secret_input import MASK, SecretInput
from tests.tui.conftest import SIZE, build_app

SENTINEL = "SENTINEL-ngc-4f9a7c"


def _leaks(svg: str) -> list[str]:
    # Any 4-character piece of the secret on screen counts as a leak.
    return [SENTINEL[i : i + 4] for i in range(len(SENTINEL) - 3) if SENTINEL[i : i + 4] in svg]


async def _open(pilot: Any) -> CredentialsModal:
    modal = CredentialsModal(pilot.app.ctx.backend)
    await pilot.app.push_screen(modal)
    await pilot.pause()
    return modal


async def test_typed_key_shows_only_the_mask_and_cannot_be_copied(fake: FakeBackend) -> None:
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        modal = await _open(pilot)
        await pilot.press(*SENTINEL)
        await pilot.pause()
        svg = app.export_screenshot()
        assert _leaks(svg) == []
        assert MASK * len(SENTINEL) in svg.replace("&#160;", " ")
        secret = modal.query_one(SecretInput)
        await pilot.press("ctrl+a", "ctrl+c", "ctrl+x")
        assert app.clipboard == ""
        assert secret.selected_text == ""


async def test_install_passes_the_key_and_clears_the_field(fake: FakeBackend) -> None:
    seen: list[str] = []
    original = fake.install_credentials

    async def spy(key: str) -> None:
        seen.append(key)
        await original(key)

    fake.install_credentials = spy  # type: ignore[method-assign,assignment]
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        modal = await _open(pilot)
        secret = modal.query_one(SecretInput)
        await pilot.press(*SENTINEL, "enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert seen == [SENTINEL]
        assert fake.installed_credentials == 1
        assert secret.value == ""
        assert app.screen is not modal
        assert _leaks(app.export_screenshot()) == []


async def test_failure_clears_the_field_and_shows_no_part_of_it(fake: FakeBackend) -> None:
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        modal = await _open(pilot)
        await pilot.press(*"SENTINEL with space", "enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.screen is modal
        assert modal.query_one(SecretInput).value == ""
        assert "contains spaces" in str(modal.status.render())
        assert "SENT" not in app.export_screenshot()
        assert fake.installed_credentials == 0


async def test_closing_clears_the_field(fake: FakeBackend) -> None:
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        modal = await _open(pilot)
        secret = modal.query_one(SecretInput)
        await pilot.press(*SENTINEL)
        await pilot.press("escape")
        await pilot.pause()
        assert secret.value == ""
