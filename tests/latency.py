"""A TCP proxy on 127.0.0.1 that delays every chunk by a fixed time in each direction.

Used by the latency test and ``bench/poll.py`` to put a known round-trip time between the client
and the sandbox sshd: with ``delay`` per direction, every round trip costs at least
``2 * delay`` more than without the proxy.

It also counts round trips exactly, without timing: :meth:`DelayProxy.requests` is the number of
times the client sent something after the server had last spoken -- each one a request the
client then waits on (an exec costs two: open the channel, then run the command).
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.remote.hostkeys import trust_host_key
from tests import sandbox


class DelayProxy:
    """Forward 127.0.0.1:<port> to ``target`` with ``delay`` seconds added in each direction."""

    def __init__(self, delay: float, target: tuple[str, int] = (sandbox.HOST, sandbox.PORT)):
        self.delay = delay
        """Seconds added to every chunk, each way (the RTT grows by twice this)."""
        self.target = target
        self.port = 0
        """The port it listens on (after :meth:`start`)."""
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.directions: list[bool] = []
        """One entry per chunk as it arrived: True client → server, False server → client."""

    def requests(self, since: int = 0) -> int:
        """Client→server bursts among the chunks since index ``since`` of :attr:`directions`
        (a burst starts when the client sends after the server spoke, or first)."""
        count, previous = 0, False
        for upward in self.directions[since:]:
            if upward and not previous:
                count += 1
            previous = upward
        return count

    @property
    def rtt(self) -> float:
        """The round-trip time the proxy adds."""
        return 2 * self.delay

    async def start(self) -> DelayProxy:
        """Listen on a free port of 127.0.0.1."""
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self

    async def close(self) -> None:
        """Stop listening and cut every forwarded connection."""
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, OSError):
                await task
        if self._server is not None:
            await self._server.wait_closed()

    async def __aenter__(self) -> DelayProxy:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def profile(self, known_hosts: Path, **overrides: object) -> Profile:
        """A sandbox profile that connects through this proxy (its known_hosts trusts the
        sandbox host key under the proxy's port)."""
        trust_host_key(
            known_hosts, sandbox.HOST, self.port, sandbox.HOST_KEY_PUB.read_text(encoding="utf-8")
        )
        return sandbox.sandbox_profile(port=self.port, known_hosts=str(known_hosts), **overrides)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            self._tasks.discard(task)
            return
        try:
            await asyncio.gather(
                self._pump(reader, up_writer, True), self._pump(up_reader, writer, False)
            )
        except asyncio.CancelledError:
            pass  # close() cut this connection: a normal end, not an error to report
        finally:
            for w in (writer, up_writer):
                w.close()
            self._tasks.discard(task)

    async def _pump(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, upward: bool
    ) -> None:
        """Copy one direction, each chunk released ``delay`` after it arrived (order kept)."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def release() -> None:
            while True:
                due, data = await queue.get()
                if not data:
                    with contextlib.suppress(OSError):
                        writer.write_eof()
                    return
                wait = due - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                writer.write(data)
                await writer.drain()

        sender = asyncio.create_task(release())
        try:
            while True:
                data = await reader.read(65536)
                if data:
                    self.directions.append(upward)
                queue.put_nowait((loop.time() + self.delay, data))
                if not data:
                    break
            await sender
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            sender.cancel()
            with contextlib.suppress(asyncio.CancelledError, OSError):
                await sender
