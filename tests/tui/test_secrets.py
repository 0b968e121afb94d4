"""The NGC key and passwords never reach the screen, the clipboard, or the widget after use."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from textual.widgets import Button

from tao_slurm_tui.screens.credentials import CredentialsModal
from tao_slurm_tui.screens.onboarding import OnboardingScreen
from tao_slurm_tui.screens.queue import QueueScreen
from tao_slurm_tui.services.cluster import ClusterBackend
from tao_slurm_tui.services.fakecluster.world import World
from tao_slurm_tui.widgets.check_row import CheckRow
from tao_slurm_tui.widgets.secret_input import MASK, SecretInput
from tests.tui.conftest import SIZE, build_app, credentials_installed
from tests.tui.waits import record_notifications, settle, shown, wait_for

SENTINEL = "SENTINEL-ngc-4f9a7c"


def _leaks(svg: str) -> list[str]:
    # Any 4-character piece of the secret on screen counts as a leak.
    return [SENTINEL[i : i + 4] for i in range(len(SENTINEL) - 3) if SENTINEL[i : i + 4] in svg]


async def _open(pilot: Any) -> CredentialsModal:
    """Open the key dialog over the queue, its masked field focused."""
    await shown(pilot, QueueScreen)
    await settle(pilot)
    modal = CredentialsModal(pilot.app.ctx.backend)
    await pilot.app.push_screen(modal)
    field = modal.query_one(SecretInput)
    await wait_for(pilot, lambda: field.has_focus, "the focused key field")
    return modal


async def _type(pilot: Any, modal: CredentialsModal, text: str) -> None:
    field = modal.query_one(SecretInput)
    await pilot.press(*text)
    await wait_for(pilot, lambda: len(field.value) == len(text), "the typed key")


async def test_typed_key_shows_only_the_mask_and_cannot_be_copied(fake: ClusterBackend) -> None:
    app = build_app(fake)
    notes = record_notifications(app)
    async with app.run_test(size=SIZE) as pilot:
        modal = await _open(pilot)
        await _type(pilot, modal, SENTINEL)
        await settle(pilot)
        svg = app.export_screenshot()
        assert _leaks(svg) == []
        assert MASK * len(SENTINEL) in svg.replace("&#160;", " ")
        secret = modal.query_one(SecretInput)
        await pilot.press("ctrl+a", "ctrl+c", "ctrl+x")
        # Refused with a toast each; only once both were handled does "nothing copied" mean much.
        await wait_for(
            pilot,
            lambda: (
                {"Copying a secret is disabled.", "Cutting a secret is disabled."}
                <= {n.message for n in notes}
            ),
            "both refusals",
        )
        assert app.clipboard == ""
        assert secret.selected_text == ""
        assert secret.value == SENTINEL  # ctrl+x cut nothing out either


async def test_the_mask_cannot_be_switched_off(fake: ClusterBackend) -> None:
    """The mask is Textual's password mode, held on: turning it off shows the mask still."""
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        modal = await _open(pilot)
        await _type(pilot, modal, SENTINEL)
        field = modal.query_one(SecretInput)
        field.password = False
        await settle(pilot)
        assert field.password
        svg = app.export_screenshot()
        assert _leaks(svg) == []
        assert MASK * len(SENTINEL) in svg.replace("&#160;", " ")


async def test_install_passes_the_key_and_clears_the_field(
    fake: ClusterBackend, world: World
) -> None:
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
        await _type(pilot, modal, SENTINEL)
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.screen is not modal, "the dialog closed")
        await settle(pilot)
        assert seen == [SENTINEL]
        assert credentials_installed(world)
        assert secret.value == ""
        assert app.screen is not modal
        assert _leaks(app.export_screenshot()) == []


async def test_failure_clears_the_field_and_shows_no_part_of_it(
    fake: ClusterBackend, world: World
) -> None:
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        modal = await _open(pilot)
        await _type(pilot, modal, "SENTINEL with space")
        await pilot.press("enter")
        await wait_for(
            pilot, lambda: "contains a space" in str(modal.status.render()), "the refusal"
        )
        await settle(pilot)
        assert app.screen is modal
        assert modal.query_one(SecretInput).value == ""
        assert "contains a space" in str(modal.status.render())
        assert "SENT" not in app.export_screenshot()
        assert not credentials_installed(world)


