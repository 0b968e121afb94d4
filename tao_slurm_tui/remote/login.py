"""Logging in to ONE login host with a profile's settings, every failure one plain sentence.

:class:`~tao_slurm_tui.remote.connection.Connection` walks the profile's login hosts (failover);
for each it calls :func:`open_host`, which builds the asyncssh options (the profile's
known_hosts as the only trust, its key or the agent and ``~/.ssh`` keys, ``~/.ssh/config``),
dials within the connect timeout, and maps what went wrong:

- a problem only the user can fix (an unknown or changed host key, a refused login, an unusable
  key, a broken ``~/.ssh/config``) raises its :mod:`~tao_slurm_tui.remote.errors` error at once;
- anything the next host may not share (refused, unreachable, timed out) raises
  :class:`HostFailed`, and the connection tries the next host.

Keyboard-interactive challenges (a one-time code after the key) are answered through
:class:`~tao_slurm_tui.remote.prompts.Answering`: the user is asked by the front's prompter, and
a login that stopped at the code says so (:class:`CodeRequired`, :class:`CodeNotGiven`) instead
of blaming the key.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import asyncssh

from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.core.shown import shown_text
from tao_slurm_tui.errors import BadInput
from tao_slurm_tui.remote.dial import Deadline, dial, failure_reason
from tao_slurm_tui.remote.errors import (
    AuthenticationFailed,
    CodeNotGiven,
    CodeRequired,
    HostKeyChanged,
    KeyLoadError,
    RemoteError,
    UnknownHostKey,
    ssh_config_unreadable,
)
from tao_slurm_tui.remote.hostkeys import (
    fingerprint,
    keys_for_host,
    normalize_public_key,
    read_known_hosts,
)
from tao_slurm_tui.remote.keys import check_offered_keys
from tao_slurm_tui.remote.prompts import Answering

LostCallback = Callable[["LoginClient", Exception | None], None]
"""Called when an open connection is lost (with asyncssh's reason, None for a clean close)."""

LOGIN_GRACE = 600.0
"""asyncssh's own login bound (seconds): generous, since a person may be typing a code; the
network part is bounded by the connect timeout (a :class:`Deadline` that pauses while the user
is asked), and sshd's LoginGraceTime bounds the rest."""


class HostFailed(Exception):
    """One login host failed in a way the next host may not share."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        """A few lower-case words (``connection refused``)."""


class LoginClient(asyncssh.SSHClient):
    """asyncssh callbacks: capture an untrusted host key, answer keyboard-interactive challenges
    (:class:`Answering`) and notice a dropped connection."""

    def __init__(self, on_lost: LostCallback, answering: Answering | None = None) -> None:
        self.on_lost = on_lost
        self.answering = answering
        """Who answers keyboard-interactive challenges in this login (None: nobody)."""
        self.presented: tuple[str, str | None, int, str] | None = None
        """(host, addr, port, public key) of a host key known_hosts did not trust."""
        self._kbdint_tries = 0
        self._kbdint_challenged = False

    def kbdint_auth_requested(self) -> str | None:
        # "" = no particular submethods. Taken even without a prompter: the challenge then
        # tells the user what the server wanted (a code) instead of a misleading refusal.
        if self.answering is None or self.answering.declined:
            return None
        # asyncssh asks again after each failed try; a try the server ended without one
        # challenge (keyboard-interactive with no devices: OpenSSH without PAM) would repeat
        # until "too many authentication failures" and the password was never offered.
        if self._kbdint_tries and not self._kbdint_challenged:
            return None
        self._kbdint_tries += 1
        self._kbdint_challenged = False
        return ""

    async def kbdint_challenge_received(
        self, name: str, instructions: str, lang: str, prompts: Any
    ) -> list[str] | None:
        self._kbdint_challenged = True
        if self.answering is None:
            return None
        return await self.answering.answer(name, instructions, prompts)

    def auth_completed(self) -> None:
        if self.answering is not None:
            self.answering.forget()

    def validate_host_public_key(
        self, host: str, addr: str, port: int, key: asyncssh.SSHKey
    ) -> bool:
        # Called only when known_hosts does not trust the key: remember it for the error, refuse.
        public = key.export_public_key("openssh").decode("ascii")
        self.presented = (host, addr, port, normalize_public_key(public))
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.on_lost(self, exc)


def forwarding_options(profile: Profile) -> dict[str, Any]:
    """Agent and X11 forwarding, off unless the profile asks for the agent.

    asyncssh honours ``ForwardAgent`` (and ``ForwardX11Trusted``) from ``~/.ssh/config``: the
    user's agent would be forwarded on every channel, the long-lived shell included, for
    anything running as the user (or root) on the login host to use. The tool never needs
    either; an explicit value wins over the config file.
    """
    return {"agent_forwarding": profile.forward_agent, "x11_forwarding": False}


def connect_options(
    profile: Profile, host: str, *, keepalive_interval: float, password: str | None
) -> dict[str, Any]:
    """The asyncssh options of one login to ``host``.

    Raises:
        BadInput: the known_hosts file has a broken line.
        KeyPermissionError: a key that would be offered is accessible by others.
        KeyLoadError: the profile's key is missing or not a file.
    """
    kh_path = profile.known_hosts_path
    try:
        # Parsed from text we read ourselves so a missing file means "no keys" (asyncssh
        # would otherwise fall back to ~/.ssh/known_hosts) and our own unknown-vs-changed
        # check sees exactly what asyncssh saw.
        known_hosts = asyncssh.import_known_hosts(read_known_hosts(kh_path))
    except ValueError as exc:
        raise BadInput(
            f"The known_hosts file {kh_path} has a broken line ({exc}); fix or delete that "
            "line and try again."
        ) from None
    options: dict[str, Any] = {
        "known_hosts": known_hosts,
        "config": () if profile.use_ssh_config else None,
        "keepalive_interval": keepalive_interval,
        "keepalive_count_max": 3,
        # The connect timeout is applied outside (open_host's Deadline), where the time a person
        # takes to type a one-time code is not counted; asyncssh's own bounds would count it.
        "connect_timeout": None,
        "login_timeout": LOGIN_GRACE,
        "kbdint_auth": True,
        **forwarding_options(profile),
    }
    # With ~/.ssh/config in use, a default port/empty user leave Port/User to the config
    # (an explicit profile value wins, like `ssh -p`).
    if profile.port != 22 or not profile.use_ssh_config:
        options["port"] = profile.port
    if profile.user:
        options["username"] = profile.user
    if profile.ssh_key_path:
        options["client_keys"] = [str(Path(profile.ssh_key_path).expanduser())]
    else:
        # asyncssh, like OpenSSH, offers the IdentityFiles of ~/.ssh/config and the default
        # ~/.ssh/id_* keys; OpenSSH refuses such a key when others can read it, so do we.
        check_offered_keys(profile, host)
    if password is not None:
        options["password"] = password
    return options


async def open_host(
    profile: Profile, host: str, client: LoginClient, options: dict[str, Any]
) -> asyncssh.SSHClientConnection:
    """Log in to ``host`` with ``options`` (:func:`connect_options`).

    The connect timeout bounds the network part; the time the user spends answering a
    keyboard-interactive challenge is not counted.

    Raises:
        HostFailed: the host could not be reached or dropped the handshake (try the next one).
        UnknownHostKey, HostKeyChanged: known_hosts does not trust the host's key.
        CodeRequired: the server asks for a one-time code and nobody can be asked (no terminal).
        CodeNotGiven: the user declined the code, or the server did not accept it.
        AuthenticationFailed: the server refused the key/agent/password.
        KeyLoadError: a key could not be used (passphrase, missing file).
        BadInput: ~/.ssh/config cannot be parsed.
    """
    timeout = profile.connect_timeout
    deadline = Deadline(timeout + 1)
    if client.answering is not None:
        client.answering.deadline = deadline
    try:
        return await dial(host, lambda: client, options, deadline)
    except asyncssh.HostKeyNotVerifiable:
        raise host_key_error(profile, host, client.presented) from None
    except asyncssh.PermissionDenied:
        answering = client.answering
        if answering is not None and answering.wants_user():
            raise code_error(profile, host, answering) from None
        raise auth_error(profile, host) from None
    except (asyncssh.KeyImportError, asyncssh.KeyEncryptionError) as exc:
        raise KeyLoadError(
            f"Cannot use the private key {profile.ssh_key_path or '(default)'} ({exc}); "
            "if it has a passphrase, add it to ssh-agent (ssh-add) and leave SSH_KEY_PATH "
            "empty."
        ) from None
    except FileNotFoundError as exc:
        raise KeyLoadError(
            f"Cannot read {exc.filename or 'a key file'}; fix SSH_KEY_PATH or the IdentityFile "
            "in ~/.ssh/config."
        ) from None
    except asyncssh.ConfigParseError as exc:
        raise ssh_config_unreadable(exc) from None
    except TimeoutError:
        raise HostFailed(f"no answer within {timeout:g} s") from None
    except (OSError, asyncssh.Error) as exc:
        raise HostFailed(failure_reason(exc)) from None
    finally:
        if client.answering is not None:
            client.answering.forget()


def code_error(profile: Profile, host: str, answering: Answering) -> AuthenticationFailed:
    """The login stopped at a keyboard-interactive challenge: why, and what to do."""
    user = profile.user or "your user"
    unanswered = answering.unanswered
    if unanswered is not None:
        asked = "; ".join(repr(shown_text(line.text.strip())) for line in unanswered.lines)
        what = "a one-time code" if unanswered.asks_for_code else "an answer"
        return CodeRequired(
            f"{host} asks {user} for {what} ({asked}) after the key, and there is no terminal "
            "to type it in; run the command in a terminal, or keep the dashboard "
            "(tao-slurm-tui) open for this profile, so that commands started beside it use its "
            "connection without a code.",
            unanswered.lines[0].text,
        )
    if answering.declined:
        return CodeNotGiven(
            f"No one-time code was entered for {user}@{host}, so the login stopped; connect "
            "again when you have the code."
        )
    return CodeNotGiven(
        f"{host} did not accept the one-time code for {user} ({answering.asked} tried); codes "
        "work once and change every 30 s, so wait for the next one and connect again."
    )


def host_key_error(
    profile: Profile, host: str, presented: tuple[str, str | None, int, str] | None
) -> RemoteError:
    """Unknown (no key for the host: the user may trust it) or changed (refused) host key."""
    kh = str(profile.known_hosts_path)
    port = profile.port
    if presented is None:
        # Revoked key, or a certificate problem: never accepted, reported as a change.
        return HostKeyChanged(host, port, "an untrusted or revoked key", kh)
    key_host, addr, port, public = presented
    text = read_known_hosts(kh)
    if keys_for_host(text, key_host, port, addr):
        return HostKeyChanged(key_host, port, fingerprint(public), kh)
    return UnknownHostKey(key_host, port, public.split()[0], fingerprint(public), public, kh)


def auth_error(profile: Profile, host: str) -> AuthenticationFailed:
    """The server refused the login: what to install or set, for this profile."""
    user = profile.user or "your user"
    key = profile.ssh_key_path
    how = (
        f"install the public key {key}.pub in ~/.ssh/authorized_keys of {user} on the cluster "
        "or check SSH_KEY_PATH"
        if key
        else "add your key to ssh-agent or set SSH_KEY_PATH, and make sure its public key is "
        f"in ~/.ssh/authorized_keys of {user} on the cluster"
    )
    if not profile.user:
        # The likeliest cause then: the local user name is not the cluster login.
        how += "; the profile sets no user, so set user (or SLURM_USER) to your cluster login"
    return AuthenticationFailed(f"{host} refused the SSH login as {user}: {how}.")
