"""First-time SSH set-up against real sshd servers.

* Host trust uses the sandbox sshd (127.0.0.1:2222): fingerprint as ``ssh-keygen -lf`` prints it,
  nothing written before the caller trusts it.
* Key install needs password logins, which the sandbox sshd refuses. So this module starts a
  SECOND sshd of its own (a copy of the sandbox config with its own host key, port and pid file,
  ``PasswordAuthentication yes``) and gives ``slurmtest`` a password for the test only
  (restored to ``*`` afterwards; key logins of parallel tests do not depend on it with
  ``UsePAM no``). The key line added to ``/home/slurmtest/.ssh/authorized_keys`` is removed
  again by an atomic rewrite (other tests log in with that file).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pwd
import secrets
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.remote.connection import AuthenticationFailed, Connection, UnknownHostKey
from tao_slurm_tui.remote.hostkeys import normalize_public_key
from tao_slurm_tui.services import sshsetup
from tests import sandbox
from tests.integration.fresh_account import password_sshd as start_password_sshd

AUTHORIZED_KEYS = Path(sandbox.HOME) / ".ssh" / "authorized_keys"
LOCK = "/tmp/tao-sshsetup-test.lock"


def keygen_fingerprint(pub: Path) -> str:
    out = subprocess.run(
        ["ssh-keygen", "-lf", str(pub)], capture_output=True, text=True, check=True
    )
    return out.stdout.split()[1]


# ----------------------------------------------------------------------------------- host trust


async def test_host_trust_shows_keygen_fingerprint_and_writes_only_when_asked(
    sandbox_profile: Profile, tmp_path: Path
) -> None:
    kh = tmp_path / "ssh" / "known_hosts"
    profile = sandbox_profile.model_copy(update={"known_hosts": str(kh)})
    # Unknown first: the connection refuses with the same fingerprint.
    with pytest.raises(UnknownHostKey) as info:
        async with Connection(profile):
            pass
    infos = await sshsetup.fetch_host_keys(profile)
    assert len(infos) == 1
    fetched = infos[0]
    expected = keygen_fingerprint(sandbox.HOST_KEY_PUB)
    assert fetched.fingerprint == expected == info.value.fingerprint
    assert fetched.key_type == "ssh-ed25519"
    assert not kh.exists()  # nothing written before the caller confirms

    written = sshsetup.trust_host(profile, fetched)
    assert written == kh
    assert kh.read_text().strip() == f"[{sandbox.HOST}]:{sandbox.PORT} {fetched.public_key}"
    assert (kh.stat().st_mode & 0o777) == 0o600
    checks = await sshsetup.verify_key_login(profile)
    assert [(c.host, c.ok) for c in checks] == [(sandbox.HOST, True)]
    sshsetup.trust_host(profile, fetched)  # idempotent
    assert len(kh.read_text().splitlines()) == 1


# ----------------------------------------------------------------------------------- password sshd


@contextlib.contextmanager
def _locked(path: str) -> Iterator[None]:
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _shadow_hash(user: str) -> str:
    for line in Path("/etc/shadow").read_text().splitlines():
        fields = line.split(":")
        if fields[0] == user:
            return fields[1]
    raise AssertionError(f"{user} not in /etc/shadow")


def _remove_key_line(blob: str) -> None:
    """Drop lines holding ``blob`` from authorized_keys by an atomic rewrite (never truncate)."""
    if not AUTHORIZED_KEYS.exists():
        return
    original = AUTHORIZED_KEYS.read_text()
    kept = [ln for ln in original.splitlines(keepends=True) if blob not in ln]
    if len(kept) == len(original.splitlines(keepends=True)):
        return
    info = AUTHORIZED_KEYS.stat()
    fd, tmp = tempfile.mkstemp(dir=AUTHORIZED_KEYS.parent, prefix=".authorized_keys.")
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write("".join(kept))
        os.chown(tmp, info.st_uid, info.st_gid)
        os.chmod(tmp, 0o600)
        os.replace(tmp, AUTHORIZED_KEYS)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@pytest.fixture
def password_sshd(
    cluster: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[int, str]]:
    """A second sshd allowing password logins for slurmtest, and that user's one-time password.

    Yields:
        (port, password). Everything is undone afterwards (sshd stopped, password restored).
    """
    root = tmp_path_factory.mktemp("sshd2")
    os.chmod(root, 0o755)
    password = "pw-" + secrets.token_hex(12)
    old_hash = _shadow_hash(sandbox.USER)
    hashed = subprocess.run(
        ["openssl", "passwd", "-6", "-stdin"],
        input=password,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    with _locked(LOCK), start_password_sshd(root, sandbox.USER) as (port, _host_key):
        try:
            subprocess.run(["usermod", "-p", hashed, sandbox.USER], check=True)
            yield port, password
        finally:
            subprocess.run(["usermod", "-p", old_hash, sandbox.USER], check=True)


async def test_generate_and_install_key_with_one_time_password(
    password_sshd: tuple[int, str], tmp_path: Path
) -> None:
    port, password = password_sshd
    key = sshsetup.generate_key(tmp_path / "id_ed25519")
    profile = sandbox.sandbox_profile(
        port=port, ssh_key_path=str(key.path), known_hosts=str(tmp_path / "known_hosts")
    )
    blob = normalize_public_key(key.public_key)
    try:
        # Trust the second sshd's host key first (fetch, then confirm).
        sshsetup.trust_host(profile, (await sshsetup.fetch_host_keys(profile))[0])
        before = await sshsetup.verify_key_login(profile)
        assert not before[0].ok and before[0].error == "AuthenticationFailed"

        with pytest.raises(AuthenticationFailed):
            await sshsetup.install_public_key(profile, password + "-wrong")

        first = await sshsetup.install_public_key(profile, password)
        second = await sshsetup.install_public_key(profile, password)
        assert (first.added, second.added) == (True, False)
        assert AUTHORIZED_KEYS.read_text().count(blob) == 1

        after = await sshsetup.verify_key_login(profile)
        assert after[0].ok, after[0].reason
        # Key-only: the same key also opens the sandbox sshd, which allows no passwords at all.
        sandbox_login = await sshsetup.verify_key_login(
            sandbox.sandbox_profile(ssh_key_path=str(key.path))
        )
        assert sandbox_login[0].ok, sandbox_login[0].reason
        info = AUTHORIZED_KEYS.stat()
        assert (info.st_mode & 0o777) == 0o600
        assert pwd.getpwuid(info.st_uid).pw_name == sandbox.USER
        assert (AUTHORIZED_KEYS.parent.stat().st_mode & 0o777) == 0o700
    finally:
        _remove_key_line(blob)
    assert blob not in AUTHORIZED_KEYS.read_text()
