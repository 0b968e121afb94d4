"""Pilot tests of the composer: inline validation, wall-time limit, failed and good submits."""

from __future__ import annotations

from typing import Any

from textual.widgets import Input, Label

from tao_slurm_tui.screens.composer import ComposerScreen
from tao_slurm_tui.screens.confirm import ConfirmModal
from tao_slurm_tui.screens.path_modal import PathModal
from tao_slurm_tui.screens.queue import QueueScreen
from tao_slurm_tui.services.cluster import ClusterBackend
from tao_slurm_tui.services.fakecluster.world import World
from tests.tui.conftest import SIZE, build_app
from tests.tui.waits import record_notifications, settle, shown, wait_for

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


async def _open(
    pilot: Any, spec: dict[str, Any] | None = None, *, delay: float | None = None
) -> ComposerScreen:
    """Open the composer over the queue; return it with its limits and first preview in.

    ``delay``: its debounce (estimate, path checks) from the start (3600: none ever runs).
    """
    app = pilot.app
    await shown(pilot, QueueScreen)
    await settle(pilot)
    screen = ComposerScreen(app.ctx, dict(spec) if spec else None)
    if delay is not None:
        screen.estimate_delay = delay
    await app.push_screen(screen)
    await settle(pilot)  # the partitions' limits
    await wait_for(pilot, lambda: screen.limits, "the partitions' limits")
    if spec:
        await wait_for(pilot, lambda: screen.preview.text, "the first preview")
    return screen


def _error(screen: ComposerScreen, key: str) -> str:
    label = screen.query_one(f"#e-{key}", Label)
    return str(label.render()) if label.has_class("-shown") else ""


async def _type(pilot: Any, screen: ComposerScreen, key: str, text: str) -> None:
    """Clear a field, type ``text`` into it and let the screen handle the changes."""
    field = screen.query_one(f"#f-{key}", Input)
    field.value = ""
    field.focus()
    await wait_for(pilot, lambda: field.has_focus, f"the focused {key} field")
    await pilot.press(*text)
    await wait_for(pilot, lambda: field.value == text, f"{text!r} in the {key} field")
    await settle(pilot)


async def _shows_error(pilot: Any, screen: ComposerScreen, key: str, words: str) -> None:
    """Wait for the inline error of ``key`` to say ``words`` ("" for no error)."""
    if words:
        await wait_for(pilot, lambda: words in _error(screen, key), f"{words!r} under {key}")
    else:
        await wait_for(pilot, lambda: _error(screen, key) == "", f"no error under {key}")


async def test_inline_validation_as_you_type(app: Any) -> None:
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, GOOD)
        assert screen.errors == {}
        await _type(pilot, screen, "name", "bad name!")
        await _shows_error(pilot, screen, "name", "letters, digits")
        await _type(pilot, screen, "num_gpus", "four")
        await _shows_error(pilot, screen, "num_gpus", "whole number")
        await _type(pilot, screen, "name", "good-name")
        await _type(pilot, screen, "num_gpus", "2")
        await _shows_error(pilot, screen, "name", "")
        await _shows_error(pilot, screen, "num_gpus", "")
        assert screen.errors == {}


async def test_wall_time_checked_against_partition_limit(app: Any) -> None:
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, GOOD)
        await _type(pilot, screen, "time_hours", "10")
        await _shows_error(pilot, screen, "time_hours", "ask for at most 4 h")
        await _type(pilot, screen, "partition", "gpu-long")
        await _shows_error(pilot, screen, "time_hours", "")
        assert "time_hours" not in screen.errors


async def test_gpu_type_checked_against_the_partitions_gpus(app: Any) -> None:
    """Once the cluster's capacity is known (the start estimate fetches it alongside), a GPU
    type no node of the partition has is an inline error naming the types it has."""
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, GOOD)
        await _type(pilot, screen, "gpu_type", "h100")
        await app.ctx.backend.capacity()  # what the estimate's capacity refresh leaves cached
        await _type(pilot, screen, "gpu_type", "h100")
        await _shows_error(pilot, screen, "gpu_type", "No node of partition 'polar'")
        assert "(it has a100)" in _error(screen, "gpu_type")
        await _type(pilot, screen, "partition", "polar3")
        await _shows_error(pilot, screen, "gpu_type", "")
        await wait_for(pilot, lambda: "--gres=gpu:h100:4" in screen.preview.text, "the typed gres")
        await _type(pilot, screen, "gpu_type", "a/b")
        await _shows_error(pilot, screen, "gpu_type", "such as a100 or h100")


