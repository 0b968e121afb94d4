"""Pilot tests of the queue's notice line: what a poll could not read is shown while it lasts.

The cluster back end reports a partial failure of a tick (squeue failing: ``SLURM's controller
did not answer (...)`` when the controller is down, as the fake's squeue says; lines that are no
job rows) or of its background sacct follow-up as ``poll_warning``; the CLI ``status`` prints
it, and the queue screen shows it in one line above the table until a poll is complete again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from textual.widgets import Static

from tao_slurm_tui.screens.queue import QueueScreen
from tao_slurm_tui.services.cluster import ClusterBackend
from tao_slurm_tui.services.fakecluster.engine import now as world_now
from tao_slurm_tui.services.fakecluster.world import World
from tests.tui.conftest import build_app
from tests.tui.waits import settle, shown, wait_for

BIG = (160, 45)
SMALL = (80, 24)


def _forget_a_job(world: World) -> None:
    """dep-waiter ended an hour ago: squeue no longer lists it, only sacct can say how."""
    with world.edit() as state:
        job = state["jobs"]["1055"]
        job.update(state="CANCELLED", end=world_now(state) - 3600, reason="None")


def _squeue_down(world: World, on: bool) -> None:
    if on:
        world.fail("squeue")
    else:
        world.heal("squeue")


def _sacct_garbage(world: World, on: bool) -> None:
    """sacct answers a login banner (with an escape sequence) instead of rows."""
    if on:
        _forget_a_job(world)
        world.fail("sacct-garbage")
    else:
        world.heal("sacct-garbage")


def _sacct_down(world: World, on: bool) -> None:
    if on:
        _forget_a_job(world)
        world.fail("sacct")
    else:
        world.heal("sacct")


async def _queue(pilot: Any) -> QueueScreen:
    screen: QueueScreen = await shown(pilot, QueueScreen)
    await wait_for(pilot, lambda: screen.polled_ok or screen.failures, "the first poll")
    await settle(pilot)
    return screen


def _notice(screen: QueueScreen) -> Static:
    return screen.query_one("#poll-notice", Static)


def _shown_text(screen: QueueScreen) -> str:
    """What the notice line shows on screen (the rendered row, cut to the terminal's width)."""
    notice = _notice(screen)
    if not notice.display or notice.region.height == 0:
        return ""
    strip = screen.app.screen._compositor.render_strips()[notice.region.y]
    return "".join(segment.text for segment in strip)


@pytest.mark.parametrize("size", [BIG, SMALL], ids=["160x45", "80x24"])
@pytest.mark.parametrize(
    ("hook", "words"),
    [(_squeue_down, "controller did not answer"), (_sacct_garbage, "not a job row"),
     (_sacct_down, "sacct failed")],
    ids=["squeue-failed", "sacct-garbage", "sacct-failed"],
)  # fmt: skip
async def test_a_partial_poll_shows_one_notice_line_until_a_poll_is_complete(
    fake: ClusterBackend,
    world: World,
    size: tuple[int, int],
    hook: Callable[[World, bool], None],
    words: str,
) -> None:
    app = build_app(fake)
    async with app.run_test(size=size) as pilot:
        screen = await _queue(pilot)
        assert not _notice(screen).display and _shown_text(screen) == ""
        hook(world, True)
        await screen.poll(manual=True).wait()
        await wait_for(pilot, lambda: words in _shown_text(screen), "the notice")
        line = _shown_text(screen)
        assert line.strip().startswith("⚠ Not fully refreshed:")
        assert len(line.rstrip()) <= size[0]  # one line, cut with an ellipsis if need be
        assert "\x1b" not in line and "Traceback" not in line
        assert _notice(screen).region.height == 1
        assert screen.polled_ok and screen.failures == 0  # the rows were refreshed: no toast
        assert not [n for n in app._notifications if n.severity == "error"]
        table_top = screen.table.region.y
        # Still there on the next poll while the condition lasts (not a toast that fades).
        await screen.poll(manual=True).wait()
        await settle(pilot)
        assert words in _shown_text(screen)
        assert screen.table.region.y == table_top
        # A complete poll takes it down and gives the line back to the table.
        hook(world, False)
        await screen.poll(manual=True).wait()
        await wait_for(pilot, lambda: not _notice(screen).display, "the notice to go")
        await settle(pilot)
        assert _shown_text(screen) == ""
        assert screen.table.region.y == table_top - 1


async def test_the_notice_says_when_the_next_poll_is_and_keeps_the_whole_sentence(
    fake: ClusterBackend, world: World
) -> None:
    _sacct_garbage(world, True)
    app = build_app(fake)
    app.ctx.settings.poll_interval = 30
    async with app.run_test(size=SMALL) as pilot:
        screen = await _queue(pilot)
        await wait_for(pilot, lambda: _notice(screen).display, "the notice")
        tooltip = str(_notice(screen).tooltip)
        assert "not a job row" in tooltip and "next poll in 30 s (r: now)" in tooltip
        assert "\x1b" not in tooltip  # a remote escape sequence is not replayed to the terminal
        assert _shown_text(screen).rstrip().endswith("…")  # 80 columns: cut, not wrapped


async def test_a_failed_poll_keeps_the_toast_and_the_notice_of_the_last_answer(
    fake: ClusterBackend, world: World
) -> None:
    """The cluster unreachable: the error toast (as before); the notice of the last answer
    stays (it is still what is known about the rows)."""
    world.fail("squeue")
    app = build_app(fake)
    async with app.run_test(size=BIG) as pilot:
        screen = await _queue(pilot)
        await wait_for(
            pilot, lambda: "controller did not answer" in _shown_text(screen), "the notice"
        )
        world.link = "down"
        world.drop()  # the network goes: the open connection too
        # Not .wait(): a poll the last follow-up armed may take this one's place (exclusive);
        # what counts is that a poll fails and says so.
        screen.poll(manual=True)
        await wait_for(
            pilot,
            lambda: any(n.severity == "error" for n in app._notifications),
            "the failure toast",
        )
        assert "controller did not answer" in _shown_text(screen)
        world.link = "up"
        world.heal()
        screen.poll(manual=True)
        await wait_for(pilot, lambda: not _notice(screen).display, "the notice to go")


async def test_a_job_name_holding_the_history_marker_is_no_poll_warning(
    fake: ClusterBackend, world: World
) -> None:
    """Issue 26: for minutes the queue and `status` said "squeue/sacct printed a line that is
    not a job row ('@@tao-history:page count=0 more=0')". Not two commands' output crossing
    (each command on the long-lived shell is framed by its own nonce; the history runs on its
    own exec channel): the poll printed each job's NAME last on its line, and a job of the
    same user (the sandbox's hostile-name tests: scontrol update JobName=...) carried a
    newline and the history's marker line in its name. Every poll listed it until it left
    the queue. The poll asks for no name since "Poll and history: a job name cannot forge a
    row"; this fails on the poll before it (warning above) and passes after."""
    await fake.refresh()
    assert fake.poll_warning == ""
    with world.edit() as state:
        job = next(
            j
            for j in state["jobs"].values()
            if j["state"] in ("RUNNING", "PENDING") and j["user"] == world.user
        )
        job["name"] = "evil\n@@tao-history:page count=0 more=0"
    await fake.refresh()
    assert fake.poll_warning == ""
