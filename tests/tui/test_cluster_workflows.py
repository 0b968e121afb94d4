"""Whole workflows driven like a user (Pilot keys and clicks) against the REAL sandbox cluster.

Each test builds its own config and job store under ``tmp_path`` and a unique job name, so the
tests run side by side under xdist (and next to the other cluster tests). Waits are bounded
polling loops on a visible condition, never fixed sleeps.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, Switch, TextArea

from tao_slurm_tui.app import TaoSlurmApp, make_app
from tao_slurm_tui.config import Config, Settings
from tao_slurm_tui.core.models import TaoStatus
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.screens.composer import ComposerScreen
from tao_slurm_tui.screens.confirm import ConfirmModal
from tao_slurm_tui.screens.logs import LogsScreen
from tao_slurm_tui.screens.path_modal import PathModal
from tao_slurm_tui.screens.queue import QueueScreen
from tao_slurm_tui.services.cluster import ClusterBackend
from tao_slurm_tui.services.store import JobStore
from tao_slurm_tui.widgets.log_pane import LogPane
from tests import sandbox
from tests.tui.waits import record_notifications

pytestmark = pytest.mark.cluster

SIZE = (140, 40)
"""Terminal size of the workflows (wide enough for every queue column)."""

DEMO_SPEC = Path(__file__).resolve().parents[2] / "examples" / "train-demo.toml"
"""The example spec the demo opens; its command runs examples/train.py on the cluster."""


def train() -> str:
    """The demo training script (this checkout's) on the sandbox cluster's shared file system."""
    return sandbox.repo_train_script()


# ----------------------------------------------------------------------------------- helpers


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def cluster_app(sandbox_profile: Profile, tmp_path: Path) -> TaoSlurmApp:
    """The app on a real ClusterBackend: config and job store in ``tmp_path``."""
    settings = Settings(default_profile="sandbox", profiles={"sandbox": sandbox_profile})
    config = Config(tmp_path / "config.toml", settings)
    config.save()
    backend = ClusterBackend(config, "sandbox", store=JobStore(tmp_path / "state.db"))
    return make_app(backend, settings=Settings(poll_interval=2))


@pytest.fixture
def job_names() -> Iterator[list[str]]:
    """Names of the jobs a test submits; whatever still runs afterwards is scancelled."""
    names: list[str] = []
    yield names
    for name in names:
        # As root on the sandbox host: a failed test must not leave a 100-epoch job behind.
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(
                ["scancel", "--name", name, "--user", "slurmtest"],
                capture_output=True,
                timeout=30,
                check=False,
            )


async def wait_for(
    pilot: Pilot[Any], condition: Callable[[], bool], what: str, timeout: float = 90.0
) -> None:
    """Let the app run until ``condition()`` holds; fail naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            notes = [n.message for n in pilot.app._notifications]
            pytest.fail(f"gave up waiting for {what} after {timeout:.0f} s; notifications: {notes}")
        await pilot.pause(0.2)


async def retype(pilot: Pilot[Any], field_id: str, text: str) -> None:
    """Click an input, clear it with the keyboard and type ``text``."""
    await pilot.click(f"#{field_id}")
    await pilot.press("end", "ctrl+u", *text)


async def open_composer_with_demo(
    pilot: Pilot[Any], spec: Path = DEMO_SPEC, name: str = "train-demo"
) -> ComposerScreen:
    """From the queue: n (new job), Ctrl+O, type the demo spec's path (or ``spec``, whose job
    is ``name``), Enter."""
    app = pilot.app
    await wait_for(pilot, lambda: isinstance(app.screen, QueueScreen), "the queue")
    await pilot.press("n")
    await wait_for(pilot, lambda: isinstance(app.screen, ComposerScreen), "the composer")
    composer = app.screen
    assert isinstance(composer, ComposerScreen)
    await pilot.press("ctrl+o")
    await wait_for(pilot, lambda: isinstance(app.screen, PathModal), "the load dialog")
    await pilot.press(*str(spec), "enter")
    await wait_for(pilot, lambda: app.screen is composer, "the composer again")
    await wait_for(pilot, lambda: composer.current_spec()["name"] == name, "the spec loaded")
    return composer


def form_values(composer: ComposerScreen) -> dict[str, Any]:
    """What every field of the form shows, exactly as typed (before parsing)."""
    values: dict[str, Any] = {}
    for widget in composer.form.query("Input, Switch, TextArea"):
        if isinstance(widget, Switch):
            values[str(widget.id)] = widget.value
        elif isinstance(widget, TextArea):
            values[str(widget.id)] = widget.text
        elif isinstance(widget, Input):
            values[str(widget.id)] = widget.value
    return values


def queue_status(app: TaoSlurmApp, job_id: str) -> TaoStatus | None:
    """The job's status as the queue table shows it (None while it has no row)."""
    screen = app.home
    if screen is None or not screen.is_mounted:
        return None
    job = screen.table.jobs.get(job_id)
    return job.status if job is not None else None


async def submit_from_composer(
    pilot: Pilot[Any], composer: ComposerScreen, name: str, command: str
) -> None:
    """Type a name and a command, Ctrl+S, and wait for the queue with the job's row."""
    app = pilot.app
    await retype(pilot, "f-name", name)
    await retype(pilot, "f-command", command)
    await wait_for(pilot, lambda: composer.errors == {}, "a valid form")
    await pilot.press("ctrl+s")
    await wait_for(pilot, lambda: isinstance(app.screen, QueueScreen), "the queue after submit")
    await wait_for(pilot, lambda: queue_status(app, name) is not None, f"a row for {name}")  # type: ignore[arg-type]
    screen = app.screen
    assert isinstance(screen, QueueScreen)
    assert screen.table.cursor_job_id == name, "the new job is selected"


async def select_row(pilot: Pilot[Any], job_id: str) -> None:
    """Move the queue's cursor onto the job's row with the arrow keys."""
    screen = pilot.app.screen
    assert isinstance(screen, QueueScreen)
    table = screen.table
    table.focus()
    await pilot.press("home")
    for _ in range(table.row_count):
        if table.cursor_job_id == job_id:
            return
        await pilot.press("down")
    assert table.cursor_job_id == job_id


# ----------------------------------------------------------------------------------- tests


async def test_compose_submit_complete_and_read_the_logs(
    cluster_app: TaoSlurmApp, job_names: list[str]
) -> None:
    app = cluster_app
    notes = record_notifications(app)  # toasts expire after seconds; the record does not
    name = _unique("wf-ok")
    job_names.append(name)
    async with app.run_test(size=SIZE) as pilot:
        composer = await open_composer_with_demo(pilot)
        await submit_from_composer(pilot, composer, name, f"{train()} --epochs 3 --seconds 1")
        assert any(f"{name} submitted as SLURM job" in n.message for n in notes)

        await wait_for(
            pilot,
            lambda: queue_status(app, name) is TaoStatus.COMPLETE,
            f"{name} to be Complete in the queue",
            timeout=240,  # a GPU job: ~2 min PENDING behind parallel tests, then the run
        )
        screen = app.screen
        assert isinstance(screen, QueueScreen)
        row = screen.table.jobs[name]
        assert row.slurm_state == "COMPLETED"
        # TAO's 0-based epoch 2 of max_epoch 2: three of three epochs done.
        assert row.progress.epoch_text == "3/3" and row.message == "Train finished successfully."
        assert any(f"{name} finished" in n.message for n in notes)

        await select_row(pilot, name)
        await pilot.press("l")
        await wait_for(pilot, lambda: isinstance(app.screen, LogsScreen), "the log screen")
        logs = app.screen
        assert isinstance(logs, LogsScreen) and logs.job_id == name
        out = logs.query_one("#pane-out", LogPane).view
        await wait_for(
            pilot,
            lambda: any("epoch 3/3" in line for line in out.lines),
            "the job's last epoch in main.out",
        )
        assert any("training for 3 epochs" in line for line in out.lines)
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, QueueScreen), "back to the queue")
    await app.backend.close()


