"""Pilot tests of the composer's TAO job: network and action pickers, the experiment-spec
editor with the schema's defaults, problems named by key and line, refused before staging.

The back end opens the pinned TAO release from the suite's shared wheel (the ``tao_wheel``
fixture) in the form's worker, as it does for a user.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Label, Select, Switch, TextArea

from tao_slurm_tui.core.spec import SpecDraft
from tao_slurm_tui.core.tao.schema import parse_spec_yaml
from tao_slurm_tui.screens.composer import ComposerScreen
from tao_slurm_tui.screens.queue import QueueScreen
from tao_slurm_tui.services.cluster import ClusterBackend
from tao_slurm_tui.services.fakecluster.world import World
from tao_slurm_tui.services.tao_cache import WHEEL_ENV
from tests.tui.conftest import SIZE, build_app
from tests.tui.waits import record_notifications, settle, shown, wait_for

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tao-classification.toml"
"""The sandbox's TAO example: classification_pyt train, its spec file and one override."""


@pytest.fixture(autouse=True)
def _tao_wheel(tao_wheel: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The back end finds the pinned release in the suite's wheel (no download per test)."""
    monkeypatch.setenv(WHEEL_ENV, str(tao_wheel))


async def _open(pilot: Any, draft: SpecDraft | None = None) -> ComposerScreen:
    """The composer over the queue with ``draft`` (None: a new job)."""
    app = pilot.app
    await shown(pilot, QueueScreen)
    await settle(pilot)
    table = dict(draft.table) if draft else None
    screen = ComposerScreen(app.ctx, table, base_dir=draft.base_dir if draft else None)
    await app.push_screen(screen)
    await settle(pilot)
    return screen


async def _schema(pilot: Any, screen: ComposerScreen) -> None:
    """Wait for the form's worker to open the catalogue and build the network's schema."""
    await wait_for(pilot, lambda: screen.tao_form.schema is not None, "the TAO schema")
    await settle(pilot)


def _problems(screen: ComposerScreen) -> str:
    label = screen.query_one("#tao-problems", Label)
    return str(label.render()) if label.has_class("-shown") else ""


def _editor(screen: ComposerScreen) -> TextArea:
    return screen.query_one("#tao-editor", TextArea)


async def _edit(pilot: Any, screen: ComposerScreen, old: str, new: str) -> None:
    """Replace ``old`` by ``new`` in the experiment-spec editor, as a user's edit."""
    editor = _editor(screen)
    assert old in editor.text
    editor.replace(new, *_span(editor.text, old))
    await settle(pilot)


def _span(text: str, part: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """The (start, end) locations of ``part`` in ``text`` (on one line)."""
    at = text.index(part)
    row = text.count("\n", 0, at)
    column = at - (text.rfind("\n", 0, at) + 1)
    return (row, column), (row, column + len(part))


def _shows_defaults(screen: ComposerScreen, backend: ClusterBackend, action: str) -> bool:
    """The editor holds what ``tao spec classification_pyt ACTION`` prints."""
    defaults = backend.tao().default_spec("classification_pyt", action)
    return parse_spec_yaml(_editor(screen).text) == parse_spec_yaml(defaults)


def submits(world: World) -> list[str]:
    """The sbatch commands the cluster got (not the start estimates' ``--test-only``)."""
    return [c for c in world.commands if "sbatch" in c and "tao-test-only." not in c]


def _row_shown(screen: ComposerScreen, key: str) -> bool:
    row = screen.query_one(f"#f-{key}").parent
    return row is not None and row.display


async def test_a_tao_spec_opens_as_network_action_and_its_experiment_spec(
    fake: ClusterBackend,
) -> None:
    async with build_app(fake).run_test(size=SIZE) as pilot:
        screen = await _open(pilot, SpecDraft.from_file(EXAMPLE))
        await _schema(pilot, screen)
        assert screen.query_one("#tao-on", Switch).value
        assert screen.query_one("#tao-network", Select).value == "classification_pyt"
        assert screen.query_one("#tao-action", Select).value == "train"
        text = _editor(screen).text
        # The defaults, the spec file over them, the spec's override over that.
        assert "num_epochs: 6" in text
        assert "images_dir: /home/slurmtest/datasets/classification/train" in text
        assert "Often changed:" in str(screen.query_one("#tao-popular", Label).render())
        # TAO's command and staged spec replace the free command and spec files.
        assert not _row_shown(screen, "command") and not _row_shown(screen, "specs")
        await wait_for(
            pilot,
            lambda: "classification_pyt train -e" in screen.preview.text,
            "TAO's command in the preview",
        )
        assert _problems(screen) == "" and screen.errors == {}
        # Unchanged, the job saves as its user wrote it.
        tao = screen.current_spec()["tao"]
        assert tao == {
            "network": "classification_pyt",
            "action": "train",
            "spec_file": "tao/classification_pyt.yaml",
            "spec": {"train": {"num_epochs": 6}},  # TOML's dotted key, as read
        }


async def test_a_typo_is_named_with_its_line_and_nothing_is_submitted(
    fake: ClusterBackend, world: World
) -> None:
    app = build_app(fake)
    notes = record_notifications(app)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, SpecDraft.from_file(EXAMPLE))
        await _schema(pilot, screen)
        await _edit(pilot, screen, "num_epochs: 6", "num_epoch: 6")
        await wait_for(pilot, lambda: "train.num_epoch:" in _problems(screen), "the typo named")
        problem = _problems(screen)
        line = 1 + _editor(screen).text.splitlines().index("  num_epoch: 6")
        assert problem.startswith(f"line {line}: ")
        assert "did you mean 'train.num_epochs'?" in problem
        await wait_for(pilot, lambda: "tao" in screen.errors, "the job refused")
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert any(note.message.startswith("Fix 1 field first") for note in notes)
        assert _editor(screen).has_focus
        assert not submits(world)
        # A wrong type names the full key too; fixed, the job is whole again.
        await _edit(pilot, screen, "num_epoch: 6", "num_epochs: six")
        await wait_for(
            pilot, lambda: "train.num_epochs" in _problems(screen), "the wrong type named"
        )
        await _edit(pilot, screen, "num_epochs: six", "num_epochs: 3")
        await wait_for(pilot, lambda: not screen.errors, "no problem left")
        assert screen.current_spec()["tao"]["spec"] == {"train.num_epochs": 3}


async def test_a_new_tao_job_starts_from_the_schema_s_defaults(fake: ClusterBackend) -> None:
    async with build_app(fake).run_test(size=SIZE) as pilot:
        screen = await _open(pilot)
        assert not screen.tao_form.is_tao and _row_shown(screen, "command")
        screen.query_one("#tao-on", Switch).value = True
        await _schema(pilot, screen)
        assert screen.query_one("#tao-network", Select).value == "classification_pyt"
        assert screen.query_one("#tao-action", Select).value == "train"
        assert _shows_defaults(screen, fake, "train")
        assert not _row_shown(screen, "command")
        # The default spec leaves the dataset keys empty: named before anything is staged.
        await wait_for(pilot, lambda: "dataset." in _problems(screen), "the empty dataset keys")
        # Another action: its own defaults.
        screen.query_one("#tao-action", Select).value = "evaluate"
        await settle(pilot)
        assert _shows_defaults(screen, fake, "evaluate")
        assert screen.current_spec()["tao"]["action"] == "evaluate"
        # Off again: today's image + command job.
        screen.query_one("#tao-on", Switch).value = False
        await settle(pilot)
        assert _row_shown(screen, "command") and "tao" not in screen.current_spec()


@pytest.fixture(params=[(80, 24), (120, 36)], ids=["80x24", "120x36"])
def size(request: pytest.FixtureRequest) -> tuple[int, int]:
    """The smallest terminal the app must work in, and a middle one."""
    return request.param  # type: ignore[no-any-return]


def test_snapshot_tao_composer_with_a_typo(
    snap_compare: Any, size: tuple[int, int], fake: ClusterBackend
) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        screen = await _open(pilot, SpecDraft.from_file(EXAMPLE))
        await _schema(pilot, screen)
        await _edit(pilot, screen, "num_epochs: 6", "num_epoch: 6")
        await wait_for(pilot, lambda: "train.num_epoch:" in _problems(screen), "the typo named")
        await wait_for(
            pilot,
            lambda: screen.preview.border_subtitle == "1 field to fix",
            "the preview flagged stale",
        )
        editor = _editor(screen)
        editor.focus()
        editor.cursor_location = _span(editor.text, "num_epoch: 6")[1]
        editor.scroll_cursor_visible(center=True, animate=False)
        await settle(pilot)

    assert snap_compare(build_app(fake), terminal_size=size, run_before=run_before)


async def test_a_tao_pipeline_opens_and_saves_as_written(fake: ClusterBackend) -> None:
    draft = SpecDraft.from_file(EXAMPLE.with_name("tao-pipeline.toml"))
    async with build_app(fake).run_test(size=SIZE) as pilot:
        screen = await _open(pilot, draft)
        await _schema(pilot, screen)
        await wait_for(pilot, lambda: screen.resolution.job is not None, "the pipeline resolved")
        assert screen.errors == {}
        steps = screen.current_spec()["then"]
        assert [step["action"] for step in steps] == ["evaluate", "export"]
        assert not any(step.get("command") for step in steps)  # TAO's, not typed
        # Each step runs its action in the catalogue's way; the preview shows every step (it
        # is redrawn after the resolution, debounced).
        await wait_for(
            pilot, lambda: "classification_pyt evaluate -e" in screen.preview.text, "the preview"
        )
        assert "classification_pyt export -e" in screen.preview.text
