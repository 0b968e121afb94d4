"""The composer says before the queue what the cluster cannot do, field by field, and its form
behaves as a researcher types it (issue 26): at 80x24 and 120x36."""

from __future__ import annotations

from typing import Any

import pytest
from textual import events
from textual.widgets import Input, Label, Switch

from tao_slurm_tui.screens.composer import ComposerScreen
from tao_slurm_tui.services.cluster import ClusterBackend
from tao_slurm_tui.services.fakecluster.world import World
from tao_slurm_tui.widgets.steps_editor import StepsEditor
from tests.tui.conftest import build_app
from tests.tui.test_composer import GOOD, _error, _open, _shows_error, _type
from tests.tui.waits import record_notifications, settle, wait_for

SIZES = [(80, 24), (120, 36)]


def _burst(app: Any, *keys: str) -> None:
    """Keys as a terminal delivers a quick typist's: all at once, before any is handled."""
    for key in keys:
        app.post_message(events.Key(key, {"tab": "\t"}.get(key, key if len(key) == 1 else None)))


def _in_view(screen: ComposerScreen, widget_id: str) -> bool:
    widget = screen.query_one(f"#{widget_id}")
    region = screen.form.scrollable_content_region
    return widget.region.height > 0 and region.contains_region(widget.region)


@pytest.mark.parametrize("size", SIZES)
async def test_keys_typed_right_after_tab_land_in_the_next_field(
    fake: ClusterBackend, size: tuple[int, int]
) -> None:
    """Tab, Tab, Tab, Tab, 4, 8 typed in one burst: Textual handed the digits to the field
    being left (the Tab moved the focus only once that field had processed it)."""
    app = build_app(fake)
    async with app.run_test(size=size) as pilot:
        screen = await _open(pilot, GOOD)
        image = screen.query_one("#f-image", Input)
        image.focus()
        await wait_for(pilot, lambda: image.has_focus, "the image field")
        gpus = screen.query_one("#f-num_gpus", Input)
        gpus.value = ""
        _burst(app, "tab", "tab", "tab", "tab", "4", "8")
        await wait_for(pilot, lambda: gpus.value == "48", "48 in GPUs per node")
        assert image.value == GOOD["image"]
        assert app.focused is gpus


@pytest.mark.parametrize("size", SIZES)
async def test_an_unknown_partition_is_named_in_the_form_and_the_preview(
    fake: ClusterBackend, size: tuple[int, int]
) -> None:
    app = build_app(fake)
    async with app.run_test(size=size) as pilot:
        screen = await _open(pilot, GOOD)
        await _type(pilot, screen, "partition", "nosuch")
        await _shows_error(pilot, screen, "partition", "The cluster has no partition 'nosuch'")
        assert "gpu-long, polar, polar3" in _error(screen, "partition")
        await wait_for(pilot, lambda: "Partition" in screen.preview.text, "the preview")
        assert "# 1 field to fix:\n#  - Partition" in screen.preview.text


@pytest.mark.parametrize("size", SIZES)
async def test_lowering_the_wall_time_never_leaves_the_timeout_above_it(
    fake: ClusterBackend, size: tuple[int, int]
) -> None:
    app = build_app(fake)
    async with app.run_test(size=size) as pilot:
        screen = await _open(pilot, GOOD)
        timeout = screen.query_one("#f-timeout_hours", Input)
        await _type(pilot, screen, "time_hours", "2")
        # Untouched, the timeout follows (the platform's 4 h -> 3.8 h ratio).
        assert timeout.value == "1.9" and screen.errors == {}
        # Typed by the user, it stays; once the wall time goes below it, it is named and red.
        await _type(pilot, screen, "timeout_hours", "1.5")
        await _type(pilot, screen, "time_hours", "1")
        assert timeout.value == "1.5"
        await _shows_error(pilot, screen, "timeout_hours", "must be below")
        await wait_for(
            pilot, lambda: "#  - Command timeout (h)" in screen.preview.text, "the field named"
        )


@pytest.mark.parametrize("size", SIZES)
async def test_ctrl_s_points_at_what_is_red(fake: ClusterBackend, size: tuple[int, int]) -> None:
    app = build_app(fake)
    async with app.run_test(size=size) as pilot:
        screen = await _open(pilot)  # a new job: no name, no command
        notes = record_notifications(app)
        screen.query_one("#f-inputs", Input).focus()  # far down the form
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: bool(notes), "the refusal")
        assert notes[-1].message.startswith("Fix 2 fields first: Name (job id), Command.")
        name = screen.query_one("#f-name", Input)
        await wait_for(pilot, lambda: name.has_focus, "the cursor in the first red field")
        await wait_for(pilot, lambda: _in_view(screen, "e-name"), "its message in view")
        assert "must be 1-64 letters" in _error(screen, "name")


@pytest.mark.parametrize("size", SIZES)
async def test_a_missing_mount_source_is_named_before_submitting(
    fake: ClusterBackend, world: World, size: tuple[int, int]
) -> None:
    app = build_app(fake)
    async with app.run_test(size=size) as pilot:
        screen = await _open(pilot, GOOD, delay=0.05)
        await _type(pilot, screen, "container_mounts", "/lustre, /nosuch")
        await _shows_error(pilot, screen, "container_mounts", "source /nosuch does not exist")
        assert "Mounts: source /nosuch" in _error(screen, "container_mounts")
        assert "/lustre" not in _error(screen, "container_mounts")
        await _type(pilot, screen, "container_mounts", "/lustre")
        await _shows_error(pilot, screen, "container_mounts", "")


