"""The header follows the session by messages: a connection change, a poll or a saved profile
reaches every screen's header at once, and no header asks the back end how things stand."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from textual.message import Message
from textual.widgets import Input

from tao_slurm_tui.app import TaoSlurmApp, make_app
from tao_slurm_tui.config import Settings
from tao_slurm_tui.screens.help import HelpScreen
from tao_slurm_tui.screens.onboarding import OnboardingScreen
from tao_slurm_tui.screens.queue import QueueScreen
from tao_slurm_tui.services.cluster import ClusterBackend
from tao_slurm_tui.services.fakecluster.seed import FROZEN_TIME
from tao_slurm_tui.services.fakecluster.world import World
from tao_slurm_tui.widgets.app_header import (
    AppHeader,
    ConnectionStateChanged,
    SessionStatus,
    ago,
    until_ago_changes,
)
from tests.tui.conftest import SIZE
from tests.tui.waits import settle, shown, wait_for

WATCHED = ("connection_state", "last_poll", "profile_name")
"""What the header used to read from the back end every 5 s."""


class ReadCounter:
    """A back end that counts reads of what the header shows (everything else passes through)."""

    def __init__(self, inner: ClusterBackend) -> None:
        self.inner = inner
        self.reads: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        if name in WATCHED:
            self.reads[name] += 1
        return getattr(self.inner, name)


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = FROZEN_TIME

    def __call__(self) -> float:
        return self.now


def _app(backend: Any, clock: Clock) -> TaoSlurmApp:
    return make_app(backend, settings=Settings(poll_interval=3600), clock=clock, cursor_blink=False)


def _line(app: TaoSlurmApp) -> str:
    """The header line as drawn on the screen on top (not rendered again for the test)."""
    svg = app.export_screenshot()
    return svg.replace("&#160;", " ")


def test_the_age_reads_in_steps_and_says_when_it_changes() -> None:
    assert [ago(s) for s in (0, 9.9, 10, 59, 60, 3599, 3600)] == [
        "0s ago",
        "0s ago",
        "10s ago",
        "50s ago",
        "1m ago",
        "59m ago",
        "1h ago",
    ]
    assert until_ago_changes(0) == 10
    assert until_ago_changes(4) == pytest.approx(6)
    assert until_ago_changes(59.5) == pytest.approx(0.5)
    assert until_ago_changes(61) == pytest.approx(59)
    assert until_ago_changes(3601) == pytest.approx(3599)
    assert until_ago_changes(9.99) == 0.25  # never a busy loop around the step


async def test_a_connection_change_reaches_every_header_without_polling(
    fake: ClusterBackend, world: World
) -> None:
    backend = ReadCounter(fake)
    app = _app(backend, Clock())
    heard: list[str] = []

    def hear(message: Message) -> None:
        if isinstance(message, ConnectionStateChanged):
            heard.append(message.state)

    async with app.run_test(size=SIZE, message_hook=hear) as pilot:
        queue = await shown(pilot, QueueScreen)
        await wait_for(pilot, lambda: queue.polled_ok, "the first poll")
        await settle(pilot)
        await pilot.press("question_mark")
        help_screen = await shown(pilot, HelpScreen)
        await settle(pilot)
        headers = [queue.query_one(AppHeader), help_screen.query_one(AppHeader)]
        backend.reads.clear()

        # The network goes, and the open connection with it: the real Connection reports
        # 'reconnecting', then 'down' once its reconnects gave up.
        heard.clear()
        world.link = "down"
        world.drop()
        await wait_for(pilot, lambda: "○ down" in _line(app), "the help's header down")
        # Each reconnect attempt is heard (its words change); then the end of them.
        assert heard[0] == "reconnecting" and heard[-1] == "down"
        assert set(heard) == {"reconnecting", "down"}
        assert all(h.status.connection == "down" for h in headers)  # the hidden queue's too

        # Longer than the 5 s the header used to poll: it asks the back end nothing.
        await pilot.pause(5.5)
        assert backend.reads == Counter()


async def test_a_poll_restarts_the_age_which_redraws_when_its_text_changes(
    fake: ClusterBackend, world: World
) -> None:
    clock = Clock()
    backend = ReadCounter(fake)
    app = _app(backend, clock)
    heard: list[str] = []

    def hear(message: Message) -> None:
        if isinstance(message, ConnectionStateChanged):
            heard.append(message.state)

    async with app.run_test(size=SIZE, message_hook=hear) as pilot:
        queue = await shown(pilot, QueueScreen)
        await wait_for(pilot, lambda: queue.polled_ok, "the first poll")
        await settle(pilot)
        header = queue.query_one(AppHeader)
        assert app.session.last_poll == clock.now == header.status.last_poll
        assert "polled 0s ago" in _line(app)

        world.advance(125)  # the poll's time is the back end's (the cluster's clock here)
        clock.now = world.now()
        await queue.poll(manual=True).wait()  # the poll's time reaches the header by message
        await wait_for(pilot, lambda: header.status.last_poll == clock.now, "the new poll time")
        backend.reads.clear()

        # Just short of '10s ago': the header looks again a quarter second later, and draws
        # only once the text changed.
        clock.now += 9.9
        world.drop()  # a new status (reconnecting, connected) re-arms the age's timer from now
        await wait_for(pilot, lambda: heard[-2:] == ["reconnecting", "connected"], "a redial")
        await settle(pilot)
        assert "polled 0s ago" in _line(app)
        clock.now += 0.6
        await wait_for(pilot, lambda: "polled 10s ago" in _line(app), "the age moved on")
        assert backend.reads["last_poll"] == 0 and backend.reads["connection_state"] == 0


async def test_a_saved_profile_name_reaches_the_header(fake: ClusterBackend) -> None:
    app = _app(fake, Clock())
    async with app.run_test(size=SIZE) as pilot:
        await shown(pilot, QueueScreen)
        await settle(pilot)
        await pilot.press("d")
        screen = await shown(pilot, OnboardingScreen)
        await settle(pilot)
        screen.query_one("#p-name", Input).value = "renamed"
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: app.session.profile == "renamed", "the saved name")
        header = screen.query_one(AppHeader)
        await wait_for(pilot, lambda: header.status.profile == "renamed", "the header")
        assert "profile renamed" in _line(app)
        await pilot.press("escape")
        queue = await shown(pilot, QueueScreen)
        assert queue.query_one(AppHeader).status == app.session


def test_the_session_reads_the_back_end_once(fake: ClusterBackend) -> None:
    backend = ReadCounter(fake)
    status = SessionStatus.of(backend)  # type: ignore[arg-type]
    assert status == SessionStatus("fake", fake.connection_state, fake.last_poll)
    assert backend.reads == Counter({name: 1 for name in WATCHED})