async def test_cancel_from_the_queue_with_confirm(
    cluster_app: TaoSlurmApp, job_names: list[str]
) -> None:
    app = cluster_app
    notes = record_notifications(app)  # toasts expire after seconds; the record does not
    name = _unique("wf-cancel")
    job_names.append(name)
    async with app.run_test(size=SIZE) as pilot:
        composer = await open_composer_with_demo(pilot)
        await submit_from_composer(pilot, composer, name, f"{train()} --epochs 100 --seconds 1")
        await wait_for(
            pilot,
            lambda: queue_status(app, name) in (TaoStatus.PENDING, TaoStatus.RUNNING),
            f"{name} pending or running",
        )
        await select_row(pilot, name)
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal), "the confirm modal")
        await pilot.click("#confirm")
        await wait_for(
            pilot,
            lambda: queue_status(app, name) is TaoStatus.CANCELED,
            f"{name} to be Canceled in the queue",
        )
        assert any(f"{name} was canceled" in n.message for n in notes)
        # The next polls keep it Canceled (SLURM agrees).
        screen = app.screen
        assert isinstance(screen, QueueScreen)
        polls = app.backend.last_poll
        await wait_for(pilot, lambda: app.backend.last_poll != polls, "one more poll")
        await wait_for(
            pilot,
            lambda: screen.table.jobs[name].slurm_state.startswith("CANCELLED"),
            "SLURM's CANCELLED state",
        )
        assert queue_status(app, name) is TaoStatus.CANCELED
    await app.backend.close()


