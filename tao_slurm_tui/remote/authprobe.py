"""Find out *why* a login failed: which methods the server asked for and which prompts it sent.

:class:`~tao_slurm_tui.remote.connection.Connection` only knows that authentication failed. The
onboarding needs more: a site that enforces two-factor authentication sends a keyboard-interactive
prompt such as ``Verification code:`` (after the key or the password was accepted), and no amount
of key installing will make a non-interactive login work there. :func:`probe_login` makes one
login attempt with an instrumented client that answers only password prompts (with the
password it was given, if any) and records every other prompt instead of answering it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncssh

from tao_slurm_tui.core.login_prompt import looks_like_second_factor
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.remote.dial import dial
from tao_slurm_tui.remote.hostkeys import read_known_hosts
from tao_slurm_tui.remote.login import forwarding_options


def _is_password_prompt(prompt: str) -> bool:
    return "password" in prompt.lower() and not looks_like_second_factor(prompt)


@dataclass(frozen=True)
class AuthProbe:
    """What one instrumented login attempt saw."""

    host: str
    """The login host probed."""
    ok: bool
    """The login succeeded (nothing to explain)."""
    methods: tuple[str, ...]
    """Methods the server let the client try: ``password``, ``keyboard-interactive``."""
    prompts: tuple[str, ...]
    """Keyboard-interactive prompts that were not answered (not password prompts)."""
    error: str = ""
    """Why the attempt did not reach authentication (unreachable, host key), if so."""

    @property
    def two_factor(self) -> bool:
        """The server asked for a one-time code / second factor."""
        return any(looks_like_second_factor(p) for p in self.prompts)


class _ProbeClient(asyncssh.SSHClient):
    def __init__(self, password: str | None) -> None:
        self._password = password
        self.methods: list[str] = []
        self.prompts: list[str] = []

    def _take_password(self) -> str | None:
        password, self._password = self._password, None
        return password

    def password_auth_requested(self) -> str | None:
        if "password" not in self.methods:
            self.methods.append("password")
        return self._take_password()

    def kbdint_auth_requested(self) -> str | None:
        if "keyboard-interactive" not in self.methods:
            self.methods.append("keyboard-interactive")
        return ""

    def kbdint_challenge_received(
        self, name: str, instructions: str, lang: str, prompts: Any
    ) -> list[str] | None:
        if not prompts:
            return []  # an info message only
        texts = [str(p[0]) for p in prompts]
        if len(texts) == 1 and _is_password_prompt(texts[0]) and self._password is not None:
            password = self._take_password()
            return [password] if password is not None else None
        self.prompts.extend(t.strip() for t in texts)
        if instructions.strip() and looks_like_second_factor(instructions):
            self.prompts.append(instructions.strip())
        return None  # abort: never guess an answer


async def probe_login(
    profile: Profile, host: str, *, password: str | None = None, timeout: float | None = None
) -> AuthProbe:
    """Make one login attempt to ``host`` and report the methods and prompts the server used.

    The private key of the profile (or the agent) is offered first, then the password (if given)
    for password or keyboard-interactive password prompts. Other prompts are recorded, never
    answered. The password is used at most once and not kept.
    """
    client = _ProbeClient(password)
    del password
    limit = timeout if timeout is not None else profile.connect_timeout
    options: dict[str, Any] = {
        "known_hosts": asyncssh.import_known_hosts(read_known_hosts(profile.known_hosts_path)),
        "config": () if profile.use_ssh_config else None,
        "connect_timeout": limit,
        "login_timeout": limit,
        "password_auth": True,
        "kbdint_auth": True,
        **forwarding_options(profile),
    }
    if profile.port != 22 or not profile.use_ssh_config:
        options["port"] = profile.port
    if profile.user:
        options["username"] = profile.user
    if profile.ssh_key_path and Path(profile.ssh_key_path).expanduser().exists():
        options["client_keys"] = [str(Path(profile.ssh_key_path).expanduser())]
    error = ""
    ok = False
    try:
        conn = await dial(host, lambda: client, options, limit + 1)
    except asyncssh.PermissionDenied:
        pass
    except asyncssh.HostKeyNotVerifiable:
        error = "host key not trusted"
    except TimeoutError:
        error = f"no answer within {limit:g} s"
    except (OSError, asyncssh.Error) as exc:
        error = str(exc).strip() or type(exc).__name__
    else:
        ok = True
        conn.close()
        await conn.wait_closed()
    finally:
        client._password = None
    return AuthProbe(host, ok, tuple(client.methods), tuple(client.prompts), error)
