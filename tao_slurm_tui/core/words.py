"""Counted nouns as a reader writes them: "1 job", "2 jobs", never "1 jobs" or "job(s)". Pure."""

from __future__ import annotations


def plural(count: int, word: str, many: str = "") -> str:
    """``count`` and ``word``, the plural (``many``, default ``word + "s"``) unless it is 1."""
    return f"{count} {word if count == 1 else (many or word + 's')}"
