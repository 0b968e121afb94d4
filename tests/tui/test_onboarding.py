"""Pilot tests of onboarding: profile form validation and saving, doctor fixes as buttons."""

from __future__ import annotations

from typing import Any

from textual.widgets import Button, Input

from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.remote.hostkeys import (
    fingerprint,
    keys_for_host,
    read_known_hosts,
    trust_host_key,
)
from tao_slurm_tui.screens.credentials import CredentialsModal
from tao_slurm_tui.screens.onboarding import OnboardingScreen, profile_errors
from tao_slurm_tui.screens.trust_host import TrustHostModal
from tao_slurm_tui.services.cluster import ClusterBackend
from tao_slurm_tui.services.fakecluster.seed import HOST_KEYS, HOSTS
from tao_slurm_tui.services.fakecluster.world import World
from tao_slurm_tui.widgets.check_row import CheckRow
from tao_slurm_tui.widgets.secret_input import SecretInput
from tests.tui.conftest import SIZE, build_app, open_demo
from tests.tui.waits import record_notifications, settle, shown, wait_for


def test_profile_errors() -> None:
    good = {"name": "lab", "user": "ana", "hostnames": "a.example.org, b", "partition": "p"}
    assert profile_errors({**good, "port": "22"}) == {}
    bad = profile_errors({"name": "a b", "user": "", "hostnames": "", "partition": "", "port": "x"})
    assert set(bad) == {"name", "user", "hostnames", "partition", "port"}
    registries = {**good, "registry_hosts": "nvcr.io, tao-registry.internal"}
    assert profile_errors(registries) == {}
    with_port = profile_errors({**good, "registry_hosts": "nvcr.io, registry.example:5000"})
    assert with_port == {
        "registry_hosts": "Not a registry host (no scheme or port): registry.example:5000."
    }


async def _open(pilot: Any) -> OnboardingScreen:
    """Press d on the queue; the set-up screen once the doctor's results are listed."""
    app = pilot.app
    await settle(pilot)  # the queue's first poll
    await pilot.press("d")
    await shown(pilot, OnboardingScreen)
    screen = app.screen
    assert isinstance(screen, OnboardingScreen)
    await _checked(pilot, screen)
    return screen


async def _checked(pilot: Any, screen: OnboardingScreen) -> None:
    """Wait for the doctor run in flight (if any) to finish and its rows to be mounted."""
    await settle(pilot)
    await wait_for(
        pilot,
        lambda: len(screen.query(CheckRow)) == len(screen.results) > 0,
        "the doctor's rows",
    )


def _row(screen: OnboardingScreen, action: str) -> CheckRow:
    return next(r for r in screen.query(CheckRow) if r.result.action == action)


def _key_not_installed(
    world: World, fake: ClusterBackend, *, password: str = "hunter2-pw", trust: bool = True
) -> None:
    """The cluster does not know the workstation's key yet (only the account's password); with
    ``trust`` both login hosts' keys are trusted (the key is installed on each)."""
    world.local(f"{world.home}/.ssh/authorized_keys").write_text("")
    world.password = password
    if trust:
        profile = fake.profile
        trust_host_key(profile.known_hosts_path, HOSTS[1], profile.port, HOST_KEYS[HOSTS[1]])


def _no_default_account(world: World) -> None:
    """The site enforces accounts; the user has one (edgeai) but no default account."""
    with world.edit() as state:
        state["default_accounts"] = {}
        state["assocs"] = [a for a in state["assocs"] if a["user"] != "researcher"]
        state["assocs"].append({"account": "edgeai", "user": "researcher", "qos": "normal"})


def _trusted(fake: ClusterBackend, host: str) -> bool:
    profile = fake.profile
    return bool(keys_for_host(read_known_hosts(profile.known_hosts_path), host, profile.port))


async def test_shown_first_when_the_profile_is_incomplete(tmp_path: Any) -> None:
    demo = open_demo(tmp_path / "demo", profiles={"new": Profile()})
    fake = demo.backend()
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await shown(pilot, OnboardingScreen)
        screen = app.screen
        assert isinstance(screen, OnboardingScreen)
        await settle(pilot)
        screen.query_one("#p-user", Input).value = "ana"
        screen.query_one("#p-hostnames", Input).value = "login.example.org"
        screen.query_one("#p-partition", Input).value = "gpu"
        screen.query_one("#p-name", Input).value = "lab"
        await wait_for(pilot, lambda: profile_errors(screen.form_values()) == {}, "valid")
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: fake.profile_name == "lab", "the profile saved")
        assert fake.profile.user == "ana" and fake.profile.hostnames == ["login.example.org"]


async def test_invalid_profile_is_not_saved(fake: ClusterBackend) -> None:
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        notes = record_notifications(app)
        screen = await _open(pilot)
        screen.query_one("#p-user", Input).value = ""
        await wait_for(
            pilot, lambda: screen.query_one("#pe-user").has_class("-shown"), "the inline error"
        )
        await pilot.press("ctrl+s")
        # The refusal is the toast; only after it can "not saved" be asserted.
        await wait_for(
            pilot, lambda: any("Fix the fields" in n.message for n in notes), "the refusal"
        )
        assert fake.profile.user == "researcher"


async def test_failing_checks_have_fix_buttons(fake: ClusterBackend, world: World) -> None:
    _key_not_installed(world, fake, trust=False)
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot)
        failing = [r for r in screen.query(CheckRow) if r.result.status in ("fail", "warn")]
        # login2's host key is not trusted yet; login1 refuses the key (the rest needs a login).
        assert [r.result.check for r in failing] == ["host_keys", "login"]
        assert [r.result.action for r in failing] == ["trust_host", "install_key"]
        assert all(r.query(Button) for r in failing)


