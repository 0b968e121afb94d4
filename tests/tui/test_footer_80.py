"""At 80x24 every screen's footer shows its keys whole (issue: "^ppale tte" at 80 columns).

Each screen is opened the way a researcher opens it (keys from the queue, on the fake cluster);
then every key the footer shows must be drawn in full, in order, left of the palette key docked
on the right, and the screen's own keys must all be among them (only the app-wide ones, listed
in the help, leave a narrow footer).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets._footer import FooterKey

from tao_slurm_tui.screens.capacity import CapacityScreen
from tao_slurm_tui.screens.composer import ComposerScreen
from tao_slurm_tui.screens.help import HelpScreen
from tao_slurm_tui.screens.history import HistoryScreen
from tao_slurm_tui.screens.job_output import JobOutputScreen
from tao_slurm_tui.screens.logs import LogsScreen
from tao_slurm_tui.screens.onboarding import OnboardingScreen
from tao_slurm_tui.screens.overview import OverviewScreen
from tao_slurm_tui.screens.queue import QueueScreen
from tao_slurm_tui.services.cluster import ClusterBackend
from tao_slurm_tui.widgets.app_footer import AppFooter
from tests.tui.conftest import build_app, open_demo
from tests.tui.waits import settle, shown

SMALL = (80, 24)

#: screen -> (keys pressed on the queue, the screen they open)
SCREENS: dict[str, tuple[tuple[str, ...], type[Screen[Any]]]] = {
    "queue": ((), QueueScreen),
    "pipeline": ((), QueueScreen),
    "composer": (("n",), ComposerScreen),
    "logs": (("l",), LogsScreen),
    "capacity": (("p",), CapacityScreen),
    "clusters": (("a",), OverviewScreen),
    "history": (("h",), HistoryScreen),
    "history-output": (("h", *["down"] * 14, "l"), JobOutputScreen),  # below our 12 jobs
    "help": (("question_mark",), HelpScreen),
    "onboarding": (("d",), OnboardingScreen),
}


def footer_line(pilot: Pilot[Any]) -> str:
    """The bottom line of the terminal as drawn."""
    return pilot.app.screen._compositor.render_strips()[-1].text


@pytest.mark.parametrize("name", SCREENS)
async def test_every_footer_key_is_shown_whole_at_80x24(name: str, tmp_path: Path) -> None:
    keys, screen_type = SCREENS[name]
    app = build_app(open_demo(tmp_path / "demo", pipeline=name == "pipeline").backend())
    async with app.run_test(size=SMALL) as pilot:
        await shown(pilot, QueueScreen)
        await settle(pilot)
        for key in keys:
            await pilot.press(key)
            await settle(pilot)
        screen = await shown(pilot, screen_type)
        await settle(pilot)
        await pilot.pause()

        footer = screen.query_one(AppFooter)
        drawn = [key for key in footer.query(FooterKey) if key.display]
        palette = [key for key in drawn if key.has_class("-command-palette")]
        own = [key for key in drawn if not key.has_class("-command-palette")]
        assert own, f"{name}: no key in the footer"
        line = footer_line(pilot)
        right_edge = palette[0].region.x if palette else SMALL[0]
        labels = []
        for key in own:
            label = f"{key.key_display} {key.description}"
            labels.append(label)
            assert key.region.width >= len(label), f"{name}: {label!r} squeezed"
            assert key.region.right <= right_edge, f"{name}: {label!r} under the palette key"
        # In full and in order on the line the terminal shows.
        at = 0
        for label in labels:
            found = line.find(label, at)
            assert found >= 0, f"{name}: {label!r} is not whole in {line!r}"
            at = found + len(label)
        for key in palette:
            assert f"{key.key_display} {key.description}" in line

        # Only the app-wide keys leave the narrow footer: the screen's own all stay.
        shown_actions = {key.action for key in own}
        for active in screen.active_bindings.values():
            if active.binding.show and active.node is not app:
                assert active.binding.action in shown_actions, f"{name}: {active.binding} hidden"


async def test_a_wide_footer_keeps_the_app_wide_keys(fake: ClusterBackend) -> None:
    app = build_app(fake)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await shown(pilot, QueueScreen)
        await settle(pilot)
        await pilot.pause()
        line = footer_line(pilot)
        for label in ("? Help", "n New job", "d Set-up", "p GPUs", "h History"):
            assert label in line
        assert not screen.query_one(AppFooter).compact
