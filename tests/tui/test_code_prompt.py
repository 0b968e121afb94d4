"""The dashboard asks for a one-time code in a masked modal, once per (re)connect.

The app runs on a real :class:`ClusterBackend` whose login host (tests/codesshd.py) asks for a
code the way the sandbox's PAM TOTP sshd does. The commands the test runs beside the app go
through a connection that attaches to the app's shared one, as a CLI verb's does.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from textual.content import Content
from textual.pilot import Pilot
from textual.widgets import Input, Label

from tao_slurm_tui.app import TaoSlurmApp, make_app
from tao_slurm_tui.config import Config, Settings
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.remote.connection import Connection
from tao_slurm_tui.screens.code_prompt import CodePromptModal
from tao_slurm_tui.services.cluster import ClusterBackend
from tao_slurm_tui.services.login_prompts import LoginPrompt, PromptLine
from tao_slurm_tui.services.store import JobStore
from tao_slurm_tui.widgets.app_header import AppHeader
from tests.codesshd import PROMPT, CodeServer, code_site
from tests.tui.conftest import build_app
from tests.tui.waits import wait_for


@pytest.fixture
async def site(tmp_path: Path) -> AsyncIterator[tuple[CodeServer, Profile]]:
    async with code_site(tmp_path) as (server, profile):
        yield server, profile.model_copy(update={"connect_timeout": 5, "command_timeout": 15})


async def type_code(pilot: Pilot[None], app: TaoSlurmApp, code: str) -> None:
    """Type ``code`` into the modal once its field has the focus, then Enter."""
    await wait_for(pilot, lambda: isinstance(app.screen, CodePromptModal), "the code modal")
    await wait_for(pilot, lambda: isinstance(app.focused, Input), "the code field's focus")
    await pilot.press(*code, "enter")


def screen_text(app: TaoSlurmApp) -> str:
    """The modal's labels, and the header of the queue under it."""
    labels = [str(label.render()) for label in app.screen.query(Label)]
    assert app.home is not None
    return "\n".join(labels + [str(h.render()) for h in app.home.query(AppHeader)])


async def test_the_modal_shows_the_servers_words_as_data_and_masks_the_code(
    app: TaoSlurmApp,
) -> None:
    hostile = "Code [bold]now[/bold] \x1b[31m: "
    prompt = LoginPrompt("login1", "alice", "", "", (PromptLine(hostile, False),))
    async with app.run_test(size=(80, 24)) as pilot:
        asking = asyncio.ensure_future(app.ask_login_question(prompt))
        await wait_for(pilot, lambda: isinstance(app.screen, CodePromptModal), "the modal")
        # Focus moves to the field once the modal is composed: then its labels are there.
        await wait_for(pilot, lambda: isinstance(app.focused, Input), "the field's focus")
        question = app.screen.query_one(".question", Label)
        rendered = question.render()
        # As sent, not parsed: the brackets are text, the escape byte is shown, not obeyed.
        assert isinstance(rendered, Content)
        assert rendered.plain == "Code [bold]now[/bold] \\x1b[31m:"
        await pilot.press(*"123456")
        field = app.screen.query_one(".answer", Input)
        assert field.password and "123456" not in str(field.render_line(0))
        await pilot.press("enter")
        assert await asyncio.wait_for(asking, 5) == ["123456"]
        await wait_for(pilot, lambda: not isinstance(app.screen, CodePromptModal), "closed")
        assert not [f.value for f in app.query(Input) if f.value == "123456"]


async def test_escape_declines_and_a_withdrawn_question_closes_the_modal(
    app: TaoSlurmApp,
) -> None:
    prompt = LoginPrompt("login1", "alice", "", "", (PromptLine(PROMPT, False),))
    async with app.run_test(size=(80, 24)) as pilot:
        asking = asyncio.ensure_future(app.ask_login_question(prompt))
        await wait_for(pilot, lambda: isinstance(app.screen, CodePromptModal), "the modal")
        await pilot.press("escape")
        assert await asyncio.wait_for(asking, 5) is None
        asking = asyncio.ensure_future(app.ask_login_question(prompt))
        await wait_for(pilot, lambda: isinstance(app.screen, CodePromptModal), "again")
        asking.cancel()  # the login ended under it (a drop, a quit)
        await wait_for(pilot, lambda: not isinstance(app.screen, CodePromptModal), "withdrawn")


async def test_one_code_for_the_dashboard_and_the_commands_beside_it_and_a_drop_asks_once(
    tmp_path: Path, site: tuple[CodeServer, Profile]
) -> None:
    server, profile = site
    config = Config(
        tmp_path / "config.toml", Settings(default_profile="mfa", profiles={"mfa": profile})
    )
    config.save()
    backend = ClusterBackend(config, "mfa", store=JobStore(tmp_path / "state.db"))
    app = make_app(backend, settings=Settings(poll_interval=2), cursor_blink=False)
    asked: list[LoginPrompt] = []
    pushed = app.push_screen

    def counting(screen, *args, **kwargs):  # type: ignore[no-untyped-def]
        if isinstance(screen, CodePromptModal):
            asked.append(screen.prompt)
        return pushed(screen, *args, **kwargs)

    app.push_screen = counting  # type: ignore[method-assign]
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, CodePromptModal), "the code modal")
        await wait_for(pilot, lambda: app.session.connection == "awaiting code", "the header")
        # The modal is on the stack before its labels are composed: wait for its words.
        shown = ("One-time code for alice@127.0.0.1", "waiting for your code")
        await wait_for(pilot, lambda: all(s in screen_text(app) for s in shown), "the words")
        await type_code(pilot, app, server.issue())
        await wait_for(pilot, lambda: backend.conn.connected, "the dashboard connected")

        # Three commands beside it, as CLI verbs run them: no login, no code.
        beside = Connection(profile)
        beside.login.attach = True
        for word in ("one", "two", "three"):
            assert (await beside.run(f"echo {word}")).stdout == f"{word}\n"
        await beside.close()
        assert server.logins == 1 and len(asked) == 1

        # A drop asks once; declining holds: the polls that follow ask nobody.
        server.drop_all()
        await wait_for(pilot, lambda: len(asked) == 2, "asked again after the drop")
        await wait_for(pilot, lambda: isinstance(app.focused, Input), "the code field")
        await pilot.press("escape")
        await wait_for(pilot, lambda: backend.connection_state == "down", "down")
        challenges = server.challenges
        await asyncio.sleep(5)  # several poll intervals (and back-offs)
        assert len(asked) == 2 and server.challenges == challenges

        # r asks again, and the code brings it back.
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, CodePromptModal), "asked on r")
        await type_code(pilot, app, server.issue())
        await wait_for(pilot, lambda: backend.conn.connected, "reconnected")
        assert len(asked) == 3 and server.logins == 2
    await backend.close()


async def test_the_fake_back_end_never_asks(fake: object) -> None:
    app = build_app(fake)  # type: ignore[arg-type]
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert not isinstance(app.screen, CodePromptModal)