async def test_preview_follows_the_form(app: Any) -> None:
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, GOOD)
        assert "#SBATCH --job-name=compose-test" in screen.preview.text
        assert "#SBATCH --gres=gpu:4" in screen.preview.text
        await _type(pilot, screen, "num_gpus", "2")
        # Re-rendered after a quiet spell of typing (a timer): wait for it, however long.
        await wait_for(
            pilot, lambda: "#SBATCH --gres=gpu:2" in screen.preview.text, "the new preview"
        )


async def test_failed_submit_keeps_the_form_and_shows_slurms_message(
    fake: ClusterBackend, world: World
) -> None:
    world.fail("sbatch", "invalid partition specified: bogus")
    app = build_app(fake)
    notes = record_notifications(app)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, GOOD)
        await _type(pilot, screen, "command", "python train.py --epochs 3")
        typed = screen.current_spec()
        await pilot.press("ctrl+s")
        await wait_for(
            pilot,
            lambda: "invalid partition specified: bogus" in str(screen.stages.render()),
            "SLURM's message in the stages",
        )
        await settle(pilot)
        assert app.screen is screen
        assert screen.current_spec() == typed
        assert any("invalid partition" in n.message for n in notes)
        assert "compose-test" not in {j.id for j in fake.jobs()}


async def test_submit_with_errors_is_refused_locally(fake: ClusterBackend) -> None:
    app = build_app(fake)
    notes = record_notifications(app)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot)  # the defaults: no command yet
        await pilot.press("ctrl+s")
        await wait_for(
            pilot, lambda: any("Fix 2 fields first" in n.message for n in notes), "the refusal"
        )
        await settle(pilot)
        assert app.screen is screen
        assert {"name", "command"} <= set(screen.errors)  # a new job has neither yet
        assert screen.focused is screen.query_one("#f-name")  # the first field to fix
        assert "compose-test" not in {j.id for j in fake.jobs()} and not screen.submitting


async def test_good_submit_shows_stages_returns_to_queue(fake: ClusterBackend) -> None:
    app = build_app(fake)
    notes = record_notifications(app)
    async with app.run_test(size=SIZE) as pilot:
        await _open(pilot, GOOD)
        await pilot.press("ctrl+s")
        queue: QueueScreen = await shown(pilot, QueueScreen)
        await wait_for(pilot, lambda: "compose-test" in queue.table.jobs, "the new job's row")
        assert queue.table.cursor_job_id == "compose-test"
        assert any("compose-test submitted" in n.message for n in notes)


async def test_clone_opens_composer_with_a_new_name(app: Any) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await shown(pilot, QueueScreen)
        await settle(pilot)
        await pilot.press("e")
        screen = await shown(pilot, ComposerScreen)
        spec = screen.current_spec()
        assert spec["name"] == "dino-train-1-2"
        assert spec["command"] == "dino train -e /specs/dino-train-1.yaml"


async def test_save_and_load_toml(app: Any, tmp_path: Any) -> None:
    path = tmp_path / "spec.toml"
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, GOOD)
        await pilot.press("ctrl+t")
        await _enter_path(pilot, path)
        await shown(pilot, ComposerScreen)
        await wait_for(pilot, path.exists, "the spec file written")
        await _type(pilot, screen, "name", "changed")
        assert screen.current_spec()["name"] == "changed"
        await pilot.press("ctrl+o")  # over unsaved edits: asked first
        modal = await shown(pilot, ConfirmModal)
        assert "unsaved changes" in modal.question
        await pilot.press("y")
        await _enter_path(pilot, path)
        await wait_for(
            pilot, lambda: screen.current_spec()["name"] == "compose-test", "the spec loaded"
        )
        before = path.read_text(encoding="utf-8")
        await _type(pilot, screen, "num_gpus", "2")
        await pilot.press("ctrl+t")  # over an existing file: asked first
        await _enter_path(pilot, path)
        modal = await shown(pilot, ConfirmModal)
        assert "exists. Replace it?" in modal.question
        await pilot.press("escape")
        await shown(pilot, ComposerScreen)
        assert path.read_text(encoding="utf-8") == before


async def test_leaving_with_unsaved_edits_asks_first(app: Any) -> None:
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, GOOD)
        await pilot.press("escape")  # nothing typed: leaves at once
        await shown(pilot, QueueScreen)
        screen = await _open(pilot, GOOD)
        await _type(pilot, screen, "num_gpus", "2")
        await pilot.press("escape")
        modal = await shown(pilot, ConfirmModal)
        assert "discard your changes" in modal.question
        await pilot.press("escape")  # no: still composing, edits kept
        await shown(pilot, ComposerScreen)
        assert screen.current_spec()["num_gpus"] == 2
        await pilot.press("escape")
        await shown(pilot, ConfirmModal)
        await pilot.press("y")
        await shown(pilot, QueueScreen)


