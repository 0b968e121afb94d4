"""Pilot tests of onboarding: profile form validation and saving, doctor fixes as buttons."""

from __future__ import annotations

from typing import Any

from textual.widgets import Button, Input

from tao_slurm_tui.config import Profile
from tao_slurm_tui.screens.credentials import CredentialsModal
from tao_slurm_tui.screens.onboarding import OnboardingScreen, profile_errors
from tao_slurm_tui.screens.trust_host import TrustHostModal
from tao_slurm_tui.services.fake import FAKE_FINGERPRINT, FAKE_HOST, FakeBackend
from tao_slurm_tui.widgets.check_row import CheckRow
from tao_slurm_tui.widgets.secret_input import SecretInput
from tests.tui.conftest import SIZE, build_app


def test_profile_errors() -> None:
    good = {"name": "lab", "user": "ana", "hostnames": "a.example.org, b", "partition": "p"}
    assert profile_errors({**good, "port": "22"}) == {}
    bad = profile_errors({"name": "a b", "user": "", "hostnames": "", "partition": "", "port": "x"})
    assert set(bad) == {"name", "user", "hostnames", "partition", "port"}


async def _open(pilot: Any) -> OnboardingScreen:
    await pilot.press("d")
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    screen = pilot.app.screen
    assert isinstance(screen, OnboardingScreen)
    return screen


def _row(screen: OnboardingScreen, action: str) -> CheckRow:
    return next(r for r in screen.query(CheckRow) if r.result.action == action)


async def test_shown_first_when_the_profile_is_incomplete() -> None:
    fake = FakeBackend(profile=Profile(), profile_name="new")
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, OnboardingScreen)
        await app.workers.wait_for_complete()
        screen = app.screen
        screen.query_one("#p-user", Input).value = "ana"
        screen.query_one("#p-hostnames", Input).value = "login.example.org"
        screen.query_one("#p-partition", Input).value = "gpu"
        screen.query_one("#p-name", Input).value = "lab"
        await pilot.pause()
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert fake.profile_name == "lab"
        assert fake.profile.user == "ana" and fake.profile.hostnames == ["login.example.org"]


async def test_invalid_profile_is_not_saved(fake: FakeBackend) -> None:
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot)
        screen.query_one("#p-user", Input).value = ""
        await pilot.pause()
        assert screen.query_one("#pe-user").has_class("-shown")
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert fake.profile.user == "researcher"


async def test_failing_checks_have_fix_buttons(fake: FakeBackend) -> None:
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot)
        failing = [r for r in screen.query(CheckRow) if r.result.status == "fail"]
        assert len(failing) == 5
        assert all(r.query(Button) for r in failing)


async def test_trust_host_shows_fingerprint_then_trusts_only_on_confirm(fake: FakeBackend) -> None:
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot)
        _row(screen, "trust_host").query_one(Button).press()
        await pilot.pause()
        assert isinstance(app.screen, TrustHostModal)
        assert FAKE_FINGERPRINT in app.export_screenshot()
        await pilot.press("escape")
        await pilot.pause()
        assert fake.trusted_hosts == []
        _row(screen, "trust_host").query_one(Button).press()
        await pilot.pause()
        app.screen.query_one("#trust", Button).press()
        await app.workers.wait_for_complete()
        await pilot.pause()
        await app.workers.wait_for_complete()
        assert fake.trusted_hosts == [FAKE_HOST]
        assert all(r.result.action != "trust_host" for r in screen.query(CheckRow))


async def test_install_key_uses_the_masked_password_once(fake: FakeBackend) -> None:
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot)
        row = _row(screen, "install_key")
        field = row.query_one(SecretInput)
        field.focus()
        await pilot.press(*"hunter2-pw")
        assert "hunter2" not in app.export_screenshot()
        row.query_one(Button).press()
        await pilot.pause()
        assert field.value == ""
        await app.workers.wait_for_complete()
        await pilot.pause()
        await app.workers.wait_for_complete()
        assert all(r.result.action != "install_key" for r in screen.query(CheckRow))


async def test_credentials_and_account_fixes(fake: FakeBackend) -> None:
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot)
        _row(screen, "set_account").query_one(Button).press()
        await pilot.pause()
        assert fake.profile.account == "edgeai"
        _row(screen, "install_credentials").query_one(Button).press()
        await pilot.pause()
        assert isinstance(app.screen, CredentialsModal)
