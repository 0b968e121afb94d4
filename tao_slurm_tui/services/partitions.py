"""Partition wall-time limits (MaxTime) as the cluster reports them, cached per cluster.

``scontrol show partition -o`` is asked first (it names every partition with its exact MaxTime),
``sinfo -h -o '%P|%l'`` second. The parsed table is cached as JSON under
:func:`tao_slurm_tui.config.cache_dir` (``partitions/<host>-<key>.json``, keyed by what decides
the answer: the login hosts, the port and the user -- not the profile's name, so a profile whose
host changed asks the new cluster) for :data:`CACHE_TTL` seconds, so the composer can check a
wall time without a round trip. Without a connection (or when the cluster does not answer) the
last cached table is used, else the packaged list
(:data:`~tao_slurm_tui.core.partitions.PACKAGED_LIMITS`, the platform's 4-hour queues).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from pathlib import Path
from typing import Any

from tao_slurm_tui.config import cache_dir, write_atomic
from tao_slurm_tui.core.partitions import (
    PACKAGED_LIMITS,
    SCONTROL_COMMAND,
    SINFO_COMMAND,
    parse_scontrol_limits,
    parse_sinfo_limits,
)
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.core.quoting import join
from tao_slurm_tui.errors import TaoError
from tao_slurm_tui.remote.connection import Remote

log = logging.getLogger(__name__)

CACHE_TTL = 3600.0
"""Seconds a fetched table is trusted before it is fetched again."""

Limits = dict[str, int | None]
"""Partition → MaxTime in seconds (None: unlimited)."""


def cache_key(profile: Profile) -> str:
    """What the cached table depends on: the cluster (login hosts, port) and the user.

    The table lists every partition, so the profile's partition and account do not enter it.
    """
    identity = {"hosts": sorted(profile.hostnames), "port": profile.port, "user": profile.user}
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]


def cache_file(profile: Profile) -> Path:
    """Where the table of ``profile``'s cluster is cached."""
    first = profile.hostnames[0] if profile.hostnames else ""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", first)[:64] or "cluster"
    return cache_dir() / "partitions" / f"{safe}-{cache_key(profile)}.json"


def _read(profile: Profile) -> tuple[float, Limits] | None:
    try:
        data: Any = json.loads(cache_file(profile).read_text(encoding="utf-8"))
        limits = {str(k): (None if v is None else int(v)) for k, v in dict(data["limits"]).items()}
        return float(data["fetched_at"]), limits
    except (OSError, ValueError, KeyError, TypeError):
        return None  # a cache: missing or broken means "fetch again"


def _write(profile: Profile, limits: Limits) -> None:
    payload = {"fetched_at": time.time(), "limits": limits}
    path = cache_file(profile)
    try:
        write_atomic(path, json.dumps(payload, sort_keys=True).encode())  # 0600, atomic
    except OSError as exc:
        # Only a speed-up; the limits themselves are fine.
        log.warning("cannot cache partition limits in %s: %s", path, exc)


def offline_limits(profile: Profile) -> Limits:
    """The cached table of ``profile``'s cluster (any age) or the packaged list: no network."""
    cached = _read(profile)
    if cached is not None and cached[1]:
        return {**PACKAGED_LIMITS, **cached[1]}
    return dict(PACKAGED_LIMITS)


async def fetch_partition_limits(
    conn: Remote | None,
    profile: Profile,
    *,
    max_age: float = CACHE_TTL,
    refresh: bool = False,
) -> Limits:
    """MaxTime of every partition of the cluster, from the cache or one round trip.

    Args:
        conn: the profile's connection; None for the offline answer.
        profile: the profile (its cluster and user key the cache; its command timeout).
        max_age: seconds a cached table is fresh.
        refresh: ignore a fresh cache.

    Returns:
        The cluster's table (the packaged entries fill partitions it does not name, which
        matters only for the packaged names); the offline answer when the cluster cannot say.
    """
    if conn is None:
        return offline_limits(profile)
    cached = _read(profile)
    if cached is not None and not refresh and time.time() - cached[0] < max_age and cached[1]:
        return dict(cached[1])
    command = (
        f"{join(SCONTROL_COMMAND)} 2>/dev/null; echo '@@sinfo'; {join(SINFO_COMMAND)} 2>/dev/null"
    )
    try:
        result = await conn.run(command, timeout=profile.command_timeout)
    except TaoError as exc:
        log.info("partition limits not fetched (%s); using the cached or packaged list", exc)
        return offline_limits(profile)
    scontrol_text, _, sinfo_text = result.stdout.partition("@@sinfo")
    limits: Limits = parse_scontrol_limits(scontrol_text) or parse_sinfo_limits(sinfo_text)
    if not limits:
        return offline_limits(profile)
    _write(profile, limits)
    return limits
