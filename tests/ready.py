"""Waiting for a server the tests start until it really serves, not until it seems to.

A file or a socket that exists is not a server that answers: ``ssh-agent -a SOCK`` creates its
socket file before it listens on it, so an ``ssh-add`` in between gets "Error connecting to agent:
Connection refused" (the first CI run on a fresh machine failed exactly so). A TCP port that
accepts is not yet an SSH server either. Every wait here asks the server a question it answers
only when it serves: the agent lists its keys, sshd sends its identification line.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Callable

DEFAULT_TIMEOUT = 15.0
"""Seconds a server gets to start serving (a loaded CI machine is slow, a dead one is dead)."""


class NotReady(AssertionError):
    """The server did not serve in time, or its process ended first."""


def wait_until(
    ready: Callable[[], bool],
    what: str,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    alive: Callable[[], bool] | None = None,
    detail: Callable[[], str] | None = None,
) -> None:
    """Poll ``ready()`` until it is true.

    Args:
        ready: the question the server answers only when it serves.
        what: the server, for the message (``ssh-agent on /tmp/x/agent.sock``).
        timeout: seconds before giving up.
        alive: False once the server's process ended (no point waiting then).
        detail: more to say on failure (the server's log).

    Raises:
        NotReady: not serving within ``timeout``, or the process ended.
    """
    deadline = time.monotonic() + timeout
    pause = 0.02
    while not ready():
        ended = alive is not None and not alive()
        if ended or time.monotonic() > deadline:
            why = "its process ended" if ended else f"not within {timeout:g} s"
            more = detail() if detail is not None else ""
            raise NotReady(f"{what} did not start serving ({why}){': ' + more if more else ''}")
        time.sleep(pause)
        pause = min(pause * 2, 0.2)


def ssh_agent_answers(socket_path: str) -> bool:
    """True when the agent at ``socket_path`` answers a request (``ssh-add -l``: 0 with keys,
    1 without; 2 when it cannot be reached)."""
    done = subprocess.run(
        ["ssh-add", "-l"],
        env={**os.environ, "SSH_AUTH_SOCK": socket_path},
        capture_output=True,
        timeout=10,
        check=False,
    )
    return done.returncode in (0, 1)


def ssh_banner(host: str, port: int, timeout: float = 2.0) -> bool:
    """True when an SSH server at ``host``:``port`` sends its identification line
    (``SSH-2.0-...``, RFC 4253 4.2); a port that only accepts TCP is not enough."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as conn:
            conn.settimeout(timeout)
            received = b""
            # The server may send other lines before the identification line (RFC 4253).
            while b"\n" not in received or not _has_ssh_line(received):
                chunk = conn.recv(256)
                if not chunk or len(received) > 8192:
                    return False
                received += chunk
            return True
    except OSError:
        return False


def _has_ssh_line(data: bytes) -> bool:
    return any(line.startswith(b"SSH-") for line in data.split(b"\n")[:-1])
