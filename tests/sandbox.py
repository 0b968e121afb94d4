"""Facts about the sandbox cluster that ``scripts/sandbox-cluster up`` brings up."""

from __future__ import annotations

import json
import os
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

from tao_slurm_tui.core.profile import Profile
from tests.ready import ssh_banner

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "sandbox-cluster"
"""The sandbox script (install | up | down | status | info --json | node-down | node-up)."""

STATE_DIR = Path(os.environ.get("TAO_SLURM_STATE", "/var/lib/tao-slurm-test"))
"""The sandbox's state dir (daemon pids, configs, the ssh key and known_hosts)."""
SSH_KEY = STATE_DIR / "ssh" / "id_ed25519"
"""Private key of the sandbox test user (root-only)."""
KNOWN_HOSTS = STATE_DIR / "ssh" / "known_hosts"
"""known_hosts holding the sandbox sshd's host key for [127.0.0.1]:2222."""
HOST_KEY_PUB = STATE_DIR / "ssh" / "ssh_host_ed25519_key.pub"
"""Public host key of the sandbox sshd."""
HOST = "127.0.0.1"
PORT = 2222
USER = "slurmtest"
HOME = f"/home/{USER}"
RESULTS = f"{HOME}/tao"


def openssh_argv(
    user: str = USER,
    *,
    port: int = PORT,
    known_hosts: Path = KNOWN_HOSTS,
    options: tuple[str, ...] = (),
) -> list[str]:
    """``ssh`` argv for a key-only login to the sandbox with a fresh OpenSSH process (the
    reference platform's way; the command goes last). ``options`` go before the host."""
    return [
        "ssh",
        "-F",
        "/dev/null",
        "-o",
        "BatchMode=yes",
        "-o",
        "IdentitiesOnly=yes",
        "-o",
        "StrictHostKeyChecking=yes",
        "-o",
        f"UserKnownHostsFile={known_hosts}",
        "-i",
        str(SSH_KEY),
        "-p",
        str(port),
        *options,
        f"{user}@{HOST}",
    ]


def sandbox_profile(**overrides: object) -> Profile:
    """A profile for the sandbox cluster (bare ``srun`` runtime)."""
    data: dict[str, object] = {
        "user": USER,
        "hostnames": [HOST],
        "port": PORT,
        "ssh_key_path": str(SSH_KEY),
        "known_hosts": str(KNOWN_HOSTS),
        "use_ssh_config": False,
        "partition": "polar",
        "account": "",
        "base_results_dir": RESULTS,
        "container_runtime": "none",
    }
    data.update(overrides)
    return Profile.model_validate(data)


def config_toml(**settings: object) -> str:
    """A config file with the sandbox profile (bare ``srun``) as the default; ``settings``
    (e.g. ``poll_interval=2``) go at the top."""
    top = "".join(f"{key} = {value!r}\n" for key, value in settings.items())
    return f"""default_profile = "sandbox"
{top}[profiles.sandbox]
user = "{USER}"
hostnames = ["{HOST}"]
port = {PORT}
ssh_key_path = "{SSH_KEY}"
known_hosts = "{KNOWN_HOSTS}"
use_ssh_config = false
partition = "polar"
base_results_dir = "{RESULTS}"
container_runtime = "none"
"""


def reachable() -> str | None:
    """None if the sandbox looks up, else why not."""
    if not SSH_KEY.exists():
        return f"{SSH_KEY} is missing (run: scripts/sandbox-cluster up)"
    if not ssh_banner(HOST, PORT):
        return f"sshd on {HOST}:{PORT} does not answer as an SSH server"
    return None


@cache
def info() -> dict[str, Any]:
    """``scripts/sandbox-cluster info --json``: ssh, partition, nodes, registry, image, key file."""
    out = subprocess.run(
        [str(SCRIPT), "info", "--json"], capture_output=True, text=True, timeout=30, check=True
    ).stdout
    data: dict[str, Any] = json.loads(out)
    return data