@pytest.mark.parametrize("size", SIZES)
async def test_a_refused_submit_marks_the_field_and_goes_stale_once_fixed(
    fake: ClusterBackend, world: World, size: tuple[int, int]
) -> None:
    """The check phase (test -e before staging) refuses a missing mount source the form did
    not know about yet: the field is red, and "Not submitted" goes once the form changes."""
    app = build_app(fake)
    async with app.run_test(size=size) as pilot:
        # No live check (from the start: the form's first check runs as it opens): the
        # submission's check phase finds it.
        screen = await _open(pilot, {**GOOD, "container_mounts": ["/lustre/gone"]}, delay=3600)
        await pilot.press("ctrl+s")
        stages = screen.query_one("#stages", Label)
        await wait_for(pilot, lambda: stages.has_class("-failed"), "the refusal")
        assert "Not submitted: container_mounts: source /lustre/gone" in str(stages.render())
        await _shows_error(pilot, screen, "container_mounts", "/lustre/gone does not exist")
        assert not any("staging" in c for c in world.commands if "gone" in c)
        await _type(pilot, screen, "container_mounts", "/lustre")
        await wait_for(pilot, lambda: not stages.has_class("-failed"), "the stale refusal gone")
        assert str(stages.render()) == ""
        await _shows_error(pilot, screen, "container_mounts", "")


async def test_new_job_defaults_fit_the_clusters_nodes(fake: ClusterBackend, world: World) -> None:
    """8-CPU nodes with 4 GPUs (the sandbox's): 16 CPUs per task x 4 GPUs cannot run there."""
    with world.edit() as state:
        for node in state["nodes"]:
            node.update(cpus=8, gpus=4, mem_mb=8192)
    app = build_app(fake)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await _open(pilot)
        cpus = screen.query_one("#f-cpus_per_task", Input)
        await wait_for(pilot, lambda: cpus.value == "2", "CPUs per task fitted to the nodes")
        assert screen.query_one("#f-num_gpus", Input).value == "4"
        assert "cpus_per_task" not in screen.errors
        await _type(pilot, screen, "cpus_per_task", "16")
        await _shows_error(pilot, screen, "cpus_per_task", "asks for 64 CPUs on one node")


@pytest.mark.parametrize("size", SIZES)
async def test_the_steps_editor_waits_for_typing_and_labels_its_numbers(
    fake: ClusterBackend, size: tuple[int, int]
) -> None:
    app = build_app(fake)
    async with app.run_test(size=size) as pilot:
        spec = {**GOOD, "then": [{"action": "evaluate", "command": "true", "time_hours": 0.25}]}
        screen = await _open(pilot, spec)
        editor = screen.query_one(StepsEditor)
        labels = [str(label.render()) for label in editor.query(".step-label").results(Label)]
        assert labels == ["GPUs", "type", "nodes", "hours"]
        screen.query_one("#add-step").focus()
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(editor.rows) == 2, "a second action")
        await settle(pilot)
        # Nothing typed yet: no error; the preview still counts it without alarm.
        assert not editor.query_one("#steps-error", Label).has_class("-shown")
        await pilot.press(*"x y")
        await wait_for(
            pilot,
            lambda: editor.query_one("#steps-error", Label).has_class("-shown"),
            "the new action's problem once typed in",
        )


@pytest.mark.parametrize("size", SIZES)
async def test_switches_say_what_they_do_and_keep_their_slider_when_focused(
    fake: ClusterBackend, size: tuple[int, int]
) -> None:
    app = build_app(fake)
    async with app.run_test(size=size) as pilot:
        screen = await _open(pilot, GOOD)
        switch = screen.query_one("#f-use_requeue", Switch)
        switch.focus()
        await settle(pilot)
        assert switch.region.height == 1  # no focus border around a one-line switch
        words = screen.query_one("#w-use_requeue", Label)
        assert str(words.render()).startswith("on: requeued")
        await pilot.press("space")
        await wait_for(pilot, lambda: str(words.render()).startswith("off:"), "off")


@pytest.mark.parametrize("size", SIZES)
async def test_a_cut_value_or_example_ends_in_an_ellipsis(
    fake: ClusterBackend, size: tuple[int, int]
) -> None:
    """The pre-filled image read as the complete "…tao-toolkit:6" and examples as "e.g."."""
    app = build_app(fake)
    async with app.run_test(size=size) as pilot:
        screen = await _open(pilot)  # a new job: the default image, empty inputs
        name = screen.query_one("#f-name", Input)
        name.focus()
        await wait_for(pilot, lambda: name.has_focus, "the name field")
        await settle(pilot)
        for key in ("image", "inputs"):
            field = screen.query_one(f"#f-{key}", Input)
            width = field.scrollable_content_region.width
            whole = field.value or getattr(field, "example", "")
            seen = field.render_line(0).text[:width].rstrip()
            if len(whole) <= width:
                assert seen == whole, (key, seen)
                continue
            assert seen.endswith("…") and len(seen) <= width, (key, seen)
            assert whole.startswith(seen[:-1]), (key, seen)
        image = screen.query_one("#f-image", Input)
        assert len(image.value) > image.scrollable_content_region.width  # cut at either size