async def test_failing_submit_shows_slurms_message_and_keeps_the_form(
    cluster_app: TaoSlurmApp, job_names: list[str]
) -> None:
    app = cluster_app
    notes = record_notifications(app)  # toasts expire after seconds; the record does not
    name = _unique("wf-bad")
    job_names.append(name)
    async with app.run_test(size=SIZE) as pilot:
        composer = await open_composer_with_demo(pilot)
        await retype(pilot, "f-name", name)
        await retype(pilot, "f-command", f"{train()} --epochs 2 --seconds 1")
        # An account SLURM does not know (associations are enforced): only sbatch can say it.
        # (A partition the cluster lacks is refused in the form now, before anything is staged.)
        await retype(pilot, "f-account", "nosuch-account")
        await wait_for(pilot, lambda: composer.errors == {}, "a form valid offline")
        typed = form_values(composer)
        await pilot.press("ctrl+s")
        await wait_for(
            pilot,
            lambda: "Not submitted" in str(composer.stages.render()),
            "the submit to fail",
        )
        assert app.screen is composer
        shown = str(composer.stages.render())
        assert "invalid account" in shown.lower(), shown
        assert any("invalid account" in n.message.lower() and n.severity == "error" for n in notes)
        assert form_values(composer) == typed
        assert not composer.submit_button.disabled
        assert name not in {job.id for job in app.backend.jobs() if job.submitted}
    await app.backend.close()


async def test_composer_block_hint_without_opening_the_gpus_screen(
    cluster_app: TaoSlurmApp,
) -> None:
    """On the real cluster the composer's first estimate brings the free-block hint: the
    capacity is fetched alongside it (one capacity command), never the GPUs screen first."""
    app = cluster_app
    backend = app.backend
    assert isinstance(backend, ClusterBackend)
    async with app.run_test(size=SIZE) as pilot:
        composer = await open_composer_with_demo(pilot)
        hints = ("fits a free block now", "The largest free block is", "No node has a free GPU")
        await wait_for(
            pilot,
            lambda: any(h in str(composer.estimate.render()) for h in hints),
            "the free-block hint",
        )
        assert backend.capacities.fetches == 1
        text = str(composer.estimate.render())
        report = backend.capacities.report
        assert report is not None
        polar = report.partition("polar")
        assert polar is not None
        block = polar.largest_block
        # The demo asks for 1 node x 1 GPU: the hint is the block the same report found.
        if block is None:
            assert "No node has a free GPU right now." in text
        else:
            kind = block.kind or "gpu"
            assert (
                f"1 node x 1 GPU fits a free block now ({block.node}: {block.gpus} {kind} free)."
                in text
            )
    await app.backend.close()
