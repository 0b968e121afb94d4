"""The fixed HOME of the snapshots and the README screenshots.

The doctor names the SSH key and known_hosts by their full path, so a picture of the set-up
screen is the same on every machine and run only with the same HOME. Every snapshot writes the
same key pair there (derived from a fixed seed: a key for pictures, trusted nowhere), whole
files replaced at once, so parallel runs cannot see half a file.
"""

from __future__ import annotations

import os
from pathlib import Path

import asyncssh
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

SNAPSHOT_HOME = Path("/tmp/tao-slurm-tui-snapshots")
"""The snapshots' HOME: the doctor names the SSH key and known_hosts by their full path, so it
must be the same on every machine and run. Every snapshot writes the same key there."""

_SNAPSHOT_KEY_SEED = b"tao-slurm-tui snapshot-only key!"


def snapshot_home() -> Path:
    """:data:`SNAPSHOT_HOME` with its (fixed) key pair; safe against parallel runs: the files
    are replaced whole, and only when they do not hold that key."""
    key = SNAPSHOT_HOME / ".ssh" / "id_ed25519"
    private = asyncssh.import_private_key(
        Ed25519PrivateKey.from_private_bytes(_SNAPSHOT_KEY_SEED).private_bytes(
            Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()
        )
    )
    public = private.export_public_key("openssh")
    pub = key.with_suffix(".pub")
    if not pub.exists() or pub.read_bytes() != public or key.stat().st_mode & 0o077:
        key.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = key.with_name(f".{os.getpid()}.tmp")
        private.write_private_key(str(tmp))
        tmp.chmod(0o600)
        tmp.replace(key)
        tmp.write_bytes(public)
        tmp.replace(pub)
    return SNAPSHOT_HOME
