"""First-time SSH set-up, without a shell: key pair, key install, host trust, permissions.

What ``ssh-keygen``, ``ssh-copy-id`` and ``ssh-keyscan`` would do, done by the program so a user
who never set up key-based SSH can click through it (the TUI's onboarding screen) or script it.
Every step is separate and does nothing the caller did not ask for:

* :func:`generate_key` — an ed25519 pair (private 0600, public 0644); never overwrites.
* :func:`install_public_key` — one login with the user's password (used once, never stored),
  appends the public key to ``~/.ssh/authorized_keys`` only if absent (``~/.ssh`` 0700, file
  0600). The key text goes on stdin, so nothing user-supplied is ever parsed by a shell.
* :func:`fetch_host_keys` then :func:`trust_host` — show the SHA256 fingerprint and key type,
  write known_hosts only after the user confirmed.
* :func:`fix_key_permissions` — ``chmod 600``, only when asked.
* :func:`verify_key_login` — a key-only login per host.

Sites that demand a second factor on every login get :class:`TwoFactorRequired`, whose message
explains the ssh-agent route; :func:`remediation_prompt` is the platform's manual recipe.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import socket
import stat
from dataclasses import dataclass
from pathlib import Path

import asyncssh

from tao_slurm_tui.core.models import HostKeyInfo
from tao_slurm_tui.core.profile import DEFAULT_KNOWN_HOSTS, Profile
from tao_slurm_tui.core.shown import shown_text
from tao_slurm_tui.errors import BadInput, OperationFailed
from tao_slurm_tui.remote.access import SSH, ClusterAccess
from tao_slurm_tui.remote.connection import (
    AuthenticationFailed,
    CodeRequired,
    CommandResult,
    Connection,
    RemoteError,
    UnknownHostKey,
)
from tao_slurm_tui.remote.hostkeys import (
    fingerprint,
    normalize_public_key,
    trust_host_key,
)

DEFAULT_KEY = "~/.ssh/id_ed25519"
"""Where a new key goes when the profile names none."""

AUTHORIZE_SCRIPT = r"""set -u
umask 077
mkdir -p "$HOME/.ssh" || exit 3
chmod 700 "$HOME/.ssh" || exit 3
f="$HOME/.ssh/authorized_keys"
blob="" line=""
IFS= read -r blob || exit 4
IFS= read -r line || [ -n "$line" ] || exit 4
[ -n "$blob" ] && [ -n "$line" ] || exit 4
touch "$f" && chmod 600 "$f" || exit 5
if grep -qF -- "$blob" "$f"; then echo present; exit 0; fi
if [ -s "$f" ] && [ -n "$(tail -c 1 "$f")" ]; then printf '\n' >> "$f" || exit 5; fi
printf '%s\n' "$line" >> "$f" || exit 5
echo added
"""
"""Run as ``bash -c AUTHORIZE_SCRIPT``; stdin: ``TYPE BASE64`` then the full public key line."""


class TwoFactorRequired(OperationFailed):
    """The site asks for a one-time code on every login: key-only login cannot work alone."""


@dataclass(frozen=True)
class GeneratedKey:
    """A freshly generated key pair."""

    path: Path
    """Private key (mode 0600)."""
    public_path: Path
    """Public key (``path`` + ``.pub``, mode 0644)."""
    public_key: str
    """The public key line (``ssh-ed25519 BASE64 COMMENT``)."""
    fingerprint: str
    """``SHA256:...`` as ``ssh-keygen -lf`` prints it."""


@dataclass(frozen=True)
class KeyInstall:
    """Outcome of installing the public key on one login host."""

    host: str
    """The login host."""
    added: bool
    """True when the key was appended; False when it was already there."""


@dataclass(frozen=True)
class LoginCheck:
    """Outcome of a key-only login to one login host."""

    host: str
    """The login host."""
    ok: bool
    """Key-only login worked."""
    reason: str = ""
    """Why not, one sentence (empty when ok)."""
    error: str = ""
    """Class name of the error (``AuthenticationFailed``, ``UnknownHostKey``, ...), for the UI."""
    two_factor: bool = False
    """The server asked for a one-time code."""


# ----------------------------------------------------------------------------------- paths


def key_path(profile: Profile) -> Path:
    """The profile's private key path, or ``~/.ssh/id_ed25519`` when it names none."""
    return Path(profile.ssh_key_path or DEFAULT_KEY).expanduser()


def known_hosts_path(profile: Profile) -> Path:
    """The known_hosts file the connection verifies against for this profile."""
    return profile.known_hosts_path


def _first_host(profile: Profile, host: str | None) -> str:
    if host is None:
        if not profile.hostnames:
            raise BadInput("The profile has no login host; set hostnames first.")
        host = profile.hostnames[0]
    return host


