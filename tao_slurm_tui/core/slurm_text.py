"""SLURM's own spellings, read and written: durations, timestamps, host lists, sbatch's answer.

Pure string functions shared by the monitor, history, capacity and the UI.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# ----------------------------------------------------------------------------------- times


def parse_duration(text: str) -> int | None:
    """Seconds in a SLURM duration, or None for ``UNLIMITED``/``INVALID``/''/garbage.

    Forms: ``D-HH:MM:SS``, ``D-HH:MM``, ``D-HH``, ``HH:MM:SS``, ``MM:SS`` (squeue prints ``1:27``
    for 87 s and ``1:00`` for a one-minute limit), and bare minutes (``30``) as sbatch accepts.
    """
    value = text.strip()
    if not value or value.upper() in {"UNLIMITED", "INVALID", "NOT_SET", "N/A", "PARTITION_LIMIT"}:
        return None
    days = 0
    if "-" in value:
        day_part, _, value = value.partition("-")
        if not day_part.isdigit():
            return None
        days = int(day_part)
        parts = value.split(":")
        # After a day count the fields are hours[:minutes[:seconds]].
        parts += ["0"] * (3 - len(parts))
    else:
        parts = value.split(":")
        if len(parts) == 1:
            parts = ["0", parts[0], "0"]  # bare minutes
        elif len(parts) == 2:
            parts = ["0", *parts]  # MM:SS
    if len(parts) != 3:
        return None
    try:
        # sacct may print fractional seconds (``00:00.123``) for some fields.
        hours, minutes = int(parts[0]), int(parts[1])
        seconds = float(parts[2])
    except ValueError:
        return None
    if min(hours, minutes, seconds) < 0:
        return None
    return days * 86400 + hours * 3600 + minutes * 60 + int(seconds)


def is_unlimited(text: str) -> bool:
    """True for SLURM's ``UNLIMITED`` time limit."""
    return text.strip().upper() == "UNLIMITED"


def format_duration(seconds: int | None) -> str:
    """Seconds as SLURM prints them (``1-02:03:04``, ``4:00:00``, ``1:27``); None → ''."""
    if seconds is None:
        return ""
    seconds = max(0, int(seconds))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}-{hours:02d}:{minutes:02d}:{secs:02d}"
    if hours:
        return f"{hours}:{minutes:02d}:{secs:02d}"
    return f"{minutes}:{secs:02d}"


_NO_TIME = {"", "N/A", "NONE", "UNKNOWN", "(NULL)", "0"}


def clean_time(text: str) -> str:
    """A SLURM timestamp, or '' for ``N/A``/``Unknown``/``None``."""
    value = text.strip()
    return "" if value.upper() in _NO_TIME else value


# ----------------------------------------------------------------------------------- node lists

_NODELIST_RE = re.compile(r"^[A-Za-z0-9._\-\[\],]+\Z")


def expand_nodelist(nodelist: str) -> list[str]:
    """Expand a SLURM host list: ``gpu[01-03,07],login1`` → gpu01, gpu02, gpu03, gpu07, login1.

    ``None assigned``, ``(null)`` and '' give ``[]``. Zero padding of ranges is kept.
    """
    text = nodelist.strip()
    if not text or text in {"None assigned", "(null)", "None"} or not _NODELIST_RE.match(text):
        return []
    names: list[str] = []
    for item in _split_top_level(text):
        names.extend(_expand_one(item))
    return names


def _split_top_level(text: str) -> list[str]:
    items, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    return [i for i in items if i]


def _expand_one(item: str) -> list[str]:
    match = re.match(r"^(.*?)\[([^\]]+)\](.*)\Z", item)
    if not match:
        return [item]
    prefix, ranges, rest = match.groups()
    tails = _expand_one(rest) if rest else [""]
    out: list[str] = []
    for part in ranges.split(","):
        lo, sep, hi = part.partition("-")
        if sep and lo.isdigit() and hi.isdigit():
            width = len(lo)
            out.extend(
                f"{prefix}{n:0{width}d}{tail}"
                for n in range(int(lo), int(hi) + 1)
                for tail in tails
            )
        else:
            out.extend(f"{prefix}{part}{tail}" for tail in tails)
    return out


# ----------------------------------------------------------------------------------- sbatch

_SBATCH_PARSABLE_RE = re.compile(r"^\s*(\d+)(?:;(\S+))?\s*\Z")
_SBATCH_TEXT_RE = re.compile(r"Submitted batch job (\d+)(?: on cluster (\S+))?")


def parse_sbatch_output(text: str) -> str:
    """The job id from sbatch's stdout: ``13``, ``13;cluster`` (``--parsable``) or
    ``Submitted batch job 22``.

    Raises:
        ValueError: no job id in ``text``.
    """
    for line in text.splitlines():
        match = _SBATCH_PARSABLE_RE.match(line) or _SBATCH_TEXT_RE.search(line)
        if match:
            return match.group(1)
    raise ValueError(f"sbatch printed no job id: {text.strip()[:200]!r}")


def federated(slurm_ids: Iterable[str]) -> bool:
    """True when an id carries a federation's cluster bits (at or above 2**26): squeue must
    then not be ``--local``."""
    heads = (sid.split("_", 1)[0].split(";", 1)[0] for sid in slurm_ids)
    return any(head.isdigit() and int(head) >= FEDERATION_ID_BASE for head in heads)


FEDERATION_ID_BASE = 1 << 26
"""SLURM ids of a federation's jobs start here (the origin cluster's id in the high bits);
a cluster alone never hands out one this high (MaxJobId is below it)."""
