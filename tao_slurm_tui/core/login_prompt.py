"""A login's keyboard-interactive questions (a one-time code, a password), as data.

Pure: what the server asked (:class:`LoginPrompt`), the front's answerer (:data:`Prompter`),
and telling a one-time code from a password (:func:`looks_like_second_factor`). The server's
words are shown as all remote text is (:func:`~tao_slurm_tui.core.shown.shown_text`). The remote
layer puts the questions (:mod:`tao_slurm_tui.remote.prompts`); the fronts answer them without
importing it.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

_OTP_RE = re.compile(
    r"verification|one[- ]time|\botp\b|token|2fa|two[- ]factor|second factor|authenticator|"
    r"\bduo\b|passcode|\bcode\b|\bpin\b|yubi|mfa|multi[- ]factor",
    re.IGNORECASE,
)


def looks_like_second_factor(prompt: str) -> bool:
    """Whether a keyboard-interactive prompt asks for a one-time code rather than a password."""
    return bool(_OTP_RE.search(prompt))


@dataclass(frozen=True)
class PromptLine:
    """One question of a challenge, as the server sent it."""

    text: str
    """The prompt text exactly as sent (show it as data, never as markup:
    :func:`~tao_slurm_tui.core.shown.shown_text`)."""
    echo: bool
    """False for secrets (codes, passwords): the front must not show what is typed."""


@dataclass(frozen=True)
class LoginPrompt:
    """A keyboard-interactive challenge for the user to answer."""

    host: str
    """The login host asking."""
    user: str
    """The user logging in."""
    name: str
    """The challenge's name (often empty)."""
    instructions: str
    """The challenge's instructions (often empty)."""
    lines: tuple[PromptLine, ...]
    """The questions, at least one."""
    again: bool = False
    """An earlier answer in this login was not accepted (the server asks anew)."""

    @property
    def asks_for_code(self) -> bool:
        """True when this looks like a one-time code / second factor, not a password."""
        texts = [line.text for line in self.lines] + [self.instructions]
        return any(looks_like_second_factor(text) for text in texts if text.strip())

    @property
    def title(self) -> str:
        """``One-time code for slurmmfa@login1`` (or ``Password for ...``)."""
        what = "One-time code" if self.asks_for_code else "Login question"
        return f"{what} for {self.user or 'you'}@{self.host}"


Prompter = Callable[[LoginPrompt], Awaitable[list[str] | None]]
"""Answers a challenge: one string per line, or None when the user declined (Escape, Ctrl+C)."""