# ----------------------------------------------------------------------------------- key pair


def generate_key(
    path: str | Path | None = None,
    *,
    passphrase: str | None = None,
    comment: str | None = None,
) -> GeneratedKey:
    """Generate an ed25519 key pair at ``path`` (default ``~/.ssh/id_ed25519``).

    The private key is written with mode 0600 (OpenSSH format, encrypted when ``passphrase`` is
    given), the public key next to it as ``.pub`` with mode 0644; a missing parent directory is
    created with mode 0700. Existing files are never overwritten.

    Raises:
        BadInput: the private or public key file already exists.
        OperationFailed: the files could not be written.
    """
    target = Path(path or DEFAULT_KEY).expanduser()
    public_path = target.with_name(target.name + ".pub")
    for existing in (target, public_path):
        if existing.exists() or existing.is_symlink():
            raise BadInput(
                f"{existing} already exists and is never overwritten; use that key "
                "(set ssh_key_path to it) or choose another path."
            )
    if not comment:
        comment = f"{getpass.getuser()}@{socket.gethostname()} (tao-slurm-tui)"
    key = asyncssh.generate_private_key("ssh-ed25519", comment=comment)
    if passphrase:
        try:
            private = key.export_private_key("openssh", passphrase=passphrase)
        except asyncssh.KeyExportError:
            raise OperationFailed(
                "Cannot encrypt the key with a passphrase here (the bcrypt package is missing); "
                "install bcrypt or leave the passphrase empty."
            ) from None
    else:
        private = key.export_private_key("openssh")
    del passphrase
    public = key.export_public_key("openssh")
    try:
        if not target.parent.exists():
            target.parent.mkdir(mode=0o700, parents=True)
        _write_new(target, private, 0o600)
        try:
            _write_new(public_path, public, 0o644)
        except BaseException:
            target.unlink(missing_ok=True)
            raise
    except FileExistsError as exc:
        raise BadInput(f"{exc.filename} already exists and is never overwritten.") from None
    except OSError as exc:
        raise OperationFailed(
            f"Could not write the key pair {target}: {exc.strerror}; check the directory."
        ) from None
    line = public.decode("ascii").strip()
    return GeneratedKey(target, public_path, line, fingerprint(line))


def _write_new(path: Path, data: bytes, mode: int) -> None:
    # O_EXCL: a file that appeared meanwhile is not overwritten; fchmod: the umask may differ.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb", closefd=False) as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    finally:
        os.close(fd)


def read_public_key(private_path: str | Path, *, passphrase: str | None = None) -> str:
    """The public key line of a private key: its ``.pub`` file, or derived from the key.

    Raises:
        BadInput: neither a readable ``.pub`` nor a loadable private key exists.
    """
    path = Path(private_path).expanduser()
    pub = path.with_name(path.name + ".pub")
    with contextlib.suppress(FileNotFoundError):
        text = pub.read_text(encoding="ascii", errors="replace").strip()
        if text:
            try:
                normalize_public_key(text)
            except ValueError:
                raise BadInput(f"{pub} is not an OpenSSH public key; regenerate it.") from None
            return text.splitlines()[0]
    try:
        key = asyncssh.read_private_key(path, passphrase)
    except FileNotFoundError:
        raise BadInput(f"The private key {path} does not exist; generate a key first.") from None
    except (asyncssh.KeyImportError, asyncssh.KeyEncryptionError, OSError) as exc:
        raise BadInput(
            f"Cannot read the public key of {path} ({exc}); give its .pub file."
        ) from None
    return key.export_public_key("openssh").decode("ascii").strip()


def fix_key_permissions(path: str | Path) -> None:
    """``chmod 600`` the private key; call it only after the user agreed.

    Raises:
        BadInput: the key does not exist.
        OperationFailed: the mode could not be changed (not the owner).
    """
    key = Path(path).expanduser()
    try:
        os.chmod(key, 0o600)
    except FileNotFoundError:
        raise BadInput(f"The private key {key} does not exist.") from None
    except OSError as exc:
        raise OperationFailed(
            f"Could not change the mode of {key}: {exc.strerror}; are you its owner?"
        ) from None


def key_mode(path: str | Path) -> int | None:
    """Permission bits of the key file, None when it does not exist."""
    try:
        return stat.S_IMODE(Path(path).expanduser().stat().st_mode)
    except FileNotFoundError:
        return None


# ----------------------------------------------------------------------------------- host keys


async def fetch_host_keys(profile: Profile, *, access: ClusterAccess = SSH) -> list[HostKeyInfo]:
    """Fetch the host key of every login host (nothing is written).

    Raises:
        ConnectError: a host could not be reached (its name is in the message).
    """
    return [await access.host_key(profile, h) for h in profile.hostnames]


