"""Host keys: fingerprints and known_hosts entries, and reading a server's key to show it.

The rules (what ``ssh-keygen -lf`` prints, how OpenSSH writes and matches known_hosts lines) are
plain Python, unit-tested on their own; :mod:`tao_slurm_tui.remote.login` uses them to tell an
*unknown* host (no key at all: ask the user to trust it) from a *changed* key (refuse). Only
:func:`fetch_host_key` and :func:`host_key_target` speak SSH (asyncssh): they read the key a
server presents, so the doctor can show its fingerprint before the user trusts it.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import hmac
import os
import re
from pathlib import Path

import asyncssh

from tao_slurm_tui.core.models import HostKeyInfo
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.errors import BadInput
from tao_slurm_tui.remote.dial import failure_reason, within
from tao_slurm_tui.remote.errors import ConnectError, ssh_config_unreadable

DEFAULT_PORT = 22


def split_public_key(public_key: str) -> tuple[str, bytes]:
    """Split an OpenSSH public key line into its type and decoded key blob.

    Args:
        public_key: ``TYPE BASE64 [COMMENT]`` (a ``known_hosts`` line without the host part).

    Raises:
        ValueError: the text is not an OpenSSH public key.
    """
    parts = public_key.strip().split()
    if len(parts) < 2:
        raise ValueError("not an OpenSSH public key line (expected 'TYPE BASE64')")
    key_type, b64 = parts[0], parts[1]
    try:
        blob = base64.b64decode(b64, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("the public key's base64 part is malformed") from None
    # The blob starts with its own type as an SSH string: a cheap sanity check.
    if len(blob) < 4:
        raise ValueError("the public key blob is too short")
    length = int.from_bytes(blob[:4], "big")
    if blob[4 : 4 + length].decode("ascii", "replace") != key_type:
        raise ValueError(f"the public key blob does not match its type {key_type!r}")
    return key_type, blob


def fingerprint(public_key: str) -> str:
    """The SHA256 fingerprint of an OpenSSH public key, as ``ssh-keygen -lf`` prints it.

    Args:
        public_key: ``TYPE BASE64 [COMMENT]``.

    Returns:
        ``SHA256:`` followed by the unpadded base64 SHA-256 digest of the key blob.
    """
    _, blob = split_public_key(public_key)
    digest = hashlib.sha256(blob).digest()
    return "SHA256:" + base64.b64encode(digest).decode("ascii").rstrip("=")


def normalize_public_key(public_key: str) -> str:
    """``TYPE BASE64`` with any comment dropped (how we compare and store keys)."""
    key_type, blob = split_public_key(public_key)
    return f"{key_type} {base64.b64encode(blob).decode('ascii')}"


def host_pattern(host: str, port: int) -> str:
    """The host field OpenSSH writes for ``host``: ``host`` on port 22, else ``[host]:port``."""
    return host if port == DEFAULT_PORT else f"[{host}]:{port}"


def known_hosts_line(host: str, port: int, public_key: str) -> str:
    """One known_hosts line (no newline) trusting ``public_key`` for ``host``:``port``."""
    return f"{host_pattern(host, port)} {normalize_public_key(public_key)}"


def _match_hashed(entry: str, name: str) -> bool:
    # |1|base64(salt)|base64(HMAC-SHA1(salt, name)) as written by `ssh-keygen -H`.
    try:
        _, magic, salt_b64, hash_b64 = entry.split("|")
        if magic != "1":
            return False
        salt = base64.b64decode(salt_b64)
        expected = base64.b64decode(hash_b64)
    except ValueError:
        return False
    actual = hmac.new(salt, name.encode("utf-8"), hashlib.sha1).digest()
    return hmac.compare_digest(actual, expected)


def _glob(pattern: str, name: str) -> bool:
    """OpenSSH wildcard match: only ``*`` and ``?`` are special (not ``[`` of ``[host]:port``)."""
    regex = "".join(
        ".*" if ch == "*" else "." if ch == "?" else re.escape(ch) for ch in pattern.lower()
    )
    # Host names are case-insensitive.
    return re.fullmatch(regex, name.lower(), re.DOTALL) is not None


def _match_patterns(field: str, names: list[str]) -> bool:
    """OpenSSH host-field matching: comma list, ``*``/``?`` wildcards, ``!`` negation, hashes."""
    if field.startswith("|"):
        return any(_match_hashed(field, n) for n in names)
    matched = False
    for pattern in field.split(","):
        negate = pattern.startswith("!")
        if negate:
            pattern = pattern[1:]
        if any(_glob(pattern, n) for n in names):
            if negate:
                return False
            matched = True
    return matched


def keys_for_host(text: str, host: str, port: int, addr: str | None = None) -> list[str]:
    """Public keys (``TYPE BASE64``) that a known_hosts text lists for ``host``:``port``.

    Plain entries only: ``@cert-authority`` and ``@revoked`` lines are ignored, as are lines that
    cannot be parsed. ``addr`` (the peer address) is matched too, as OpenSSH does.
    """
    names = [host_pattern(host, port)]
    if addr and addr != host:
        names.append(host_pattern(addr, port))
    keys: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or line.startswith("@"):
            continue
        parts = line.split()
        if len(parts) < 3 or not _match_patterns(parts[0], names):
            continue
        with contextlib.suppress(ValueError):
            keys.append(normalize_public_key(" ".join(parts[1:3])))
    return keys


def read_known_hosts(path: str | Path) -> str:
    """The text of a known_hosts file; a missing file reads as empty.

    Raises:
        BadInput: the path is a directory or cannot be read.
    """
    file = Path(path).expanduser()
    try:
        return file.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return ""
    except IsADirectoryError:
        raise BadInput(
            f"The known_hosts path {file} is a directory; point known_hosts at a file "
            "(or leave it empty for ~/.ssh/known_hosts)."
        ) from None
    except OSError as exc:
        raise BadInput(
            f"The known_hosts file {file} cannot be read ({exc.strerror}); fix its permissions."
        ) from None


def trust_host_key(known_hosts: str | Path, host: str, port: int, public_key: str) -> None:
    """Append ``public_key`` for ``host``:``port`` to ``known_hosts``.

    Creates the file with mode 0600 (and its directory with mode 0700) when missing; does nothing
    if the exact entry is already there.

    Raises:
        ValueError: ``public_key`` is not an OpenSSH public key line.
    """
    path = Path(known_hosts).expanduser()
    key = normalize_public_key(public_key)
    if key in keys_for_host(read_known_hosts(path), host, port):
        return
    if not path.parent.exists():
        path.parent.mkdir(mode=0o700, parents=True)
    line = known_hosts_line(host, port, key) + "\n"
    # A file whose last line lacks a newline would glue our entry onto it.
    with contextlib.suppress(FileNotFoundError), open(path, "rb") as reader:
        if reader.seek(0, os.SEEK_END) > 0:
            reader.seek(-1, os.SEEK_END)
            if reader.read(1) != b"\n":
                line = "\n" + line
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(fd, "ab") as handle:
        handle.write(line.encode("ascii"))


# ----------------------------------------------------------------------------------- fetching


def config_port(profile: Profile) -> int | tuple[()]:
    """The port argument for asyncssh: ``()`` lets ~/.ssh/config decide (as the login does)."""
    return () if profile.use_ssh_config and profile.port == 22 else profile.port


async def host_key_target(profile: Profile, host: str) -> tuple[str, int]:
    """The (host, port) whose key the connection checks in known_hosts for one login host.

    With ``use_ssh_config`` a Host alias resolves like OpenSSH does (HostName, Port,
    HostKeyAlias), so the doctor looks up, fetches and trusts what the login will verify.

    Raises:
        BadInput: ~/.ssh/config cannot be parsed.
    """
    if not profile.use_ssh_config:
        return host, profile.port
    try:
        options = await asyncssh.SSHClientConnectionOptions.construct(
            config=(),
            host=host,
            port=config_port(profile),
            known_hosts=None,
            client_keys=None,
            agent_path=None,
        )
    except asyncssh.ConfigParseError as exc:
        raise ssh_config_unreadable(exc) from None
    alias = getattr(options, "host_key_alias", None)
    return str(alias or options.host or host), int(options.port or profile.port)


async def fetch_profile_host_key(profile: Profile, host: str) -> HostKeyInfo:
    """:func:`fetch_host_key` with the profile's SSH options (an ~/.ssh/config alias's HostName,
    Port and ProxyJump), reported under the name and port known_hosts must hold.

    Raises:
        ConnectError: the host could not be reached.
        BadInput: ~/.ssh/config cannot be parsed.
    """
    target, port = await host_key_target(profile, host)
    if not profile.use_ssh_config:
        return await fetch_host_key(host, profile.port, profile.connect_timeout)
    info = await fetch_host_key(
        host, config_port(profile), profile.connect_timeout, config=(), shown=(host, port)
    )
    return HostKeyInfo(target, port, info.key_type, info.fingerprint, info.public_key)


async def fetch_host_key(
    host: str,
    port: int | tuple[()] = 22,
    timeout: float = 10,
    *,
    config: tuple[()] | None = None,
    shown: tuple[str, int] | None = None,
) -> HostKeyInfo:
    """Connect just far enough to read a server's host key (to show it before trusting it).

    ``config=()`` applies ~/.ssh/config (``port=()``: its Port); ``shown`` is the (host, port)
    named in messages.

    Raises:
        ConnectError: the host could not be reached or did not finish the key exchange.
        BadInput: ~/.ssh/config cannot be parsed.
    """
    where = "{}:{}".format(*shown) if shown else f"{host}:{port if port != () else 22}"
    key: asyncssh.SSHKey | None = None
    reason = ""
    try:
        key = await within(asyncssh.get_server_host_key(host, port, config=config), timeout)
    except asyncssh.ConfigParseError as exc:
        raise ssh_config_unreadable(exc) from None
    except TimeoutError:
        reason = f"no answer within {timeout:g} s"
    except (OSError, asyncssh.Error) as exc:
        reason = failure_reason(exc)
    if reason:
        raise ConnectError(
            f"Could not read the host key of {where} ({reason}); check the host name and port.",
            [(host, reason)],
        )
    if key is None:
        raise ConnectError(
            f"{where} presented no host key; ask your cluster admins how to verify it.",
            [(host, "no host key")],
        )
    public = normalize_public_key(key.export_public_key("openssh").decode("ascii"))
    at_port = port if isinstance(port, int) else 22
    return HostKeyInfo(host, at_port, public.split()[0], fingerprint(public), public)
