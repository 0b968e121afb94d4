"""Facts about the sandbox cluster that ``scripts/sandbox-cluster up`` brings up, and helpers for
its pieces: the TAO stand-in image, the MFA login, the second login host, the backup controller,
the small file systems and the nvidia-smi stand-in."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pwd
import re
import shlex
import subprocess
import time
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

from tao_slurm_tui.core.profile import Profile
from tests.ready import ssh_banner

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "sandbox-cluster"
"""The sandbox script (install | up | down | status | info --json | node-down | node-up |
login-down | login-up | ctl-down | ctl-up)."""

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


def fresh_info() -> dict[str, Any]:
    """``scripts/sandbox-cluster info --json`` now (who is up, which controller is in control)."""
    out = subprocess.run(
        [str(SCRIPT), "info", "--json"], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    data: dict[str, Any] = json.loads(out)
    return data


@cache
def info() -> dict[str, Any]:
    """``scripts/sandbox-cluster info --json`` once per test process: ssh, partition, nodes,
    registry, image, key file, mfa, login_hosts, small file systems, the TAO stand-in."""
    return fresh_info()


# ----------------------------------------------------------------------------------- running things

LOGIN2_LOCK = "/tmp/tao-login2.lock"
"""Tests that kill the second login host hold this exclusively; tests that need it up, shared."""
CLUSTER_LOCK = "/tmp/tao-cluster.lock"
"""Whoever restarts daemons (``ctl-down``/``ctl-up``, ``down``/``up``) holds this exclusively."""
CREDS_LOCK = "/tmp/tao-creds-test.lock"
"""The test user's enroot credentials: shared while a job needs the right NGC key."""


@contextlib.contextmanager
def flocked(path: str, exclusive: bool = True) -> Iterator[None]:
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _run(argv: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, check=False
    )


