"""Where the state DB file lives and how it may be used there: the file system under it, the
journal mode that is safe on it, a damaged file moved aside, and who holds a lock on it.

SQLite's WAL mode keeps its index in shared memory (``state.db-shm``, mmap'ed): processes on two
machines sharing one NFS home each see their own copy, so WAL there can lose or corrupt data
(sqlite.org/wal.html, "WAL does not work over a network filesystem"). The rollback journal
(``journal_mode=DELETE``) relies only on POSIX advisory locks, which NFS (NLM), SMB, Lustre,
GPFS and BeeGFS carry between machines. So: WAL on a local disk; DELETE with ``synchronous=FULL``
on a network file system, with one notice; and where the mount says its locks stay on this
machine (NFS ``local_lock=all``/``nolock``, sshfs) the notice says so too: such a DB is safe from
one machine at a time only, or at a local path (``TAO_SLURM_TUI_STATE_DB``).
"""

from __future__ import annotations

import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from tao_slurm_tui.errors import OperationFailed

NETWORK_FS_TYPES = frozenset(
    {
        "nfs",
        "nfs4",
        "cifs",
        "smb3",
        "smbfs",
        "fuse.sshfs",
        "sshfs",
        "lustre",
        "gpfs",
        "beegfs",
        "ceph",
        "fuse.ceph",
        "fuse.glusterfs",
        "glusterfs",
        "afs",
        "ocfs2",
        "gfs2",
        "9p",
        "fuse.s3fs",
        "fuse.rclone",
        "davfs",
        "fuse.juicefs",
        "wekafs",
        "panfs",
    }
)
"""File system types (as /proc/mounts names them) that other machines may share."""

_LOCAL_LOCK_TYPES = frozenset({"fuse.sshfs", "sshfs", "9p", "fuse.s3fs", "fuse.rclone", "davfs"})
"""Network file systems whose locks never reach the server (each machine locks on its own)."""

MOUNTS = Path("/proc/self/mounts")


@dataclass(frozen=True)
class Mount:
    """The mount a path lives on."""

    point: str
    fstype: str
    source: str = ""
    options: tuple[str, ...] = ()

    @property
    def network(self) -> bool:
        """True for a file system other machines may share (NFS, SMB, Lustre, sshfs, ...)."""
        return self.fstype in NETWORK_FS_TYPES or self.fstype.startswith("nfs")

    @property
    def local_locks(self) -> bool:
        """True when locks on this network file system stay on this machine."""
        if self.fstype in _LOCAL_LOCK_TYPES:
            return True
        return self.fstype.startswith("nfs") and (
            "nolock" in self.options or "local_lock=all" in self.options
        )


