"""A full file system or an exceeded quota on the cluster: recognised in any tool's words, and
told as one sentence with the figures the login host can give (pure).

Local file systems say ENOSPC, "No space left on device"; Lustre, NFS, GPFS and BeeGFS sites
enforce per-user quotas and say EDQUOT, "Disk quota exceeded" (Python: ``[Errno 28]`` and
``[Errno 122]``). The figures come from :func:`space_command` (``df -Pk`` of the paths, and
``lfs quota`` / ``quota`` where the site has them), read back by :func:`parse_space`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tao_slurm_tui.core import quoting

FULL = "full"
QUOTA = "quota"

_WORDS = (
    (QUOTA, re.compile(r"Disk quota exceeded|EDQUOT|\[Errno 122\]|quota exceeded", re.I)),
    (FULL, re.compile(r"No space left on device|ENOSPC|\[Errno 28\]", re.I)),
)


def disk_full_kind(text: str) -> str:
    """``quota`` (EDQUOT), ``full`` (ENOSPC) or '' for a message or log text."""
    for kind, rx in _WORDS:
        if rx.search(text):
            return kind
    return ""


def disk_full_line(lines: list[str] | tuple[str, ...]) -> str:
    """The last line of ``lines`` that says a file system is full or over quota ('' if none)."""
    for line in reversed(lines):
        if disk_full_kind(line):
            return line.strip()
    return ""


# GNU tools quote with '...' (or with the typographic quotes \u2018...\u2019 in a UTF-8 locale).
_QUOTED_PATH = re.compile("[`'\"\u2018\u201c](/[^`'\"\u2019\u201d]+)[`'\"\u2019\u201d]")
_BARE_PATH = re.compile(r"(?<![\w.])(/[\w.@%+~/-]+)")


def path_in(line: str) -> str:
    """The absolute path a tool's error line names (``cp: error writing '/x/y': ...``), or ''."""
    quoted = _QUOTED_PATH.search(line)
    if quoted:
        return quoted.group(1)
    bare = _BARE_PATH.search(line)
    return bare.group(1).rstrip(":") if bare else ""


# ----------------------------------------------------------------------------------- the probe

_MARK = "@@space"


def space_command(paths: list[str]) -> str:
    """One remote command: the user, ``df -Pk`` of each path's nearest existing directory, and
    the user's quotas where ``lfs`` or ``quota`` exist (each bounded by ``timeout``)."""
    quoted = " ".join(quoting.home_path(p) for p in paths if p) or "~"
    return (
        f'u=$(id -un); printf "{_MARK} user %s\\n" "$u"; printf "{_MARK} home %s\\n" "$HOME"; '
        f"for p in {quoted}; do d=$p; "
        'while [ ! -e "$d" ] && [ "$d" != / ] && [ "$d" != . ]; do d=$(dirname -- "$d"); done; '
        f'printf "{_MARK} df %s\\n" "$p"; timeout 10 df -Pk -- "$d" 2>/dev/null | tail -n +2; '
        f'if command -v lfs >/dev/null 2>&1; then printf "{_MARK} lfs\\n"; '
        'timeout 10 lfs quota -q -u "$u" "$d" 2>/dev/null; fi; done; '
        f'if command -v quota >/dev/null 2>&1; then printf "{_MARK} quota\\n"; '
        'timeout 10 quota -w -u "$u" 2>/dev/null; fi; true'
    )


@dataclass(frozen=True)
class Usage:
    """One ``df -Pk`` row: the file system holding a path."""

    path: str
    """The path asked about."""
    source: str
    """The device or server export (``filer:/export/home``)."""
    mount: str
    used: int
    """Bytes."""
    size: int
    avail: int


@dataclass(frozen=True)
class Quota:
    """One user quota row (``lfs quota`` or ``quota -w``): bytes used and the limit."""

    filesystem: str
    used: int
    limit: int


@dataclass(frozen=True)
class Space:
    """What :func:`space_command` found."""

    user: str = ""
    home: str = ""
    usage: tuple[Usage, ...] = ()
    quotas: tuple[Quota, ...] = ()

    def of(self, path: str) -> Usage | None:
        """The df row of ``path`` (as it was asked: ``~/x`` is the home's ``x``)."""
        if path.startswith("~/") and self.home:
            path = f"{self.home.rstrip('/')}/{path[2:]}"
        elif path == "~":
            path = self.home
        return next((u for u in self.usage if u.path == path), None)