async def fetch_host(profile: Profile, host: str, *, access: ClusterAccess = SSH) -> HostKeyInfo:
    """Fetch one login host's key for the user to inspect (nothing is written).

    Raises:
        ConnectError: the host could not be reached.
    """
    return await access.host_key(profile, host)


def trust_host(profile: Profile, info: HostKeyInfo) -> Path:
    """Write a fetched host key to the profile's known_hosts; call only after the user confirmed.

    Returns:
        The known_hosts file written (created with mode 0600 when missing).
    """
    path = known_hosts_path(profile)
    trust_host_key(path, info.host, info.port, info.public_key)
    return path


# ----------------------------------------------------------------------------------- install


async def install_public_key(
    profile: Profile,
    password: str,
    *,
    host: str | None = None,
    public_key: str | None = None,
    access: ClusterAccess = SSH,
) -> KeyInstall:
    """Install the profile's public key on one login host with a one-time password login.

    Appends the key to ``~/.ssh/authorized_keys`` unless it is already there, creating
    ``~/.ssh`` (0700) and the file (0600) when missing — what ``ssh-copy-id`` does. The key text
    travels on stdin of a fixed script; the password is used for this one login only.

    Args:
        profile: the cluster profile (user, port, key path, known_hosts).
        password: the user's password on the cluster (never stored or logged).
        host: the login host (default: the first of the profile).
        public_key: the public key line (default: ``<ssh_key_path>.pub``).
        access: how the login host is reached (default: SSH).

    Raises:
        BadInput: no key to install, or the password is empty.
        TwoFactorRequired: the site asks for a one-time code (the message explains the agent route).
        AuthenticationFailed: the password was refused.
        UnknownHostKey / HostKeyChanged: trust the host key first / refused.
        OperationFailed: the key could not be written on the cluster.
    """
    if not password:
        raise BadInput("The password is empty; type your cluster password to install the key.")
    host = _first_host(profile, host)
    line, blob = _public_key_line(public_key or read_public_key(key_path(profile)))
    # The pair itself may not be readable yet (e.g. permissions): the password login must not
    # fail on it, so offer no key file in this one login.
    login_profile = profile.model_copy(update={"ssh_key_path": ""})
    conn = access.to_host(login_profile, host, password=password)
    res: CommandResult | None = None
    try:
        try:
            await conn.connect()
        except AuthenticationFailed:
            pass  # the password was refused, or a one-time code is wanted: asked below
        else:
            res = await conn.run(["bash", "-c", AUTHORIZE_SCRIPT], input=f"{blob}\n{line}\n")
    finally:
        await conn.close()
    if res is None:
        probe = await access.probe_login(login_profile, host, password=password)
        del password
        if probe.two_factor:
            raise TwoFactorRequired(two_factor_explanation(profile, host))
        raise AuthenticationFailed(
            f"{host} refused the password login as {profile.user}; check the password "
            "(or use the manual steps if the site allows no password logins)."
        )
    del password
    return _authorize_outcome(host, res)


def _public_key_line(text: str) -> tuple[str, str]:
    """The public key as given (one line) and as ``TYPE BASE64``.

    Raises:
        BadInput: not one line, or not an OpenSSH public key.
    """
    line = text.strip()
    if "\n" in line or "\r" in line:
        raise BadInput("The public key must be one line; give the contents of the .pub file.")
    try:
        return line, normalize_public_key(line)
    except ValueError as exc:
        raise BadInput(f"That is not an OpenSSH public key ({exc}).") from None


def _authorize_outcome(host: str, res: CommandResult) -> KeyInstall:
    """What the authorize script says it did (``added``, ``present``), or why it failed.

    Raises:
        OperationFailed: the key could not be written.
    """
    outcome = res.stdout.strip().splitlines()[-1:] if res.ok else []
    if outcome == ["added"]:
        return KeyInstall(host, True)
    if outcome == ["present"]:
        return KeyInstall(host, False)
    last = next((ln for ln in reversed(res.stderr.splitlines()) if ln.strip()), "")
    raise OperationFailed(
        f"Could not add the key to ~/.ssh/authorized_keys on {host}"
        + (f" ({last.strip()})" if last else f" (exit status {res.exit_status})")
        + "; check your home directory on the cluster."
    )


# ----------------------------------------------------------------------------------- verify


