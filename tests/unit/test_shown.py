"""The one rule for text from the cluster (core/shown.py): spelled out, never obeyed."""

from __future__ import annotations

import sys
import unicodedata

import pytest

from tao_slurm_tui.core.shown import UNSAFE, log_line, shown, shown_text, terminal_safe

OSC52 = "\x1b]52;c;cm0gLXJmIH4K\x07"  # writes "rm -rf ~" to the clipboard
OSC0 = "\x1b]0;pwned\x07"  # sets the window title
CURSOR_UP_ERASE = "\x1b[1A\x1b[2K"  # replaces the line above


def test_every_control_and_format_character_of_this_python_is_unsafe() -> None:
    # The class is written out (a fast start); it must cover what unicodedata says.
    categories = {"Cc", "Cf", "Zl", "Zp", "Cs"}
    missing = [
        f"U+{code:04X}"
        for code in range(sys.maxunicode + 1)
        if unicodedata.category(chr(code)) in categories and not UNSAFE.fullmatch(chr(code))
    ]
    assert not missing, f"add these to core/shown.py's class: {missing[:20]}"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (OSC52, "\\x1b]52;c;cm0gLXJmIH4K\\x07"),
        (OSC0, "\\x1b]0;pwned\\x07"),
        (CURSOR_UP_ERASE, "\\x1b[1A\\x1b[2K"),
        ("name\n123\tPENDING", "name\\n123\\tPENDING"),
        ("a\rb", "a\\rb"),
        ("\x9b31m C1 CSI \x85 NEL", "\\x9b31m C1 CSI \\x85 NEL"),
        ("\x7f DEL \x00 NUL", "\\x7f DEL \\x00 NUL"),
        ("evil\u202egnp.exe", "evil\\u202egnp.exe"),
        ("zero\u200bwidth\ufeff", "zero\\u200bwidth\\ufeff"),
        ("line\u2028sep", "line\\u2028sep"),
        ("tag\U000e0041", "tag\\U000e0041"),
        (
            "exp[/data] sweep[lr=0.1] [@click=app.quit]x[/]",
            "exp[/data] sweep[lr=0.1] [@click=app.quit]x[/]",
        ),
        ("dino-train-1 ✓ 日本", "dino-train-1 ✓ 日本"),
    ],
)
def test_shown_spells_out_what_a_terminal_would_obey(raw: str, expected: str) -> None:
    out = shown(raw)
    assert out == expected
    assert UNSAFE.search(out) is None
    assert shown(out) == out  # twice is once


def test_shown_text_keeps_newline_and_tab_only() -> None:
    out = shown_text(f"first\tline\nsecond{OSC52}\r\x85")
    assert out == "first\tline\nsecond\\x1b]52;c;cm0gLXJmIH4K\\x07\\r\\x85"
    assert shown_text(out) == out
    # A one-line value that was shown as text is spelled out again on one line.
    assert shown(shown_text("a\nb")) == "a\\nb"


def test_shown_takes_any_value() -> None:
    assert shown(3) == "3" and shown(None) == "None" and shown_text(ValueError("x\x1b")) == "x\\x1b"


def test_a_log_line_drops_escape_sequences_and_spells_out_the_rest() -> None:
    assert log_line("\x1b[32mINFO\x1b[0m ready") == "INFO ready"
    assert log_line(f"before{OSC52}after") == "beforeafter"
    assert log_line(f"{OSC0}title gone") == "title gone"
    assert log_line("\x1b]8;;https://x\x1b\\link\x1b]8;;\x1b\\") == "link"
    assert log_line(f"fake line{CURSOR_UP_ERASE}") == "fake line"
    assert log_line("\x9b1A\x9d0;t\x9cC1 forms") == "C1 forms"
    assert log_line("10%\r50%\r100% done") == "100% done"
    assert log_line("a\tb") == "a       b"
    assert log_line("bell\x07 and a lone \x1b") == "bell\\x07 and a lone \\x1b"
    assert log_line("bidi\u202eevil") == "bidi\\u202eevil"


def test_terminal_safe_drops_zero_width_controls_and_keeps_the_width() -> None:
    assert terminal_safe(f"a{OSC52}b") == "a]52;c;cm0gLXJmIH4Kb"
    assert terminal_safe("soft\xadhyphen") == "soft\xadhyphen"  # one cell, inert
    assert terminal_safe("lone\ud800") == "lone\ufffd"
    assert terminal_safe("plain") == "plain"
