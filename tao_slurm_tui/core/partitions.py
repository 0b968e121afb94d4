"""Partition wall-time limits (MaxTime): the packaged list, SLURM's output, and the check.

A job asking for more wall time than its partition allows is rejected by ``sbatch`` (with
``EnforcePartLimits``) or pends forever (without it), so the composer checks first. Limits are in
**seconds**; ``None`` means unlimited. Pure functions: the service runs ``sinfo`` and caches the
parsed dict per profile.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping

PartitionLimits = Mapping[str, int | None]
"""Partition name → MaxTime in seconds (``None``: unlimited)."""

HOUR = 3600

PACKAGED_LIMITS: dict[str, int | None] = {
    "polar": 4 * HOUR,
    "polar3": 4 * HOUR,
    "polar4": 4 * HOUR,
    "grizzly": 4 * HOUR,
}
"""The platform's packaged default partitions, all 4-hour queues (used without a connection)."""

SINFO_COMMAND = ["sinfo", "-h", "-o", "%P|%l"]
"""Argument vector whose output :func:`parse_sinfo_limits` reads."""

SCONTROL_COMMAND = ["scontrol", "show", "partition", "-o"]
"""Argument vector whose output :func:`parse_scontrol_limits` reads."""

_UNLIMITED = {"unlimited", "infinite", "none"}
_DAYS_RE = re.compile(r"^(\d+)-(\d+)(?::(\d+))?(?::(\d+))?\Z")
_CLOCK_RE = re.compile(r"^(\d+)(?::(\d+))?(?::(\d+))?\Z")


def parse_slurm_time(text: str) -> int | None:
    """Parse a SLURM time limit into seconds.

    Formats (as SLURM documents them): ``M``, ``M:S``, ``H:M:S``, ``D-H``, ``D-H:M``,
    ``D-H:M:S``; ``UNLIMITED``/``infinite`` → ``None``.

    Raises:
        ValueError: not a SLURM time.
    """
    value = text.strip()
    if value.lower() in _UNLIMITED:
        return None
    days = _DAYS_RE.match(value)
    if days:
        d, h, m, s = (int(g) if g else 0 for g in days.groups())
        return ((d * 24 + h) * 60 + m) * 60 + s
    clock = _CLOCK_RE.match(value)
    if clock:
        parts = [int(g) for g in clock.groups() if g is not None]
        if len(parts) == 1:
            return parts[0] * 60
        if len(parts) == 2:
            return parts[0] * 60 + parts[1]
        return (parts[0] * 60 + parts[1]) * 60 + parts[2]
    raise ValueError(f"not a SLURM time: {text!r}")


def format_slurm_time(seconds: int) -> str:
    """``--time`` value for ``seconds``: ``HH:MM:SS``, or ``D-HH:MM:SS`` from one day on."""
    seconds = max(0, int(seconds))
    d, rest = divmod(seconds, 86400)
    h, rest = divmod(rest, 3600)
    m, s = divmod(rest, 60)
    clock = f"{h:02d}:{m:02d}:{s:02d}"
    return f"{d}-{clock}" if d else clock


def hours_to_seconds(hours: float) -> int:
    """Whole seconds for ``hours``, rounded to the nearest second (3.8 h → 13680 s)."""
    return round(hours * HOUR)


def format_hours(seconds: int | None) -> str:
    """Human form of a limit: ``4 h``, ``2 d``, ``1.5 h``, ``30 min``, ``unlimited``."""
    if seconds is None:
        return "unlimited"
    if seconds % 86400 == 0 and seconds >= 86400:
        return f"{seconds // 86400} d"
    if seconds >= HOUR:
        hours = seconds / HOUR
        return f"{hours:g} h" if hours == round(hours, 2) else f"{hours:.2f} h"
    return f"{math.ceil(seconds / 60)} min"


def parse_sinfo_limits(output: str) -> dict[str, int | None]:
    """Parse ``sinfo -h -o '%P|%l'``: ``polar*|4:00:00`` lines (``*`` marks the default).

    Lines that do not parse are skipped: a partial answer is better than none.
    """
    limits: dict[str, int | None] = {}
    for line in output.splitlines():
        name, sep, limit = line.strip().partition("|")
        name = name.strip().rstrip("*")
        if not sep or not name:
            continue
        try:
            limits[name] = parse_slurm_time(limit)
        except ValueError:
            continue
    return limits


def parse_scontrol_limits(output: str) -> dict[str, int | None]:
    """Parse ``scontrol show partition -o``.

    One partition a line: ``PartitionName=polar ... MaxTime=04:00:00 ...``.
    """
    limits: dict[str, int | None] = {}
    for line in output.splitlines():
        fields = dict(
            token.split("=", 1)
            for token in line.split()
            if "=" in token and not token.startswith("=")
        )
        name = fields.get("PartitionName", "").strip()
        if not name or "MaxTime" not in fields:
            continue
        try:
            limits[name] = parse_slurm_time(fields["MaxTime"])
        except ValueError:
            continue
    return limits


def split_partitions(partitions: str | Iterable[str]) -> list[str]:
    """``"polar, batch"`` or a list → ``["polar", "batch"]`` (blanks dropped)."""
    items = partitions.split(",") if isinstance(partitions, str) else list(partitions)
    return [p.strip() for p in items if p.strip()]


def check_wall_time(
    time_hours: float,
    partitions: str | Iterable[str],
    limits: PartitionLimits | None = None,
) -> str | None:
    """Check a wall time against the MaxTime of every partition it may run in.

    SLURM may start a multi-partition job in any of them, so each one must allow the time.
    A partition missing from ``limits`` is not checked (SLURM itself has the last word).

    Args:
        time_hours: requested wall time in hours.
        partitions: one name, a comma list, or a list of names.
        limits: MaxTime per partition in seconds; default :data:`PACKAGED_LIMITS`.

    Returns:
        None when allowed, else one sentence naming the partition(s) and the limit.
    """
    table = PACKAGED_LIMITS if limits is None else limits
    wanted = hours_to_seconds(time_hours)
    over: list[tuple[str, int]] = []
    for name in split_partitions(partitions):
        limit = table.get(name)
        if limit is not None and wanted > limit:
            over.append((name, limit))
    if not over:
        return None
    shortest = min(limit for _, limit in over)
    names = ", ".join(f"'{name}' (MaxTime {format_hours(limit)})" for name, limit in over)
    plural = "partitions" if len(over) > 1 else "partition"
    return (
        f"time_hours = {time_hours:g} is above the wall-time limit of {plural} {names}; "
        f"ask for at most {format_hours(shortest)} or choose a partition with a longer limit."
    )
