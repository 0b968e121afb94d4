"""Pilot tests of the composer: inline validation, wall-time limit, failed and good submits."""

from __future__ import annotations

from typing import Any

from textual.widgets import Input, Label

from tao_slurm_tui.screens.composer import ComposerScreen
from tao_slurm_tui.screens.queue import QueueScreen
from tao_slurm_tui.services.fake import FakeBackend
from tests.tui.conftest import SIZE, build_app

GOOD = {
    "name": "compose-test",
    "image": "nvcr.io/nvidia/tao/tao-toolkit:6.26.3-pyt",
    "command": "dino train -e /specs/train.yaml",
    "num_nodes": 1,
    "num_gpus": 4,
    "cpus_per_task": 16,
    "time_hours": 4,
    "timeout_hours": 3.8,
    "partition": "polar",
    "container_mounts": ["/lustre"],
    "inputs": [],
    "use_requeue": True,
    "use_sqsh": True,
}


async def _open(pilot: Any, spec: dict[str, Any] | None = None) -> ComposerScreen:
    app = pilot.app
    screen = ComposerScreen(app.ctx, dict(spec) if spec else None)
    await app.push_screen(screen)
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause(0.3)
    return screen


def _error(screen: ComposerScreen, key: str) -> str:
    label = screen.query_one(f"#e-{key}", Label)
    return str(label.render()) if label.has_class("-shown") else ""


async def _type(pilot: Any, screen: ComposerScreen, key: str, text: str) -> None:
    field = screen.query_one(f"#f-{key}", Input)
    field.value = ""
    field.focus()
    await pilot.press(*text)
    await pilot.pause()


async def test_inline_validation_as_you_type(app: Any) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = await _open(pilot, GOOD)
        assert screen.errors == {}
        await _type(pilot, screen, "name", "bad name!")
        assert "letters, digits" in _error(screen, "name")
        await _type(pilot, screen, "num_gpus", "four")
        assert "whole number" in _error(screen, "num_gpus")
        await _type(pilot, screen, "name", "good-name")
        await _type(pilot, screen, "num_gpus", "2")
        assert _error(screen, "name") == "" and _error(screen, "num_gpus") == ""


async def test_wall_time_checked_against_partition_limit(app: Any) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = await _open(pilot, GOOD)
        await _type(pilot, screen, "time_hours", "10")
        assert "ask for at most 4 h" in _error(screen, "time_hours")
        await _type(pilot, screen, "partition", "gpu-long")
        assert _error(screen, "time_hours") == ""


async def test_preview_follows_the_form(app: Any) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = await _open(pilot, GOOD)
        assert "#SBATCH --job-name=compose-test" in screen.preview.text
        await _type(pilot, screen, "num_gpus", "2")
        await pilot.pause(0.4)
        assert "#SBATCH --gres=gpu:2" in screen.preview.text


async def test_failed_submit_keeps_the_form_and_shows_slurms_message(fake: FakeBackend) -> None:
    fake.submit_error = "sbatch: error: invalid partition specified: bogus"
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = await _open(pilot, GOOD)
        await _type(pilot, screen, "command", "python train.py --epochs 3")
        typed = screen.current_spec()
        await pilot.press("ctrl+s")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.screen is screen
        assert screen.current_spec() == typed
        assert "invalid partition specified: bogus" in str(screen.stages.render())
        assert any("invalid partition" in n.message for n in app._notifications)
        assert "compose-test" not in {j.id for j in fake.jobs()}


async def test_submit_with_errors_is_refused_locally(fake: FakeBackend) -> None:
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = await _open(pilot)  # the defaults: no command yet
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert app.screen is screen
        assert "command" in screen.errors
        assert screen.focused is screen.query_one("#f-command")


async def test_good_submit_shows_stages_returns_to_queue(fake: FakeBackend) -> None:
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await _open(pilot, GOOD)
        await pilot.press("ctrl+s")
        await app.workers.wait_for_complete()
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, QueueScreen)
        assert "compose-test" in app.screen.table.jobs
        assert any("compose-test submitted" in n.message for n in app._notifications)


async def test_clone_opens_composer_with_a_new_name(app: Any) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("e")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ComposerScreen)
        spec = screen.current_spec()
        assert spec["name"] == "dino-train-1-2"
        assert spec["command"] == "dino train -e /specs/dino-train-1.yaml"


async def test_save_and_load_toml(app: Any, tmp_path: Any) -> None:
    path = tmp_path / "spec.toml"
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = await _open(pilot, GOOD)
        await pilot.press("ctrl+t")
        await pilot.pause()
        field = app.screen.query_one("#path", Input)
        field.value = str(path)
        await pilot.press("enter")
        await pilot.pause()
        assert path.exists()
        await _type(pilot, screen, "name", "changed")
        await pilot.press("ctrl+o")
        await pilot.pause()
        app.screen.query_one("#path", Input).value = str(path)
        await pilot.press("enter")
        await pilot.pause()
        assert screen.current_spec()["name"] == "compose-test"
