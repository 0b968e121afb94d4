"""Files to and from the login host over the connection's commands (as fabric's ``Transfer``).

No SFTP: a login host may not run the SFTP subsystem, and a command channel already goes through
every shell and jump host the connection does. Writes are atomic (a temp file in the same
directory, renamed over the target): a reader never sees half a file. Reads start at a byte
offset, for incremental log reads, and read only regular files (a job may replace its log with
a FIFO or a link to a device), within :data:`READ_TIMEOUT` seconds where the host has
``timeout``.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from typing import Protocol

from tao_slurm_tui.core.quoting import home_path, quote
from tao_slurm_tui.errors import BadInput
from tao_slurm_tui.remote.errors import RemoteError, RemoteFileNotFound

READ_TIMEOUT = 30
"""Seconds a read may block (a file swapped for a FIFO after the ``test -f``) before it ends."""


class _Result(Protocol):
    @property
    def ok(self) -> bool: ...
    @property
    def stderr(self) -> str: ...
    @property
    def host(self) -> str: ...


class Commands(Protocol):
    """What a transfer needs of a connection."""

    @property
    def host(self) -> str | None: ...

    async def run(
        self, command: str | Sequence[str], *, input: str | bytes | None = None
    ) -> _Result: ...

    async def run_bytes(self, cmd: str) -> tuple[int, bytes, bytes]: ...


class Transfer:
    """Uploads and reads files through one connection's commands."""

    def __init__(self, conn: Commands) -> None:
        self.conn = conn

    async def upload_text(self, path: str, content: str, *, mode: int = 0o644) -> None:
        """Write ``content`` to the remote ``path`` atomically.

        The text goes on stdin into a temp file in the same directory (parent directories are
        created), gets ``mode``, then is renamed over ``path``: readers never see half a file.

        Raises:
            BadInput: ``path`` names a directory.
            RemoteError: the directory cannot be created or the file written.
        """
        parent = posixpath.dirname(path.rstrip("/")) or "."
        name = posixpath.basename(path.rstrip("/"))
        if not name:
            raise BadInput(f"Cannot upload to {path!r}: it names a directory, not a file.")
        qdir = home_path(parent)
        qpath = home_path(path)
        template = qdir + "/" + quote(f".{name}.XXXXXX")
        script = (
            f"mkdir -p -- {qdir} && tmp=$(mktemp {template}) || exit 1; "
            f'if cat > "$tmp" && chmod {mode:o} "$tmp" && mv -f -- "$tmp" {qpath}; '
            'then exit 0; else rm -f -- "$tmp"; exit 1; fi'
        )
        result = await self.conn.run(script, input=content.encode("utf-8"))
        if not result.ok:
            last = next((ln for ln in reversed(result.stderr.splitlines()) if ln.strip()), "")
            raise RemoteError(
                f"Could not write {path} on {result.host}"
                + (f": {last.strip()}" if last else "")
                + "; check that the directory is writable."
            )

    async def read_file(
        self, path: str, *, offset: int = 0, max_bytes: int | None = None, missing_ok: bool = False
    ) -> bytes:
        """Read a remote file from byte ``offset`` on (for incremental log reads).

        Args:
            path: remote path (``~/`` allowed).
            offset: bytes to skip from the start.
            max_bytes: read at most this many bytes (None: to the end).
            missing_ok: return ``b""`` for a missing file instead of raising.

        Raises:
            RemoteFileNotFound: the file does not exist or is not readable (unless
                ``missing_ok``).
        """
        if offset < 0 or (max_bytes is not None and max_bytes < 0):
            raise ValueError("offset and max_bytes must not be negative")
        qpath = home_path(path)
        read = f"$t tail -c +{offset + 1} -- {qpath}"
        if max_bytes is not None:
            read += f" | head -c {max_bytes}"
        script = (
            f't=; if command -v timeout >/dev/null 2>&1; then t="timeout {READ_TIMEOUT}"; fi; '
            f"if test -r {qpath} && test -f {qpath}; then {read}; else exit 66; fi"
        )
        status, out, err = await self.conn.run_bytes(script)
        if status == 66:
            if missing_ok:
                return b""
            raise RemoteFileNotFound(
                f"{path} does not exist on {self.conn.host} (or is not readable)."
            )
        if status != 0:
            raise RemoteError(
                f"Could not read {path} on {self.conn.host}: "
                f"{err.decode('utf-8', 'replace').strip() or f'exit status {status}'}."
            )
        return out
