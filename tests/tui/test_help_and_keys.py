"""Help is generated from the bindings; keys remap by id; the command palette has our commands."""

from __future__ import annotations

from typing import Any

from tao_slurm_tui.screens.confirm import ConfirmModal
from tao_slurm_tui.screens.help import HelpScreen
from tao_slurm_tui.screens.help_tables import binding_tables, bindings_markdown
from tao_slurm_tui.screens.palette import TaoCommands
from tao_slurm_tui.screens.queue import QueueScreen
from tao_slurm_tui.services.fake import FakeBackend
from tests.tui.conftest import SIZE, build_app
from tests.tui.waits import settle, shown, wait_for


def test_every_binding_has_an_id_and_appears_in_the_markdown() -> None:
    markdown = bindings_markdown()
    for _title, rows in binding_tables():
        for row in rows:
            assert row.binding_id, row
            assert f"`{row.binding_id}`" in markdown
    assert "| `c` | Cancel | `queue.cancel` |" in markdown


def test_keymap_is_applied_to_the_tables() -> None:
    tables = dict(binding_tables({"queue.cancel": "x"}))
    assert any(r.keys == "x" and r.binding_id == "queue.cancel" for r in tables["Queue"])


async def test_remapped_key_works(fake: FakeBackend) -> None:
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
        app.screen.query_one("#tables").scroll_end(animate=False)
        await wait_for(pilot, lambda: "logs.follow" in app.export_screenshot(), "the logs table")
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
        "import sys, tao_slurm_tui.services.backend, tao_slurm_tui.services.fake;"
        "assert not [m for m in sys.modules if m.startswith(('textual', 'asyncssh'))]"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_ui_does_not_import_asyncssh() -> None:
    import subprocess
    import sys

    code = "import sys, tao_slurm_tui.app; assert 'asyncssh' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
