"""Pilot tests and snapshots: the capacity screen, the all-clusters overview, the composer's
start estimate — the real back ends on fake clusters (services/fakecluster)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, Static

from tao_slurm_tui.app import TaoSlurmApp, make_app
from tao_slurm_tui.config import Settings
from tao_slurm_tui.screens.capacity import CapacityScreen
from tao_slurm_tui.screens.composer import ComposerScreen
from tao_slurm_tui.screens.confirm import ConfirmModal
from tao_slurm_tui.screens.overview import OverviewScreen
from tao_slurm_tui.screens.queue import QueueScreen
from tao_slurm_tui.services.backend import Backend
from tao_slurm_tui.services.capacity_cache import CAPACITY_MAX_AGE
from tao_slurm_tui.services.cluster import ClusterBackend
from tao_slurm_tui.services.fakecluster.seed import demo_profile
from tests.tui.conftest import SIZE, capacity_refreshes, estimates, frozen, open_demo
from tests.tui.test_composer import GOOD
from tests.tui.waits import settle, shown, wait_for

SMALL = (80, 24)
LARGE = (160, 45)
DOWN = (
    "Could not connect to any login host on port 22 (login1.example.org: no answer within 10 "
    "s; login2.example.org: no answer within 10 s); check the host names, the port and your "
    "network or VPN."
)


class Clusters:
    """Back ends of three profiles, each on its own fake cluster; ``lab-small``'s login hosts
    do not answer."""

    def __init__(self, folder: Path) -> None:
        self.built: list[str] = []
        names = ("fake", "dgx-east", "lab-small")
        self.demo = open_demo(folder, profiles={n: demo_profile() for n in names})
        self.demo.world("lab-small").link = "down"

    def __call__(self, name: str | None) -> Backend:
        self.built.append(name or "fake")
        return self.demo.backend(name)


def _app(folder: Path, factory: Clusters | None = None) -> TaoSlurmApp:
    factory = factory or Clusters(folder)
    return make_app(
        factory("fake"),
        settings=Settings(poll_interval=3600),
        clock=frozen,
        cursor_blink=False,
        backend_factory=factory,
    )


async def _capacity(pilot: Pilot[Any]) -> CapacityScreen:
    await shown(pilot, QueueScreen)
    await settle(pilot)
    await pilot.press("p")
    screen: CapacityScreen = await shown(pilot, CapacityScreen)
    await wait_for(pilot, lambda: screen.view.report is not None, "the first capacity")
    await settle(pilot)
    return screen


async def _overview(pilot: Pilot[Any]) -> OverviewScreen:
    await shown(pilot, QueueScreen)
    await settle(pilot)
    await pilot.press("a")
    screen: OverviewScreen = await shown(pilot, OverviewScreen)
    await wait_for(
        pilot,
        lambda: all(s.report or s.error for s in screen.summaries.values()),
        "every cluster answered",
    )
    await settle(pilot)
    return screen


# ----------------------------------------------------------------------------------- capacity


async def test_capacity_screen_shows_partitions_and_refreshes(tmp_path: Path) -> None:
    app = _app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _capacity(pilot)
        backend = app.backend
        assert isinstance(backend, ClusterBackend)
        world = backend.access.world  # type: ignore[attr-defined]
        assert screen.view.table.row_count == 3
        summary = str(screen.view.summary.render())
        assert summary.startswith("21 GPUs free · you (researcher): 3 running (12 GPUs)")
        out = str(screen.query_one("#cap-out-text", Static).render())
        assert "gpu-a04 drained: Xid 79" in out
        count, last = capacity_refreshes(world), backend.capacities.report
        await pilot.press("r")
        await wait_for(pilot, lambda: capacity_refreshes(world) == count + 1, "one more refresh")
        # Its answer read too: a press while it is on its way joins it instead of asking again.
        await wait_for(pilot, lambda: backend.capacities.report is not last, "the new report")
        world.fail("scontrol")  # slurmctld stops answering
        await pilot.press("r")
        await wait_for(pilot, lambda: screen.view.summary.has_class("-error"), "the error")
        assert "from the last refresh" in str(screen.view.summary.render())
        assert screen.view.table.row_count == 3  # the last numbers stay
        await pilot.press("escape")
        await shown(pilot, QueueScreen)


async def test_capacity_refresh_pauses_while_hidden(tmp_path: Path) -> None:
    app = _app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _capacity(pilot)
        assert screen._timer is not None
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: screen._timer is None, "the refresh timer stopped")


# ----------------------------------------------------------------------------------- overview


async def test_overview_lazily_one_back_end_each_failure_in_place_and_switch(
    tmp_path: Path,
) -> None:
    factory = Clusters(tmp_path)
    app = _app(tmp_path, factory)
    async with app.run_test(size=SIZE) as pilot:
        assert factory.built == ["fake"]  # nothing else opened before the overview
        screen = await _overview(pilot)
        assert sorted(factory.built) == ["dgx-east", "fake", "lab-small"]
        assert list(screen.summaries) == ["fake", "dgx-east", "lab-small"]
        assert screen.summaries["lab-small"].error == DOWN
        assert screen.summaries["dgx-east"].report is not None
        await pilot.press("down", "down")
        detail = screen.query_one("#overview-detail", Static)
        await wait_for(pilot, lambda: detail.has_class("-failed"), "the failure shown")
        assert DOWN in str(detail.render())
        await pilot.press("up")
        await pilot.press("enter")
        await wait_for(
            pilot, lambda: app.backend.profile_name == "dgx-east", "the switch to dgx-east"
        )
        await shown(pilot, QueueScreen)
        # The overview's connection was handed over, not opened a second time.
        assert factory.built.count("dgx-east") == 1


# ----------------------------------------------------------------------------------- composer


async def _composer(pilot: Pilot[Any], **over: Any) -> ComposerScreen:
    app = pilot.app
    await shown(pilot, QueueScreen)
    await settle(pilot)
    screen = ComposerScreen(app.ctx, {**GOOD, **over})  # type: ignore[attr-defined]
    await app.push_screen(screen)
    await wait_for(pilot, lambda: "As is:" in str(screen.estimate.render()), "the estimate")
    await settle(pilot)
    return screen


async def test_composer_estimate_and_debounced_refresh(tmp_path: Path) -> None:
    app = _app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _composer(pilot, num_gpus=8, cpus_per_task=8)
        backend = app.backend
        assert isinstance(backend, ClusterBackend)
        world = backend.access.world  # type: ignore[attr-defined]
        text = str(screen.estimate.render())
        assert "As is: 05-10 10:00 (in ~2 h)" in text
        assert "Sooner: polar3: now" in text
        assert "Sooner: 4 GPUs per node: now" in text
        assert "The largest free block is 4 GPUs (gpu-a01); 8 GPUs per node waits." in text
        count = estimates(world)
        # Longer than any gap between two key presses on a loaded machine: one question.
        screen.estimate_delay = 4.0
        field = screen.query_one("#f-num_gpus", Input)
        field.focus()
        await pilot.press("backspace", "2", "backspace", "4")
        await wait_for(pilot, lambda: "As is: now" in str(screen.estimate.render()), "now")
        assert estimates(world) == count + 1  # four keystrokes, one question
        # A change that does not move the start (the command) asks nothing.
        screen.query_one("#f-command", Input).value = "dino evaluate"
        await settle(pilot)
        await pilot.pause(0.1)
        assert estimates(world) == count + 1


async def test_composer_block_hint_on_first_open_shares_the_capacity_cache(
    tmp_path: Path,
) -> None:
    """The free-block hint needs no visit to the GPUs screen: the composer's first estimate
    fetches the capacity itself (once), later estimates reuse it while it is fresh, the GPUs
    screen refreshes the same cache, and a stale report is fetched again."""
    demo = open_demo(tmp_path / "demo")
    world = demo.world("fake")
    backend = demo.backend()
    app = make_app(backend, settings=Settings(poll_interval=3600), clock=frozen, cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        assert capacity_refreshes(world) == 0
        screen = await _composer(pilot, num_gpus=8, cpus_per_task=8)
        hint = "The largest free block is 4 GPUs (gpu-a01); 8 GPUs per node waits."
        await wait_for(pilot, lambda: hint in str(screen.estimate.render()), "the block hint")
        assert capacity_refreshes(world) == 1
        screen.estimate_delay = 0.05
        field = screen.query_one("#f-num_gpus", Input)
        field.value = "4"
        fits = "1 node x 4 GPUs fits a free block now (gpu-a01: 4 a100 free)."
        await wait_for(pilot, lambda: fits in str(screen.estimate.render()), "it fits now")
        assert capacity_refreshes(world) == 1  # fresh: the same report
        await pilot.press("escape")
        await shown(pilot, ConfirmModal)  # the form was edited: discard it
        await pilot.press("y")
        await _capacity(pilot)
        await wait_for(pilot, lambda: capacity_refreshes(world) == 2, "the GPUs screen's refresh")
        fetched_at = backend.capacities.fetched_at
        assert fetched_at == world.now()
        await pilot.press("escape")
        await shown(pilot, QueueScreen)
        world.advance(CAPACITY_MAX_AGE + 1)  # the report is stale now
        again = await _composer(pilot, num_gpus=8, cpus_per_task=8)
        await wait_for(pilot, lambda: hint in str(again.estimate.render()), "the hint again")
        assert capacity_refreshes(world) == 3


async def test_composer_estimate_failure_is_one_sentence(tmp_path: Path) -> None:
    app = _app(tmp_path)
    backend = app.backend
    assert isinstance(backend, ClusterBackend)

    async def refuse(job: Any) -> Any:
        from tao_slurm_tui.errors import OperationFailed

        raise OperationFailed("Could not connect to any login host.")

    backend.start_estimate = refuse  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:
        await shown(pilot, QueueScreen)
        screen = ComposerScreen(app.ctx, dict(GOOD))
        await app.push_screen(screen)
        await wait_for(
            pilot,
            lambda: "No estimate: Could not connect" in str(screen.estimate.render()),
            "the failure",
        )


# ----------------------------------------------------------------------------------- snapshots


def test_snapshot_capacity_small(snap_compare: Any, tmp_path: Path) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await _capacity(pilot)

    assert snap_compare(_app(tmp_path), terminal_size=SMALL, run_before=run_before)


def test_snapshot_capacity_large(snap_compare: Any, tmp_path: Path) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await _capacity(pilot)

    assert snap_compare(_app(tmp_path), terminal_size=LARGE, run_before=run_before)


def test_snapshot_overview_small(snap_compare: Any, tmp_path: Path) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await _overview(pilot)

    assert snap_compare(_app(tmp_path), terminal_size=SMALL, run_before=run_before)


def test_snapshot_overview_large_failure_highlighted(snap_compare: Any, tmp_path: Path) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        screen = await _overview(pilot)
        await pilot.press("down", "down")
        detail = screen.query_one("#overview-detail", Static)
        await wait_for(pilot, lambda: detail.has_class("-failed"), "the failure shown")
        await settle(pilot)

    assert snap_compare(_app(tmp_path), terminal_size=LARGE, run_before=run_before)


def test_snapshot_composer_estimate(snap_compare: Any, tmp_path: Path) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        screen = await _composer(pilot, num_gpus=8, cpus_per_task=8)
        field = screen.query_one("#f-name", Input)
        await wait_for(pilot, lambda: field.has_focus, "the focused name field")

    assert snap_compare(_app(tmp_path), terminal_size=SIZE, run_before=run_before)


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_the_gpus_table_keeps_its_last_column_at_120(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    """At 120 columns the Pending column fell off the GPUs table (issue 26); at 80 the table
    scrolls, with the partition and its free GPUs first."""
    app = _app(tmp_path)
    async with app.run_test(size=size) as pilot:
        screen = await _capacity(pilot)
        table = screen.view.table
        await settle(pilot)
        widths = {key.value: c.get_render_width(table) for key, c in table.columns.items()}
        room = table.scrollable_content_region.width
        if size[0] >= 120:
            assert sum(widths.values()) <= room, widths
        else:
            assert widths["partition"] + widths["free"] <= room
