"""Cluster accounts for the controller bench: one per watcher, so ``sdiag`` tells them apart.

slurmctld counts RPCs and their time per user; a watcher that runs as its own user is measured
alone although all watchers run at the same time. :func:`bench_accounts` creates the accounts
on the sandbox (``useradd``, a SLURM association in account ``tao``, the sandbox's own key in
``authorized_keys``) and a second sshd that lets only them in (the sandbox's config, its own
port), and removes all of it afterwards (jobs cancelled, association and user deleted).
The same binaries on the same machine: SLURM commands, the shared home and the compute nodes
are the sandbox's (as ``tests/integration/fresh_account.py`` does for a password account).
"""

from __future__ import annotations

import contextlib
import pwd
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from _sandbox import sandbox

from tao_slurm_tui.core.profile import Profile
from tests.integration.fresh_account import ACCOUNT, CLUSTER, free_port, second_sshd


@dataclass(frozen=True)
class Account:
    """One bench user and how to reach it."""

    user: str
    port: int
    known_hosts: Path

    @property
    def uid(self) -> int:
        return pwd.getpwnam(self.user).pw_uid

    @property
    def home(self) -> str:
        return f"/home/{self.user}"

    def profile(self, **overrides: object) -> Profile:
        """A profile for this user on the bench sshd (bare srun, its home's ``tao`` dir)."""
        return sandbox.sandbox_profile(
            user=self.user,
            port=self.port,
            known_hosts=str(self.known_hosts),
            base_results_dir=f"{self.home}/tao",
            **overrides,
        )

    def ssh_argv(self, *options: str) -> list[str]:
        """A new OpenSSH client for this user (the command goes last)."""
        return sandbox.openssh_argv(
            self.user, port=self.port, known_hosts=self.known_hosts, options=options
        )


def _run(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True, text=True, timeout=60)


def _add_user(user: str) -> None:
    home = Path(f"/home/{user}")
    subprocess.run(["userdel", "-r", "-f", user], capture_output=True, timeout=30)
    # (an association a killed run left makes "add" answer "Nothing new added", rc 1)
    subprocess.run(["sacctmgr", "-i", "delete", "user", user], capture_output=True, timeout=30)
    _run("useradd", "-m", "-d", str(home), "-s", "/bin/bash", user)
    _run("usermod", "-p", "*", user)  # no password, but not locked: key logins work
    ssh = home / ".ssh"
    ssh.mkdir(mode=0o700, exist_ok=True)
    keys = ssh / "authorized_keys"
    keys.write_text(Path(f"{sandbox.SSH_KEY}.pub").read_text())
    keys.chmod(0o600)
    (home / "tao").mkdir(exist_ok=True)
    _run("chown", "-R", f"{user}:{user}", str(home))
    _run(
        "sacctmgr", "-i", "add", "user", user, f"account={ACCOUNT}",
        f"defaultaccount={ACCOUNT}", f"cluster={CLUSTER}",
    )  # fmt: skip


def _remove_user(user: str) -> None:
    subprocess.run(["scancel", "-u", user], capture_output=True, timeout=30)
    subprocess.run(["sacctmgr", "-i", "delete", "user", user], capture_output=True, timeout=30)
    subprocess.run(["pkill", "-KILL", "-u", user], capture_output=True, timeout=30)
    subprocess.run(["userdel", "-r", "-f", user], capture_output=True, timeout=30)


@contextlib.contextmanager
def _key_sshd(root: Path, users: list[str]) -> Iterator[tuple[int, Path]]:
    """A second sshd (the sandbox's config and host key, its own port) letting ``users`` in
    with the sandbox key; yields (port, known_hosts for it)."""
    port = free_port()
    replaced = {
        "Port": str(port),
        "PidFile": str(root / "sshd.pid"),
        "AllowUsers": " ".join(users),
        "MaxSessions": "200",
        "MaxStartups": "400:30:800",
    }
    host_key = Path(f"{sandbox.STATE_DIR}/ssh/ssh_host_ed25519_key.pub").read_text().split()
    known = root / "known_hosts"
    known.write_text(f"[{sandbox.HOST}]:{port} {host_key[0]} {host_key[1]}\n")
    with second_sshd(root, replaced, f"the bench sshd on port {port}"):
        yield port, known


@contextlib.contextmanager
def bench_accounts(root: Path, names: list[str]) -> Iterator[dict[str, Account]]:
    """Accounts ``taob-<name>`` and their sshd under ``root``; all removed on exit."""
    users = [f"taob-{name}" for name in names]
    try:
        for user in users:
            _add_user(user)
        with _key_sshd(root, users) as (port, known):
            yield {
                name: Account(user, port, known) for name, user in zip(names, users, strict=True)
            }
    finally:
        for user in users:
            _remove_user(user)
