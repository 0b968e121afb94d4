"""Errors of the remote layer, each one plain sentence naming the host and what to do.

Re-exported by :mod:`tao_slurm_tui.remote.connection`; the services import them from there.
"""

from __future__ import annotations

from tao_slurm_tui.errors import BadInput, OperationFailed


class RemoteError(OperationFailed):
    """A remote operation failed (connection, command, transfer)."""


class ConnectError(RemoteError):
    """Every login host failed to connect."""

    def __init__(self, message: str, failures: list[tuple[str, str]]) -> None:
        super().__init__(message)
        self.failures = failures
        """``(host, reason)`` for every login host tried, in order."""


class UnknownHostKey(RemoteError):
    """known_hosts has no key for this host: the user must decide whether to trust it."""

    def __init__(
        self,
        host: str,
        port: int,
        key_type: str,
        fingerprint: str,
        public_key: str,
        known_hosts: str,
    ) -> None:
        super().__init__(
            f"The host key of {host}:{port} is not known yet ({key_type} {fingerprint}); "
            f"check that fingerprint with your cluster admins and trust it "
            f"(it is then added to {known_hosts})."
        )
        self.host = host
        """Host the key was presented for."""
        self.port = port
        """SSH port."""
        self.key_type = key_type
        """Key algorithm, e.g. ``ssh-ed25519``."""
        self.fingerprint = fingerprint
        """``SHA256:...`` as ``ssh-keygen -lf`` prints it."""
        self.public_key = public_key
        """``TYPE BASE64``: what :func:`trust_host_key` writes."""
        self.known_hosts = known_hosts
        """The known_hosts file that was checked."""


class HostKeyChanged(RemoteError):
    """The host presented a key different from the one in known_hosts; never accepted."""

    def __init__(self, host: str, port: int, fingerprint: str, known_hosts: str) -> None:
        target = host if port == 22 else f"[{host}]:{port}"
        super().__init__(
            f"WARNING: the host key of {host}:{port} has CHANGED (it now presents {fingerprint}), "
            "which may mean someone is intercepting the connection, so it was refused; if your "
            "cluster admins confirm the change, remove the old entry with "
            f"`ssh-keygen -R '{target}' -f {known_hosts}` and connect again."
        )
        self.host = host
        """Host whose key changed."""
        self.port = port
        """SSH port."""
        self.fingerprint = fingerprint
        """Fingerprint of the key the server presents now."""
        self.known_hosts = known_hosts
        """The known_hosts file holding the old key."""


class KeyPermissionError(BadInput):
    """The private key file is readable by group or others (OpenSSH refuses such keys too)."""

    def __init__(self, path: str, mode: int) -> None:
        super().__init__(
            f"The private key {path} is accessible by other users (mode {mode:04o}); "
            f"run `chmod 600 {path}` and try again."
        )
        self.path = path
        """The key file."""
        self.mode = mode
        """Its permission bits."""


class KeyLoadError(BadInput):
    """The private key file is missing, unreadable, encrypted or not a key."""


class AuthenticationFailed(RemoteError):
    """The server refused every authentication method offered."""


class CodeRequired(AuthenticationFailed):
    """The server asks for a one-time code (keyboard-interactive) and nobody can be asked: no
    terminal (CI, a pipe). Bad input for the CLI (exit 2): it needs a terminal or a shared
    connection."""

    exit_code = 2

    def __init__(self, message: str, asked: str = "") -> None:
        super().__init__(message)
        self.asked = asked
        """What the server asked (its first prompt, as sent)."""


class CodeNotGiven(AuthenticationFailed):
    """The login stopped at the one-time code: the user declined it, or the server refused it."""


class CommandTimeout(RemoteError):
    """A remote command took longer than its timeout."""


class ConnectionLost(RemoteError):
    """The connection dropped while a command ran that is not safe to run again."""


class RemoteFileNotFound(RemoteError):
    """A remote file to read does not exist (or is not readable)."""


def ssh_config_unreadable(exc: Exception) -> BadInput:
    """~/.ssh/config could not be parsed (asyncssh's ``ConfigParseError``)."""
    return BadInput(
        f"~/.ssh/config cannot be read ({exc}); fix that line, or set use_ssh_config = false in "
        "the profile."
    )
