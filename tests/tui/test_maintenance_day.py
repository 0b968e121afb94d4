"""Pilot tests: what a researcher sees on the site's maintenance day (issue 24), on the fake
cluster: a pending job says what it waits for (the maintenance window, or the nodes an admin
drained and why) in its details, at 80x24 and at a large size, and the sentence goes when the
window ends or the nodes come back and the job starts."""

from __future__ import annotations

import html
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tao_slurm_tui.core.models import TaoStatus
from tao_slurm_tui.screens.queue import QueueScreen
from tao_slurm_tui.services.cluster import ClusterBackend
from tao_slurm_tui.services.fakecluster.world import World
from tests.tui.conftest import build_app, polls
from tests.tui.waits import settle, shown, wait_for

SMALL = (80, 24)
LARGE = (160, 45)
HOUR = 3600.0
JOB = "yolo-finetune"
"""The seeded pending job (SLURM 1052; the seed pins its reason, these tests free it)."""

_TEXT = re.compile(
    r'<text class="[^"]*" x="([\d.]+)" y="[\d.]+" textLength="[\d.]+" '
    r'clip-path="url\(#[\w-]+-line-(\d+)\)">([^<]*)</text>'
)


@pytest.fixture(autouse=True)
def _cluster_time_zone(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The workstation on the cluster's time zone (UTC), as the times the screen shows are the
    cluster's local times read as the workstation's."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def on_screen(app: Any, widget: Any = None) -> str:
    """The screen's text (only ``widget``'s part of it, when given), its lines joined with
    spaces and runs of blanks, box lines and scroll bars squeezed (a sentence folded over lines
    of a pane reads as one)."""
    rows: dict[int, dict[int, str]] = {}
    for x, line, text in _TEXT.findall(app.export_screenshot()):
        rows.setdefault(int(line), {})[round((float(x) - 12.2) / 12.2)] = html.unescape(text)
    lines = []
    for number in sorted(rows):
        line = ""
        for column, text in sorted(rows[number].items()):
            line = line.ljust(column) + text
        if widget is not None:
            region = widget.region.intersection(app.screen.query_one("#detail-box").region)
            if not region.y <= number < region.bottom:
                continue
            line = line[region.x : region.right]
        lines.append(line)
    return re.sub(r"[\s│┃\u2581-\u259f]+", " ", " ".join(lines))


async def details_shown(pilot: Any, screen: QueueScreen, words: str) -> str:
    """The job's details as the pane shows them once scrolled to them (at 80x24 why SLURM
    holds the job comes first, the details below it), once they show ``words``."""
    box = screen.query_one("#detail-box")

    def shown_there() -> bool:
        box.scroll_to_widget(screen.detail, animate=False, top=True)
        return words in on_screen(pilot.app, screen.detail)

    await wait_for(pilot, shown_there, f"{words!r} in the details")
    return on_screen(pilot.app, screen.detail)


def free(world: World, **fields: Any) -> None:
    """Let the seeded pending job be scheduled like any other (``fields``: its request)."""
    with world.edit() as state:
        state["jobs"]["1052"].update(pinned=False, **fields)


async def queue_on(pilot: Any, job_id: str) -> QueueScreen:
    screen: QueueScreen = await shown(pilot, QueueScreen)
    await wait_for(pilot, lambda: screen.polled_ok, "the first poll")
    screen.table.move_cursor(row=screen.table.get_row_index(job_id))
    await wait_for(pilot, lambda: screen.table.cursor_job_id == job_id, f"the cursor on {job_id}")
    return screen


async def told(pilot: Any, screen: QueueScreen, words: str) -> None:
    """Wait until the job's message says ``words``, with no poll asked for: the queue polls
    again as soon as the site's state (fetched in the background after its first poll) is in."""
    await wait_for(pilot, lambda: words in screen.table.jobs[JOB].message, repr(words))
    await settle(pilot)


async def poll_until(pilot: Any, screen: QueueScreen, fake: ClusterBackend, words: str) -> str:
    """Poll (letting the background fetch of the site's state land between polls) until the
    screen shows ``words``; the screen's text."""
    for _ in range(5):
        await screen.poll(manual=True).wait()
        await fake.monitor.site.wait()
        await settle(pilot)
        text = on_screen(pilot.app)
        if words in text:
            return text
    raise AssertionError(f"{words!r} never shown; the screen: {text}")


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "160x45"])
async def test_a_job_waiting_for_the_maintenance_says_until_when(
    fake: ClusterBackend, world: World, size: tuple[int, int]
) -> None:
    now = world.now()
    world.reserve("maint-may", now - 600, now + 3 * HOUR)  # 07:50 to 11:00, every node
    free(world)
    world.advance(30)
    app = build_app(fake)
    async with app.run_test(size=size) as pilot:
        screen = await queue_on(pilot, JOB)
        await told(pilot, screen, "Waiting for the maintenance")
        assert polls(world) == 2  # the first, and the one the site's answer asked for
        first = on_screen(app)  # what the screen shows before any scrolling
        advice = "What you can do: It starts when the site's maintenance ends (the Message says"
        assert advice in on_screen(app, screen.query_one("#live")), first
        text = await details_shown(pilot, screen, "Message: Waiting for the maintenance")
        said = (
            "Message: Waiting for the maintenance: reservation 'maint-may' holds "
            "gpu-a[01-04],gpu-b[01-03],gpu-c[01-02] from 07:50 to 11:00; the job starts after "
            "it, or before if it can finish in time (a shorter time limit helps)."
        )
        assert said in text, text
        assert "(ReqNodeNotAvail, Reserved for maintenance)" in text, text
        assert "yolo-finetune Pending maintenance -/4h" in first, first  # the queue's column
        # The window ends: the job starts and the sentence goes.
        world.advance(3 * HOUR)
        await poll_until(pilot, screen, fake, "Running · SLURM RUNNING (1052)")
        job = await fake.job_detail(JOB)
        assert job.status is TaoStatus.RUNNING and not job.message, job.message
        assert "Waiting for" not in on_screen(app)
        assert world.job("1052")["start"] == now + 3 * HOUR  # when the window ended


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "160x45"])
async def test_a_job_waiting_for_drained_nodes_names_them_with_the_admin_s_reason(
    fake: ClusterBackend, world: World, size: tuple[int, int]
) -> None:
    free(world, partition="gpu-long")  # the v100 nodes; one runs a colleague's job
    world.drain("gpu-c01", "driver update to 550.90")
    world.drain("gpu-c02", "PSU replaced", by="root", down=True)
    world.advance(30)
    app = build_app(fake)
    async with app.run_test(size=size) as pilot:
        screen = await queue_on(pilot, JOB)
        await told(pilot, screen, "Waiting for nodes")
        text = await details_shown(pilot, screen, "Message: Waiting for nodes")
        said = (
            "Message: Waiting for nodes an admin took out of service: gpu-c01 is draining: "
            "driver update to 550.90 (set by admin at 08:00); gpu-c02 is down: PSU replaced "
            "(set by root at 08:00); the job starts when they return or other nodes fit it."
        )
        # At 80x24 the pane is a few lines high: the nodes and reasons, the rest a scroll away.
        assert (said if size == LARGE else said.split("; the job starts")[0]) in text, text
        assert "(ReqNodeNotAvail, UnavailableNodes:gpu-c[01-02])" in text, text
        # One node back: the job starts on it and the sentence goes.
        world.resume("gpu-c02")
        world.advance(1)
        await poll_until(pilot, screen, fake, "Running · SLURM RUNNING (1052)")
        assert "Waiting for" not in on_screen(app)
        assert world.job("1052")["node_list"] == "gpu-c02"


async def test_status_s_one_shot_poll_has_the_sentence(fake: ClusterBackend, world: World) -> None:
    """``status`` polls once and again only when the follow-up brought news: the site's state
    is news for a job waiting for maintenance, so its sentence is in the one-shot answer."""
    now = world.now()
    world.reserve("maint-may", now - 600, now + 3 * HOUR)
    free(world)
    world.advance(30)
    first = {j.id: j for j in await fake.refresh()}[JOB]
    assert first.reason == "ReqNodeNotAvail, Reserved for maintenance"
    assert not first.message.startswith("Waiting for")  # (the site's state is not in yet)
    assert await fake.followup()
    job = {j.id: j for j in await fake.refresh()}[JOB]
    assert job.message.startswith("Waiting for the maintenance: reservation 'maint-may' holds ")
    assert not await fake.followup()  # told once: no poll after poll for the same words