async def test_closing_clears_the_field(fake: ClusterBackend) -> None:
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        modal = await _open(pilot)
        secret = modal.query_one(SecretInput)
        await _type(pilot, modal, SENTINEL)
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is not modal, "the dialog closed")
        assert secret.value == ""


# ------------------------------------------------------------------ workers
# Textual's @work puts repr(args) into the worker's description (its repr, devtools, error
# reports) unless given a fixed one: a secret passed to a worker must not show up there.


def _worker_texts(app: Any) -> list[str]:
    texts: list[str] = []
    for worker in app.workers:
        texts += [worker.name, worker.group, worker.description, repr(worker), str(worker)]
    return texts


def _blocking(calls: list[str]) -> tuple[asyncio.Event, Callable[[str], Awaitable[None]]]:
    """A back-end call that records its argument and blocks until the event is set."""
    release = asyncio.Event()

    async def blocked(secret: str) -> None:
        calls.append(secret)
        await release.wait()

    return release, blocked


async def test_the_key_is_in_no_worker_description_nor_on_screen(
    fake: ClusterBackend, world: World
) -> None:
    calls: list[str] = []
    release, blocked = _blocking(calls)
    original = fake.install_credentials

    async def install(key: str) -> None:
        await blocked(key)
        await original(key)

    fake.install_credentials = install  # type: ignore[method-assign,assignment]
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        modal = await _open(pilot)
        await _type(pilot, modal, SENTINEL)
        await pilot.press("enter")
        await wait_for(pilot, lambda: calls == [SENTINEL], "the blocked install call")
        workers = [w for w in app.workers if w.group == "credentials" and not w.is_finished]
        assert workers, "the install worker must be running while its call is blocked"
        assert [t for t in _worker_texts(app) if _leaks(t)] == []
        assert _leaks(app.export_screenshot()) == []
        release.set()
        await wait_for(pilot, lambda: credentials_installed(world), "the install to finish")


async def test_password_and_passphrase_are_in_no_worker_description(
    fake: ClusterBackend, world: World
) -> None:
    world.local(f"{world.home}/.ssh/authorized_keys").write_text("")  # the key login fails
    calls: list[str] = []
    release, blocked = _blocking(calls)
    fake.install_key = blocked  # type: ignore[method-assign,assignment]

    async def generate_key(passphrase: str | None) -> str:
        await blocked(passphrase or "")
        return "~/.ssh/id_ed25519"

    fake.generate_key = generate_key  # type: ignore[method-assign]
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await shown(pilot, QueueScreen)
        await settle(pilot)
        await pilot.press("d")
        screen: OnboardingScreen = await shown(pilot, OnboardingScreen)
        await wait_for(
            pilot,
            lambda: any(r.result.action == "install_key" for r in screen.query(CheckRow)),
            "the failing key-only login check",
        )
        row = next(r for r in screen.query(CheckRow) if r.result.action == "install_key")
        field = row.query_one(SecretInput)
        field.focus()
        await wait_for(pilot, lambda: field.has_focus, "the focused password field")
        await pilot.press(*SENTINEL)
        await wait_for(pilot, lambda: field.value == SENTINEL, "the typed password")
        row.query_one(Button).press()
        await wait_for(pilot, lambda: calls == [SENTINEL], "the blocked install_key call")
        assert [w for w in app.workers if w.group == "fix" and not w.is_finished]
        assert [t for t in _worker_texts(app) if _leaks(t)] == []
        assert _leaks(app.export_screenshot()) == []
        release.set()
        await wait_for(
            pilot, lambda: all(w.is_finished for w in app.workers if w.group == "fix"), "the fix"
        )
        release.clear()
        screen.run_fix("generate_key", SENTINEL)
        await wait_for(pilot, lambda: calls == [SENTINEL, SENTINEL], "the blocked generate_key")
        assert [t for t in _worker_texts(app) if _leaks(t)] == []
        release.set()
