"""The CLI's output stream (commands/terminal.py): what it lets through, and its end."""

from __future__ import annotations

import io
import os

from tao_slurm_tui.commands.terminal import ShownStream, shown_stream


def test_control_characters_are_spelled_out_and_newlines_kept() -> None:
    raw = io.StringIO()
    stream = shown_stream(raw)
    assert shown_stream(stream) is stream  # wrapped once
    stream.write("ok\tdone\n\x1b]52;c;cGF3bmVk\x07\n")
    assert raw.getvalue() == "ok\tdone\n\\x1b]52;c;cGF3bmVk\\x07\n"


def test_a_stream_whose_owner_closed_it_is_let_go_quietly() -> None:
    # io flushes a wrapper once more when it is closed (the garbage collector closes it); by
    # then a test's captured stream, or the interpreter's stdout at exit, may be closed.
    raw = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - closed by hand below
    stream = ShownStream(raw)
    stream.write("last line\n")
    raw.close()
    stream.close()
    assert stream.closed