async def test_no_errors_before_typing_and_labels_in_messages(app: Any) -> None:
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot)  # the profile's defaults: the command is still empty
        assert "command" in screen.errors
        assert all(_error(screen, key) == "" for key in ("name", "command", "image"))
        assert not screen.preview.has_class("-invalid")
        command = screen.query_one("#f-command", Input)
        assert command.placeholder.startswith("e.g. ")
        await _type(pilot, screen, "time_hours", "10")
        await _shows_error(pilot, screen, "time_hours", "Wall time (h)")
        assert "time_hours" not in _error(screen, "time_hours")
        assert _error(screen, "command") == ""  # untouched: still quiet
        await pilot.press("ctrl+s")  # a submit attempt shows every problem
        await wait_for(pilot, lambda: _error(screen, "command") != "", "the command's error")


async def test_duplicate_job_name_flagged_while_typing(app: Any, fake: ClusterBackend) -> None:
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, GOOD)
        await _type(pilot, screen, "name", "detect-ok")  # a job in the queue
        await _shows_error(pilot, screen, "name", "was already submitted in profile")
        await _type(pilot, screen, "name", "detect-ok-2")
        await _shows_error(pilot, screen, "name", "")


async def test_an_unknown_key_from_a_file_can_be_removed(app: Any, tmp_path: Any) -> None:
    import tomli_w

    path = tmp_path / "odd.toml"
    path.write_text(tomli_w.dumps({**GOOD, "gpus_per_node": 4}), encoding="utf-8")
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, GOOD)
        await pilot.press("ctrl+o")
        await _enter_path(pilot, path)
        await wait_for(pilot, lambda: "gpus_per_node" in screen.errors, "the unknown key")
        drop = screen.query_one("#drop-extra")
        await wait_for(pilot, lambda: drop.display, "the remove button")
        await pilot.click("#drop-extra")
        await wait_for(pilot, lambda: screen.errors == {}, "no problem left")
        assert not drop.display and "gpus_per_node" not in screen.current_spec()


async def test_the_preview_never_shows_values_the_form_no_longer_has(app: Any) -> None:
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, GOOD)
        assert "--gres=gpu:4" in screen.preview.text
        await _type(pilot, screen, "num_gpus", "four")
        await wait_for(pilot, lambda: "gpu:4" not in screen.preview.text, "the old script gone")
        assert "No sbatch script yet" in screen.preview.text
        await _type(pilot, screen, "num_gpus", "2")
        await wait_for(pilot, lambda: "--gres=gpu:2" in screen.preview.text, "the new script")


async def _enter_path(pilot: Any, path: Any) -> None:
    """Type ``path`` into the path dialog and press Enter."""
    modal = await shown(pilot, PathModal)
    field = modal.query_one("#path", Input)
    await wait_for(pilot, lambda: field.has_focus, "the focused path field")
    field.value = str(path)
    await pilot.press("enter")


BAD_FILES = {
    "binary": (b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe", "not UTF-8 text"),
    "deeply-nested": (b"a = " + b"[" * 5000 + b"]" * 5000 + b"\n", "nested too deeply"),
    "env-not-a-table": (b'name = "x"\nenv = "A=1"\n', "Loaded"),
    "specs-not-a-table": (b'name = "x"\nspecs = [1, 2]\n', "Loaded"),
    "specs-with-a-date": (b'name = "x"\n[specs]\nwhen = 1979-05-27\n', "Loaded"),
    "specs-60-deep": (b"name = 'x'\nspecs = {a = " + b"[" * 60 + b"]" * 60 + b"}\n", "Loaded"),
    # Deeper than any spec needs (and than a spec can be stored): refused with the reason.
    "specs-300-deep": (
        b"name = 'x'\nspecs = {a = " + b"[" * 300 + b"]" * 300 + b"}\n",
        "nested too deeply",
    ),
}


async def test_load_of_a_bad_file_says_why_and_keeps_the_form(app: Any, tmp_path: Any) -> None:
    """A binary file, a 5,000-deep nested TOML or wrongly typed tables: one sentence in the UI,
    the app keeps running and the form keeps what was typed (or shows the file to fix)."""
    notes = record_notifications(app)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, GOOD)
        for name, (content, said) in BAD_FILES.items():
            path = tmp_path / f"{name}.toml"
            path.write_bytes(content)
            before, typed = len(notes), screen.current_spec()
            await pilot.press("ctrl+o")
            await _enter_path(pilot, path)
            await shown(pilot, ComposerScreen)
            await wait_for(pilot, lambda n=before: len(notes) > n, f"a message about {name}")
            note = notes[before]
            assert said in note.message, note
            assert "Traceback" not in note.message and "\n" not in note.message.strip()
            if said == "Loaded":
                assert screen.current_spec()["name"] == "x"
            else:
                assert note.severity == "error"
                assert str(path) in note.message
                assert screen.current_spec() == typed
            assert pilot.app.is_running and pilot.app.screen is screen
