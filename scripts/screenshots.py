"""Render screenshots/*.svg from the app: the real back end over a fake cluster, frozen clock."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

from textual.pilot import Pilot
from textual.widgets import Input, TextArea

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tao_slurm_tui.app import TaoSlurmApp, make_app  # noqa: E402
from tao_slurm_tui.config import Settings  # noqa: E402
from tao_slurm_tui.core.spec import SpecDraft  # noqa: E402
from tao_slurm_tui.screens.composer import ComposerScreen  # noqa: E402
from tao_slurm_tui.screens.logs import LogsScreen  # noqa: E402
from tao_slurm_tui.services.backend import Backend  # noqa: E402
from tao_slurm_tui.services.fakecluster.demo import Demo  # noqa: E402
from tao_slurm_tui.services.fakecluster.seed import FROZEN_TIME, demo_profile  # noqa: E402
from tests.tui.snapshot_home import snapshot_home  # noqa: E402

SIZES = {"": (160, 45), "-80x24": (80, 24)}
"""File suffix -> terminal size: a big terminal, and the smallest the app must work in."""
OUT = ROOT / "screenshots"

Step = Callable[[TaoSlurmApp, Pilot[None]], Awaitable[None]]


async def _settle(app: TaoSlurmApp, pilot: Pilot[None]) -> None:
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause(0.3)


async def queue(app: TaoSlurmApp, pilot: Pilot[None]) -> None:
    await pilot.press("down", "down", "down", "down")  # the retried job's history


async def composer(app: TaoSlurmApp, pilot: Pilot[None]) -> None:
    spec = app.backend.default_spec() | {
        "name": "dino-train-2",
        "command": "dino train -e /specs/train.yaml",
    }
    screen = ComposerScreen(app.ctx, spec)
    await app.push_screen(screen)
    await _settle(app, pilot)
    screen.query_one("#f-time_hours", Input).value = "10"
    await _settle(app, pilot)


async def composer_tao(app: TaoSlurmApp, pilot: Pilot[None]) -> None:
    draft = SpecDraft.from_file(ROOT / "examples" / "tao-classification.toml")
    screen = ComposerScreen(app.ctx, dict(draft.table), base_dir=draft.base_dir)
    await app.push_screen(screen)
    await _settle(app, pilot)  # the catalogue opened, the schema built (a worker)
    await _settle(app, pilot)
    editor = screen.query_one("#tao-editor", TextArea)
    # A typo: the problem is named with its line, the nearest valid key suggested.
    editor.load_text(editor.text.replace("  num_epochs: 6", "  num_epoch: 6"))
    line = next(i for i, t in enumerate(editor.text.splitlines()) if "num_epoch:" in t)
    editor.cursor_location = (line, 12)
    editor.scroll_cursor_visible(center=True)
    await pilot.pause(0.6)
    await _settle(app, pilot)


async def logs(app: TaoSlurmApp, pilot: Pilot[None]) -> None:
    await app.push_screen(LogsScreen(app.ctx, "bert-retried"))
    await pilot.pause(0.3)
    await pilot.press("slash", *"NCCL", "enter")


async def capacity(app: TaoSlurmApp, pilot: Pilot[None]) -> None:
    await pilot.press("p")
    await _settle(app, pilot)


async def clusters(app: TaoSlurmApp, pilot: Pilot[None]) -> None:
    await pilot.press("a")
    await _settle(app, pilot)
    await pilot.press("down", "down")  # the unreachable cluster: its failure in full


async def composer_estimate(app: TaoSlurmApp, pilot: Pilot[None]) -> None:
    spec = app.backend.default_spec() | {
        "name": "dino-train-2",
        "command": "dino train -e /specs/train.yaml",
        "num_gpus": 8,
        "cpus_per_task": 8,  # 8 CPUs for each of the 8 GPUs' processes: the node's 64
    }
    screen = ComposerScreen(app.ctx, spec)
    await app.push_screen(screen)
    await _settle(app, pilot)
    # The estimate comes after a quiet pause: wait for SLURM's answer, not "Asking SLURM…".
    for _ in range(200):
        if "As is" in str(screen.estimate.render()):
            break
        await pilot.pause(0.05)
    else:
        raise SystemExit("composer-estimate: the start estimate never came")
    await _settle(app, pilot)


async def onboarding(app: TaoSlurmApp, pilot: Pilot[None]) -> None:
    await pilot.press("d")
    await _settle(app, pilot)  # the doctor's checks (slow on a loaded machine)


async def help_screen(app: TaoSlurmApp, pilot: Pilot[None]) -> None:
    await pilot.press("question_mark")


async def history(app: TaoSlurmApp, pilot: Pilot[None]) -> None:
    await pilot.press("h")
    await _settle(app, pilot)
    await pilot.press(*["down"] * 16)  # below our 12 jobs: a foreign one with a hint


async def history_output(app: TaoSlurmApp, pilot: Pilot[None]) -> None:
    await history(app, pilot)
    await _settle(app, pilot)
    await pilot.press("l")


async def waiting(app: TaoSlurmApp, pilot: Pilot[None]) -> None:
    await pilot.press("down", "down")  # seg-large: why it waits beside its details
    await _settle(app, pilot)


async def pipeline(app: TaoSlurmApp, pilot: Pilot[None]) -> None:
    await _settle(app, pilot)  # the pipeline's row is on top: its running step's details


SHOTS: dict[str, Step] = {
    "queue": queue,
    "composer": composer,
    "composer-tao": composer_tao,
    "capacity": capacity,
    "clusters": clusters,
    "composer-estimate": composer_estimate,
    "logs": logs,
    "onboarding": onboarding,
    "help": help_screen,
    "history": history,
    "history-output": history_output,
    "pipeline": pipeline,
    "waiting": waiting,
}


def clusters_demo(folder: Path, *, pipeline: bool) -> Demo:
    """Three profiles, each on its own fake cluster; ``lab-small``'s login hosts do not
    answer."""
    names = ("fake", "dgx-east", "lab-small")
    demo = Demo(folder, pipeline=pipeline, workstation=False,
                profiles={n: demo_profile() for n in names})  # fmt: skip
    demo.world("lab-small").link = "down"
    return demo


async def shoot(name: str, step: Step, size: tuple[int, int], *, pipeline: bool = False) -> Path:
    """Run the app on the fake clusters (``pipeline``: with the three-step pipeline), drive it
    to a screen, save the SVG."""
    folder = Path(tempfile.mkdtemp(prefix="tao-shot-"))
    demo = clusters_demo(folder / "demo", pipeline=pipeline)

    def backend(profile: str | None) -> Backend:
        opened: Backend = demo.backend(profile)
        return opened

    app = make_app(
        backend("fake"),
        backend_factory=backend,
        settings=Settings(poll_interval=3600),
        clock=lambda: FROZEN_TIME,
        cursor_blink=False,  # a blinking cursor would make the picture depend on timing
    )
    async with app.run_test(size=size) as pilot:
        await _settle(app, pilot)
        await step(app, pilot)
        # Not wait_for_complete(): log followers run until their screen closes.
        await pilot.pause(0.5)
        path = Path(app.save_screenshot(filename=f"{name}.svg", path=str(OUT)))
    demo.close()
    shutil.rmtree(folder, ignore_errors=True)
    return path


async def main(names: list[str]) -> None:
    OUT.mkdir(exist_ok=True)
    # The set-up screen names the SSH key by its path: the same HOME every run.
    os.environ["HOME"] = str(snapshot_home())
    # The app's caches (partition limits, the remembered login host) stay out of yours.
    scratch = Path(tempfile.mkdtemp(prefix="tao-shots-xdg-"))
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"):
        os.environ[var] = str(scratch / var.lower())
    for name, step in SHOTS.items():
        if names and name not in names:
            continue
        for suffix, size in SIZES.items():
            print(await shoot(f"{name}{suffix}", step, size, pipeline=name == "pipeline"))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))  # names: only those shots (default every one)
