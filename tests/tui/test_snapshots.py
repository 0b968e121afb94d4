"""Snapshots of every screen and modal at 80x24 and 160x45 on the fake cluster with a frozen clock.

Nothing in a snapshot may depend on when it is taken: the clock is frozen, text cursors do not
blink (``build_app``), and each ``run_before`` waits for the exact state it shows (workers
done, lines loaded, the debounced preview drawn) instead of sleeping a fixed time.

Update with ``make snapshot-update`` and LOOK at the SVGs before accepting them.
"""

from __future__ import annotations

from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from tao_slurm_tui.screens.composer import ComposerScreen
from tao_slurm_tui.screens.confirm import ConfirmModal
from tao_slurm_tui.screens.credentials import CredentialsModal
from tao_slurm_tui.screens.error import ErrorModal
from tao_slurm_tui.screens.help import HelpScreen
from tao_slurm_tui.screens.history import HistoryScreen
from tao_slurm_tui.screens.job_output import JobOutputScreen
from tao_slurm_tui.screens.logs import LogsScreen
from tao_slurm_tui.screens.onboarding import OnboardingScreen
from tao_slurm_tui.screens.queue import QueueScreen
from tao_slurm_tui.screens.trust_host import TrustHostModal
from tao_slurm_tui.services.cluster import ClusterBackend
from tao_slurm_tui.services.fakecluster.seed import LOG_LINES
from tao_slurm_tui.widgets.check_row import CheckRow
from tao_slurm_tui.widgets.secret_input import SecretInput
from tests.tui.conftest import build_app
from tests.tui.test_composer import GOOD
from tests.tui.waits import settle, shown, wait_for

SIZES = {"80x24": (80, 24), "160x45": (160, 45)}
"""The smallest terminal the app must work in, and a big one (nothing may be cut off)."""


@pytest.fixture(params=list(SIZES.values()), ids=list(SIZES))
def size(request: pytest.FixtureRequest) -> tuple[int, int]:
    """Every snapshot at both sizes."""
    return request.param  # type: ignore[no-any-return]


async def _queue(pilot: Pilot[Any]) -> QueueScreen:
    """The queue after its first poll, with the highlighted job's detail loaded."""
    app = pilot.app
    await shown(pilot, QueueScreen)
    screen = app.screen
    assert isinstance(screen, QueueScreen)
    await wait_for(pilot, lambda: screen.polled_ok, "the first poll")
    await settle(pilot)
    return screen


async def _select(pilot: Pilot[Any], screen: QueueScreen, job_id: str, downs: int) -> None:
    await pilot.press(*["down"] * downs)
    await wait_for(pilot, lambda: screen.table.cursor_job_id == job_id, f"the cursor on {job_id}")
    await settle(pilot)  # the detail worker of the highlighted row


def test_queue_many_states(snap_compare: Any, size: tuple[int, int], fake: ClusterBackend) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await _queue(pilot)

    assert snap_compare(build_app(fake), terminal_size=size, run_before=run_before)


def test_queue_retried_job_detail(
    snap_compare: Any, size: tuple[int, int], fake: ClusterBackend
) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        screen = await _queue(pilot)
        await _select(pilot, screen, "bert-retried", 4)

    assert snap_compare(build_app(fake), terminal_size=size, run_before=run_before)


def test_queue_filtered(snap_compare: Any, size: tuple[int, int], fake: ClusterBackend) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        screen = await _queue(pilot)
        await pilot.press("slash", *"pending")
        await wait_for(pilot, lambda: screen.filter_text == "pending", "the filter applied")
        await wait_for(pilot, lambda: screen.filter_input.has_focus, "the focused filter")
        await settle(pilot)

    assert snap_compare(build_app(fake), terminal_size=size, run_before=run_before)


def test_confirm_cancel_modal(
    snap_compare: Any, size: tuple[int, int], fake: ClusterBackend
) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        screen = await _queue(pilot)
        await _select(pilot, screen, "yolo-finetune", 1)
        await pilot.press("c")
        await shown(pilot, ConfirmModal)
        await settle(pilot)

    assert snap_compare(build_app(fake), terminal_size=size, run_before=run_before)


def test_logs_mid_stream_with_separator_and_search(
    snap_compare: Any, size: tuple[int, int], fake: ClusterBackend
) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        app = pilot.app
        await _queue(pilot)
        screen = LogsScreen(app.ctx, "bert-retried")  # type: ignore[attr-defined]
        await app.push_screen(screen)
        # Two attempts: out has each attempt's lines, attempt 1's NCCL line and the separator.
        out, err = screen.pane("out").view, screen.pane("err").view
        want_out, want_err = 2 * LOG_LINES + 2, 2 * LOG_LINES + 1
        await wait_for(
            pilot,
            lambda: (out.line_count, err.line_count) == (want_out, want_err),
            "both log files loaded",
        )
        await wait_for(pilot, lambda: out.has_focus, "the focused main.out")
        await settle(pilot)
        await pilot.press("slash", *"NCCL", "enter")
        await wait_for(pilot, lambda: out.match_count == 1 and out.has_focus, "the search done")
        await settle(pilot)

    assert snap_compare(build_app(fake), terminal_size=size, run_before=run_before)


