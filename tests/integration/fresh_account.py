"""A brand-new cluster account that has only a password, and an sshd that accepts it.

What a researcher has on day one: a user name and a password from the admins, no key, no
known_hosts entry, no enroot credentials. :func:`fresh_account` creates such an account on the
sandbox (``useradd``, a random password, a SLURM association in account ``tao``) and starts a
second sshd (a copy of the sandbox's config with its own host key and port, password logins
allowed for that user only), and removes everything again afterwards.

The sandbox's own sshd refuses passwords; the second one runs the same binaries on the same
machine, so SLURM commands, the shared home and the compute nodes are the sandbox's.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests import sandbox
from tests.ready import ssh_banner, wait_until

CLUSTER = "taotest"
ACCOUNT = "tao"


@dataclass(frozen=True)
class FreshAccount:
    """The account and the sshd that lets it in with its password."""

    user: str
    password: str
    host: str
    port: int
    host_key_pub: Path
    """Public host key of the second sshd (what ``ssh-keygen -lf`` fingerprints)."""

    @property
    def home(self) -> str:
        """Home directory on the cluster (shared with the compute nodes)."""
        return f"/home/{self.user}"


def free_port() -> int:
    """A TCP port nobody listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _run(*argv: str, input: str | None = None) -> None:
    subprocess.run(argv, input=input, text=True, check=True, capture_output=True, timeout=30)


@contextlib.contextmanager
def password_sshd(root: Path, user: str) -> Iterator[tuple[int, Path]]:
    """A second sshd (the sandbox's config, its own host key and port) that lets ``user`` in
    with a password; yields (port, public host key file) and stops it afterwards."""
    host_key = root / "host_ed25519"
    _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(host_key))
    port = free_port()
    replaced = {
        "Port": str(port),
        "HostKey": str(host_key),
        "PidFile": str(root / "sshd.pid"),
        "PasswordAuthentication": "yes",
        "KbdInteractiveAuthentication": "yes",
        "UsePAM": "no",
        "AllowUsers": user,
    }
    with second_sshd(root, replaced, f"the password sshd on port {port}"):
        yield port, Path(f"{host_key}.pub")


@contextlib.contextmanager
def second_sshd(root: Path, replaced: dict[str, str], what: str) -> Iterator[None]:
    """An sshd with the sandbox's config but for the ``replaced`` settings (its config and log
    under ``root``), up (its banner answers) until the block ends."""
    base = (sandbox.STATE_DIR / "ssh" / "sshd_config").read_text().splitlines()
    lines = [ln for ln in base if ln.split(" ", 1)[0] not in replaced]
    lines += [f"{k} {v}" for k, v in replaced.items()]
    config = root / "sshd_config"
    config.write_text("\n".join(lines) + "\n")
    with open(root / "sshd.log", "w") as log:
        proc = subprocess.Popen(
            ["/usr/sbin/sshd", "-D", "-e", "-f", str(config)], stdout=subprocess.DEVNULL, stderr=log
        )
    try:
        wait_until(
            lambda: ssh_banner(sandbox.HOST, int(replaced["Port"])),
            what,
            alive=lambda: proc.poll() is None,
            detail=lambda: (root / "sshd.log").read_text(),
        )
        yield
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@contextlib.contextmanager
def fresh_account(root: Path, shell: str = "/bin/bash") -> Iterator[FreshAccount]:
    """Create the account (login shell ``shell``) and its password sshd under ``root``; undo
    both on exit."""
    user = f"fh{secrets.token_hex(4)}"
    password = "pw-" + secrets.token_hex(12)
    os.chmod(root, 0o755)
    if not Path(shell).is_file():
        raise AssertionError(f"{shell} is not installed: run 'scripts/sandbox-cluster install'")
    _run("useradd", "-m", "-s", shell, user)
    try:
        _run("chpasswd", input=f"{user}:{password}\n")
        _run(
            "sacctmgr", "-i", "add", "user", user, f"account={ACCOUNT}",
            f"defaultaccount={ACCOUNT}", f"cluster={CLUSTER}",
        )  # fmt: skip
        with password_sshd(root, user) as (port, host_key_pub):
            yield FreshAccount(user, password, sandbox.HOST, port, host_key_pub)
    finally:
        subprocess.run(["scancel", "-u", user], capture_output=True, timeout=30)
        subprocess.run(["sacctmgr", "-i", "delete", "user", user], capture_output=True, timeout=30)
        # -f: a session of the stopped sshd may still be closing.
        subprocess.run(["userdel", "-r", "-f", user], capture_output=True, timeout=30)
