"""Desktop notifications as terminals take them: which way, the escape sequences, plain text.

Pure. Terminals show a desktop notification for an escape sequence of their own:

- **OSC 9** ``ESC ] 9 ; text BEL`` (iTerm2, WezTerm, Ghostty, Windows Terminal; ConEmu's form);
- **OSC 777** ``ESC ] 777 ; notify ; title ; body BEL`` (urxvt, foot, WezTerm, Ghostty, VTE
  with Fedora's patch);
- **OSC 99** kitty's, ``ESC ] 99 ; i=ID:d=0 ; title ESC \\`` then ``ESC ] 99 ; i=ID:p=body ;
  body ESC \\`` (title and body in two chunks of one notification);

and inside tmux each must be wrapped in tmux's DCS passthrough (``ESC P tmux; …
ESC \\``, every ESC inside doubled; tmux 3.3+ passes it on with ``set -g allow-passthrough
on``). On a local desktop session without such a terminal, ``notify-send`` does it.

Everything put into a sequence passes :func:`plain_text` first: job names, messages and reasons
come from the cluster, and a control character in them (ESC, BEL, ST) would end the sequence
early and let the rest act on the terminal. It spells them out as the rest of the product does
(:func:`~tao_slurm_tui.core.shown.shown`): the notification reads ``\\x1b]0;…``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from tao_slurm_tui.core.models import JobRecord, TaoStatus
from tao_slurm_tui.core.shown import shown
from tao_slurm_tui.core.slurm_text import parse_duration

Method = Literal["osc9", "osc777", "osc99", "notify-send"]
"""How a notification reaches the desktop."""

ESC = "\x1b"
BEL = "\x07"
ST = ESC + "\\"

MAX_TEXT = 240
"""Characters of a title or body at most (notification bubbles are small)."""

OSC9_TERMINALS = frozenset({"iTerm.app", "WezTerm", "ghostty", "vscode", "Tabby", "rio"})
"""``TERM_PROGRAM`` values of terminals that show OSC 9 as a notification."""


def plain_text(text: str, limit: int = MAX_TEXT) -> str:
    """``text`` safe inside an escape sequence, on one line: runs of blanks (newlines too)
    become one space, every other control or invisible format character (ESC, BEL, ST, C1,
    DEL, bidi overrides) is spelled out (:func:`~tao_slurm_tui.core.shown.shown`), and it ends
    with '…' past ``limit``."""
    cleaned = shown(re.sub(r"\s+", " ", text).strip())
    return cleaned if len(cleaned) <= limit else cleaned[: limit - 1] + "…"


def osc9(title: str, body: str) -> str:
    """OSC 9: one line of text (``title: body``)."""
    return f"{ESC}]9;{plain_text(f'{title}: {body}')}{BEL}"


def osc777(title: str, body: str) -> str:
    """OSC 777 ``notify``: the title may not hold the ``;`` that ends it."""
    return f"{ESC}]777;notify;{plain_text(title).replace(';', ',')};{plain_text(body)}{BEL}"


def osc99(title: str, body: str, ident: str) -> str:
    """kitty's OSC 99: the title, then the body, as two chunks of notification ``ident``."""
    ident = re.sub(r"[^A-Za-z0-9_.+-]", "-", ident)[:32] or "1"
    return (
        f"{ESC}]99;i={ident}:d=0;{plain_text(title)}{ST}"
        f"{ESC}]99;i={ident}:p=body;{plain_text(body)}{ST}"
    )


def tmux_passthrough(sequence: str) -> str:
    """``sequence`` wrapped for tmux to pass on to the terminal it runs in."""
    return f"{ESC}Ptmux;{sequence.replace(ESC, ESC + ESC)}{ST}"


def escape_sequence(method: Method, title: str, body: str, ident: str, *, tmux: bool) -> str:
    """The bytes to write for one notification ('' for ``notify-send``, which is a program)."""
    if method == "osc9":
        sequence = osc9(title, body)
    elif method == "osc777":
        sequence = osc777(title, body)
    elif method == "osc99":
        sequence = osc99(title, body, ident)
    else:
        return ""
    return tmux_passthrough(sequence) if tmux else sequence


def notify_send_argv(title: str, body: str) -> list[str]:
    """``notify-send`` with the text as plain arguments (its body takes simple markup, so
    ``<``, ``>`` and ``&`` are escaped)."""
    escaped = plain_text(body).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return ["notify-send", "--app-name=tao-slurm-tui", plain_text(title), escaped]


@dataclass(frozen=True)
class Session:
    """What the environment says about the terminal and the desktop."""

    method: Method
    """How to notify."""
    tmux: bool
    """Inside tmux: escape sequences go through its passthrough."""


def pick_method(environ: Mapping[str, str], *, notify_send: bool) -> Method:
    """The way a terminal or desktop takes notifications, from the environment.

    Args:
        environ: The process environment.
        notify_send: ``notify-send`` is installed.
    """
    term = environ.get("TERM", "")
    program = environ.get("TERM_PROGRAM", "")
    if term == "xterm-kitty" or environ.get("KITTY_WINDOW_ID"):
        return "osc99"
    if term.startswith(("foot", "rxvt")):
        return "osc777"
    if (
        program in OSC9_TERMINALS
        or environ.get("WEZTERM_PANE")
        or environ.get("ITERM_SESSION_ID")
        or environ.get("GHOSTTY_RESOURCES_DIR")
        or environ.get("WT_SESSION")
    ):
        return "osc9"
    remote = environ.get("SSH_CONNECTION") or environ.get("SSH_TTY")
    desktop = environ.get("DISPLAY") or environ.get("WAYLAND_DISPLAY")
    if notify_send and desktop and not remote:
        return "notify-send"
    if environ.get("VTE_VERSION"):
        return "osc777"
    return "osc9"


def session(environ: Mapping[str, str], via: str, *, notify_send: bool) -> Session:
    """How to notify here: ``via`` (the setting) unless it is ``auto``."""
    method: Method = (
        pick_method(environ, notify_send=notify_send) if via == "auto" else via  # type: ignore[assignment]
    )
    return Session(method, bool(environ.get("TMUX")))


def ci_environment(environ: Mapping[str, str]) -> bool:
    """Running under CI (``CI=true``, as GitHub, GitLab and most CI services set it)."""
    return environ.get("CI", "").strip().lower() in {"true", "1", "yes"}


def wall_time_left(job: JobRecord) -> tuple[int, int] | None:
    """(seconds left, time limit) of a running job as of its last poll (elapsed from squeue's
    TimeUsed against its TimeLimit); None when either is unknown or unlimited."""
    latest = job.latest
    if latest is None or job.status is not TaoStatus.RUNNING:
        return None
    limit = parse_duration(latest.time_limit)
    elapsed = parse_duration(latest.elapsed)
    if limit is None or elapsed is None:
        return None
    return max(0, limit - elapsed), limit
