"""TensorBoard for running TAO trainings, reached through the profile's one SSH connection.

:meth:`TensorBoards.start` runs TensorBoard as a step of the job (``srun --overlap``, in the
job's image: :mod:`tao_slurm_tui.core.tensorboard`) over a channel of the connection, waits for
its start line, and forwards a local port on 127.0.0.1 to it. A session ends when the user stops
it, when the step ends (the job ended: its steps go with it) or when the connection drops; the
listener's callback says so. No process outlives the app: :meth:`TensorBoards.close` stops every
session.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tao_slurm_tui.core.models import JobRecord
from tao_slurm_tui.core.tensorboard import started_at, stop_command, tensorboard_step
from tao_slurm_tui.errors import OperationFailed
from tao_slurm_tui.remote.connection import Connection, RemoteError
from tao_slurm_tui.remote.forward import Listener, forward_local

START_TIMEOUT = 300.0
"""Seconds TensorBoard may take to start (Pyxis may import the job's image first)."""

Ended = Callable[[str, str], None]
"""Called with (job id, why) when a session ends by itself (on the event loop)."""


@dataclass
class TensorBoardSession:
    """One running TensorBoard and its forwarded port."""

    job_id: str
    slurm_job_id: str
    node: str
    remote_port: int
    local_port: int
    process: Any = field(repr=False)
    listener: Listener = field(repr=False)
    watcher: asyncio.Task[None] | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        """Where the browser goes."""
        return f"http://127.0.0.1:{self.local_port}/"


class TensorBoards:
    """The TensorBoard sessions of one connection."""

    def __init__(self, conn: Connection, *, on_end: Ended | None = None) -> None:
        """Sessions over ``conn``.

        Args:
            conn: the profile's connection.
            on_end: told when a session ends without being asked (the job ended).
        """
        self.conn = conn
        self.on_end = on_end
        self.sessions: dict[str, TensorBoardSession] = {}

    async def start(self, job: JobRecord, logdir: str) -> TensorBoardSession:
        """TensorBoard for ``job`` on ``logdir`` (the running session if there is one).

        Raises:
            BadInput: the job is not running.
            OperationFailed: TensorBoard did not start (its last words), or the port could not
                be forwarded.
        """
        running = self.sessions.get(job.id)
        if running is not None:
            return running
        step = tensorboard_step(job, logdir)
        process = await self.conn.create_process(step.command, encoding=None, term_type="dumb")
        try:
            host, port = await asyncio.wait_for(_start_line(process), START_TIMEOUT)
            listener = await forward_local(self.conn, step.node, port)
        except (TimeoutError, OperationFailed, OSError) as exc:
            await self._end_step(process, step.slurm_job_id)
            if isinstance(exc, OperationFailed):
                raise
            why = "it did not start in time" if isinstance(exc, TimeoutError) else str(exc)
            raise OperationFailed(
                f"TensorBoard for {job.id} could not be reached: {why}."
            ) from None
        session = TensorBoardSession(
            job.id, step.slurm_job_id, host, port, listener.get_port(), process, listener
        )
        session.watcher = asyncio.get_running_loop().create_task(self._watch(session))
        self.sessions[job.id] = session
        return session

    async def stop(self, job_id: str) -> bool:
        """Stop ``job_id``'s session; False when it had none."""
        session = self.sessions.pop(job_id, None)
        if session is None:
            return False
        if session.watcher is not None:
            session.watcher.cancel()
        session.listener.close()
        await self._end_step(session.process, session.slurm_job_id)
        return True

    async def close(self) -> None:
        """Stop every session."""
        for job_id in list(self.sessions):
            await self.stop(job_id)

    async def _watch(self, session: TensorBoardSession) -> None:
        """Drain the step's output (a full channel would stall TensorBoard) until the step
        ends by itself (the job ended), then let the port go."""
        with contextlib.suppress(Exception):
            while await session.process.stdout.read(65536):
                pass
            await session.process.wait_closed()
        if self.sessions.get(session.job_id) is session:
            del self.sessions[session.job_id]
            session.listener.close()
            if self.on_end is not None:
                self.on_end(session.job_id, "its job step ended (the job ended or was stopped)")

    async def _end_step(self, process: Any, slurm_job_id: str) -> None:
        """Close the channel (the pty's hang-up ends srun) and cancel the step by name."""
        process.close()
        with contextlib.suppress(RemoteError):
            await self.conn.run(stop_command(slurm_job_id), timeout=30)


async def _start_line(process: Any) -> tuple[str, int]:
    """Read the step's output until TensorBoard's start line.

    Raises:
        OperationFailed: the step ended first (with its last line).
    """
    last = ""
    while True:
        try:
            raw = await process.stdout.readuntil(b"\n")
        except (asyncio.IncompleteReadError, EOFError) as exc:
            tail = getattr(exc, "partial", b"")
            last = tail.decode("utf-8", "replace").strip() or last
            raise OperationFailed(
                f"TensorBoard did not start in the job's allocation: {last or 'no output'}."
            ) from None
        line = raw.decode("utf-8", "replace").strip()
        found = started_at(line)
        if found is not None:
            return found
        if line:
            last = line[:300]