def _unescape(field: str) -> str:
    # /proc/mounts writes space, tab, newline and backslash in octal (\040 ...).
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and field[i + 1 : i + 4].isdigit():
            out.append(chr(int(field[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def parse_mounts(text: str) -> list[Mount]:
    """The mounts of a ``/proc/mounts`` text, in its order (later ones cover earlier ones)."""
    mounts = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 4:
            continue
        source, point, fstype, options = fields[:4]
        mounts.append(Mount(_unescape(point), fstype, _unescape(source), tuple(options.split(","))))
    return mounts


def _resolved(path: Path) -> Path:
    """``path`` with the symlinks of its existing part resolved (the DB may not exist yet)."""
    path = Path(os.path.abspath(path))
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate.resolve() / path.relative_to(candidate)
    return path


def mount_of(path: str | os.PathLike[str], mounts: list[Mount] | None = None) -> Mount | None:
    """The mount holding ``path`` (the longest mount point above it; the last mounted wins).

    Args:
        path: a file or directory (need not exist yet).
        mounts: the mount table; default this machine's ``/proc/self/mounts`` (None where
            there is none, e.g. macOS: treated as local).
    """
    if mounts is None:
        try:
            mounts = parse_mounts(MOUNTS.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            return None
    where = str(_resolved(Path(path)))
    best: Mount | None = None
    for mount in mounts:
        point = mount.point.rstrip("/") or "/"
        inside = where == point or where.startswith(point + "/") or point == "/"
        if inside and (best is None or len(point) >= len(best.point.rstrip("/") or "/")):
            best = mount
    return best


@dataclass(frozen=True)
class JournalChoice:
    """How the state DB is opened on its file system."""

    mode: str
    """``wal`` or ``delete``."""
    synchronous: str
    """``NORMAL`` (WAL) or ``FULL`` (a rollback journal on a network file system)."""
    notice: str
    """One sentence for the user ('' on a local disk)."""


def journal_choice(db: Path, mount: Mount | None) -> JournalChoice:
    """WAL on a local disk; a rollback journal on a network file system, with the notice."""
    if mount is None or not mount.network:
        return JournalChoice("wal", "NORMAL", "")
    notice = (
        f"The state database {db} is on a network file system ({mount.fstype} at "
        f"{mount.point}), where SQLite's WAL mode is not safe, so it uses a rollback journal"
    )
    if mount.local_locks:
        notice += (
            "; its locks do not reach other machines, so use tao-slurm-tui from one machine at "
            "a time, or set TAO_SLURM_TUI_STATE_DB to a path on a local disk."
        )
    else:
        notice += " (every machine sharing this home sees the same jobs)."
    return JournalChoice("delete", "FULL", notice)


# ----------------------------------------------------------------------------------- a damaged file

SIDE_FILES = ("-wal", "-shm", "-journal")


def move_aside(path: Path, *, now: float | None = None) -> Path:
    """Rename a damaged DB (and its journal files) to ``<name>.corrupt-<time>``; never deletes.

    Returns:
        The new path of the database file.
    """
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(time.time() if now is None else now))
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
    os.replace(path, target)
    for suffix in SIDE_FILES:
        side = Path(f"{path}{suffix}")
        if side.exists():
            os.replace(side, Path(f"{target}{suffix}"))
    return target


# ----------------------------------------------------------------------------------- lock holders

PROC_LOCKS = Path("/proc/locks")


def lock_holders(path: Path, locks_text: str | None = None) -> list[tuple[int, str]]:
    """(pid, program) of the processes on this machine holding a lock on ``path`` or its
    journal files, from ``/proc/locks`` (empty where there is none, or on another machine)."""
    try:
        text = PROC_LOCKS.read_text() if locks_text is None else locks_text
    except OSError:
        return []
    inodes: set[tuple[int, int, int]] = set()
    for candidate in (path, *(Path(f"{path}{s}") for s in SIDE_FILES)):
        try:
            st = candidate.stat()
        except OSError:
            continue
        inodes.add((os.major(st.st_dev), os.minor(st.st_dev), st.st_ino))
    holders: dict[int, str] = {}
    for line in text.splitlines():
        fields = line.replace("->", "").split()
        # "1: POSIX  ADVISORY  WRITE 1234 08:01:5678 1073741824 1073742335"
        if len(fields) < 6 or not fields[4].isdigit():
            continue
        parts = fields[5].split(":")
        if len(parts) != 3:
            continue
        try:
            key = (int(parts[0], 16), int(parts[1], 16), int(parts[2]))
        except ValueError:
            continue
        pid = int(fields[4])
        if key in inodes and pid != os.getpid():
            holders[pid] = _program(pid)
    return sorted(holders.items())


def _program(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"


# ----------------------------------------------------------------------------------- errors

_DAMAGED = ("file is not a database", "malformed", "file is encrypted", "corrupt")


def is_damaged(exc: sqlite3.DatabaseError) -> bool:
    """True when SQLite says the file itself is damaged (not locked, full or unwritable)."""
    text = str(exc).lower()
    return any(word in text for word in _DAMAGED)


def check_integrity(db: sqlite3.Connection) -> None:
    """SQLite's quick check of an existing file (pages and indexes, not the rows' contents).

    Raises:
        sqlite3.DatabaseError: the file is damaged ("database disk image is malformed").
    """
    result = [str(row[0]) for row in db.execute("PRAGMA quick_check(3)").fetchall()]
    if result != ["ok"]:
        raise sqlite3.DatabaseError(f"database disk image is malformed: {'; '.join(result)}")


def db_error(path: Path, exc: sqlite3.DatabaseError, busy_ms: int) -> OperationFailed:
    """One sentence for a database failure, with the advice that fits its cause."""
    text = str(exc)
    if isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text):
        holders = lock_holders(path)
        who = (
            "by " + ", ".join(f"process {pid} ({name})" for pid, name in holders)
            if holders
            else "by another tao-slurm-tui (or a program reading it)"
        )
        return OperationFailed(
            f"The state database {path} stayed locked for {busy_ms // 1000} s {who}; wait for "
            "it to finish (or end it) and try again."
        )
    if isinstance(exc, sqlite3.OperationalError) and (
        "disk" in text or "readonly" in text or "unable to open" in text
    ):
        return OperationFailed(
            f"The state database {path} cannot be written ({text}); check the free space and "
            "the directory's permissions."
        )
    return OperationFailed(
        f"The state database {path} cannot be used ({text}); move it aside and retry."
    )
