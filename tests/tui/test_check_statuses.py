"""Every doctor status the core can produce renders through the real CheckRow (issue 11: a
'warn' the UI did not know crashed the set-up screen)."""

from __future__ import annotations

from typing import Any

from textual.app import App, ComposeResult
from textual.widgets import Button, Label

from tao_slurm_tui.core.preflight import CheckResult, CheckStatus, FixAction
from tao_slurm_tui.widgets.check_row import STATUS_LOOKS, CheckRow


class _Rows(App[None]):
    def compose(self) -> ComposeResult:
        for status in CheckStatus:
            yield CheckRow(
                CheckResult(
                    f"check_{status}",
                    f"a {status} check",
                    status,
                    "what was found",
                    "what to do about it",
                    FixAction.INSTALL_CREDENTIALS,
                )
            )


def test_the_look_table_covers_the_enum() -> None:
    assert set(STATUS_LOOKS) == set(CheckStatus)
    looks = list(STATUS_LOOKS.values())
    assert len({look.glyph for look in looks}) == len(looks)  # told apart at a glance
    assert len({look.word for look in looks}) == len(looks)


async def test_every_status_renders_with_glyph_word_and_its_fix() -> None:
    app = _Rows()
    async with app.run_test(size=(80, 40)) as pilot:
        await pilot.pause()
        rows = list(app.query(CheckRow))
        assert [row.result.status for row in rows] == list(CheckStatus)
        for row in rows:
            look = STATUS_LOOKS[row.result.status]
            texts = [str(label.render()) for label in row.query(Label)]
            assert look.glyph in texts and look.word in texts and "a " in texts[1]
            assert row.has_class(f"-{row.result.status}")
            assert bool(row.query(Button)) is look.offers_fix
        glyph_colours: dict[Any, str] = {}
        for row in rows:
            glyph_colours.setdefault(row.query_one(".glyph").rich_style.color, row.result.status)
        # pass, fail, warn each have their own colour (skip may share the muted one).
        assert len(glyph_colours) >= 3
