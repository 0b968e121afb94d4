"""Private keys checked before connecting, as OpenSSH checks them.

OpenSSH refuses a private key that group or others can read ("UNPROTECTED PRIVATE KEY FILE").
asyncssh would use it all the same; we refuse it first, with the ``chmod 600`` that fixes it:
the profile's key, and otherwise every key asyncssh would offer (the ``IdentityFile`` entries of
``~/.ssh/config`` and the default ``~/.ssh/id_*``).
"""

from __future__ import annotations

import getpass
import logging
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import cast

import asyncssh

from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.remote.errors import KeyLoadError, KeyPermissionError

log = logging.getLogger(__name__)

DEFAULT_IDENTITIES = (
    "id_ed25519_sk",
    "id_ecdsa_sk",
    "id_ed448",
    "id_ed25519",
    "id_ecdsa",
    "id_rsa",
)
"""Private keys in ``~/.ssh`` that asyncssh (like OpenSSH) offers when no key is configured."""


def check_key_permissions(path: str | Path) -> None:
    """Refuse a private key that group or others can access, as OpenSSH does.

    Raises:
        KeyPermissionError: group/others may access it; the message holds ``chmod 600 PATH``.
        KeyLoadError: the file does not exist or is not a regular file.
    """
    key = Path(path).expanduser()
    try:
        info = key.stat()
    except FileNotFoundError:
        raise KeyLoadError(
            f"The private key {key} does not exist; fix SSH_KEY_PATH (the profile's ssh_key_path) "
            "or leave it empty to use ssh-agent and the keys in ~/.ssh."
        ) from None
    except OSError as exc:
        raise KeyLoadError(f"Cannot read the private key {key} ({exc.strerror}).") from None
    if not stat.S_ISREG(info.st_mode):
        raise KeyLoadError(
            f"The private key {key} is not a regular file; point SSH_KEY_PATH at it."
        )
    if info.st_mode & 0o077:
        raise KeyPermissionError(str(key), stat.S_IMODE(info.st_mode))


def check_offered_keys(profile: Profile, host: str) -> None:
    """Without a key in the profile: check every key asyncssh would offer to ``host``.

    Raises:
        KeyPermissionError: one of them is accessible by group or others.
        KeyLoadError: one of them is not a regular file.
    """
    identities = config_identity_files(profile, host) if profile.use_ssh_config else []
    for identity in [*identities, *default_identity_files()]:
        if identity.exists():
            check_key_permissions(identity)


def config_identity_files(profile: Profile, host: str) -> list[Path]:
    """IdentityFile entries ``~/.ssh/config`` gives ``host`` (to check their permissions)."""
    config_file = Path("~/.ssh/config").expanduser()
    if not config_file.is_file():
        return []
    try:
        from asyncssh.config import SSHClientConfig

        config = SSHClientConfig.load(
            None,
            [config_file],
            False,
            False,
            False,
            getpass.getuser(),
            profile.user or (),
            host,
            profile.port if profile.port != 22 else (),
        )
        files = cast(Sequence[object], config.get("IdentityFile", ()) or ())
    except (OSError, ValueError, KeyError, TypeError, asyncssh.Error) as exc:
        # asyncssh reports a broken config itself when connecting; here it only
        # means we cannot pre-check permissions.
        log.debug("cannot pre-read ~/.ssh/config: %s", exc)
        return []
    return [Path(str(f)).expanduser() for f in files]


def default_identity_files() -> list[Path]:
    """The :data:`DEFAULT_IDENTITIES` in ``~/.ssh``."""
    ssh_dir = Path("~/.ssh").expanduser()
    return [ssh_dir / name for name in DEFAULT_IDENTITIES]
