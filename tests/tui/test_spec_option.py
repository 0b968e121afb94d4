"""``--spec PATH``: the app opens with the composer pre-filled over the queue; bad files exit 2."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tao_slurm_tui.app import TaoSlurmApp, make_app
from tao_slurm_tui.cli import main
from tao_slurm_tui.config import Settings
from tao_slurm_tui.core.spec import SpecDraft
from tao_slurm_tui.screens.composer import ComposerScreen
from tao_slurm_tui.screens.confirm import ConfirmModal
from tao_slurm_tui.screens.queue import QueueScreen
from tao_slurm_tui.services.cluster import ClusterBackend
from tests.tui.conftest import SIZE
from tests.tui.waits import shown, wait_for

DEMO_SPEC = Path(__file__).resolve().parents[2] / "examples" / "train-demo.toml"


async def test_initial_spec_opens_the_composer_over_the_queue(fake: ClusterBackend) -> None:
    spec = dict(SpecDraft.from_file(DEMO_SPEC).table)
    app = make_app(
        fake,
        settings=Settings(poll_interval=3600),
        initial_spec=spec,
        cursor_blink=False,
    )
    async with app.run_test(size=SIZE) as pilot:
        composer: ComposerScreen = await shown(pilot, ComposerScreen)
        typed = composer.current_spec()
        assert typed["name"] == "train-demo" and typed["command"] == spec["command"]
        name = composer.query_one("#f-name")
        await wait_for(pilot, lambda: composer.focused is name, "the focused name field")
        await pilot.press("end", *"-2")
        await wait_for(
            pilot, lambda: composer.current_spec()["name"] == "train-demo-2", "the typed suffix"
        )
        await pilot.press("escape")  # an edited spec: leaving asks first
        await shown(pilot, ConfirmModal)
        await pilot.press("y")
        await shown(pilot, QueueScreen)


def test_cli_passes_the_spec_to_the_app(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    seen: list[dict[str, Any] | None] = []
    monkeypatch.setenv("TAO_SLURM_TUI_DEMO", "1")
    monkeypatch.setattr(TaoSlurmApp, "run", lambda self, **_: seen.append(self.initial_spec))
    assert main(["--config", str(tmp_path / "c.toml"), "--spec", str(DEMO_SPEC)]) == 0
    assert seen and seen[0] is not None and seen[0]["name"] == "train-demo"


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (None, "no such spec file"),
        ("name = ", "not valid TOML"),
        ("name = 'a b'\nimage = 'x/y:1'\ncommand = 'ls'\n", "field 'name'"),
    ],
)
def test_a_bad_spec_file_is_one_sentence_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, words: str
) -> None:
    path = tmp_path / "spec.toml"
    if content is not None:
        path.write_text(content)
    assert main(["--config", str(tmp_path / "c.toml"), "--spec", str(path)]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1 and "Traceback" not in err


def test_spec_with_a_verb_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--config", str(tmp_path / "c.toml"), "--spec", str(DEMO_SPEC), "status"]) == 2
    assert "--spec opens the dashboard's composer" in capsys.readouterr().err