def script(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``scripts/sandbox-cluster ARGS`` (as root), output captured."""
    return _run([str(SCRIPT), *args], timeout)


def ssh(
    command: str, user: str = USER, *, host: str = HOST, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """``command`` on a sandbox login host over OpenSSH, key-only, as a researcher runs it."""
    argv = openssh_argv(user)
    argv[-1] = f"{user}@{host}"
    return _run([*argv, command], timeout)


def as_user(
    argv: list[str], user: str = USER, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """``argv`` on the login host as ``user`` (runuser; for steps that need no ssh session)."""
    return _run(["runuser", "-u", user, "--", *argv], timeout)


def owner_ids(user: str = USER) -> tuple[int, int]:
    entry = pwd.getpwnam(user)
    return entry.pw_uid, entry.pw_gid


def user_dir(path: str | Path, user: str = USER) -> Path:
    """``path`` (and missing parents below the user's home) created and owned by ``user``."""
    entry = pwd.getpwnam(user)
    target = Path(path)
    missing = [p for p in (target, *target.parents) if not p.exists()]
    target.mkdir(parents=True, exist_ok=True)
    for p in missing:
        os.chown(p, entry.pw_uid, entry.pw_gid)
    return target


def repo_train_script() -> str:
    """``python3 <path>`` of this checkout's ``examples/train.py`` on the cluster's shared file
    system (the copy the sandbox installed at ``up`` may be an older checkout's), named by its
    content so parallel runs of different checkouts never overwrite each other's."""
    import hashlib
    import shutil

    source = REPO / "examples" / "train.py"
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:12]
    target = user_dir(Path(RESULTS) / "it-examples") / f"train-{digest}.py"
    if not target.exists():
        partial = target.with_name(f".{target.name}.{os.getpid()}")
        shutil.copyfile(source, partial)
        os.chown(partial, *owner_ids())
        partial.chmod(0o755)
        os.replace(partial, target)
    return f"python3 {target}"


def job_state(job_id: str) -> str:
    """The allocation's state from sacct (first word: ``CANCELLED by 0`` → ``CANCELLED``), or
    squeue's while sacct has no final row yet; "" when neither knows it yet."""
    out = subprocess.run(
        ["sacct", "-X", "-n", "-P", "-j", job_id, "--format=State"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    ).stdout.split()
    squeue = subprocess.run(
        ["squeue", "-h", "-t", "all", "-j", job_id, "-o", "%T"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    ).stdout.strip()
    return squeue or (out[0] if out else "")


FINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED"}


def wait_state(job_id: str, states: set[str], timeout: float) -> str:
    deadline = time.monotonic() + timeout
    state = ""
    while time.monotonic() < deadline:
        state = job_state(job_id)
        if state in states:
            return state
        time.sleep(1)
    raise AssertionError(f"job {job_id} did not reach {sorted(states)} in {timeout:g} s: {state}")


def wait_for(check: Any, timeout: float, what: str, interval: float = 0.5) -> Any:
    """Poll ``check()`` until it returns something truthy; that value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"{what}: not within {timeout:g} s")


# ----------------------------------------------------------------------------------- the pieces


def ngc_credentials() -> contextlib.AbstractContextManager[None]:
    """While held (shared lock), the test user's enroot credentials carry the sandbox's NGC key
    for its registry, so Pyxis can pull the demo image."""

    @contextlib.contextmanager
    def held() -> Iterator[None]:
        with flocked(CREDS_LOCK, exclusive=False):
            host = str(info()["registry"]).rsplit(":", 1)[0]
            key = Path(info()["ngc_key_file"]).read_text().strip()
            line = f"machine {host} login $oauthtoken password {key}\n"
            creds = Path(HOME) / ".config" / "enroot" / ".credentials"
            if line not in (creds.read_text() if creds.exists() else ""):
                user_dir(creds.parent)
                tmp = creds.with_name(f".credentials.{os.getpid()}")
                old = creds.read_text() if creds.exists() else ""
                kept = "".join(ln for ln in old.splitlines(True) if f"machine {host} " not in ln)
                tmp.write_text(kept + line)
                tmp.chmod(0o600)
                entry = pwd.getpwnam(USER)
                os.chown(tmp, entry.pw_uid, entry.pw_gid)
                tmp.replace(creds)
            yield

    return held()


def image_ref() -> str:
    """The demo image as Pyxis takes it (``registry#repo:tag``)."""
    registry, _, rest = str(info()["demo_image"]).partition("/")
    return f"{registry}#{rest}"


def used_totp_steps(secret_file: Path) -> set[int]:
    """The 30 s steps whose code was used already (``" DISALLOW_REUSE`` in the secret file)."""
    for line in secret_file.read_text().splitlines():
        if line.startswith('" DISALLOW_REUSE'):
            return {int(x) for x in line.split()[2:] if x.isdigit()}
    return set()


def totp_code() -> str:
    """A one-time code for the MFA user that the server has not seen yet (the account refuses a
    code twice; one step of skew is accepted, so the next step's code serves when this step's
    was used): computed with oathtool from the account's secret."""
    mfa = info()["mfa"]
    secret_file = Path(mfa["totp_secret_file"])
    secret = secret_file.read_text().splitlines()[0].strip()
    used = used_totp_steps(secret_file)
    now = int(time.time())
    for step in (now // 30, now // 30 + 1):
        if step not in used:
            out = subprocess.run(
                ["oathtool", "--totp", "-b", "-N", f"@{step * 30 + 1}", secret],
                capture_output=True,
                text=True,
                timeout=10,
                check=True,
            ).stdout.strip()
            assert re.fullmatch(r"\d{6}", out), out
            return out
    time.sleep(31 - now % 30)
    return totp_code()


def gpu_load(job_id: str, *lines: str) -> Path:
    """Set what nvidia-smi reports for a job's GPUs (``"all 87 30000"``, ``"1 5 100"``: index
    within the job, utilization %, memory used MiB); no lines: the file is removed (idle)."""
    path = Path(info()["gpu_load_dir"]) / job_id
    if lines:
        path.write_text("".join(f"{line}\n" for line in lines))
        path.chmod(0o644)
    else:
        path.unlink(missing_ok=True)
    return path


def free_bytes(path: str | Path) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


@contextlib.contextmanager
def filled(directory: str | Path, user: str = USER) -> Iterator[Path]:
    """Fill the file system of ``directory`` as ``user`` to the last block (a preallocated file
    of nearly all its free space, then zeros until ENOSPC) and free it again afterwards.

    These small ext4 file systems have 1 KiB blocks; ``dd bs=4k`` stopped on ENOSPC with up to
    three blocks still free (a whole 4 KiB page is reserved or none), and a test's small write
    then succeeded (CI failed so once). So: write 1 KiB at a time, sync (delayed allocation gives
    back what it reserved for metadata), look again, fill again until nothing is free. One test
    at a time fills a given file system (a lock beside it), whichever xdist worker runs it."""
    ballast = Path(directory) / f".ballast-{os.getpid()}-{time.monotonic_ns()}"
    rests: list[Path] = []
    mount = os.stat(directory).st_dev
    with open(f"/tmp/tao-sandbox-fill-{mount}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            size = max(0, free_bytes(directory) - (1 << 20))
            result = as_user(["fallocate", "-l", str(size), str(ballast)], user=user)
            assert result.returncode == 0, result.stderr
            for _ in range(20):
                rest = ballast.with_name(f"{ballast.name}-rest{len(rests)}")
                rests.append(rest)
                result = as_user(["dd", "if=/dev/zero", f"of={rest}", "bs=1k"], user=user)
                assert "No space left on device" in result.stderr, result.stderr
                subprocess.run(["sync", "-f", str(directory)], check=True, timeout=60)
                if free_bytes(directory) == 0:
                    break
            assert free_bytes(directory) == 0, (
                f"{directory} still has {free_bytes(directory)} bytes free"
            )
            yield ballast
        finally:
            ballast.unlink(missing_ok=True)
            for rest in rests:
                rest.unlink(missing_ok=True)


def quoted(*words: str) -> str:
    return " ".join(shlex.quote(w) for w in words)
