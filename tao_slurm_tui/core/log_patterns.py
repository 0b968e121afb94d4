"""Log patterns: a regex with the lines it is known to match, and the first line that matches.

The retry rules (:mod:`tao_slurm_tui.core.retry`) and the container-runtime causes
(:mod:`tao_slurm_tui.core.runtime_failures`) are lists of these; the batch script greps the same
patterns (translated to POSIX ERE), so they are written in a portable subset of Python's regex
syntax. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache


@dataclass(frozen=True)
class LogPattern:
    """One log pattern with the lines it is known to match (they are its tests)."""

    family: str
    """What it means, in a few words (shown as the retry reason)."""
    regex: str
    """Python regex in the grep-portable subset; matched case-insensitively per line."""
    samples: tuple[str, ...]
    """Real-looking log lines that must match (checked in Python and in ``grep -E``)."""


@dataclass(frozen=True)
class LogMatch:
    """A log line matched by a pattern."""

    pattern: LogPattern
    line: str


@cache
def compiled(regex: str) -> re.Pattern[str]:
    """``regex`` compiled case-insensitively (once)."""
    return re.compile(regex, re.IGNORECASE)


def find_match(lines: Iterable[str], patterns: Sequence[LogPattern]) -> LogMatch | None:
    """The first line (oldest first) matched by any of ``patterns``, or None."""
    rules = [(p, compiled(p.regex)) for p in patterns]
    for line in lines:
        for pattern, rx in rules:
            if rx.search(line):
                return LogMatch(pattern, line.strip()[:300])
    return None
