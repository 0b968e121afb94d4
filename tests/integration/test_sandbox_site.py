"""The sandbox's pieces that make it a real site: a login that asks for a one-time code, a second
login host that dies and comes back, multifactor priority, file systems that fill up, nvidia-smi
for the GPUs SLURM bound to a job, and ``sdiag -r``. (The backup controller, which disturbs
everyone for seconds, is in ``test_sandbox_failover.py``, run alone.)"""

from __future__ import annotations

import asyncio
import errno
import os
import re
import subprocess
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

import asyncssh
import pytest

from tests import sandbox

pytestmark = pytest.mark.usefixtures("cluster")


# ------------------------------------------------------------------------------------- MFA login


class CodeClient(asyncssh.SSHClient):
    """Answers the server's keyboard-interactive rounds: the code for the one prompt, nothing for
    the empty round that follows (REAL-CLUSTER §5); a second prompt (the code was refused) ends
    the attempt, as a person who gives up would, instead of burning the account's rate limit."""

    def __init__(self, code: str) -> None:
        self.code = code
        self.prompts: list[tuple[str, bool]] = []

    def kbdint_auth_requested(self) -> str:
        return ""

    def kbdint_challenge_received(
        self, name: str, instructions: str, lang: str, prompts: Sequence[tuple[str, bool]]
    ) -> list[str] | None:
        if prompts and self.prompts:
            return None
        self.prompts += prompts
        return [self.code for _ in prompts]


async def mfa_connect(code: str) -> tuple[asyncssh.SSHClientConnection, CodeClient]:
    mfa = sandbox.info()["mfa"]
    client = CodeClient(code)
    conn, _ = await asyncssh.create_connection(
        lambda: client,
        mfa["host"],
        mfa["port"],
        username=mfa["user"],
        client_keys=[mfa["key"]],
        known_hosts=mfa["known_hosts"],
        preferred_auth="publickey,keyboard-interactive",
        agent_path=None,
    )
    return conn, client


def accepted_codes() -> int:
    log = Path(sandbox.info()["mfa"]["auth_log"]).read_text(errors="replace")
    return len(re.findall(r"Accepted keyboard-interactive/pam for slurmmfa ", log))


@pytest.mark.xdist_group("mfa")  # the account takes each code once: MFA tests one at a time
async def test_mfa_login_needs_the_key_and_a_code_and_can_submit() -> None:
    mfa = sandbox.info()["mfa"]
    assert set(mfa) >= {"user", "host", "port", "key", "known_hosts", "totp_secret_file"}
    assert Path(mfa["key"]).is_file() and Path(mfa["known_hosts"]).is_file()
    # A wrong code is refused after the key was accepted (a partial success).
    with pytest.raises(asyncssh.PermissionDenied):
        await mfa_connect("000000" if sandbox.totp_code() != "000000" else "111111")
    before = accepted_codes()
    conn, client = await mfa_connect(sandbox.totp_code())
    async with conn:
        assert client.prompts == [("Verification code: ", False)]
        result = await conn.run("id -un; sbatch --parsable --wrap true", check=False)
    assert result.returncode == 0, result.stderr
    user, job = str(result.stdout).split()
    assert user == mfa["user"] and job.split(";")[0].isdigit()
    # One code typed, one line in the MFA sshd's own log.
    assert sandbox.wait_for(lambda: accepted_codes() == before + 1, 10, "the auth log line")
    partial = Path(mfa["auth_log"]).read_text(errors="replace")
    assert f"Partial publickey for {mfa['user']} " in partial


# ------------------------------------------------------------------------------- second login host