async def verify_key_login(
    profile: Profile, host: str | None = None, *, access: ClusterAccess = SSH
) -> list[LoginCheck]:
    """Try a key-only login (key or agent, no password) on one or every login host.

    Each login runs ``true`` to prove commands work, then closes.

    Returns:
        One :class:`LoginCheck` per host, in the profile's order.
    """
    hosts = [host] if host else list(profile.hostnames)
    results = []
    for h in hosts:
        check, conn = await open_key_login(profile, h, access=access)
        if conn is not None:
            try:
                res = await conn.run("true", timeout=profile.connect_timeout + 5)
                if not res.ok:
                    check = LoginCheck(h, False, f"`true` exited with {res.exit_status} on {h}.")
            except RemoteError as exc:
                check = LoginCheck(h, False, str(exc), type(exc).__name__)
            finally:
                await conn.close()
        results.append(check)
    return results


async def open_key_login(
    profile: Profile, host: str, *, access: ClusterAccess = SSH
) -> tuple[LoginCheck, Connection | None]:
    """Open a key-only connection to ``host`` (one of the profile's login hosts).

    Returns:
        The outcome, and the open connection when it worked (the caller closes it). When the
        server refuses the key, one more instrumented attempt tells whether it asked for a
        one-time code (``two_factor``).
    """
    conn = access.to_host(profile, host)
    try:
        await conn.connect()
    except CodeRequired as exc:
        # The key was taken, then a code asked for (nobody to type it in a check): that is
        # the site's second factor, not a setup fault; no second login needed to tell.
        await conn.close()
        prompt = shown_text(exc.asked.strip())
        return (
            LoginCheck(
                host,
                False,
                two_factor_explanation(profile, host, prompt),
                "TwoFactorRequired",
                True,
            ),
            None,
        )
    except AuthenticationFailed as exc:
        await conn.close()
        probe = await access.probe_login(profile, host)
        if probe.two_factor:
            return (
                LoginCheck(
                    host, False, two_factor_explanation(profile, host), "TwoFactorRequired", True
                ),
                None,
            )
        return LoginCheck(host, False, str(exc), type(exc).__name__), None
    except (RemoteError, BadInput) as exc:
        await conn.close()
        return LoginCheck(host, False, str(exc), type(exc).__name__), None
    return LoginCheck(host, True), conn


# ----------------------------------------------------------------------------------- advice


def two_factor_explanation(profile: Profile, host: str | None = None, prompt: str = "") -> str:
    """What the doctor found at a site that asks for a one-time code, and what works there."""
    where = host or (profile.hostnames[0] if profile.hostnames else "the login host")
    asked = f" ({prompt!r})" if prompt else ""
    return (
        f"{where} asks for a one-time code{asked} by keyboard-interactive login on every new "
        "connection, after the key; an ssh-agent does not avoid it (the code is asked per "
        "connection, not per key). tao-slurm-tui asks for the code itself: the dashboard shows "
        "a masked prompt and keeps one connection, and the commands you run while it is open "
        "use that connection, so one code serves the whole working session; a command run "
        "alone asks on its terminal. Where there is no terminal (CI, cron), ask your admins "
        "for key-only access from that machine."
    )


def remediation_prompt(profile: Profile, host: str | None = None) -> str:
    """The platform's "SSH Failure Remediation Prompt", filled in with the user, host and key."""
    login = host or (profile.hostnames[0] if profile.hostnames else "<login-host>")
    user = profile.user or "<SLURM_USER>"
    key = profile.ssh_key_path or DEFAULT_KEY
    port = f" -p {profile.port}" if profile.port != 22 else ""
    known_hosts = profile.known_hosts or DEFAULT_KNOWN_HOSTS
    return (
        "SLURM is blocked on passwordless SSH. Please provide:\n"
        "\n"
        f"SSH_KEY_PATH={key}\n"
        "\n"
        "If you have not set up passwordless access yet:\n"
        "1. Create a key if needed:\n"
        f'   ssh-keygen -t ed25519 -N "" -f {key}\n'
        "2. Install the public key on one login host:\n"
        f"   ssh-copy-id{port} -i {key}.pub {user}@{login}\n"
        "3. Trust the host key:\n"
        f"   ssh-keyscan{port} -H {login} >> {known_hosts}\n"
        "4. Lock private-key permissions:\n"
        f"   chmod 600 {key}\n"
        "5. Verify it works without prompts:\n"
        f"   ssh{port} -o BatchMode=yes -i {key} {user}@{login} 'hostname'\n"
        "\n"
        f"After that, rerun with SSH_KEY_PATH={key}.\n"
    )


__all__ = [
    "AUTHORIZE_SCRIPT",
    "GeneratedKey",
    "KeyInstall",
    "LoginCheck",
    "TwoFactorRequired",
    "UnknownHostKey",
    "fetch_host",
    "fetch_host_keys",
    "fix_key_permissions",
    "generate_key",
    "install_public_key",
    "key_path",
    "known_hosts_path",
    "open_key_login",
    "read_public_key",
    "remediation_prompt",
    "two_factor_explanation",
    "verify_key_login",
]
