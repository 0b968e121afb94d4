"""A local port forwarded over the profile's one SSH connection (``ssh -L``, asyncssh's
``forward_local_port``): bound to 127.0.0.1 only, so nobody else on the workstation's network
reaches what it forwards to."""

from __future__ import annotations

from typing import Any, Protocol

from tao_slurm_tui.remote.connection import Connection

LOCALHOST = "127.0.0.1"


class Listener(Protocol):
    """What asyncssh's ``SSHListener`` gives (the fake cluster's stand-in too)."""

    def get_port(self) -> int: ...

    def close(self) -> None: ...

    async def wait_closed(self) -> None: ...


async def forward_local(connection: Connection, host: str, port: int) -> Listener:
    """Listen on 127.0.0.1 (a free port) and forward each connection to ``host:port`` as seen
    from the login host.

    Raises:
        RemoteError: the connection could not be opened (see ``Connection.connect``).
    """
    # The connection's own SSH client (private: the forward is the connection's other use).
    ssh: Any = await connection._ensure()
    listener: Listener = await ssh.forward_local_port(LOCALHOST, 0, host, port)
    return listener
