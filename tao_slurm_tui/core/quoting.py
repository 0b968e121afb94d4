"""Shell quoting: the one place remote command strings are assembled from arguments.

Every remote argument goes through :func:`shlex.quote`; callers build argument lists and join
them here, never by string formatting.
"""

from __future__ import annotations

import base64
import shlex
from collections.abc import Iterable, Sequence


def quote(arg: str | int | float) -> str:
    """Quote one argument for a POSIX shell."""
    return shlex.quote(str(arg))


def join(argv: Sequence[str | int | float]) -> str:
    """Join an argument vector into one safely quoted command string."""
    return " ".join(quote(a) for a in argv)


def for_login_shell(command: str) -> str:
    """``command`` as it is handed to sshd, which runs it through the user's login shell.

    That shell may be csh or tcsh (some sites still give it to their users). It reads a plain
    argument vector as ``sh`` does, but not ``sh`` syntax (``d=$(...)``, ``2>&1``, ``if [``)
    and not a newline inside quotes ("Unmatched '."). So a command that is exactly an
    argument vector joined by :func:`join` (one line, no ``!``, which csh may expand) goes as
    it is; any other goes to ``sh`` base64-encoded, as one line of plain words that every login
    shell reads alike: ``sh -c 'eval "$(echo ENCODED | base64 -d)"'``. The command ``sh`` runs
    is the same text, with the same stdin.
    """
    if "\n" not in command and "!" not in command:
        try:
            if join(shlex.split(command)) == command:
                return command
        except ValueError:  # unbalanced quotes: sh syntax of its own
            pass
    encoded = base64.b64encode(command.encode()).decode("ascii")
    return join(["sh", "-c", f'eval "$(echo {encoded} | base64 -d)"'])


def chain(*commands: str, op: str = "&&") -> str:
    """Join already-quoted commands with a shell operator (``&&``, ``;``, ``||``)."""
    if op not in {"&&", ";", "||", "|"}:
        raise ValueError(f"unsupported shell operator {op!r}")
    return f" {op} ".join(c for c in commands if c)


def home_path(path: str) -> str:
    """Quote a path that may start with ``~/`` so the remote shell still expands the home part.

    ``~/.config/enroot`` → ``"$HOME"/'.config/enroot'``; other paths are quoted as a whole.
    """
    if path == "~":
        return '"$HOME"'
    if path.startswith("~/"):
        return '"$HOME"/' + shlex.quote(path[2:])
    return shlex.quote(path)


def quote_all(args: Iterable[str]) -> list[str]:
    """Quote each argument of ``args``."""
    return [quote(a) for a in args]
