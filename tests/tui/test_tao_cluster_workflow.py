"""A TAO job composed in the composer and run on the REAL sandbox cluster's TAO 7.3 stand-in.

Like a researcher: n, Ctrl+O the sandbox's TAO example (classification_pyt train), a name, two
epochs typed into the experiment-spec editor, Ctrl+S; the queue shows it Complete with TAO's
0-based epochs as epochs done, and the staged experiment spec is the one typed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import TextArea

from tao_slurm_tui.app import TaoSlurmApp, make_app
from tao_slurm_tui.config import Config, Settings
from tao_slurm_tui.core.models import TaoStatus
from tao_slurm_tui.screens.composer import ComposerScreen
from tao_slurm_tui.screens.queue import QueueScreen
from tao_slurm_tui.services.cluster import ClusterBackend
from tao_slurm_tui.services.store import JobStore
from tao_slurm_tui.services.tao_cache import WHEEL_ENV
from tests import sandbox
from tests.tui.test_cluster_workflows import (  # noqa: F401 (a fixture)
    SIZE,
    _unique,
    job_names,
    open_composer_with_demo,
    queue_status,
    retype,
    wait_for,
)
from tests.tui.waits import record_notifications

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tao-classification.toml"

pytestmark = pytest.mark.cluster


@pytest.fixture
def tao_app(
    cluster: None, tmp_path: Path, tao_wheel: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[TaoSlurmApp]:
    """The app on the sandbox as ``make demo`` opens it: a Pyxis cluster (the TAO stand-in runs
    in its image, pulled with the sandbox's NGC key), the TAO release from the suite's wheel."""
    monkeypatch.setenv(WHEEL_ENV, str(tao_wheel))
    host = str(sandbox.info()["registry"]).rsplit(":", 1)[0]
    profile = sandbox.sandbox_profile(
        container_runtime="pyxis", registry_hosts=["nvcr.io", "authn.nvidia.com", host]
    )
    settings = Settings(default_profile="sandbox", profiles={"sandbox": profile})
    config = Config(tmp_path / "config.toml", settings)
    config.save()
    backend = ClusterBackend(config, "sandbox", store=JobStore(tmp_path / "state.db"))
    with sandbox.ngc_credentials():
        yield make_app(backend, settings=Settings(poll_interval=2))


async def open_tao_example(pilot: Pilot[Any]) -> ComposerScreen:
    """From the queue: n, Ctrl+O, the example's path, Enter; wait for the schema's editor."""
    composer = await open_composer_with_demo(pilot, EXAMPLE, "cls-demo")
    await wait_for(pilot, lambda: composer.tao_form.schema is not None, "the TAO schema")
    return composer


async def test_a_tao_job_composed_in_the_composer_runs_to_complete(
    tao_app: TaoSlurmApp,
    job_names: list[str],  # noqa: F811
) -> None:
    app = tao_app
    notes = record_notifications(app)
    name = _unique("wf-tao")
    job_names.append(name)
    async with app.run_test(size=SIZE) as pilot:
        composer = await open_tao_example(pilot)
        await retype(pilot, "f-name", name)
        editor = composer.query_one("#tao-editor", TextArea)
        editor.focus()
        editor.load_text(editor.text.replace("  num_epochs: 6\n", "  num_epochs: 2\n"))
        await wait_for(
            pilot,
            lambda: composer.current_spec()["tao"].get("spec") == {"train.num_epochs": 2},
            "the typed epochs as the job's override",
        )
        await wait_for(pilot, lambda: composer.errors == {}, "a valid TAO job")
        assert "classification_pyt train -e" in composer.preview.text
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: isinstance(app.screen, QueueScreen), "the queue", 120)
        assert any(f"{name} submitted as SLURM job" in n.message for n in notes)
        await wait_for(
            pilot,
            lambda: queue_status(app, name) is TaoStatus.COMPLETE,
            f"{name} Complete in the queue",
            timeout=300,  # the image's pull, then 2 epochs of the stand-in
        )
        screen = app.screen
        assert isinstance(screen, QueueScreen)
        row = screen.table.jobs[name]
        # TAO wrote epoch 1 of max_epoch 1 (0-based) and no SUCCESS line: 2 of 2 done.
        assert row.progress.epoch_text == "2/2"
        assert row.message == "Train finished successfully."
    await app.backend.close()
    # The sandbox's file systems are this machine's: the staged -e file, as typed.
    assert "num_epochs: 2" in Path(staged_spec(name)).read_text(encoding="utf-8")


def staged_spec(name: str) -> str:
    """Where submit staged the job's experiment spec on the sandbox (``<base>/specs/<id>.yaml``)."""
    return f"{sandbox.sandbox_profile().base_results_dir}/specs/{name}.yaml"
