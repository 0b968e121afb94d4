"""A researcher whose login shell is tcsh: every verb works over SSH all the same.

Some sites still give their users a csh-family login shell. sshd runs every remote command
through the login shell, so a command line written for ``sh`` (``d=$(mktemp ...)``, ``2>&1``,
``if [ ... ]; then``) fails there with "Illegal variable name." or "Missing ]."; the product
must send ``sh -c '...'`` (or an argument vector) instead. This walks a fresh account with
``/usr/bin/tcsh`` through the whole path: key installed with the password, doctor, capacity,
the composer's start estimate, submit, status, logs.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.remote.connection import Connection
from tao_slurm_tui.services import sshsetup
from tao_slurm_tui.services.capacity import estimate_start, fetch_capacity
from tao_slurm_tui.services.onboarding import create_results_dir
from tests import sandbox
from tests.integration.fresh_account import FreshAccount, fresh_account

pytestmark = pytest.mark.slow

TCSH = "/usr/bin/tcsh"


@pytest.fixture(scope="module")
def account(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FreshAccount]:
    with fresh_account(tmp_path_factory.mktemp("csh-account"), shell=TCSH) as made:
        yield made


@pytest.fixture(scope="module")
def profile(account: FreshAccount, tmp_path_factory: pytest.TempPathFactory) -> Profile:
    """A key installed with the account's password, its host trusted: the set-up's path."""
    local = tmp_path_factory.mktemp("csh-local")
    key = sshsetup.generate_key(local / "id_ed25519")
    made = sandbox.sandbox_profile(
        user=account.user,
        port=account.port,
        ssh_key_path=str(key.path),
        known_hosts=str(local / "known_hosts"),
        account="tao",
        base_results_dir=f"{account.home}/tao-results",
    )

    async def set_up() -> None:
        sshsetup.trust_host(made, (await sshsetup.fetch_host_keys(made))[0])
        installed = await sshsetup.install_public_key(made, account.password)
        assert installed.added
        login = await sshsetup.verify_key_login(made)
        assert login[0].ok, login[0].reason

    asyncio.run(set_up())
    return made


def test_the_account_really_logs_in_with_tcsh(profile: Profile) -> None:
    async def login_shell() -> str:
        async with Connection(profile) as conn:
            # An argument vector goes as it is: sh's parent is the login shell.
            argv = ["sh", "-c", "ps -o comm= -p $PPID"]
            return (await conn.run(argv, check=True)).stdout.strip()

    assert asyncio.run(login_shell()) == "tcsh"


async def test_capacity_and_the_start_estimate(profile: Profile, account: FreshAccount) -> None:
    async with Connection(profile) as conn:
        report = await fetch_capacity(conn)
        assert report.user == account.user
        assert report.partition("polar") is not None and report.accounting
        script = (
            "#!/bin/bash\n#SBATCH --partition=polar\n#SBATCH --nodes=1\n"
            "#SBATCH --gpus-per-node=1\n#SBATCH --time=00:10:00\nsrun true\n"
        )
        estimate = await estimate_start(conn, script, ["polar", "batch"], capacity=report)
    first = estimate.estimates[0]
    assert first.error == "" and first.start and first.partition == "polar", estimate


def cli(
    home: Path, config: Path, *args: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local/share"),
        "XDG_STATE_HOME": str(home / ".local/state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
    }
    return subprocess.run(
        [sys.executable, "-m", "tao_slurm_tui", "--config", str(config), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def test_doctor_submit_status_and_logs(
    profile: Profile, account: FreshAccount, tmp_path: Path
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        "default_profile = 'csh'\n[profiles.csh]\n"
        f"user = '{profile.user}'\nhostnames = ['{sandbox.HOST}']\nport = {profile.port}\n"
        f"ssh_key_path = '{profile.ssh_key_path}'\nknown_hosts = '{profile.known_hosts}'\n"
        "use_ssh_config = false\npartition = 'polar'\naccount = 'tao'\n"
        f"base_results_dir = '{profile.base_results_dir}'\ncontainer_runtime = 'none'\n"
    )
    doctor = cli(tmp_path, config, "doctor", "--json")
    failed = [c["check"] for c in json.loads(doctor.stdout) if c["status"] == "fail"]
    assert failed == ["results_dir"], doctor.stdout + doctor.stderr  # a new account has none

    async def fix() -> None:  # the doctor's fix, as the set-up screen runs it
        async with Connection(profile) as conn:
            await create_results_dir(conn, profile.base_results_dir)

    asyncio.run(fix())
    doctor = cli(tmp_path, config, "doctor", "--json")
    failed = [c["check"] for c in json.loads(doctor.stdout) if c["status"] == "fail"]
    assert not failed and doctor.returncode == 0, doctor.stdout + doctor.stderr

    capacity = cli(tmp_path, config, "capacity", "--json")
    assert capacity.returncode == 0, capacity.stderr
    assert json.loads(capacity.stdout)["user"] == account.user

    spec = tmp_path / "spec.toml"
    spec.write_text(
        "name = 'csh-login'\nimage = 'nvcr.io/nvidia/tao/tao-toolkit:6.26.3-pyt'\n"
        "command = 'echo hello-from-a-tcsh-account'\nnum_gpus = 1\ncpus_per_task = 1\n"
        "time_hours = 1\nuse_sqsh = false\n"
    )
    submitted = cli(tmp_path, config, "submit", str(spec), "--json")
    assert submitted.returncode == 0, submitted.stderr
    job = json.loads(submitted.stdout)["id"]

    deadline = time.monotonic() + 180
    while True:
        status = cli(tmp_path, config, "status", job, "--json")
        assert status.returncode == 0, status.stderr
        (row,) = json.loads(status.stdout)
        if row["slurm_state"] in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL"):
            break
        assert time.monotonic() < deadline, status.stdout
        time.sleep(2)
    assert row["slurm_state"] == "COMPLETED", row

    logs = cli(tmp_path, config, "logs", job)
    assert logs.returncode == 0, logs.stderr
    assert "hello-from-a-tcsh-account" in logs.stdout
