"""Shell quoting: the one place remote command strings are assembled from arguments.

Every remote argument goes through :func:`shlex.quote`; callers build argument lists and join
them here, never by string formatting.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Sequence


def quote(arg: str | int | float) -> str:
    """Quote one argument for a POSIX shell."""
    return shlex.quote(str(arg))


def join(argv: Sequence[str | int | float]) -> str:
    """Join an argument vector into one safely quoted command string."""
    return " ".join(quote(a) for a in argv)


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
