"""An SSH server (asyncssh, in the test's own event loop) that asks for a one-time code.

It asks as the sandbox's PAM TOTP sshd does: one keyboard-interactive prompt
``'Verification code: '`` with echo off, then, after a right code, a second challenge with no
prompts that must be answered with an empty list. A code works once (:meth:`CodeServer.issue`
hands out fresh ones). Commands run with local ``bash -c`` (:func:`tests.fakesshd.run_with_bash`),
so the real :class:`~tao_slurm_tui.remote.connection.Connection` runs real commands over it. The
asyncssh server has no partial success, so the key is not part of the login here; the sandbox's real
``publickey,keyboard-interactive`` sshd covers that (tests/integration/test_mfa.py).
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncssh

from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.remote.hostkeys import known_hosts_line
from tests.fakesshd import run_with_bash

PROMPT = "Verification code: "


class CodeServer:
    """The server's state: codes, logins, open connections."""

    def __init__(self) -> None:
        self._counter = itertools.count(100000)
        self.valid: set[str] = set()
        """Codes not used yet."""
        self.logins = 0
        """Logins that passed the code."""
        self.challenges = 0
        """Code prompts sent."""
        self.connections: list[asyncssh.SSHServerConnection] = []
        self._server: asyncssh.SSHAcceptor | None = None
        self.port = 0

    def issue(self) -> str:
        """A fresh code (valid once)."""
        code = str(next(self._counter))
        self.valid.add(code)
        return code

    def drop_all(self) -> None:
        """Cut every open connection (a network drop, as the client sees it)."""
        for conn in self.connections:
            conn.abort()
        self.connections.clear()

    async def start(self, tmp_path: Path) -> Profile:
        """Listen on loopback; the profile that logs in here (known_hosts written)."""
        host_key = asyncssh.generate_private_key("ssh-ed25519")
        state = self

        class _Server(asyncssh.SSHServer):
            def __init__(self) -> None:
                self._second = False

            def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
                state.connections.append(conn)

            def begin_auth(self, username: str) -> bool:
                return True

            def kbdint_auth_supported(self) -> bool:
                return True

            def get_kbdint_challenge(self, username: str, lang: str, submethods: str) -> Any:
                state.challenges += 1
                return "", "", "", [(PROMPT, False)]

            def validate_kbdint_response(self, username: str, responses: Any) -> Any:
                answers = list(responses)
                if self._second:
                    return answers == []
                if len(answers) == 1 and answers[0] in state.valid:
                    state.valid.discard(answers[0])
                    self._second = True
                    return "", "", "", []  # PAM's closing challenge: no prompts
                return False

            def auth_completed(self) -> None:
                state.logins += 1

        self._server = await asyncssh.listen(
            "127.0.0.1",
            0,
            server_host_keys=[host_key],
            server_factory=_Server,
            process_factory=run_with_bash,
            encoding=None,
            allow_scp=False,
        )
        self.port = self._server.sockets[0].getsockname()[1]
        kh = tmp_path / "known_hosts"
        kh.write_text(
            known_hosts_line("127.0.0.1", self.port, host_key.export_public_key().decode()) + "\n"
        )
        return Profile(
            user="alice",
            hostnames=["127.0.0.1"],
            port=self.port,
            known_hosts=str(kh),
            use_ssh_config=False,
            partition="p",
            connect_timeout=2,
        )

    def close(self) -> None:
        """Stop listening and cut every connection."""
        if self._server is not None:
            self._server.close()
        self.drop_all()


@contextlib.asynccontextmanager
async def code_site(tmp_path: Path) -> AsyncIterator[tuple[CodeServer, Profile]]:
    """A code-asking login host on loopback and the profile that logs in there; cut at the end."""
    server = CodeServer()
    profile = await server.start(tmp_path)
    try:
        yield server, profile
    finally:
        server.close()
