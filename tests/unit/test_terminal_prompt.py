"""The CLI asks for a one-time code on the terminal: the server's words, no echo, no terminal no
prompter. A pseudo-terminal stands in for the user's."""

from __future__ import annotations

import os
import threading

from tao_slurm_tui.commands.terminal_prompt import ask_on_terminal, terminal_prompter
from tao_slurm_tui.core.login_prompt import LoginPrompt, PromptLine


def _converse(prompt: LoginPrompt, typed: bytes) -> tuple[list[str] | None, str]:
    """Ask ``prompt`` on a fresh pty, typing ``typed`` once it asks; (answers, what it showed)."""
    master, slave = os.openpty()
    name = os.ttyname(slave)
    answers: list[list[str] | None] = []
    asker = threading.Thread(target=lambda: answers.append(ask_on_terminal(prompt, name)))
    asker.start()
    shown = b""
    try:
        while b"code: " not in shown.lower():
            shown += os.read(master, 1024)
        os.write(master, typed)
        asker.join(10)
        os.set_blocking(master, False)
        try:
            while chunk := os.read(master, 1024):
                shown += chunk
        except BlockingIOError:
            pass
    finally:
        os.close(master)
        os.close(slave)
    assert not asker.is_alive()
    return answers[0], shown.decode("utf-8", "replace")


def test_the_code_is_read_without_echo_and_the_prompt_shown_as_data() -> None:
    prompt = LoginPrompt(
        "login1", "alice", "", "", (PromptLine("Verification \x1b[2Jcode: ", False),)
    )
    answers, shown = _converse(prompt, b"424242\n")
    assert answers == ["424242"]
    assert "One-time code for alice@login1" in shown
    assert "Verification \\x1b[2Jcode: " in shown and "\x1b[2J" not in shown
    assert "424242" not in shown


def test_end_of_input_declines() -> None:
    prompt = LoginPrompt("login1", "alice", "", "", (PromptLine("Verification code: ", False),))
    answers, _ = _converse(prompt, b"\x04")  # Ctrl+D
    assert answers is None


def test_no_terminal_no_prompter(tmp_path: object) -> None:
    assert terminal_prompter("/nonexistent/tty") is None