async def test_trust_host_shows_fingerprint_then_trusts_only_on_confirm(
    fake: ClusterBackend,
) -> None:
    app = build_app(fake)
    login2 = HOSTS[1]
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot)
        _row(screen, "trust_host").query_one(Button).press()
        await shown(pilot, TrustHostModal)
        print_ = fingerprint(HOST_KEYS[login2])
        await wait_for(pilot, lambda: print_ in app.export_screenshot(), "the print")
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is screen, "the modal closed")
        await settle(pilot)  # the refused trust worker ends
        assert not _trusted(fake, login2)
        _row(screen, "trust_host").query_one(Button).press()
        await shown(pilot, TrustHostModal)
        app.screen.query_one("#trust", Button).press()
        await wait_for(pilot, lambda: _trusted(fake, login2), "the host trusted")
        await _checked(pilot, screen)  # the doctor runs again
        assert all(r.result.action != "trust_host" for r in screen.query(CheckRow))


async def test_install_key_uses_the_masked_password_once(
    fake: ClusterBackend, world: World
) -> None:
    _key_not_installed(world, fake)
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot)
        row = _row(screen, "install_key")
        field = row.query_one(SecretInput)
        field.focus()
        await wait_for(pilot, lambda: field.has_focus, "the focused password field")
        await pilot.press(*"hunter2-pw")
        await wait_for(pilot, lambda: len(field.value) == 10, "the typed password")
        assert "hunter2" not in app.export_screenshot()
        row.query_one(Button).press()
        await wait_for(pilot, lambda: field.value == "", "the field cleared")
        await wait_for(
            pilot,
            lambda: all(r.result.action != "install_key" for r in screen.query(CheckRow)),
            "the check passing after the doctor's re-run",
        )
        await _checked(pilot, screen)
        assert all(r.result.action != "install_key" for r in screen.query(CheckRow))


async def test_credentials_and_account_fixes(fake: ClusterBackend, world: World) -> None:
    _no_default_account(world)
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot)
        _row(screen, "set_account").query_one(Button).press()
        await wait_for(pilot, lambda: fake.profile.account == "edgeai", "the account saved")
        assert screen.query_one("#p-account", Input).value == "edgeai"
        await _checked(pilot, screen)  # the doctor runs again after the fix
        _row(screen, "install_credentials").query_one(Button).press()
        await shown(pilot, CredentialsModal)


async def test_warnings_show_with_their_fix_and_unknown_actions_get_no_button(
    fake: ClusterBackend, world: World
) -> None:
    # The doctor reports `warn` (enroot credentials missing on a Pyxis cluster without an
    # NGC key) and actions the screen has no button for (edit_profile: a partition of the
    # profile the cluster does not have): both used to crash it.
    with world.edit() as state:
        state["partitions"] = [p for p in state["partitions"] if p["name"] != "gpu-long"]
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot)
        warn = _row(screen, "install_credentials")
        assert warn.has_class("-warn")
        assert "!" in str(warn.query(".glyph").first().render())
        assert warn.query(".fix") and warn.query(Button)
        edit = _row(screen, "edit_profile")
        assert edit.query(".fix") and not edit.query(Button)


async def test_keyboard_only_fixes(fake: ClusterBackend, world: World) -> None:
    """Issue 11, keyboard-only researchers: the cursor starts in the form's first field, Enter
    in a fix's password field runs the fix, and the focus then moves on to the next fix."""
    _key_not_installed(world, fake)
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot)
        assert app.focused is screen.query_one("#p-name", Input)
        field = _row(screen, "install_key").query_one(SecretInput)
        field.focus()
        await wait_for(pilot, lambda: field.has_focus, "the focused password field")
        await pilot.press(*"hunter2-pw", "enter")
        await wait_for(
            pilot,
            lambda: all(r.result.action != "install_key" for r in screen.query(CheckRow)),
            "the key installed by Enter and the doctor's re-run",
        )
        await _checked(pilot, screen)
        first_fix = next(r for r in screen.query(CheckRow) if r.query(Button))
        await wait_for(
            pilot,
            lambda: app.focused is first_fix.query_one(Button),
            "the focus on the next fix's button",
        )
        assert "hunter2" not in app.export_screenshot()


async def test_a_doctor_rerun_keeps_the_field_being_typed_in(
    fake: ClusterBackend, world: World
) -> None:
    _key_not_installed(world, fake)
    """A re-run of the doctor (Run checks, a fix elsewhere) keeps the rows whose result did not
    change: the password half typed stays in its field and keeps the focus, so the next letters
    go on into the field, not to the app's one-letter keys (the tmux journey lost them)."""
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot)
        field = _row(screen, "install_key").query_one(SecretInput)
        field.focus()
        await wait_for(pilot, lambda: field.has_focus, "the focused password field")
        await pilot.press(*"hunt")
        before = screen.results
        screen.doctor()
        await wait_for(pilot, lambda: screen.results is not before, "the doctor's re-run")
        await _checked(pilot, screen)
        assert _row(screen, "install_key").query_one(SecretInput) is field
        assert app.focused is field
        await pilot.press(*"er2")
        assert field.value == "hunter2"
        assert "hunter2" not in app.export_screenshot()
