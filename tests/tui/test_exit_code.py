"""An uncaught exception ends the app with a non-zero status (issue 11: it exited 0 after the
traceback, so scripts and the shell saw success)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tao_slurm_tui.app import TaoSlurmApp, run_app
from tao_slurm_tui.config import Config
from tao_slurm_tui.screens.queue import QueueScreen
from tao_slurm_tui.services.cluster import ClusterBackend
from tests.tui.conftest import SIZE, build_app
from tests.tui.waits import shown, wait_for


async def test_a_crash_in_a_handler_sets_exit_status_1(
    fake: ClusterBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(self: QueueScreen) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(QueueScreen, "action_copy_id", boom)
    app = build_app(fake)
    with pytest.raises(RuntimeError, match="a bug"):  # run_test re-raises what crashed the app
        async with app.run_test(size=SIZE) as pilot:
            await shown(pilot, QueueScreen)
            await pilot.press("y")
            await wait_for(pilot, lambda: app.return_code is not None, "the app to stop")
    assert app.return_code == 1


def test_run_app_returns_the_apps_status(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[Any] = []

    def crashed_run(self: TaoSlurmApp, *args: Any, **kw: Any) -> None:
        ran.append(self)
        self._return_code = 1  # what Textual sets after printing an uncaught traceback

    monkeypatch.setattr(TaoSlurmApp, "run", crashed_run)
    assert run_app(Config.load(tmp_path / "config.toml")) == 1
    assert ran and ran[0].new_profile  # nothing configured: the set-up opens first
