"""The cluster's one-time code question, asked on the user's terminal (the CLI verbs).

The question goes to the controlling terminal (``/dev/tty``), not to stdout or stdin, so it
works while stdin is a pipe (``creds install < key``) and stdout is redirected; what is typed
for a secret prompt (``echo`` off, as for a code or a password) is not shown. The prompt text is
the server's, shown as data (control characters escaped). Without a controlling terminal (CI, a
cron job, ``setsid``) there is no prompter: such a login fails with one sentence saying how to
get a code-free session (a dashboard sharing its connection), exit 2.
"""

from __future__ import annotations

import contextlib
import os
import termios
from collections.abc import Iterator
from typing import IO

from tao_slurm_tui.core.shown import shown_text
from tao_slurm_tui.services.login_prompts import LoginPrompt, Prompter

TTY = "/dev/tty"


def terminal_prompter(tty: str = TTY) -> Prompter | None:
    """A prompter on the controlling terminal, or None when the process has none."""
    try:
        fd = os.open(tty, os.O_RDWR | os.O_NOCTTY)
    except OSError:
        return None
    os.close(fd)

    async def ask(prompt: LoginPrompt) -> list[str] | None:
        # Blocking on purpose: the command does nothing else until the login is through, and
        # reading in a thread would leave Ctrl+C waiting for Enter.
        return ask_on_terminal(prompt, tty)

    return ask


def ask_on_terminal(prompt: LoginPrompt, tty: str = TTY) -> list[str] | None:
    """Ask every line of ``prompt`` on the terminal; None when it ends (Ctrl+D) or is gone."""
    try:
        fd = os.open(tty, os.O_RDWR | os.O_NOCTTY)
    except OSError:
        return None
    # Two text streams on the one descriptor: a terminal cannot seek, so no "r+" file.
    try:
        with (
            open(fd, "w", encoding="utf-8", closefd=False) as out,
            open(fd, encoding="utf-8", errors="replace", closefd=False) as answers_in,
        ):
            return _ask(prompt, fd, out, answers_in)
    finally:
        os.close(fd)


def _ask(prompt: LoginPrompt, fd: int, out: IO[str], answers_in: IO[str]) -> list[str] | None:
    out.write(f"tao-slurm-tui: {shown_text(prompt.title)}\n")
    if prompt.again:
        out.write("That answer was not accepted; a code works once, enter the next one.\n")
    for words in (prompt.name, prompt.instructions):
        if words.strip():
            out.write(shown_text(words.strip()) + "\n")
    answers = []
    for line in prompt.lines:
        # Echo off before the question shows (as getpass does): nothing typed is ever echoed.
        with _no_echo(fd) if not line.echo else contextlib.nullcontext():
            out.write(shown_text(line.text) or "Answer: ")
            out.flush()
            answer = answers_in.readline()
        if not line.echo:
            out.write("\n")
            out.flush()
        if not answer:
            return None
        answers.append(answer.rstrip("\r\n"))
    return answers


@contextlib.contextmanager
def _no_echo(fd: int) -> Iterator[None]:
    """Turn the terminal's echo off while the body reads (restored even on Ctrl+C)."""
    try:
        old = termios.tcgetattr(fd)
    except termios.error:
        yield
        return
    new = list(old)
    new[3] = new[3] & ~termios.ECHO
    termios.tcsetattr(fd, termios.TCSAFLUSH, new)
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSAFLUSH, old)
