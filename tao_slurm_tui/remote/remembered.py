"""The login host that worked last time, per profile, remembered across runs (a cache file).

A profile may list several login hosts; :class:`~tao_slurm_tui.remote.connection.Connection`
tries the remembered one first, so a dead first host costs its timeout once, not on every start.
Only a speed-up: a missing or broken file means "no preference", a failed write is logged.
"""

from __future__ import annotations

import json
import logging

from tao_slurm_tui.config import cache_dir, write_atomic
from tao_slurm_tui.core.profile import Profile

log = logging.getLogger(__name__)

REMEMBER_FILE = "login-hosts.json"
"""The cache file (in the cache dir): ``{"user@host1,host2:port": "host2"}``."""


def _key(profile: Profile) -> str:
    return f"{profile.user}@{','.join(profile.hostnames)}:{profile.port}"


def remembered_host(profile: Profile) -> str | None:
    """The login host that worked last time for this profile (any process), if still listed."""
    try:
        data = json.loads((cache_dir() / REMEMBER_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # a cache: missing or broken just means "no preference"
    host = data.get(_key(profile)) if isinstance(data, dict) else None
    return host if isinstance(host, str) and host in profile.hostnames else None


def remember_host(profile: Profile, host: str) -> None:
    """Remember ``host`` as the one that works for ``profile`` (atomically replaced file)."""
    path = cache_dir() / REMEMBER_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            data = {}
    except (OSError, ValueError):
        data = {}
    data[_key(profile)] = host
    try:
        # Atomic, 0600, through a temp file of a random name (never a fixed one to follow).
        write_atomic(path, json.dumps(data, indent=1, sort_keys=True).encode("utf-8"))
    except OSError as exc:
        # Only a speed-up for the next run; the connection itself is fine.
        log.warning("cannot remember the login host in %s: %s", path, exc)
