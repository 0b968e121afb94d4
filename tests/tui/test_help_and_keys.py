"""Help is generated from the bindings; keys remap by id; the command palette has our commands."""

from __future__ import annotations

from typing import Any

from textual.binding import Binding

from tao_slurm_tui.screens.confirm import ConfirmModal
from tao_slurm_tui.screens.context import APP_BINDINGS
from tao_slurm_tui.screens.help import HelpScreen
from tao_slurm_tui.screens.help_tables import binding_tables, bindings_markdown
from tao_slurm_tui.screens.palette import TaoCommands
from tao_slurm_tui.screens.queue import QueueScreen
from tao_slurm_tui.services.cluster import ClusterBackend
from tao_slurm_tui.widgets.job_table import JobTable
from tests.tui.conftest import SIZE, build_app
from tests.tui.waits import settle, shown, wait_for


def test_every_binding_has_an_id_and_appears_in_the_markdown() -> None:
    markdown = bindings_markdown()
    for _title, rows in binding_tables():
        for row in rows:
            assert row.binding_id, row
            assert f"`{row.binding_id}`" in markdown
    assert "| `c` | Cancel | `queue.cancel` |" in markdown


def _keys(bindings: list[Any]) -> dict[str, str]:
    """Key -> binding id of ``bindings`` (a "g,home" binding gives two keys)."""
    keys: dict[str, str] = {}
    for binding in bindings:
        assert isinstance(binding, Binding), binding
        for key in binding.key.split(","):
            keys[key.strip()] = binding.id or binding.action
    return keys


def test_no_app_key_is_shadowed_on_the_queue() -> None:
    # The queue (and its focused table) is where the app's keys are pressed most: a key bound
    # there too would swallow the app's binding (the table's g once hid the GPUs screen).
    app_keys = _keys(list(APP_BINDINGS))
    for owner, bindings in (("QueueScreen", QueueScreen.BINDINGS), ("JobTable", JobTable.BINDINGS)):
        local = _keys(list(bindings))
        shadowed = {key: (app_keys[key], local[key]) for key in app_keys.keys() & local.keys()}
        assert not shadowed, f"{owner} shadows app keys: {shadowed}"


def test_keymap_is_applied_to_the_tables() -> None:
    tables = dict(binding_tables({"queue.cancel": "x"}))
    assert any(r.keys == "x" and r.binding_id == "queue.cancel" for r in tables["Queue"])


async def test_remapped_key_works(fake: ClusterBackend) -> None:
    app = build_app(fake, keys={"queue.cancel": "x"})
    async with app.run_test(size=SIZE) as pilot:
        queue: QueueScreen = await shown(pilot, QueueScreen)
        await settle(pilot)
        await pilot.press("down")
        await wait_for(pilot, lambda: queue.table.cursor_row == 1, "the cursor on a live job")
        await pilot.press("x")
        await shown(pilot, ConfirmModal)


async def test_help_screen_lists_bindings(app: Any) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await shown(pilot, QueueScreen)
        await pilot.press("question_mark")
        await shown(pilot, HelpScreen)
        await wait_for(pilot, lambda: "queue.cancel" in app.export_screenshot(), "the tables")
        svg = app.export_screenshot()
        assert "queue.cancel" in svg and "app.capacity" in svg
        # The later screens' tables are further down the scrolling list.
        app.screen.query_one("#tables").scroll_end(animate=False)
        await wait_for(pilot, lambda: "overview.open" in app.export_screenshot(), "the end")
        assert "capacity.refresh" in app.export_screenshot()
        await pilot.press("escape")
        await shown(pilot, QueueScreen)
        assert not isinstance(app.screen, HelpScreen)


async def test_palette_offers_app_commands(app: Any) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await shown(pilot, QueueScreen)
        provider = TaoCommands(app.screen)
        names = [hit.text async for hit in provider.discover()]
        assert {"New job", "Set-up", "Queue", "Help"} <= set(map(str, names))


def test_backend_module_does_not_import_textual() -> None:
    import subprocess
    import sys

    code = (
        "import sys, tao_slurm_tui.services.backend;"
        "assert not [m for m in sys.modules if m.startswith(('textual', 'asyncssh'))];"
        "import tao_slurm_tui.services.fakecluster.demo;"
        "assert not [m for m in sys.modules if m.startswith('textual')]"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_ui_does_not_import_asyncssh() -> None:
    import subprocess
    import sys

    code = "import sys, tao_slurm_tui.app; assert 'asyncssh' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