async def test_second_login_host_dies_mid_session_and_comes_back() -> None:
    hosts = {h["name"]: h for h in sandbox.info()["login_hosts"]}
    login1, login2 = hosts["login1"], hosts["login2"]
    assert (login1["host"], login1["port"]) == (sandbox.HOST, sandbox.PORT)
    assert login2["host"] != login1["host"]
    options = {
        "username": sandbox.USER,
        "client_keys": [str(sandbox.SSH_KEY)],
        "known_hosts": login2["known_hosts"],
        "agent_path": None,
    }
    with sandbox.flocked(sandbox.LOGIN2_LOCK):
        async with asyncssh.connect(login2["host"], login2["port"], **options) as conn:
            # Same cluster from both hosts.
            assert (await conn.run("hostname; sinfo -h -o %P", check=True)).stdout
            session = await conn.create_process("sleep 600")
            down = await asyncio.to_thread(sandbox.script, "login-down", "login2")
            assert down.returncode == 0, down.stderr
            # The open session dies with the host, and no new login gets in.
            await asyncio.wait_for(session.wait_closed(), 15)
            with pytest.raises((OSError, asyncssh.Error)):
                await asyncio.wait_for(conn.run("true", check=True), 10)
        with pytest.raises(OSError):
            await asyncssh.connect(login2["host"], login2["port"], **options)
        # The other login host is untouched.
        assert sandbox.ssh("true").returncode == 0
        up = await asyncio.to_thread(sandbox.script, "login-up", "login2")
        assert up.returncode == 0, up.stderr
        again = await asyncio.to_thread(
            sandbox.ssh, "sinfo -h -o %P", sandbox.USER, host=login2["host"]
        )
        assert again.returncode == 0 and "polar" in again.stdout, again.stderr
    assert {h["name"]: h["up"] for h in sandbox.fresh_info()["login_hosts"]} == {
        "login1": True,
        "login2": True,
    }


def test_login_verbs_refuse_an_unknown_host() -> None:
    result = sandbox.script("login-down", "login9")
    assert result.returncode == 2
    assert "unknown login host 'login9'" in result.stderr or "unknown login host login9" in (
        result.stderr
    )


# ------------------------------------------------------------------------------------- priority


def test_a_pending_job_has_real_multifactor_priority_figures() -> None:
    name = f"prio-{uuid.uuid4().hex[:6]}"
    node = sandbox.info()["nodes"][-1]  # the one h100 node: two jobs asking for all its GPUs
    ids = []
    try:
        for _ in range(2):
            out = sandbox.ssh(
                sandbox.quoted(
                    "sbatch", "--parsable", "-J", name, "-w", node, "--gres=gpu:4",
                    "-o", "/dev/null", "--time=00:05:00", "--wrap", "sleep 300",
                )
            )  # fmt: skip
            assert out.returncode == 0, out.stderr
            ids.append(out.stdout.strip())
        pending = ids[1]

        def factors() -> dict[str, float] | None:
            out = sandbox.ssh(f"sprio -h -j {pending} -o '%Y|%A|%F|%J|%P|%Q'").stdout.split("|")
            if len(out) != 6:
                return None
            keys = ("priority", "age", "fairshare", "jobsize", "partition", "qos")
            return dict(zip(keys, (float(x) for x in out), strict=True))

        first = sandbox.wait_for(factors, 60, "sprio lists the pending job")
        assert first["fairshare"] > 0 and first["jobsize"] > 0
        assert first["partition"] > 0 and first["qos"] > 0
        assert first["priority"] >= first["fairshare"]
        # Age grows while the job waits (recomputed every minute, maximal after 10 minutes).
        aged = sandbox.wait_for(
            lambda: (f := factors()) and f["age"] > 0 and f, 150, "the age factor grows", 5
        )
        assert aged["priority"] > first["priority"] - first["age"]
        share = sandbox.ssh("sshare -h -P -U -u slurmtest -o Account,User,RawShares,FairShare")
        _account, user, raw, fairshare = share.stdout.strip().splitlines()[-1].split("|")
        assert user == "slurmtest" and int(raw) > 0 and float(fairshare) > 0, share.stdout
    finally:
        sandbox.ssh("scancel " + " ".join(ids))


# ------------------------------------------------------------------------------- file systems


def test_results_file_system_fills_up_on_the_login_host_and_on_the_nodes() -> None:
    small = sandbox.info()["small_fs"]
    path = Path(small["path"])
    assert small["owner"] == sandbox.USER and path.is_dir()
    assert (
        os.statvfs(small["mount"]).f_blocks * os.statvfs(small["mount"]).f_frsize
        <= (small["size_bytes"])
    )
    probe = path / f"probe-{uuid.uuid4().hex[:6]}"
    with sandbox.filled(path):
        # The researcher's write fails as on a full site: ENOSPC (Lustre/NFS say EDQUOT).
        result = sandbox.ssh(f"echo data > {probe}")
        assert result.returncode != 0
        assert os.strerror(errno.ENOSPC) in result.stderr, result.stderr
        # A job on a compute node sees the same file system, full too.
        job = sandbox.ssh(
            f"srun -N1 -t 1 sh -c 'hostname; dd if=/dev/zero of={probe} bs=64k count=4' </dev/null",
            timeout=120,
        )
        assert job.returncode != 0
        assert "No space left on device" in job.stderr, job.stdout + job.stderr
    # Freed: writes work again, there and on the node.
    assert sandbox.ssh(f"echo data > {probe} && srun -N1 -t 1 cat {probe} </dev/null").stdout == (
        "data\n"
    )
    probe.unlink()


