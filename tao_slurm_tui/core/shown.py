"""Text from the cluster is data: the one rule that turns it into what may be shown (pure).

Job names, log lines, ``status.json`` messages, node reasons, sacct and squeue fields: every one
of them comes from a machine the user does not control, and a terminal obeys some characters
instead of showing them. An OSC 52 sequence in a log line writes the user's clipboard, OSC 0
sets the window title, cursor-up + erase-line replaces a line of real output with a fake one,
C1 characters (U+0080-U+009F) are escape sequences of their own on some terminals, and bidi
overrides reorder what is read. So every front (the CLI's streams, the TUI's widgets) shows
remote text only through this module:

- :func:`shown` for a one-line value (a table cell, a name, a state, a reason): every control
  character, newline and tab included, is spelled out as its escape (``\\x1b``, ``\\n``,
  ``\\u202e``), so the user sees what is there and nothing acts on it;
- :func:`shown_text` for text that may span lines (a message, an error sentence, a whole CLI
  output): the same, but newline and tab stay;
- :func:`log_line` for one line of a job's log: terminal escape sequences (colours, cursor
  moves, OSC) are dropped as a log viewer does, a progress bar redrawn with carriage returns
  shows its last state, and whatever control character is left is spelled out.

Escapes are ASCII (``\\x1b`` as Python and ``--json`` write it), so the result is safe in any
locale. Spelling out only adds printable characters: applying a function twice changes nothing.
The UI's markup is the other half of the rule: Rich ``Text``/Textual ``Content`` built from this
text as plain text, never parsed as markup (``tao_slurm_tui.widgets.plain``).
"""

from __future__ import annotations

import re
from typing import NewType, cast

__all__ = [
    "UNSAFE",
    "Shown",
    "log_line",
    "shown",
    "shown_text",
    "terminal_safe",
]

_CONTROL_CLASS = (
    "\x00-\x1f\x7f-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e"
    "\u200b-\u200f\u2028-\u202e\u2060-\u206f\ud800-\udfff\ufeff\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001\U000e0020-\U000e007f"
)
# Unicode's control (Cc), format (Cf), line and paragraph separator (Zl, Zp) and surrogate (Cs)
# characters: C0, DEL, C1, bidi embeddings/overrides/isolates, zero-width characters, BOM,
# interlinear annotation, tags. Written out (not computed from unicodedata at import: the CLI
# starts fast); tests/unit/test_shown.py checks it covers those categories of this Python.

UNSAFE = re.compile(f"[{_CONTROL_CLASS}]")
"""One character a terminal may act on, or that hides or reorders text."""

_C0 = "\x00-\x1f"
_UNSAFE_IN_TEXT = re.compile(f"[\x00-\x08\x0b-\x1f{_CONTROL_CLASS.removeprefix(_C0)}]")
# The same but newline and tab: what shown_text() spells out (one search for the common case).

_ACTS_ON_TERMINAL = re.compile(f"[{_CONTROL_CLASS.replace(chr(0xAD), '')}]")
# The soft hyphen is a format character but one cell wide to Rich and inert to a terminal.

_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


Shown = NewType("Shown", str)
"""Text that is safe to put on a terminal: no control or invisible format character (each is
spelled out). Made by :func:`shown`, :func:`shown_text` and :func:`log_line` only; a table cell
or a widget that takes ``Shown`` cannot be handed raw remote text (mypy). A plain ``str`` at
run time: the queue makes tens of thousands a tick."""


def _spell(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def shown(value: object) -> Shown:
    """``value`` as one line that is safe to show: every control character (newline and tab
    too), DEL, C1 and invisible format character spelled out as its escape.

    >>> shown("evil\\n123\\x1b]52;c;aGk=\\x07")
    'evil\\\\n123\\\\x1b]52;c;aGk=\\\\x07'
    """
    text = value if isinstance(value, str) else str(value)
    # isprintable() is False for every character UNSAFE matches (and a few harmless ones):
    # the C-speed answer for the common case.
    if text.isprintable() or UNSAFE.search(text) is None:
        return cast(Shown, text)
    return cast(Shown, UNSAFE.sub(_spell, text))


def shown_text(value: object) -> Shown:
    """``value`` as text that may span lines: like :func:`shown`, but newline and tab stay
    (a carriage return is spelled out: it would let a line overwrite what precedes it)."""
    text = value if isinstance(value, str) else str(value)
    if text.isprintable() or _UNSAFE_IN_TEXT.search(text) is None:
        return cast(Shown, text)
    return cast(Shown, _UNSAFE_IN_TEXT.sub(_spell, text))


_ESCAPE_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves, erase
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)"  # OSC/DCS/...
    r"|\x1b[ -/]*[0-~]"  # two-character escapes (ESC 7, ESC c, ESC ( B)
)
"""A complete terminal escape sequence, in its 7-bit or C1 form."""


def log_line(line: str, *, tabsize: int = 8) -> Shown:
    """One line of a job's log, as a log viewer shows it.

    Progress bars redraw with carriage returns: the last non-empty segment is what a terminal
    would show. Escape sequences (colours, cursor moves, OSC 52 clipboard writes, titles) are
    dropped whole; tabs are expanded; any control character left is spelled out.
    """
    if "\r" in line:
        parts = [p for p in line.split("\r") if p]
        line = parts[-1] if parts else ""
    if "\x1b" in line or "\x9b" in line or "\x9d" in line or "\x90" in line:
        line = _ESCAPE_SEQUENCE.sub("", line)
    if "\t" in line:
        line = line.expandtabs(tabsize)
    return shown(line)


def terminal_safe(text: str) -> str:
    """``text`` with every character a terminal would act on dropped (zero-width ones) and a
    lone surrogate replaced: the last guard before bytes reach the terminal, for text whose
    width is already measured (a rendered line), where spelling out would shift the layout."""
    if _ACTS_ON_TERMINAL.search(text) is None:
        return text
    return _ACTS_ON_TERMINAL.sub(
        lambda m: "\ufffd" if "\ud800" <= m.group() <= "\udfff" else "", text
    )
