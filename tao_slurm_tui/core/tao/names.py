"""Nearest valid names for a misspelt one (a network, an action, a spec key)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def nearest(word: str, options: Iterable[str], n: int = 3) -> list[str]:
    """Up to ``n`` of ``options`` closest to ``word``, best first (case-insensitive)."""
    choices = list(dict.fromkeys(options))
    by_lower: dict[str, str] = {}
    for choice in choices:
        by_lower.setdefault(choice.lower(), choice)
    found = difflib.get_close_matches(word.lower(), list(by_lower), n=n, cutoff=0.6)
    # A prefix ("class" for "classification_pyt") is a good guess difflib's ratio misses.
    if not found:
        found = [low for low in by_lower if low.startswith(word.lower()) and word][:n]
    return [by_lower[f] for f in found]


def quoted_list(names: Iterable[str]) -> str:
    """``'a', 'b' or 'c'``."""
    items = [f"'{n}'" for n in names]
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + f" or {items[-1]}"


def did_you_mean(word: str, options: Iterable[str]) -> str:
    """``"did you mean 'x'?"`` (or ``"'x' or 'y'"``), empty when nothing is close."""
    close = nearest(word, options)
    return f"did you mean {quoted_list(close)}?" if close else ""
