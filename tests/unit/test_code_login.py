"""Keyboard-interactive logins: a one-time code asked once, through the front's prompter.

The server (tests/codesshd.py) asks as the sandbox's PAM TOTP sshd does: ``'Verification code: '``
with echo off, then a challenge with no prompts. No cluster needed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.core.shown import shown_text
from tao_slurm_tui.remote.connection import (
    CodeNotGiven,
    CodeRequired,
    Connection,
    ConnectionState,
)
from tao_slurm_tui.remote.prompts import LoginPrompt
from tests.codesshd import PROMPT, CodeServer, code_site


@pytest.fixture
async def site(tmp_path: Path) -> AsyncIterator[tuple[CodeServer, Profile]]:
    async with code_site(tmp_path) as running:
        yield running


class Typist:
    """A prompter that types the codes it is given (None: declines), and remembers each ask."""

    def __init__(self, *answers: str | None, delay: float = 0.0) -> None:
        self.answers = list(answers)
        self.asked: list[LoginPrompt] = []
        self.delay = delay

    async def __call__(self, prompt: LoginPrompt) -> list[str] | None:
        self.asked.append(prompt)
        await asyncio.sleep(self.delay)
        answer = self.answers.pop(0) if self.answers else None
        return None if answer is None else [answer]


async def test_the_code_is_asked_with_the_servers_words_and_the_login_works(
    site: tuple[CodeServer, Profile],
) -> None:
    server, profile = site
    typist = Typist(server.issue())
    conn = Connection(profile)
    conn.login.prompter = typist
    states: list[ConnectionState] = []
    conn.add_state_listener(lambda state, _m: states.append(state))
    try:
        result = await conn.run("echo hi")
    finally:
        await conn.close()
    assert result.stdout == "hi\n"
    [prompt] = typist.asked
    assert [(line.text, line.echo) for line in prompt.lines] == [(PROMPT, False)]
    assert prompt.asks_for_code and not prompt.again
    assert (prompt.host, prompt.user) == ("127.0.0.1", "alice")
    assert ConnectionState.AWAITING_CODE in states
    assert states.index(ConnectionState.AWAITING_CODE) < states.index(ConnectionState.CONNECTED)
    assert server.logins == 1


async def test_typing_slower_than_the_connect_timeout_is_not_cut_off(
    site: tuple[CodeServer, Profile],
) -> None:
    """The connect timeout (2 s here) bounds the network, not the person typing the code."""
    server, profile = site
    conn = Connection(profile)
    conn.login.prompter = Typist(server.issue(), delay=profile.connect_timeout + 1.5)
    try:
        await conn.connect()
        assert conn.connected
    finally:
        await conn.close()


async def test_without_a_prompter_the_error_says_how_to_get_a_code_free_session(
    site: tuple[CodeServer, Profile],
) -> None:
    _, profile = site
    conn = Connection(profile)
    with pytest.raises(CodeRequired) as info:
        await conn.connect()
    message = str(info.value)
    assert info.value.exit_code == 2
    assert "one-time code" in message and "'Verification code:'" in message
    assert "no terminal" in message and "dashboard" in message
    assert "install the public key" not in message and "refused" not in message
    await conn.close()


async def test_a_wrong_code_is_asked_again_saying_so(site: tuple[CodeServer, Profile]) -> None:
    server, profile = site
    typist = Typist("000000", server.issue())
    conn = Connection(profile)
    conn.login.prompter = typist
    try:
        await conn.connect()
    finally:
        await conn.close()
    assert [p.again for p in typist.asked] == [False, True]
    assert server.logins == 1


async def test_a_declined_code_is_held_no_new_login_no_new_question(
    site: tuple[CodeServer, Profile],
) -> None:
    """A poll timer calling connect() again must not become a storm of prompts or logins."""
    server, profile = site
    typist = Typist(None)
    conn = Connection(profile)
    conn.login.prompter = typist
    with pytest.raises(CodeNotGiven, match="No one-time code was entered"):
        await conn.connect()
    challenges = server.challenges
    for _ in range(5):
        with pytest.raises(CodeNotGiven):
            await conn.run("true")
    assert len(typist.asked) == 1 and server.challenges == challenges
    assert conn.state is ConnectionState.DOWN
    # The user asks (a manual refresh): asked once more, and in.
    typist.answers.append(server.issue())
    conn.login.release()
    try:
        assert (await conn.run("echo back")).stdout == "back\n"
    finally:
        await conn.close()
    assert len(typist.asked) == 2


async def test_a_drop_asks_once_and_commands_wait_for_the_code(
    site: tuple[CodeServer, Profile],
) -> None:
    server, profile = site
    typist = Typist(server.issue())
    conn = Connection(profile, max_backoff=0.2)
    conn.login.prompter = typist
    states: list[tuple[ConnectionState, str]] = []
    conn.add_state_listener(lambda state, message: states.append((state, message)))
    try:
        await conn.connect()
        code = server.issue()
        typist.answers.append(code)
        typist.delay = 0.5  # the user takes a moment: a command in between waits for it
        server.drop_all()
        result = await conn.run("echo after")
        assert result.stdout == "after\n"
        assert len(typist.asked) == 2 and server.logins == 2
        waiting = [m for s, m in states if s is ConnectionState.AWAITING_CODE]
        assert len(waiting) == 2 and "waiting for your one-time code" in waiting[-1]
    finally:
        await conn.close()


async def test_a_drop_then_a_declined_code_goes_down_once(
    site: tuple[CodeServer, Profile],
) -> None:
    server, profile = site
    typist = Typist(server.issue(), None)
    conn = Connection(profile, max_backoff=0.2)
    conn.login.prompter = typist
    try:
        await conn.connect()
        server.drop_all()
        # A command waiting on the reconnect hears its outcome; it does not ask once more.
        waiting = asyncio.ensure_future(conn.run("true"))
        with pytest.raises(CodeNotGiven):
            await waiting
        for _ in range(50):
            if conn.state is ConnectionState.DOWN:
                break
            await asyncio.sleep(0.05)
        assert conn.state is ConnectionState.DOWN
        for _ in range(3):
            with pytest.raises(CodeNotGiven):
                await conn.run("true")
        assert len(typist.asked) == 2
    finally:
        await conn.close()


async def test_closing_withdraws_a_question_still_on_screen(
    site: tuple[CodeServer, Profile],
) -> None:
    _, profile = site
    withdrawn = asyncio.Event()
    shown = asyncio.Event()

    async def never_answers(prompt: LoginPrompt) -> list[str] | None:
        shown.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            withdrawn.set()
            raise
        return None

    conn = Connection(profile)
    conn.login.prompter = never_answers
    dial = asyncio.ensure_future(conn.connect())
    await asyncio.wait_for(shown.wait(), 10)
    await conn.close()
    with pytest.raises(asyncio.CancelledError):
        await dial
    await asyncio.wait_for(withdrawn.wait(), 5)


async def test_a_caller_cancelled_meanwhile_does_not_waste_the_code(
    site: tuple[CodeServer, Profile],
) -> None:
    """The dashboard's poll that started the login may be replaced by the next one while the
    user types: the login goes on, and the next caller joins it instead of asking again."""
    server, profile = site
    typist = Typist(server.issue(), delay=0.5)
    conn = Connection(profile)
    conn.login.prompter = typist
    first = asyncio.ensure_future(conn.connect())
    while not typist.asked:
        await asyncio.sleep(0.01)
    first.cancel()
    try:
        await asyncio.wait_for(conn.connect(), 10)
        assert conn.connected and len(typist.asked) == 1 and server.logins == 1
    finally:
        await conn.close()


async def test_the_code_is_never_logged_or_kept(
    site: tuple[CodeServer, Profile],
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
    _isolated_xdg: Path,
) -> None:
    server, profile = site
    sentinel = server.issue()
    caplog.set_level(logging.DEBUG)
    logging.getLogger("asyncssh").setLevel(logging.DEBUG)
    conn = Connection(profile)
    conn.login.prompter = Typist(sentinel)
    try:
        await conn.run("true")
        client = conn._client
        assert client is not None and client.answering is not None
        held = repr(vars(conn)) + repr(vars(client)) + repr(vars(client.answering))
    finally:
        await conn.close()
    assert sentinel not in caplog.text
    assert sentinel not in held
    for path in [*tmp_path.rglob("*"), *_isolated_xdg.rglob("*")]:
        if path.is_file():
            assert sentinel.encode() not in path.read_bytes(), path


def test_server_text_is_shown_as_data() -> None:
    hostile = "Code \x1b]0;pwned\x07: [bold]x[/bold] \u202e"
    shown = shown_text(hostile)
    assert "\x1b" not in shown and "\x07" not in shown and "\u202e" not in shown
    assert "\\x1b" in shown and "[bold]x[/bold]" in shown


async def test_the_doctor_says_how_it_got_in_and_what_one_code_per_session_means(
    site: tuple[CodeServer, Profile],
) -> None:
    from tao_slurm_tui.core.preflight import CheckStatus
    from tao_slurm_tui.services.onboarding import run_doctor

    server, profile = site
    conn = Connection(profile)
    conn.login.prompter = Typist(server.issue())
    try:
        report = await run_doctor(profile, connection=conn, environ={})
    finally:
        await conn.close()
    [login] = [r for r in report.results if r.check == "login"]
    assert login.status is CheckStatus.PASS, login
    assert (
        "works on 127.0.0.1 (your key, then a one-time code ('Verification code:'" in login.detail
    )
    assert "an ssh-agent does not avoid it" in login.detail
    assert "with the dashboard open" in login.detail


async def test_keyboard_interactive_is_not_retried_when_the_server_sends_no_challenge() -> None:
    """An sshd with keyboard-interactive on and no PAM ends each try at once: asyncssh asked
    again and again until "too many authentication failures", and the password was never
    offered (the tcsh site's key install failed so). A try with a challenge may be retried."""
    from tao_slurm_tui.remote.login import LoginClient
    from tao_slurm_tui.remote.prompts import Answering

    silent = LoginClient(lambda exc: None, Answering("h", "u", None, password="pw"))
    assert silent.kbdint_auth_requested() == ""
    assert silent.kbdint_auth_requested() is None

    asked = LoginClient(lambda exc: None, Answering("h", "u", None, password="pw"))
    assert asked.kbdint_auth_requested() == ""
    assert await asked.kbdint_challenge_received("", "", "", [("Password: ", False)]) == ["pw"]
    assert asked.kbdint_auth_requested() == ""
    assert asked.kbdint_auth_requested() is None

    nobody = LoginClient(lambda exc: None, None)
    assert nobody.kbdint_auth_requested() is None