def test_composer_with_errors(
    snap_compare: Any, size: tuple[int, int], fake: ClusterBackend
) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        app = pilot.app
        await _queue(pilot)
        screen = ComposerScreen(app.ctx, dict(GOOD))  # type: ignore[attr-defined]
        await app.push_screen(screen)
        await settle(pilot)  # the partitions' limits
        await wait_for(pilot, lambda: "compose-test" in screen.preview.text, "the first preview")
        screen.query_one("#f-name", Input).value = "bad name!"
        screen.query_one("#f-num_gpus", Input).value = "four"
        screen.query_one("#f-time_hours", Input).value = "10"
        await wait_for(
            pilot,
            lambda: set(screen.errors) == {"name", "num_gpus", "time_hours"},
            "the three errors",
        )
        # The preview is re-rendered after a quiet spell of typing (a timer): wait for it.
        await wait_for(
            pilot,
            lambda: screen.preview.border_subtitle == "3 fields to fix",
            "the preview flagged stale",
        )
        image = screen.query_one("#f-image", Input)
        image.focus()
        await wait_for(pilot, lambda: image.has_focus, "the focused image field")
        await settle(pilot)

    assert snap_compare(build_app(fake), terminal_size=size, run_before=run_before)


async def _onboarding(pilot: Pilot[Any]) -> OnboardingScreen:
    """The set-up screen with the doctor's results listed."""
    app = pilot.app
    await _queue(pilot)
    await pilot.press("d")
    await shown(pilot, OnboardingScreen)
    screen = app.screen
    assert isinstance(screen, OnboardingScreen)
    await wait_for(pilot, lambda: len(screen.query(CheckRow)) > 0, "the doctor's results")
    await settle(pilot)
    return screen


def test_onboarding_with_failing_checks(
    snap_compare: Any, size: tuple[int, int], fake: ClusterBackend
) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await _onboarding(pilot)

    assert snap_compare(build_app(fake), terminal_size=size, run_before=run_before)


def test_trust_host_modal(snap_compare: Any, size: tuple[int, int], fake: ClusterBackend) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        screen = await _onboarding(pilot)
        screen.trust("login2.example.org")  # the login host not trusted yet
        await shown(pilot, TrustHostModal)
        await pilot.pause()

    assert snap_compare(build_app(fake), terminal_size=size, run_before=run_before)


def test_credentials_modal_shows_only_the_mask(
    snap_compare: Any, size: tuple[int, int], fake: ClusterBackend
) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        app = pilot.app
        await _queue(pilot)
        modal = CredentialsModal(app.ctx.backend)  # type: ignore[attr-defined]
        await app.push_screen(modal)
        field = modal.query_one(SecretInput)
        await wait_for(pilot, lambda: field.has_focus, "the focused key field")
        await pilot.press(*"SENTINEL-ngc-4f9a7c")
        await wait_for(pilot, lambda: len(field.value) == 19, "the typed key")
        await settle(pilot)

    assert snap_compare(build_app(fake), terminal_size=size, run_before=run_before)


def test_help(snap_compare: Any, size: tuple[int, int], fake: ClusterBackend) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await _queue(pilot)
        await pilot.press("question_mark")
        await shown(pilot, HelpScreen)
        await settle(pilot)

    assert snap_compare(build_app(fake), terminal_size=size, run_before=run_before)


def test_error_modal(snap_compare: Any, size: tuple[int, int], fake: ClusterBackend) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await _queue(pilot)
        pilot.app.report_error(RuntimeError("the store is locked"))  # type: ignore[attr-defined]
        await shown(pilot, ErrorModal)
        await settle(pilot)

    assert snap_compare(build_app(fake), terminal_size=size, run_before=run_before)


async def _history(pilot: Pilot[Any]) -> HistoryScreen:
    """The history view with its first page and the usage of a foreign job with a hint."""
    await _queue(pilot)
    await pilot.press("h")
    screen = await shown(pilot, HistoryScreen)
    await wait_for(pilot, lambda: screen.page is not None, "the first page")
    await settle(pilot)
    # Row 16 (below the 12 TAO jobs sacct lists: pending ones too, once eligible): a completed
    # foreign job that used a small share of its limit (the hint).
    await pilot.press(*["down"] * 16)
    await wait_for(pilot, lambda: screen.table.cursor_row == 16, "the cursor on row 16")
    await settle(pilot)
    return screen


def test_history(snap_compare: Any, size: tuple[int, int], fake: ClusterBackend) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await _history(pilot)

    assert snap_compare(build_app(fake), terminal_size=size, run_before=run_before)


def test_foreign_job_output(snap_compare: Any, size: tuple[int, int], fake: ClusterBackend) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await _history(pilot)
        await pilot.press("l")
        screen = await shown(pilot, JobOutputScreen)
        await wait_for(pilot, lambda: screen.output is not None, "the output")
        await settle(pilot)

    assert snap_compare(build_app(fake), terminal_size=size, run_before=run_before)