def _quota_row(tokens: list[str]) -> Quota | None:
    # "<fs> <kbytes>[*] <soft> <hard> ..." (lfs quota -q; quota -w): 1 KiB blocks.
    if len(tokens) < 4 or not all(re.fullmatch(r"\d+\*?", t) for t in tokens[1:4]):
        return None
    used, soft, hard = (int(t.rstrip("*")) * 1024 for t in tokens[1:4])
    limit = hard or soft
    return Quota(tokens[0], used, limit) if limit else None


def parse_space(output: str) -> Space:
    """Read :func:`space_command`'s output (lines of other tools are skipped)."""
    user = home = asked = section = ""
    usage: list[Usage] = []
    quotas: list[Quota] = []
    pending_fs = ""
    for line in output.splitlines():
        if line.startswith(_MARK + " "):
            head, _, rest = line[len(_MARK) + 1 :].partition(" ")
            section = head
            if head == "user":
                user = rest.strip()
            elif head == "home":
                home = rest.strip()
            elif head == "df":
                asked = rest
            continue
        tokens = line.split()
        if section == "df" and len(tokens) >= 6 and tokens[1].isdigit() and tokens[2].isdigit():
            size, used, avail = (int(t) * 1024 for t in tokens[1:4])
            usage.append(Usage(asked, tokens[0], " ".join(tokens[5:]), used, size, avail))
        elif section in ("lfs", "quota"):
            if len(tokens) == 1:
                pending_fs = tokens[0]  # a long file system name wraps onto its own line
                continue
            row = _quota_row([pending_fs, *tokens] if pending_fs else tokens)
            pending_fs = ""
            if row is not None:
                quotas.append(row)
    return Space(user, home, tuple(usage), tuple(quotas))


# ----------------------------------------------------------------------------------- sentences


def size_text(n: int, *, exact: bool = False) -> str:
    """``10.0 GiB`` (``exact``: ``10 GiB`` when whole); binary units as df -h prints them."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1024 or unit == "PiB":
            if unit == "B":
                return f"{int(value)} B"
            text = f"{value:.1f}"
            if exact and text.endswith(".0"):
                text = text[:-2]
            return f"{text} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def is_nearly_full(usage: Usage) -> bool:
    """True when a write there is likely to fail: under 1 MiB or 0.1 % free."""
    return usage.avail < max(1 << 20, usage.size // 1000)


def disk_full_sentence(
    kind: str, space: Space, path: str, *, what: str, then: str, user: str = ""
) -> str:
    """One sentence: which file system, whose, the figures, and what to do.

    Args:
        kind: :data:`FULL` or :data:`QUOTA`.
        space: what :func:`space_command` found (may be empty: no figures then).
        path: the path the probe was asked about (a failed write's directory).
        what: the file system's role (``the results file system``, ``your home``).
        then: what to do (``free space there and submit again``).
        user: the cluster user when the probe did not say.
    """
    who = space.user or user or "you"
    usage = space.of(path)
    where = f"{what} ({usage.mount})" if usage else f"{what} ({path})" if path else what
    quota = _quota_for(space, usage)
    if kind == QUOTA or (quota is not None and quota.used >= quota.limit):
        figures = (
            f": {size_text(quota.used)} used of {size_text(quota.limit, exact=True)}"
            if quota
            else ""
        )
        text = f"{where} is over quota for {who}{figures}"
    else:
        figures = (
            f": {size_text(usage.used)} used of {size_text(usage.size, exact=True)}, "
            f"{size_text(usage.avail)} free"
            if usage
            else ""
        )
        text = f"{where} is full for {who}{figures}"
    return f"{text[0].upper()}{text[1:]}; {then}."


def _quota_for(space: Space, usage: Usage | None) -> Quota | None:
    if not space.quotas:
        return None
    if usage is None:
        return space.quotas[0]
    for quota in space.quotas:
        if quota.filesystem in (usage.mount, usage.source):
            return quota
    return None


def role_of(path: str, space: Space, results_root: str) -> str:
    """``your home on the cluster`` or ``the results file system`` for the file system of
    ``path`` (the home's first: that is where enroot keeps its credentials and cache)."""
    usage = space.of(path)
    home = space.of("~")
    results = space.of(results_root)
    if (usage and home and usage.mount == home.mount) or (
        space.home and path.startswith(space.home.rstrip("/") + "/")
    ):
        return "your home on the cluster"
    if (usage and results and usage.mount == results.mount) or (
        results_root and path.startswith(results_root.rstrip("/") + "/")
    ):
        return "the results file system"
    return "the file system"
