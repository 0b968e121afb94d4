"""The hostile-value walk through the TUI: the real app on the fake cluster after
:func:`tests.hostile.plant`, with a driver that keeps every byte the app writes to the terminal.

Value (tests/hostile.py) → where it enters → what the user must see:

- OSC 52 / OSC 0 / cursor-up+erase / C1 / bidi in ``status.json`` (message, eta, KPIs) → the
  poll's status tail → the detail pane spells them out; no byte reaches the terminal;
- the same in ``main.out`` → the log view → the line without its escape sequences, the rest
  spelled out;
- a job renamed with a newline and a whole squeue row → squeue → the other job stays Running;
- ``exp[/data]`` + OSC 52 as a name in the history → sacct → the name literally, no crash;
  the same job's StdOut → the job output screen → lines without escapes;
- OSC 52 + bidi + ``[/]`` in a node's drain reason → scontrol → spelled out, literally;
- OSC 0 in SLURM's version → the doctor → spelled out;
- ``[/]`` and ``[@click=app.quit]`` in a FAILURE message → a toast when the job ends → the
  text literally, the app keeps running;
- a FIFO instead of ``status.json`` → the poll → the other jobs' progress still updates.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from rich.console import Console
from textual.content import Content
from textual.drivers.headless_driver import HeadlessDriver
from textual.pilot import Pilot
from textual.widgets import Log
from textual.widgets._toast import Toast

from tao_slurm_tui.app import TaoSlurmApp
from tao_slurm_tui.core.layout import JobPaths
from tao_slurm_tui.core.models import TaoStatus
from tao_slurm_tui.core.shown import UNSAFE
from tao_slurm_tui.screens.capacity import CapacityScreen
from tao_slurm_tui.screens.history import HistoryScreen
from tao_slurm_tui.screens.job_output import JobOutputScreen
from tao_slurm_tui.screens.logs import LogsScreen
from tao_slurm_tui.screens.onboarding import OnboardingScreen
from tao_slurm_tui.screens.queue import QueueScreen
from tao_slurm_tui.services.cluster import ClusterBackend
from tao_slurm_tui.services.fakecluster import engine
from tao_slurm_tui.services.fakecluster.seed import RESULTS
from tao_slurm_tui.services.fakecluster.world import World
from tao_slurm_tui.widgets.check_row import CheckRow
from tao_slurm_tui.widgets.log_view import LogView
from tests.hostile import (
    HISTORY_ID,
    MARKUP_CLICK,
    MARKUP_END,
    OSC52,
    Planted,
    leaked_payloads,
    markup_spy,
    plant,
)
from tests.tui.conftest import SIZE, build_app
from tests.tui.waits import record_notifications, settle, shown, wait_for


class TerminalBytes(HeadlessDriver):
    """A driver that is not headless (the app renders every frame) and keeps what it writes."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.written: list[str] = []

    @property
    def is_headless(self) -> bool:
        return False

    def write(self, data: str) -> None:
        self.written.append(data)


def terminal(app: TaoSlurmApp) -> str:
    """Everything the app wrote to its terminal so far."""
    driver = app._driver
    assert isinstance(driver, TerminalBytes)
    return "".join(driver.written)


def capturing(app: TaoSlurmApp) -> TaoSlurmApp:
    app.driver_class = TerminalBytes
    return app


async def home(pilot: Pilot[Any]) -> QueueScreen:
    screen: QueueScreen = await shown(pilot, QueueScreen)
    await wait_for(pilot, lambda: screen.polled_ok, "the first poll")
    await settle(pilot)
    return screen


async def select(pilot: Pilot[Any], screen: QueueScreen, job_id: str) -> None:
    screen.table.move_cursor(row=screen.table.get_row_index(job_id))
    await wait_for(pilot, lambda: screen.table.cursor_job_id == job_id, f"the cursor on {job_id}")
    await settle(pilot)


def text_of(widget: Any) -> str:
    """What a Static/Label shows, as plain text."""
    console = Console(width=400, record=True)
    content = widget.content
    console.print(content if not isinstance(content, Content) else content.plain)
    return console.export_text()


def visible(text: str) -> bool:
    """True when ``text`` holds no control character (newlines aside)."""
    return UNSAFE.search(text.replace("\n", "")) is None


