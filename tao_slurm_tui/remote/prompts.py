"""Keyboard-interactive login: the server's questions (a one-time code, a password) put to the user.

Many sites accept the SSH key only as the first factor and then ask, by keyboard-interactive
authentication, for a one-time code. What a client sees (OpenSSH with PAM TOTP): the key is
accepted as a *partial success*, then a challenge with one prompt (``'Verification code: '``,
echo off), then often a second challenge with **no prompts** that must be answered with an empty
list (PAM's closing message).

:class:`Answering` is the keyboard-interactive part of ONE login attempt: it answers empty
challenges itself, a password prompt with the onboarding password it was given (once), and puts
any other challenge to the front's :data:`Prompter` (the dashboard's masked modal, the CLI's
terminal) as a :class:`LoginPrompt`. The answers are handed to asyncssh and dropped: never
stored, logged, or put anywhere else. The time the user takes is not counted against the connect
timeout (:class:`~tao_slurm_tui.remote.dial.Deadline`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from tao_slurm_tui.core.login_prompt import (
    LoginPrompt,
    Prompter,
    PromptLine,
    looks_like_second_factor,
)
from tao_slurm_tui.core.shown import shown_text
from tao_slurm_tui.remote.dial import Deadline

__all__ = ["Answering", "LoginPrompt", "PromptLine", "Prompter"]

MAX_ASKS = 3
"""The user is asked at most this many times in one login (a wrong code, then the next one);
sshd gives up after a few failed tries too."""


def _is_password_prompt(lines: Sequence[PromptLine]) -> bool:
    return (
        len(lines) == 1
        and "password" in lines[0].text.lower()
        and not looks_like_second_factor(lines[0].text)
    )


class Answering:
    """The keyboard-interactive part of one login attempt to one host."""

    def __init__(
        self,
        host: str,
        user: str,
        prompter: Prompter | None,
        *,
        password: str | None = None,
        deadline: Deadline | None = None,
    ) -> None:
        self.host = host
        self.user = user
        self._prompter = prompter
        self._password = password
        self.deadline = deadline
        """Paused while the user is asked (set by the login that owns this)."""
        self.asked = 0
        """How many times the user was asked in this login."""
        self.declined = False
        """The user declined to answer (the login is given up, nobody is asked again)."""
        self.unanswered: LoginPrompt | None = None
        """A challenge nobody could answer (no prompter: no terminal)."""
        self.last: LoginPrompt | None = None
        """The last challenge put to the user."""
        self.used_password = False
        """The onboarding password answered a password prompt (the first factor)."""
        self._pending: asyncio.Future[list[str] | None] | None = None

    def wants_user(self) -> bool:
        """True when the server asked something only the user can answer."""
        return self.asked > 0 or self.unanswered is not None

    async def answer(
        self, name: str, instructions: str, prompts: Sequence[tuple[str, bool]]
    ) -> list[str] | None:
        """asyncssh's ``kbdint_challenge_received``: the answers, or None to give up."""
        lines = tuple(PromptLine(str(text), bool(echo)) for text, echo in prompts)
        if not lines:
            return []  # an information message only (PAM's closing challenge)
        if self._password is not None and _is_password_prompt(lines):
            password, self._password = self._password, None
            self.used_password = True
            return [password]
        prompt = LoginPrompt(self.host, self.user, name, instructions, lines, self.asked > 0)
        if self._prompter is None:
            self.unanswered = prompt
            return None
        if self.declined or self.asked >= MAX_ASKS:
            return None
        self.asked += 1
        self.last = prompt
        # A task of its own, so that the login ending (a drop, the app closing) takes the
        # question off the screen: see forget().
        self._pending = asyncio.ensure_future(self._prompter(prompt))
        if self.deadline is not None:
            with self.deadline.asking():
                answers = await self._pending
        else:
            answers = await self._pending
        self._pending = None
        if answers is None or len(answers) != len(lines):
            self.declined = True
            return None
        return answers

    def note(self) -> str:
        """How this login went, for the doctor ('' when nobody was asked)."""
        if self.last is None:
            return ""
        text = shown_text(self.last.lines[0].text.strip())
        first = "your password" if self.used_password else "your key"
        if not self.last.asks_for_code:
            return f"{first}, then an answer ({text!r}, keyboard-interactive)"
        return (
            f"{first}, then a one-time code ({text!r}, keyboard-interactive), asked per "
            "connection: an ssh-agent does not avoid it; with the dashboard open, commands "
            "beside it use its connection and need no code"
        )

    def forget(self) -> None:
        """The login is over: drop the onboarding password, and withdraw a question still on
        the screen (its login failed or was cancelled meanwhile)."""
        self._password = None
        pending, self._pending = self._pending, None
        if pending is not None and not pending.done():
            pending.cancel()
