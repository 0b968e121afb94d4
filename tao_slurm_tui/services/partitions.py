"""Partition wall-time limits (MaxTime) and node sizes as the cluster reports them, cached per
cluster.

``scontrol show partition -o`` is asked first (it names every partition with its exact MaxTime
and memory defaults), ``sinfo -h -o '%P|%l'`` second, and one ``sinfo`` line per partition and
node shape (:data:`~tao_slurm_tui.core.cluster_facts.NODES_COMMAND`) third -- one round trip.
The parsed table is cached as JSON under
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
from tao_slurm_tui.core.cluster_facts import NODES_COMMAND, PartitionFacts, parse_partitions
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

Facts = dict[str, PartitionFacts]
"""The cluster's partitions with their node shapes, by name."""


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


def _read(profile: Profile) -> tuple[float, Limits, Facts | None] | None:
    try:
        data: Any = json.loads(cache_file(profile).read_text(encoding="utf-8"))
        limits = {str(k): (None if v is None else int(v)) for k, v in dict(data["limits"]).items()}
        stored = data.get("partitions")
        facts = (
            None
            if stored is None
            else {str(k): PartitionFacts.from_json(v) for k, v in dict(stored).items()}
        )
        return float(data["fetched_at"]), limits, facts
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # a cache: missing or broken means "fetch again"


def _write(profile: Profile, limits: Limits, facts: Facts) -> None:
    payload = {
        "fetched_at": time.time(),
        "limits": limits,
        "partitions": {name: part.to_json() for name, part in facts.items()},
    }
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


def offline_facts(profile: Profile) -> Facts | None:
    """The cached partitions of ``profile``'s cluster with their node shapes (any age); None
    when never fetched (nothing is judged against a packaged guess)."""
    cached = _read(profile)
    return cached[2] if cached is not None and cached[2] else None


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
    return (await fetch_partitions(conn, profile, max_age=max_age, refresh=refresh))[0]


async def fetch_partitions(
    conn: Remote | None,
    profile: Profile,
    *,
    max_age: float = CACHE_TTL,
    refresh: bool = False,
) -> tuple[Limits, Facts | None]:
    """MaxTime of every partition and the partitions with their node shapes, from the cache or
    one round trip (see :func:`fetch_partition_limits`); the facts are None when the cluster
    never said (offline, a cache from an older version)."""
    if conn is None:
        return offline_limits(profile), offline_facts(profile)
    cached = _read(profile)
    fresh = cached is not None and time.time() - cached[0] < max_age
    if cached is not None and fresh and not refresh and cached[1] and cached[2] is not None:
        return dict(cached[1]), dict(cached[2])
    command = (
        f"{join(SCONTROL_COMMAND)} 2>/dev/null; echo '@@sinfo'; {join(SINFO_COMMAND)} "
        f"2>/dev/null; echo '@@nodes'; {join(NODES_COMMAND)} 2>/dev/null"
    )
    try:
        result = await conn.run(command, timeout=profile.command_timeout)
    except TaoError as exc:
        log.info("partition limits not fetched (%s); using the cached or packaged list", exc)
        return offline_limits(profile), offline_facts(profile)
    scontrol_text, _, rest = result.stdout.partition("@@sinfo")
    sinfo_text, _, nodes_text = rest.partition("@@nodes")
    limits: Limits = parse_scontrol_limits(scontrol_text) or parse_sinfo_limits(sinfo_text)
    if not limits:
        return offline_limits(profile), offline_facts(profile)
    facts = parse_partitions(scontrol_text, nodes_text)
    _write(profile, limits, facts)
    return limits, facts or None
