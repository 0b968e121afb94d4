"""A write on the cluster that failed because a file system is full or over quota: the one
sentence that says which file system, whose, the figures and what to do (one extra round trip
to the login host, only when it happened)."""

from __future__ import annotations

from tao_slurm_tui.core.disk_space import (
    Space,
    disk_full_kind,
    disk_full_sentence,
    parse_space,
    path_in,
    role_of,
    space_command,
)
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.errors import OperationFailed, TaoError
from tao_slurm_tui.remote.connection import Remote


async def probe_space(conn: Remote, profile: Profile, paths: list[str]) -> Space:
    """df (and the user's quotas) of ``paths`` and the home; empty when the probe fails."""
    try:
        result = await conn.run(
            space_command([*paths, profile.results_root, "~"]), timeout=profile.command_timeout
        )
    except TaoError:
        return Space()
    return parse_space(result.stdout)


async def disk_full_error(
    conn: Remote, profile: Profile, text: str, *, fallback: str, then: str
) -> OperationFailed | None:
    """The sentence for a failure whose ``text`` says ENOSPC or EDQUOT, else None.

    Args:
        conn: the connection (the probe runs over it).
        profile: the cluster profile (its user and results root).
        text: the failure's message (a tool's stderr line is in it).
        fallback: the path to measure when ``text`` names none.
        then: what the user does next (``free space there and submit again``).
    """
    kind = disk_full_kind(text)
    if not kind:
        return None
    path = path_in(text) or fallback
    space = await probe_space(conn, profile, [path])
    what = role_of(path, space, profile.results_root)
    return OperationFailed(
        disk_full_sentence(kind, space, path, what=what, then=then, user=profile.user)
    )