def test_small_home_user_cannot_write_enroot_credentials_when_full() -> None:
    home = sandbox.info()["small_home"]
    creds = Path(home["enroot_credentials"])
    user = home["user"]
    assert sandbox.ssh("id -un", user).stdout.strip() == user
    assert sandbox.ssh("sbatch --parsable -o /dev/null --wrap true", user).returncode == 0
    with sandbox.filled(home["home"], user=user):
        result = sandbox.ssh(f"mkdir -p {creds.parent} && echo machine x > {creds}", user)
        assert result.returncode != 0
        assert "No space left on device" in result.stderr, result.stderr
    assert sandbox.ssh(f"mkdir -p {creds.parent} && echo machine x > {creds}", user).returncode == 0
    creds.unlink()


# ------------------------------------------------------------------------------------ nvidia-smi

QUERY = "index,uuid,name,utilization.gpu,memory.used,memory.total"


def test_nvidia_smi_reports_the_jobs_gpus_and_the_load_a_test_sets() -> None:
    info = sandbox.info()
    node = info["nodes"][-1]
    kind = info["gpus"][node]["type"]
    out = sandbox.ssh(
        sandbox.quoted(
            "sbatch", "--parsable", "-w", node, "--gres=gpu:2", "-o", "/dev/null",
            "--time=00:05:00", "--wrap", "sleep 300",
        )
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    job = out.stdout.strip()
    try:
        sandbox.wait_state(job, {"RUNNING"}, 240)

        def smi(args: str) -> subprocess.CompletedProcess[str]:
            return sandbox.ssh(f"srun --overlap --jobid {job} nvidia-smi {args} </dev/null")

        csv = smi(f"--query-gpu={QUERY} --format=csv")
        assert csv.returncode == 0, csv.stderr
        header, *rows = csv.stdout.strip().splitlines()
        assert header == (
            "index, uuid, name, utilization.gpu [%], memory.used [MiB], memory.total [MiB]"
        )
        assert [r.split(", ")[0] for r in rows] == ["0", "1"]  # the job's 2 GPUs, not the node's 4
        name = {"a100": "NVIDIA A100-SXM4-80GB", "h100": "NVIDIA H100 80GB HBM3"}[kind]
        for row in rows:
            _index, uuid_, gpu_name, util, used, total = row.split(", ")
            assert re.fullmatch(r"GPU-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", uuid_)
            assert gpu_name == name and util == "0 %" and used == "0 MiB"
            assert total.endswith(" MiB") and int(total.split()[0]) > 80000
        # A busy GPU and an idle one, as the job (or a test) says.
        sandbox.gpu_load(job, "0 93 40000", "1 0 0")
        busy = smi("--query-gpu=index,utilization.gpu,memory.used --format=csv,noheader,nounits")
        assert busy.stdout.splitlines() == ["0, 93, 40000", "1, 0, 0"]
        listing = smi("-L").stdout.splitlines()
        assert [line.split(" (UUID: ")[0] for line in listing] == [
            f"GPU 0: {name}",
            f"GPU 1: {name}",
        ]
        assert smi("--query-gpu=nosuch --format=csv").returncode == 2
    finally:
        sandbox.gpu_load(job)
        sandbox.ssh(f"scancel {job}")
    # The login host has no GPU driver.
    login = sandbox.ssh("nvidia-smi")
    assert login.returncode == 9 and "couldn't communicate with the NVIDIA driver" in login.stdout


# ------------------------------------------------------------------------------------- sdiag


def test_root_resets_sdiag_counters() -> None:
    started = int(time.time())
    reset = subprocess.run(["sdiag", "-r"], capture_output=True, text=True, timeout=30, check=False)
    assert reset.returncode == 0 and "Reset scheduling statistics" in reset.stdout, reset.stderr
    after = subprocess.run(["sdiag"], capture_output=True, text=True, timeout=30, check=True)
    # "Data since      Tue Dec 01 15:20:44 2026 (1764602444)": the counters start at the reset.
    since = re.search(r"Data since\s+.+?\((\d+)\)", after.stdout)
    assert since and int(since.group(1)) >= started - 1, after.stdout
    # A user may not: only root and SlurmUser reset the controller's statistics.
    denied = sandbox.ssh("sdiag -r")
    assert denied.returncode != 0
