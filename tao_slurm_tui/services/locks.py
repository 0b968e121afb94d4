"""Cross-process locks, files next to the state DB: the TUI and CLI verbs run at the same time.

- :class:`SubmitLock`, one per job being submitted: held by the submitting process from the
  first remote write to the stored result, so a monitor (in any process) reconciles a
  "submitting" record only when no live process still holds it.
- :class:`RetryLock`, one per state DB: makes the monitor's decide-and-resubmit step and every
  cancel exclusive across processes, so a job is never retried twice or retried while cancelled.

Both are ``flock`` locks: the kernel releases them when the holder dies, so a crash never leaves
one behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
from collections.abc import AsyncIterator
from pathlib import Path

from tao_slurm_tui.services.store import JobStore


class SubmitLock:
    """An exclusive flock held by the process submitting one job, released on exit or death."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    async def acquire(self) -> None:
        """Wait for the lock (another process submitting the same name finishes first)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            await asyncio.to_thread(fcntl.flock, fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def release(self) -> None:
        """Release (and remove) the lock file."""
        if self._fd is not None:
            with contextlib.suppress(OSError):
                self.path.unlink()
            os.close(self._fd)
            self._fd = None

    def held_elsewhere(self) -> bool:
        """True while a live process holds the lock (its submit is still in flight)."""
        try:
            fd = os.open(self.path, os.O_RDWR)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        finally:
            os.close(fd)
        return False


def submit_lock(store: JobStore, profile_name: str, job_id: str) -> SubmitLock:
    """The submit lock of one job: a file next to the state DB."""
    return SubmitLock(Path(f"{store.path}.submitting") / f"{profile_name}--{job_id}.lock")


class RetryLock:
    """The cross-process retry/cancel lock (flock on one file next to the state DB)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        """The lock file (created on first use)."""

    @contextlib.asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        """Hold the lock for the ``async with`` block (waiting in a thread, not the loop)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            await asyncio.to_thread(fcntl.flock, fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock


def retry_lock(store: JobStore) -> RetryLock:
    """The retry/cancel lock of ``store``'s state DB."""
    path = getattr(store, "path", None)  # (a stand-in store in a test may have none)
    if path:
        return RetryLock(f"{path}.retry.lock")
    from tao_slurm_tui.config import state_db_path

    return RetryLock(f"{state_db_path()}.retry.lock")
