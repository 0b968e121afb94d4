"""Benchmark: the TUI's queue tick, first frame, idle CPU and log throughput.

Run with ``.venv/bin/python bench/tui.py`` (no cluster needed: the app runs headless on the
real back end over a fake cluster, ``services/fakecluster``). Measures, side by side in one run:

1. one queue tick with 2,000 jobs (5% of them changed): our keyed diff
   (:meth:`JobTable.apply`, and the screen's whole tick ``QueueScreen._take``) vs the naive
   ``clear()`` + re-adding every row; the call itself (how long the event loop is blocked) and
   the CPU until the app is idle again (DataTable's deferred measuring and the repaint
   included); whether the cursor and scroll stayed put;
2. first frame with 2,000 jobs: from building the app to the first frame with queue rows in it
   (in process), and from ``python`` starting the real ``tao-slurm-tui`` (its store holding the
   2,000 jobs, in a pseudo terminal) to that frame, with what it had imported by then;
3. idle CPU over 60 s with the default poll interval: the app (12 seeded jobs, and 2,000 jobs)
   vs a bare Textual app with one Static, each in its own process, all at the same time;
4. log flood: 10,000 lines/s for 5 s through the logs screen's real path (the follower worker
   → ``LogPane.add_batch`` → ``LogView.write_lines``) vs Textual's own ``Log`` widget: lines
   taken, event-loop stalls, key-press latency during the flood, frames, memory.

Headless: frames are composed (every visible line rendered) but not written to a terminal.
Prints Markdown tables and writes them into bench/RESULTS.md (section "tui").
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from _sandbox import table, write_results
from rich.console import RenderableType
from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.strip import Strip
from textual.widgets import Log, Static

from tao_slurm_tui.app import TaoSlurmApp, make_app
from tao_slurm_tui.config import Settings
from tao_slurm_tui.core.models import JobRecord, Progress, TaoStatus
from tao_slurm_tui.screens.logs import LogsScreen
from tao_slurm_tui.screens.queue import QueueScreen
from tao_slurm_tui.services.backend import LogBatch, LogStreamName
from tao_slurm_tui.services.cluster import ClusterBackend
from tao_slurm_tui.services.fakecluster.demo import Demo
from tao_slurm_tui.services.fakecluster.seed import FROZEN_TIME
from tao_slurm_tui.widgets.job_table import COLUMNS, JobTable

HERE = Path(__file__).resolve().parent
SIZE = (120, 36)
JOBS = 2_000
DEFAULT_POLL = f"default poll ({Settings().poll_interval:g} s)"
CHANGED = 0.05
TICKS = 9
FIRST_FRAME_RUNS = 3
FLOOD_RATE = 10_000
FLOOD_SECONDS = 5.0
FLOOD_INTERVAL = 0.05
"""Seconds between log batches during the flood (500 lines each at 10,000 lines/s)."""
MAX_LOG_LINES = 20_000
"""Lines kept per pane (LogsScreen's default)."""
_ROW_ID = re.compile(r"-\d{5}\b")


# ----------------------------------------------------------------------------------- data


def demo_backend(jobs: list[JobRecord] | None = None) -> ClusterBackend:
    """The real back end on a fresh fake cluster (frozen clock); ``jobs`` are added to its
    store (ended ones: the cluster is asked nothing about them)."""
    demo = Demo(tempfile.mkdtemp(prefix="tao-bench-"), workstation=True)
    backend = demo.backend()
    with backend.store.batch():
        for job in jobs or []:
            backend.store.create_job(job)
    return backend


def make_jobs(count: int) -> list[JobRecord]:
    """``count`` jobs cycling through the fake cluster's seeded states, newest first (ended:
    the records of earlier runs, so no SLURM job stands behind them)."""
    with tempfile.TemporaryDirectory() as folder:
        demo = Demo(folder, workstation=True)
        demo.world("fake")
        templates = list(reversed(demo.store.list_jobs("fake")))
        demo.close()
    jobs = []
    for i in range(count):
        job = copy.deepcopy(templates[i % len(templates)])
        job.id = f"{job.id}-{i:05d}"
        job.created_at = FROZEN_TIME - i
        for attempt in job.attempts:
            attempt.slurm_job_id = str(200_000 + i * 2 + attempt.number)
        if not job.status.terminal:
            job.status, job.slurm_state = TaoStatus.CANCELED, "CANCELLED"
        jobs.append(job)
    return jobs


def changed(jobs: list[JobRecord], tick: int, fraction: float = CHANGED) -> list[JobRecord]:
    """A new snapshot where ``fraction`` of the jobs (new objects) show new progress/elapsed."""
    step = round(1 / fraction)
    out = list(jobs)
    for i in range(tick % step, len(out), step):
        job = out[i]
        attempts = list(job.attempts)
        if attempts:
            attempts[-1] = replace(attempts[-1], elapsed=f"0{tick % 10}:{i % 60:02d}:{tick:02d}")
        out[i] = replace(
            job,
            attempts=attempts,
            progress=Progress(epoch=(tick + i) % 19 + 1, max_epoch=20, status="RUNNING"),
        )
    return out


class SnapshotBackend(ClusterBackend):
    """The back end minus the store and the poll: ``jobs()``/``refresh()`` hand out one
    prepared list, so the numbers are the UI's alone."""

    def __init__(self, jobs: list[JobRecord]) -> None:
        """Serve ``jobs`` as they are."""
        demo = Demo(tempfile.mkdtemp(prefix="tao-bench-"), workstation=True)
        demo.world("fake")
        super().__init__(demo.config, "fake", store=demo.store)
        self._snapshot = jobs
        self.refresh_count = 0

    def jobs(self) -> list[JobRecord]:
        """The prepared list (the UI never mutates it)."""
        return list(self._snapshot)

    async def refresh(self, *, connect: bool = True, full: bool = False) -> list[JobRecord]:
        """Count the poll, return the prepared list."""
        await asyncio.sleep(0)
        self.refresh_count += 1
        self._last_poll = self.clock()
        return list(self._snapshot)

    async def followup(self) -> bool:
        """No accounting follow-up."""
        return False


def rss_kib() -> int:
    """Resident set size of this process now (KiB)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def cpu_seconds() -> float:
    """User + system CPU time of this process so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# ----------------------------------------------------------------------------------- probes


@dataclass
class FrameProbe:
    """Counts composed frames and notes the first one that shows queue rows."""

    frames: int = 0
    rows_drawn: bool = False
    first_rows_frame: float | None = None
    """``time.monotonic()`` of the first frame with queue rows (system-wide clock)."""
    seen: asyncio.Event = field(default_factory=asyncio.Event)

    def attach(self, app: App[Any]) -> None:
        """Wrap ``app._display`` (called with every composed frame, headless or not)."""
        original = app._display

        def display(screen: Screen[Any], renderable: RenderableType | None) -> None:
            original(screen, renderable)
            if renderable is None:
                return
            self.frames += 1
            if self.rows_drawn and self.first_rows_frame is None:
                self.first_rows_frame = time.monotonic()
                self.seen.set()

        app._display = display  # type: ignore[method-assign]


_PROBES: list[FrameProbe] = []
_original_render_line = JobTable.render_line


def _render_line(self: JobTable, y: int) -> Strip:
    strip = _original_render_line(self, y)
    if _PROBES and not _PROBES[-1].rows_drawn and _ROW_ID.search(strip.text):
        _PROBES[-1].rows_drawn = True
    return strip


JobTable.render_line = _render_line  # type: ignore[method-assign,assignment]


async def run_until_first_rows(app: TaoSlurmApp) -> tuple[float, FrameProbe]:
    """Start ``app`` headless and return when a frame shows queue rows (monotonic time)."""
    probe = FrameProbe()
    _PROBES.append(probe)
    probe.attach(app)
    async with app.run_test(size=SIZE):
        await asyncio.wait_for(probe.seen.wait(), 60)
    assert probe.first_rows_frame is not None
    return probe.first_rows_frame, probe


# ----------------------------------------------------------------------------------- 1. tick


@dataclass
class TickResult:
    """Medians of one way of updating the table."""

    call: float
    cpu: float
    cells: int
    cursor_kept: bool
    scroll_kept: bool


async def bench_tick() -> tuple[dict[str, TickResult], float]:
    """Our keyed diff vs clear-and-rebuild on the same table, with 2,000 jobs."""
    jobs = make_jobs(JOBS)
    backend = demo_backend(jobs)
    jobs = backend.jobs()  # and the seeded ones, as the table shows them
    # One poll on resume, then none for an hour: the bench drives the ticks itself.
    app = make_app(backend, settings=Settings(poll_interval=3600))
    results: dict[str, TickResult] = {}
    async with app.run_test(size=SIZE) as pilot:
        while backend.last_poll is None:
            await pilot.pause()
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, QueueScreen)
        table = screen.table
        table.move_cursor(row=JOBS // 2)
        await pilot.pause()
        cursor_id, scroll = table.cursor_job_id, table.scroll_y

        settle = []
        for _ in range(TICKS):
            c0 = cpu_seconds()
            await pilot.pause()
            settle.append(cpu_seconds() - c0)
        floor = statistics.median(settle)

        def ours(new: list[JobRecord]) -> int:
            return table.apply(new).updated_cells

        def screen_tick(new: list[JobRecord]) -> int:
            screen._take(new)
            return -1

        def naive(new: list[JobRecord]) -> int:
            with app.batch_update():
                table.clear()
                for job in new:
                    cells = table.cells(job)
                    table.add_row(*(cells[key] for key, _ in COLUMNS), key=job.id)
                table.jobs = {job.id: job for job in new}
            return len(new) * len(COLUMNS)

        tick = 0
        ways: list[tuple[str, Callable[[list[JobRecord]], int]]] = [
            ("ours", ours),
            ("screen", screen_tick),
            ("naive", naive),
        ]
        for name, update in ways:
            calls, cpus, cells = [], [], []
            kept_cursor = kept_scroll = True
            for _ in range(TICKS):
                tick += 1
                new = changed(jobs, tick)
                c0, w0 = cpu_seconds(), time.perf_counter()
                cells.append(update(new))
                w1 = time.perf_counter()
                await pilot.pause()  # DataTable measures on idle; the pause forces the frame
                cpus.append(cpu_seconds() - c0)
                calls.append(w1 - w0)
                jobs = new
                kept_cursor &= table.cursor_job_id == cursor_id
                kept_scroll &= table.scroll_y == scroll
            results[name] = TickResult(
                statistics.median(calls),
                statistics.median(cpus),
                round(statistics.median(cells)),
                kept_cursor,
                kept_scroll,
            )
    return results, floor


# ----------------------------------------------------------------------------------- 2. first frame


async def first_frame_in_process(real: bool, count: int = JOBS) -> float:
    """Seconds from building the app to the first frame with queue rows (2,000 jobs)."""
    jobs = make_jobs(count)  # the store's content exists before the app starts
    # So does the back end (filling its store is not the app's time).
    backend = demo_backend(jobs) if real else SnapshotBackend(jobs)
    start = time.monotonic()
    app = make_app(backend)
    shown, _ = await run_until_first_rows(app)
    return shown - start


FIRST_FRAME_PROBE = """
import json, os, resource, sys, time
marks = {}
import textual.app as textual_app
show = textual_app.App._display
def display(self, screen, renderable):
    show(self, screen, renderable)
    try:
        rows = renderable is not None and screen.query_one("#jobs").row_count
    except Exception:
        rows = 0
    if rows:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        marks.update(shown=time.time(), cpu=usage.ru_utime + usage.ru_stime)
        marks["modules"] = sorted(sys.modules)
        with open(os.environ["FIRST_FRAME_OUT"], "w") as out:
            json.dump(marks, out)
        os._exit(0)
textual_app.App._display = display
run = textual_app.App.run
def timed_run(self, *args, **kwargs):
    marks["app_built"] = time.time()
    return run(self, *args, **kwargs)
textual_app.App.run = timed_run
from tao_slurm_tui import cli
marks["cli_imported"] = time.time()
sys.argv = ["tao-slurm-tui"]
cli.main()
"""
"""Runs ``tao-slurm-tui`` as the console script does (``cli.main()``, no verb) and notes when
its first frame shows queue rows; ``textual.app`` is imported first to hook the frames (the
app imports it anyway)."""

LATER = (
    "screens.composer", "screens.logs", "screens.onboarding", "screens.capacity",
    "screens.history", "screens.overview", "screens.help", "commands.status",
    "commands.submit", "commands.tao", "omegaconf", "nvidia_tao_core",
)  # fmt: skip
"""What only later screens (or other verbs) need: none may be imported before the queue's
first frame (issue 23)."""


def first_frame_home(jobs: int) -> Path:
    """A config and a state DB with ``jobs`` jobs in a fresh XDG tree; the profile points at a
    port nobody listens on (the first poll, after the first frame, fails at once)."""
    import tomli_w

    from tao_slurm_tui.services.store import JobStore

    home = Path(tempfile.mkdtemp(prefix="bench-tui-ff-"))
    config = home / "config" / "tao-slurm-tui" / "config.toml"
    config.parent.mkdir(parents=True)
    profile = {
        "user": "nobody",
        "hostnames": ["127.0.0.1"],
        "port": 9,
        "partition": "polar",
        "base_results_dir": "/tmp/nowhere",
        "container_runtime": "none",
    }
    config.write_text(tomli_w.dumps({"default_profile": "p", "profiles": {"p": profile}}))
    db = home / "data" / "tao-slurm-tui" / "state.db"
    db.parent.mkdir(parents=True)
    store = JobStore(db)
    with store.batch():
        for job in make_jobs(jobs):
            store.create_job(replace(job, profile="p"))
    store.close()
    return home


def _later(modules: list[str]) -> list[str]:
    return sorted(
        m
        for m in modules
        if any(m.startswith(f"tao_slurm_tui.{n}") or m.split(".")[0] == n for n in LATER)
    )


def first_frame_cli(home: Path) -> dict[str, Any]:
    """Seconds from spawning ``python`` to the first frame with rows of the real app (in a
    pseudo terminal of 120x36), its parts, its CPU time and what it had imported by then."""
    out = home / "frame.json"
    out.unlink(missing_ok=True)
    env = {
        **os.environ,
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_CACHE_HOME": str(home / "cache"),
        "FIRST_FRAME_OUT": str(out),
    }
    probe = home / "probe.py"
    probe.write_text(FIRST_FRAME_PROBE)
    inner = f"stty cols {SIZE[0]} rows {SIZE[1]}; exec {sys.executable} {probe}"
    start = time.time()
    subprocess.run(
        ["script", "-qfec", inner, "/dev/null"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        timeout=120,
        check=False,
    )
    marks = json.loads(out.read_text())
    modules: list[str] = marks["modules"]
    return {
        "total": marks["shown"] - start,
        "imports": marks["cli_imported"] - start,
        "built": marks["app_built"] - marks["cli_imported"],
        "app": marks["shown"] - marks["app_built"],
        "cpu": marks["cpu"],
        "modules": len(modules),
        "ssh": sum(1 for m in modules if m.split(".")[0] in ("asyncssh", "cryptography")),
        "later": _later(modules),
    }


# ----------------------------------------------------------------------------------- 3. idle


class BareApp(App[None]):
    """The floor: a Textual app showing one Static."""

    def compose(self) -> ComposeResult:
        """One line of text."""
        yield Static("Hello from a bare Textual app.")


async def child_idle(variant: str, seconds: float) -> dict[str, float]:
    """Run one app headless for ``seconds`` after it settled; report its CPU time."""
    app: App[Any]
    count: Callable[[], int] = int  # int() is 0: the bare app never polls
    if variant == "floor":
        app = BareApp()
    elif variant == "ours-2000":
        snapshot = SnapshotBackend(make_jobs(JOBS))
        count = lambda: snapshot.refresh_count  # noqa: E731
        app = make_app(snapshot)  # default settings: the default poll interval
    else:
        # The seeded jobs, polled for real over the fake cluster (its tools run in other
        # processes: their CPU is the cluster's, not the app's).
        real = demo_backend()
        world = real.access.world  # type: ignore[attr-defined]
        count = lambda: sum("squeue -h -r -t all" in c for c in world.commands)  # noqa: E731
        app = make_app(real)
    probe = FrameProbe()
    probe.attach(app)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await asyncio.sleep(2)  # let start-up work (first poll, first frames) finish
        frames, polls = probe.frames, count()
        c0, w0 = cpu_seconds(), time.monotonic()
        await asyncio.sleep(seconds)
        cpu, wall = cpu_seconds() - c0, time.monotonic() - w0
        return {
            "cpu": cpu,
            "wall": wall,
            "frames": probe.frames - frames,
            "polls": count() - polls,
            "rss_kib": rss_kib(),
        }


def start_idle(variant: str, seconds: float) -> subprocess.Popen[str]:
    """Start an idle-CPU child process."""
    return subprocess.Popen(
        [sys.executable, __file__, "--child", f"idle:{variant}", "--idle-seconds", str(seconds)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish_idle(proc: subprocess.Popen[str]) -> dict[str, float]:
    """Wait for an idle child and parse its report."""
    out, err = proc.communicate(timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"idle child failed: {err[-2000:]}")
    result: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return result


# ----------------------------------------------------------------------------------- 4. log flood


LOG_LINES = [
    f"2026-05-10 08:{i // 6000 % 60:02d}:{i // 100 % 60:02d} Epoch {i // 500 % 20 + 1:>2}/20 "
    f"step {i:>6}: loss={1.0 / (1 + i * 0.001):.4f} lr=0.0001 throughput={900 + i % 50} img/s"
    for i in range(int(FLOOD_RATE * FLOOD_SECONDS) + FLOOD_RATE)
]
"""Pre-made realistic lines (~90 chars), so making them costs the UI nothing."""


@dataclass
class Flood:
    """Feeds LOG_LINES at FLOOD_RATE in batches every FLOOD_INTERVAL, catching up if late."""

    produced: int = 0
    started: float = 0.0
    finished: float = 0.0
    at_deadline: int = 0
    """Lines handed to the UI by the end of the 5 s window."""

    async def batches(self) -> AsyncIterator[list[str]]:
        """Every line due by now, each FLOOD_INTERVAL."""
        total = int(FLOOD_RATE * FLOOD_SECONDS)
        self.started = time.perf_counter()
        while self.produced < total:
            elapsed = time.perf_counter() - self.started
            due = min(total, int(elapsed * FLOOD_RATE))
            if elapsed >= FLOOD_SECONDS and not self.at_deadline:
                self.at_deadline = self.produced
            if due > self.produced:
                batch = LOG_LINES[self.produced : due]
                self.produced = due
                yield batch
            await asyncio.sleep(FLOOD_INTERVAL)
        self.at_deadline = self.at_deadline or self.produced
        self.finished = time.perf_counter()


class FloodBackend(ClusterBackend):
    """The back end whose main.out floods at a set rate (main.err stays quiet): the UI's log
    path is measured, not how fast the transport delivers."""

    def __init__(self, flood: Flood) -> None:
        """Create it around a flood."""
        demo = Demo(tempfile.mkdtemp(prefix="tao-bench-"), workstation=True)
        demo.world("fake")
        super().__init__(demo.config, "fake", store=demo.store)
        self.flood = flood
        self.go = asyncio.Event()

    async def follow_logs(
        self, job_id: str, stream: LogStreamName, **_: Any
    ) -> AsyncIterator[LogBatch]:
        """A small first batch, then the flood once :attr:`go` is set."""
        yield LogBatch([f"[{stream}] start"], 0)
        if stream == "out":
            await self.go.wait()
            async for lines in self.flood.batches():
                yield LogBatch(lines, 0)
        await asyncio.Event().wait()


@dataclass
class FloodResult:
    """What one log widget did under the flood."""

    offered: int
    at_deadline: int
    drained: float
    lag_p50: float
    lag_p99: float
    lag_max: float
    keys: list[float]
    frames: int
    held: int
    rss_growth_kib: int


async def lag_probe(samples: list[float], stop: asyncio.Event) -> None:
    """How late a 5 ms sleep wakes up: the event loop's stalls."""
    while not stop.is_set():
        t0 = time.perf_counter()
        await asyncio.sleep(0.005)
        samples.append(time.perf_counter() - t0 - 0.005)


async def key_probe(app: App[Any], handled: list[float], latencies: list[float]) -> None:
    """Every 0.5 s, send 'f' through the driver and time until its action ran."""
    driver = app._driver
    assert driver is not None
    while True:
        await asyncio.sleep(0.5)
        before = len(handled)
        sent = time.perf_counter()
        event = events.Key("f", "f")
        event.set_sender(app)
        driver.send_message(event)
        while len(handled) == before:
            await asyncio.sleep(0.001)
        latencies.append(handled[-1] - sent)


async def drive_flood(
    app: App[Any],
    pilot: Any,
    flood: Flood,
    go: Callable[[], None],
    handled: list[float],
    held: Callable[[], int],
) -> FloodResult:
    """Start the flood in a running app, probe it while it lasts, collect the numbers.

    Args:
        app: The running app.
        pilot: Its pilot.
        flood: The flood its log widget is fed from.
        go: Starts the flood.
        handled: Filled by the app with the time each 'f' key was handled.
        held: Lines the log widget holds now.
    """
    probe = FrameProbe()
    probe.attach(app)
    await pilot.pause()
    lags: list[float] = []
    latencies: list[float] = []
    stop = asyncio.Event()
    rss0, frames0 = rss_kib(), probe.frames
    go()
    lagger = asyncio.create_task(lag_probe(lags, stop))
    keys = asyncio.create_task(key_probe(app, handled, latencies))
    while flood.finished == 0.0:
        await asyncio.sleep(0.05)
    stop.set()
    keys.cancel()
    await lagger
    await pilot.pause()
    lags.sort()
    return FloodResult(
        offered=flood.produced,
        at_deadline=flood.at_deadline,
        drained=flood.finished - flood.started,
        lag_p50=lags[len(lags) // 2],
        lag_p99=lags[int(len(lags) * 0.99)],
        lag_max=lags[-1],
        keys=latencies,
        frames=probe.frames - frames0,
        held=held(),
        rss_growth_kib=rss_kib() - rss0,
    )


async def flood_ours() -> FloodResult:
    """The app's logs screen, fed through its real follower worker."""
    flood = Flood()
    backend = FloodBackend(flood)
    app = make_app(backend, settings=Settings(poll_interval=3600))
    handled: list[float] = []
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = LogsScreen(app.ctx, "dino-train-1", max_lines=MAX_LOG_LINES)
        await app.push_screen(screen)
        await pilot.pause()
        view = screen.active_pane.view
        view.watch(view, "follow", lambda _: handled.append(time.perf_counter()), init=False)
        return await drive_flood(
            app, pilot, flood, backend.go.set, handled, lambda: view.line_count
        )


class LogApp(App[None]):
    """The reference: Textual's own ``Log`` widget with the same line cap."""

    BINDINGS = [Binding("f", "toggle_follow", "Follow")]

    def __init__(self, handled: list[float]) -> None:
        """Create it; ``handled`` receives the time of every 'f'."""
        super().__init__()
        self.handled = handled

    def compose(self) -> ComposeResult:
        """One Log."""
        yield Log(max_lines=MAX_LOG_LINES, auto_scroll=True)

    def action_toggle_follow(self) -> None:
        """Toggle auto-scroll (what our 'f' does)."""
        log = self.query_one(Log)
        log.auto_scroll = not log.auto_scroll
        self.handled.append(time.perf_counter())


async def flood_reference() -> FloodResult:
    """Textual's Log widget fed the same batches with ``write_lines``."""
    flood = Flood()
    go = asyncio.Event()
    handled: list[float] = []
    app = LogApp(handled)

    async def feed() -> None:
        await go.wait()
        log = app.query_one(Log)
        async for lines in flood.batches():
            log.write_lines(lines)

    async with app.run_test(size=SIZE) as pilot:
        feeder = asyncio.create_task(feed())
        try:
            return await drive_flood(
                app, pilot, flood, go.set, handled, lambda: app.query_one(Log).line_count
            )
        finally:
            feeder.cancel()


# ----------------------------------------------------------------------------------- report


def fmt_s(seconds: float) -> str:
    """Seconds in a readable unit."""
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds:.2f} s"


def timed(fn: Callable[[], object]) -> float:
    """Seconds one call of ``fn`` takes."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def yes(flag: bool) -> str:
    """'yes' / 'no'."""
    return "yes" if flag else "no"


def tick_table(ticks: dict[str, TickResult], floor: float) -> str:
    """The queue-tick table."""
    labels = {
        "ours": "ours: `JobTable.apply` (keyed diff, `update_cell` only where changed)",
        "screen": "ours, the screen's whole tick: `QueueScreen._take` (transitions + diff)",
        "naive": "naive: `clear()` + `add_row` x 2,000 in one `batch_update`",
    }
    naive = ticks["naive"]
    rows = []
    for name, r in ticks.items():
        rows.append(
            [
                labels[name],
                fmt_s(r.call),
                fmt_s(r.cpu),
                "—" if r.cells < 0 else f"{r.cells:,}",
                yes(r.cursor_kept),
                yes(r.scroll_kept),
                "1x" if name == "naive" else f"{naive.cpu / r.cpu:.1f}x less CPU",
            ]
        )
    rows.append(["floor: nothing changed, just the settle", "—", fmt_s(floor), "0", "", "", ""])
    return table(
        [
            "tick",
            "call (loop blocked)",
            "CPU until idle (+ measure + repaint)",
            "cells written",
            "cursor on same job",
            "scroll kept",
            "vs naive",
        ],
        rows,
    )


def flood_table(ours: FloodResult, ref: FloodResult) -> str:
    """The log-flood table."""
    rows = []
    for label, r in (
        ("ours: logs screen (`LogPane.add_batch` → `LogView.write_lines`)", ours),
        ("reference: Textual `Log.write_lines`", ref),
    ):
        keys = sorted(r.keys)
        rows.append(
            [
                label,
                f"{r.at_deadline:,} / {int(FLOOD_RATE * FLOOD_SECONDS):,}",
                f"{r.offered / r.drained:,.0f}",
                f"{fmt_s(r.lag_p50)} / {fmt_s(r.lag_p99)} / {fmt_s(r.lag_max)}",
                f"{fmt_s(statistics.median(keys))} / {fmt_s(keys[-1])} ({len(keys)})"
                if keys
                else "none handled",
                f"{r.frames / r.drained:.0f}",
                f"{r.held:,}",
                f"{r.rss_growth_kib / 1024:+.1f} MiB",
            ]
        )
    return table(
        [
            "log widget",
            "lines taken in the 5 s",
            "lines/s",
            "loop stall p50 / p99 / max",
            "key 'f' handled: median / max (n)",
            "frames/s",
            "lines held (cap 20,000)",
            "RSS growth",
        ],
        rows,
    )


async def main_async(idle_seconds: float) -> None:
    """Run every measurement, print the tables, write RESULTS.md."""
    started = time.monotonic()
    idle = {v: start_idle(v, idle_seconds) for v in ("ours", "ours-2000", "floor")}

    print("queue tick ...", flush=True)
    ticks, floor = await bench_tick()
    print("first frame ...", flush=True)
    in_proc = [await first_frame_in_process(False) for _ in range(FIRST_FRAME_RUNS)]
    in_proc_real = [await first_frame_in_process(True) for _ in range(FIRST_FRAME_RUNS)]
    in_proc_one = [await first_frame_in_process(False, 1) for _ in range(FIRST_FRAME_RUNS)]
    real = demo_backend(make_jobs(JOBS))
    read_cost = statistics.median(timed(real.jobs) for _ in range(3))
    home = first_frame_home(JOBS)
    spawned = [first_frame_cli(home) for _ in range(FIRST_FRAME_RUNS)]
    print("log flood ...", flush=True)
    ours_flood = await flood_ours()
    ref_flood = await flood_reference()
    print(f"idle CPU ({idle_seconds:.0f} s) ...", flush=True)
    idles = {v: finish_idle(p) for v, p in idle.items()}

    keys = ("total", "imports", "built", "app", "cpu", "modules", "ssh")
    sub = {k: statistics.median(float(s[k]) for s in spawned) for k in keys}
    later = sorted({m for s in spawned for m in s["later"]})
    first = table(
        ["first frame with queue rows (2,000 jobs)", "median", "runs"],
        [
            [
                "in process: `make_app` → first frame showing rows (no-copy back end)",
                fmt_s(statistics.median(in_proc)),
                ", ".join(fmt_s(t) for t in in_proc),
            ],
            [
                "in process, the same app with 1 job (the app's own start-up on this machine)",
                fmt_s(statistics.median(in_proc_one)),
                ", ".join(fmt_s(t) for t in in_proc_one),
            ],
            [
                "in process, the real back end over the fake cluster (reads 2,000 jobs from its "
                f"store in `jobs()`: {fmt_s(read_cost)}; then a real first poll)",
                fmt_s(statistics.median(in_proc_real)),
                ", ".join(fmt_s(t) for t in in_proc_real),
            ],
            [
                "new process: `tao-slurm-tui` (the real app, its store holding 2,000 jobs, in a "
                f"{SIZE[0]}x{SIZE[1]} pseudo terminal) → first frame showing rows",
                fmt_s(sub["total"]),
                ", ".join(fmt_s(s["total"]) for s in spawned),
            ],
            ["… of which interpreter start + the CLI's imports", fmt_s(sub["imports"]), ""],
            [
                "… of which the dashboard's imports, config, back end and app built",
                fmt_s(sub["built"]),
                "",
            ],
            [
                "… of which Textual's start, the store's 2,000 jobs read, the first frame",
                fmt_s(sub["app"]),
                "",
            ],
            ["CPU time of the process until that frame", fmt_s(sub["cpu"]), ""],
            [
                "modules imported by then (of them asyncssh + cryptography)",
                f"{sub['modules']:.0f} ({sub['ssh']:.0f})",
                "",
            ],
            [
                "of them what only later screens or other verbs need",
                ", ".join(later) or "none",
                "",
            ],
        ],
    )
    floor_cpu = idles["floor"]["cpu"] / idles["floor"]["wall"]
    idle_rows = []
    for variant, label in (
        (
            "ours",
            f"ours: queue screen, 12 seeded jobs (the fake moves one epoch a poll), {DEFAULT_POLL}",
        ),
        (
            "ours-2000",
            f"ours: queue screen, 2,000 jobs (no-copy back end, nothing changes), {DEFAULT_POLL}",
        ),
        ("floor", "floor: bare Textual app with one Static"),
    ):
        r = idles[variant]
        pct = r["cpu"] / r["wall"]
        idle_rows.append(
            [
                label,
                f"{pct * 100:.2f} %",
                fmt_s(r["cpu"]),
                f"{int(r['polls'])}",
                f"{int(r['frames'])}",
                f"{r['rss_kib'] / 1024:.0f} MiB",
                fmt_s(r["cpu"] / r["polls"]) if r["polls"] else "—",
                "—" if variant == "floor" else f"+{(pct - floor_cpu) * 1000:.1f} ms/s",
            ]
        )
    idle_table = table(
        [
            "idle (headless)",
            "CPU",
            "CPU time",
            "polls",
            "frames",
            "RSS",
            "CPU per poll (all idle CPU / polls)",
            "above floor",
        ],
        idle_rows,
    )
    ff, ff_one = statistics.median(in_proc), statistics.median(in_proc_one)
    tick_cpu = ticks["screen"].cpu
    idle_pct = idles["ours-2000"]["cpu"] / idles["ours-2000"]["wall"] * 100
    targets = table(
        ["target (issue 14)", "", "measured"],
        [
            [
                "first frame with 2,000 jobs <= 0.5 s",
                "met" if ff <= 0.5 else "NOT met",
                f"{fmt_s(ff)}; the same app with 1 job: {fmt_s(ff_one)} on this machine now, "
                f"so the 2,000 jobs add {(ff - ff_one) * 1000:+.0f} ms"
                + ("" if ff <= 0.5 else " (the rest is Textual's start-up under this load)"),
            ],
            [
                "a tick with 5 % of 2,000 jobs changed <= 30 ms CPU",
                "met" if tick_cpu <= 0.030 else "NOT met",
                f"{fmt_s(tick_cpu)} (the screen's whole tick, repaint included; "
                f"nothing-changed settle: {fmt_s(floor)})",
            ],
            [
                f"idle CPU <= 0.2 % at the default poll ({Settings().poll_interval:g} s since "
                "issue 23; 10 s before) with 2,000 jobs",
                "met" if idle_pct <= 0.2 else "NOT met",
                f"{idle_pct:.2f} % (bare Textual app: {floor_cpu * 100:.2f} %)",
            ],
            [
                "process start to first frame: no module of a later screen imported before it "
                "(issue 23)",
                "met" if not later else "NOT met",
                f"{fmt_s(sub['total'])} to the first frame ({fmt_s(sub['cpu'])} CPU), "
                f"{sub['modules']:.0f} modules; later screens' modules: "
                f"{', '.join(later) or 'none'}. Still before it: asyncssh and cryptography "
                f"({sub['ssh']:.0f} modules): the back end builds its Connection, whose module "
                "imports asyncssh, before the queue shows",
            ],
        ],
    )
    load = os.getloadavg()
    text = "\n\n".join(
        [
            "## TUI (`bench/tui.py`)",
            f"Measured {time.strftime('%Y-%m-%d %H:%M')} with the fake back end, headless at "
            f"{SIZE[0]}×{SIZE[1]} (frames composed, not written to a terminal), all rows in one "  # noqa: RUF001
            f"run of {time.monotonic() - started:.0f} s on {os.cpu_count()} cores "
            f"(load average {load[0]:.1f} from other work).",
            f"### One queue tick, {JOBS:,} jobs, {CHANGED:.0%} of them changed "
            f"(median of {TICKS} ticks, same table)",
            tick_table(ticks, floor),
            "### Targets",
            targets,
            "### First frame",
            first,
            f"### Idle CPU over {idle_seconds:.0f} s (three processes side by side)",
            idle_table,
            f"### Log flood: {FLOOD_RATE:,} lines/s for {FLOOD_SECONDS:.0f} s "
            f"(~90-char lines, a batch every {FLOOD_INTERVAL * 1000:.0f} ms; 'f' pressed every "
            "0.5 s)",
            flood_table(ours_flood, ref_flood),
            NOTES,
        ]
    )
    print(text)
    write_results("tui", text)


NOTES = """\
Notes:
- Tick: `JobTable.apply` skips a job whose record is the very object shown (the monitor hands
  out unchanged records as they are), compares plain strings for the others and makes cells
  only where they changed. A cell is a small object whose Rich `Text` is built when DataTable
  draws it (visible rows only), not 22,000 `Text`s up front. Any `update_cell` moves the
  table-wide count DataTable keys its rendered cells by, so every visible cell was drawn again
  with Rich (27 ms a tick); `DrawnCellsTable` keys a cell's rendering by the cell object (cells
  are replaced, never changed in place), so only the changed cells are drawn again.
- First frame: measured on the real `tao-slurm-tui` (no verb) reading its 2,000 jobs from the
  store. It imports only what the queue needs: the CLI builds only the verb it was given (none:
  no verb module), the app imports the composer and the set-up when they open, the queue its
  later screens when a key opens them (before: every verb, the composer, the logs screen and the
  set-up were imported first; 816 modules against 781). Every column has a fixed width
  (grown from the plain text in `apply`, never measured by DataTable: an auto-width table
  measured all 2,000 x 11 cells with Rich before the first frame); the first frame gets the
  first 200 rows, the rest follow right after it, and the first poll starts after that frame.
- Idle: a bare Textual app costs nothing while idle; ours is all poll-driven. A poll that
  brings the very records shown (nothing changed: what the monitor hands out then) is skipped by
  the queue: no diff, no frame. The stock fake changes a job every poll (the demo), so each of
  its polls redraws.
- Log flood: `LogView` keeps up at 10,000 lines/s like Textual's own `Log`, memory is bounded by
  the 20,000-line cap (RSS growth ~0 because the lines are pre-made and shared). `render_line`
  now looks up `rich_style` (a CSS walk) once per frame instead of twice per visible line."""


def main() -> None:
    """Parse arguments; run the bench or one of its child processes."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--idle-seconds", type=float, default=60.0)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child and args.child.startswith("idle:"):
        print(json.dumps(asyncio.run(child_idle(args.child[5:], args.idle_seconds))))
    else:
        asyncio.run(main_async(args.idle_seconds))


if __name__ == "__main__":
    main()