async def test_every_screen_shows_the_planted_values_as_data(
    fake: ClusterBackend, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    planted = plant(world)
    app = capturing(build_app(fake))
    spy = markup_spy(monkeypatch)
    async with app.run_test(size=SIZE, headless=False) as pilot:
        await walk_every_screen(app, pilot, planted)
    assert spy.parsed == [], "data handed to a markup parser: build plain Text (widgets/plain.py)"


async def walk_every_screen(app: TaoSlurmApp, pilot: Pilot[Any], planted: Planted) -> None:
    """Long because: one walk through every screen, each step's checks beside it."""
    screen = await home(pilot)
    await select(pilot, screen, planted.running)
    detail = text_of(screen.query_one("JobDetail"))
    assert "step done a\\x1b]52;c;cm0gLXJmIH4v\\x07b" in detail, detail
    # An eta that is no duration shows its first 20 characters.
    assert "eta 0:40:00\\x1b]0;pwned-" in detail and "mAP=0.5\\x9b1A" in detail
    assert "[/]g[@click=app.quit]click me[/]" in detail
    assert str(screen.table.get_cell(planted.victim, "status")) == "Running"

    await pilot.press("l")  # the logs of the running job
    logs: LogsScreen = await shown(pilot, LogsScreen)
    view = logs.query_one(LogView)
    await wait_for(pilot, lambda: any(t == "green" for t, _ in view._lines), "the log")
    texts = [text for text, _ in view._lines]
    assert "fake line" in texts and all(visible(t) for t in texts)
    assert any("abcde\\u202edecoy\\u202cf[/]g" in t for t in texts)
    await pilot.press("escape")

    await shown(pilot, QueueScreen)
    await pilot.press("h")  # the history: a job of the user's named with escapes
    history: HistoryScreen = await shown(pilot, HistoryScreen)
    await wait_for(pilot, lambda: history.page is not None, "the first page")
    key = next(k for k, e in history.entries.items() if e.raw_id == HISTORY_ID)
    cell = str(history.table.get_cell(key, "name"))
    assert cell.startswith("exp[/data]\\x1b]52;c;") and visible(cell)
    history.table.move_cursor(row=history.table.get_row_index(key))
    await settle(pilot)
    await pilot.press("l")
    output: JobOutputScreen = await shown(pilot, JobOutputScreen)
    await wait_for(pilot, lambda: output.output is not None, "the output")
    await settle(pilot)
    lines = list(output.query_one(Log).lines)
    assert lines[0] == "outside job" and all(visible(line) for line in lines)
    await pilot.press("escape")
    await shown(pilot, HistoryScreen)
    await pilot.press("escape")

    await shown(pilot, QueueScreen)
    await pilot.press("p")  # capacity: the admins' drain reason
    capacity: CapacityScreen = await shown(pilot, CapacityScreen)
    out_text = capacity.query_one("#cap-out-text")
    await wait_for(pilot, lambda: "Xid 79" in text_of(out_text), "the node reasons")
    reason = text_of(out_text)
    assert "Xid 79 \\x1b]52;c;cm0gLXJmIH4v\\x07\\u202edecoy\\u202c[/]" in reason
    await pilot.press("escape")

    await shown(pilot, QueueScreen)
    await pilot.press("d")  # the doctor: SLURM's version string
    onboarding: OnboardingScreen = await shown(pilot, OnboardingScreen)
    await pilot.press("ctrl+r")
    await wait_for(pilot, lambda: bool(onboarding.query(CheckRow)), "the checks")
    await settle(pilot)
    details = " ".join(text_of(label) for label in onboarding.query(".detail"))
    assert "22.05.8\\x1b]0;pwned-title\\x07" in details, details
    await settle(pilot)

    sent = terminal(app)
    assert leaked_payloads(sent) == []
    assert app.return_code is None  # still running: nothing crashed


async def test_a_failure_message_with_markup_is_a_plain_toast(
    fake: ClusterBackend, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    planted = plant(world)
    message = f"Configuration error: {MARKUP_END} {MARKUP_CLICK} {OSC52}"
    app = capturing(build_app(fake))
    spy = markup_spy(monkeypatch)
    async with app.run_test(size=SIZE, headless=False, notifications=True) as pilot:
        screen = await home(pilot)
        notes = record_notifications(app)
        with world.edit() as state:
            job = max(
                (j for j in state["jobs"].values() if j["name"] == planted.victim),
                key=lambda j: int(j["id"]),
            )
            engine.end_job(state, job, "COMPLETED", engine.now(state), "0:0")
            job["train"] = None  # it writes no more
        status = world.local(JobPaths(RESULTS, planted.victim).subtask_status_json("train"))
        with status.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({"status": "FAILURE", "message": message}) + "\n")
        for _ in range(4):  # sacct must agree before a finish is acted on
            screen.action_refresh()
            await settle(pilot)
            if screen.all_jobs[planted.victim].status is TaoStatus.ERROR:
                break
        assert screen.all_jobs[planted.victim].status is TaoStatus.ERROR
        await wait_for(pilot, lambda: any(MARKUP_CLICK in n.message for n in notes), "the note")
        await wait_for(pilot, lambda: bool(app.screen.query(Toast)), "the toast")
        toasts = [toast.render().plain for toast in app.screen.query(Toast)]
        assert any(f"{MARKUP_END} {MARKUP_CLICK}" in text for text in toasts), toasts
        await pilot.pause(0.2)
        assert app.return_code is None and app.is_running
        assert leaked_payloads(terminal(app)) == []
    assert spy.parsed == [], "a toast's message parsed as markup"


async def test_a_fifo_status_json_does_not_stall_the_others(
    fake: ClusterBackend, world: World
) -> None:
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        screen = await home(pilot)
        # The suspended job's status.json is read on every poll: a FIFO now, nobody writes.
        fifo = world.local(JobPaths(RESULTS, "mae-pretrain").subtask_status_json("train"))
        fifo.parent.mkdir(parents=True, exist_ok=True)
        fifo.unlink(missing_ok=True)
        os.mkfifo(fifo)
        before = screen.all_jobs["dino-train-1"].progress.epoch or 0
        world.train("dino-train-1", epochs=2)
        screen.action_refresh()
        await wait_for(
            pilot,
            lambda: (screen.all_jobs["dino-train-1"].progress.epoch or 0) >= before + 2,
            "the running job's new epochs",
        )
        assert not screen.notice  # the poll read everything it could
