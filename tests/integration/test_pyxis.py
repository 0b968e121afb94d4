"""The container path end to end: NGC key → enroot credentials → Pyxis pulls the sandbox's TAO-like
image from its NGC-style registry and runs the job inside it, on one node and on two.

Everything is real: ``scripts/sandbox-cluster`` brings up Pyxis + enroot on every compute node
and a TLS registry with Basic auth (``$oauthtoken`` + the sandbox's NGC key). The key reaches
the cluster only through the product's own ``creds install``.

The enroot credentials file of the test user is shared by every job, so tests that need the
right key hold a shared lock on it and the tests that install a wrong one hold it exclusively
(the same lock file as ``test_credentials.py``).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from tao_slurm_tui import cli
from tao_slurm_tui.config import Profile, state_db_path
from tao_slurm_tui.core.layout import JobPaths
from tao_slurm_tui.core.models import JobRecord, TaoStatus
from tao_slurm_tui.remote.connection import Connection
from tao_slurm_tui.services.credentials import install_ngc_credentials
from tao_slurm_tui.services.store import JobStore
from tests import sandbox
from tests.integration.conftest import harness
from tests.integration.monitor_helpers import PROFILE, Harness, unique

pytestmark = pytest.mark.slow

CREDS_LOCK = sandbox.CREDS_LOCK
CREDENTIALS = Path(sandbox.HOME) / ".config" / "enroot" / ".credentials"
PULL = 420.0
"""Bound for a job that pulls the image: a first pull on a busy 2-core machine takes ~1 min,
and the job may pend behind parallel tests."""


def registry_host() -> str:
    return str(sandbox.info()["registry"]).rsplit(":", 1)[0]


def ngc_key() -> str:
    return Path(sandbox.info()["ngc_key_file"]).read_text().strip()


def key_installed(key: str) -> bool:
    try:
        text = CREDENTIALS.read_text()
    except FileNotFoundError:
        return False
    return f"machine {registry_host()} login $oauthtoken password {key}\n" in text


@contextlib.contextmanager
def creds_lock(exclusive: bool) -> Iterator[None]:
    with sandbox.flocked(CREDS_LOCK, exclusive):
        yield


@pytest.fixture
def pyxis_profile(cluster: None) -> Profile:
    """The sandbox as a Pyxis cluster (what ``scripts/sandbox-cluster up`` writes)."""
    info = sandbox.info()
    assert info["container_runtime"] == "pyxis"
    return sandbox.sandbox_profile(
        container_runtime="pyxis",
        registry_hosts=["nvcr.io", "authn.nvidia.com", registry_host()],
    )


@pytest.fixture
async def good_key(pyxis_profile: Profile) -> AsyncIterator[None]:
    """The right NGC key is in the enroot credentials while the test runs (shared lock)."""
    with creds_lock(exclusive=False):
        if not key_installed(ngc_key()):
            async with Connection(pyxis_profile) as conn:
                await install_ngc_credentials(conn, ngc_key())
        yield


@pytest.fixture
async def ph(pyxis_profile: Profile) -> AsyncIterator[Harness]:
    """Monitor harness on the Pyxis profile, with the state DB the CLI verbs read."""
    async with harness(pyxis_profile, JobStore(state_db_path())) as h:
        yield h


def write_config(tmp_path: Path, profile: Profile) -> str:
    path = tmp_path / "config.toml"
    data = {
        "default_profile": PROFILE,
        "profiles": {PROFILE: profile.model_dump(mode="json", exclude_none=True)},
    }
    path.write_text(tomli_w.dumps(data))
    return str(path)


def image_job(**over: Any) -> dict[str, Any]:
    values: dict[str, Any] = {"image": sandbox.info()["demo_image"], "time_hours": 0.5}
    values.update(over)
    return values


def main_out(job: JobRecord) -> str:
    return Path(JobPaths(sandbox.RESULTS, job.id).main_out(job.slurm_job_id)).read_text()


def main_err(job: JobRecord) -> str:
    return Path(JobPaths(sandbox.RESULTS, job.id).main_err(job.slurm_job_id)).read_text()


def shared_dir(prefix: str) -> Path:
    """A fresh directory on the shared filesystem, owned by the test user."""
    path = Path(sandbox.RESULTS) / "it-pyxis" / unique(prefix)
    path.mkdir(parents=True)
    user = pwd.getpwnam(sandbox.USER)
    for p in (path.parent, path):
        os.chown(p, user.pw_uid, user.pw_gid)
    return path


# ----------------------------------------------------------------------------------- one node


async def test_creds_install_then_the_job_runs_inside_the_pulled_image(
    ph: Harness, pyxis_profile: Profile, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path, pyxis_profile)
    mount = shared_dir("mount")
    (mount / "marker-from-the-host").write_text("mounted\n")
    name = unique("pyxis")
    command = (
        "cat /etc/tao-toolkit-release; "
        'echo "spec env: $DEMO_GREETING"; '
        "ls /data; "
        "python3 /opt/tao/examples/train.py --epochs 2 --seconds 0.2"
    )
    with creds_lock(exclusive=True):
        # The key goes in through the product's own path: `creds install` fed on stdin.
        key_file = Path(sandbox.info()["ngc_key_file"])
        with key_file.open() as stdin:
            proc = subprocess.run(
                [sys.executable, "-m", "tao_slurm_tui", "--config", config, "creds", "install"],
                stdin=stdin, capture_output=True, text=True, timeout=120, check=False,
            )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert ngc_key() not in proc.stdout + proc.stderr
        assert key_installed(ngc_key())
        job = await ph.submit(
            name,
            command,
            **image_job(container_mounts=[f"{mount}:/data"], env={"DEMO_GREETING": "hi there"}),
        )
        job = await ph.tick_until(name, lambda j: j.status.terminal, timeout=PULL, interval=2)
    out = main_out(job)
    assert job.status is TaoStatus.COMPLETE, (job.status_json(), out, main_err(job))
    # Only the image has this file; the spec's [env] and the mount are visible inside.
    assert "TAO Toolkit sandbox image" in out
    assert "spec env: hi there" in out
    assert "marker-from-the-host" in out
    assert "epoch 2/2" in out
    assert "pyxis: imported docker image" in main_err(job)
    assert job.message == "Train finished successfully."  # what TAO 7.3 writes
    capsys.readouterr()
    assert await asyncio.to_thread(cli.main, ["--config", config, "logs", name]) == 0
    logs = capsys.readouterr().out
    assert "TAO Toolkit sandbox image" in logs and "epoch 2/2" in logs


async def test_a_wrong_key_is_an_error_naming_the_key_and_the_fixed_key_works(
    ph: Harness, pyxis_profile: Profile
) -> None:
    sentinel = f"WRONG-{uuid.uuid4().hex}"
    bad, good = unique("badkey"), unique("goodkey")
    with creds_lock(exclusive=True):
        try:
            async with Connection(pyxis_profile) as conn:
                await install_ngc_credentials(conn, sentinel)
            await ph.submit(bad, "cat /etc/tao-toolkit-release", **image_job())
            job = await ph.tick_until(bad, lambda j: j.status.terminal, timeout=PULL, interval=2)
        finally:
            async with Connection(pyxis_profile) as conn:
                await install_ngc_credentials(conn, ngc_key())
        assert job.status is TaoStatus.ERROR, job.status_json()
        assert job.retries == 0 and len(job.attempts) == 1
        assert "refused the NGC key" in job.message and "set-up" in job.message
        assert sentinel not in job.message and sentinel not in main_err(job)
        assert "refused the NGC key (HTTP 401)" in main_err(job)
        # Fixed key, resubmitted: it pulls and runs.
        await ph.submit(good, "cat /etc/tao-toolkit-release", **image_job())
        job = await ph.tick_until(good, lambda j: j.status.terminal, timeout=PULL, interval=2)
    assert job.status is TaoStatus.COMPLETE, (job.status_json(), main_err(job))
    assert "TAO Toolkit sandbox image" in main_out(job)


async def test_an_image_typo_says_image_not_found_in_the_registry(
    ph: Harness, good_key: None
) -> None:
    """Pyxis says only "failed to import docker image"; the batch script asks the registry,
    whose 404 reaches the job's message (its details, `status`, the notification): the cause
    and the field to change, never retried."""
    name = unique("imgtypo")
    image = sandbox.info()["demo_image"].rsplit(":", 1)[0] + ":no-such-tag"
    await ph.submit(name, "true", **image_job(image=image, use_sqsh=False))
    job = await ph.tick_until(name, lambda j: j.status.terminal, timeout=PULL, interval=2)
    assert job.status is TaoStatus.ERROR, job.status_json()
    assert job.retries == 0 and len(job.attempts) == 1
    assert "image not found in the registry" in job.message.lower(), job.message
    assert "fix Image" in job.message and "no-such-tag" in job.message, job.message
    assert "image not found in the registry" in main_err(job)


# ----------------------------------------------------------------------------------- SQSH


def sqsh_magic(path: Path) -> bytes:
    with path.open("rb") as handle:
        return handle.read(4)


async def test_sqsh_is_converted_once_reused_and_a_corrupt_file_falls_back(
    ph: Harness, good_key: None, pyxis_profile: Profile
) -> None:
    cache = shared_dir("sqsh")
    harness = Harness(
        ph.conn, ph.store, pyxis_profile.model_copy(update={"sqsh_cache_dir": str(cache)})
    )
    first, second = unique("sqsh1"), unique("sqsh2")
    command = "cat /etc/tao-toolkit-release; echo from-sqsh"
    try:
        job = await harness.submit(first, command, **image_job(use_sqsh=True))
        assert job.sqsh_job_id.isdigit()
        job = await harness.tick_until(first, lambda j: j.status.terminal, timeout=PULL, interval=2)
        assert job.status is TaoStatus.COMPLETE, (job.status_json(), main_err(job))
        files = list(cache.glob("*.sqsh"))
        assert len(files) == 1 and sqsh_magic(files[0]) == b"hsqs"
        assert "using the SQSH image" in main_out(job) and "from-sqsh" in main_out(job)

        # Same image again: the cached file is used, no second conversion.
        job = await harness.submit(second, command, **image_job(use_sqsh=True))
        assert job.sqsh_job_id == ""
        assert any("cached SQSH" in e.text for e in ph.store.events(PROFILE, second))
        job = await harness.tick_until(second, lambda j: j.status.terminal, timeout=PULL)
        assert job.status is TaoStatus.COMPLETE, (job.status_json(), main_err(job))
        assert "TAO Toolkit sandbox image" in main_out(job)
        assert "pyxis: importing docker image" not in main_err(job)
    finally:
        await harness.cleanup()

    # A corrupt cache file in a directory the conversion cannot write: the conversion fails
    # and the training job falls back to the registry image (WARNING in main.err).
    broken = Path(sandbox.RESULTS) / "it-pyxis" / unique("sqsh-broken")
    broken.mkdir()
    (broken / files[0].name).write_bytes(b"not a squashfs image\n")
    harness = Harness(
        ph.conn, ph.store, pyxis_profile.model_copy(update={"sqsh_cache_dir": str(broken)})
    )
    third = unique("sqsh3")
    try:
        job = await harness.submit(third, command, **image_job(use_sqsh=True))
        assert job.sqsh_job_id.isdigit()
        job = await harness.tick_until(third, lambda j: j.status.terminal, timeout=PULL, interval=2)
    finally:
        await harness.cleanup()
        shutil.rmtree(broken, ignore_errors=True)
    assert job.status is TaoStatus.COMPLETE, (job.status_json(), main_err(job))
    assert "falling back to the registry image" in main_err(job)
    assert "TAO Toolkit sandbox image" in main_out(job)


# ----------------------------------------------------------------------------------- two nodes

RENDEZVOUS = r"""python3 - <<'PY'
import os, socket, time
rank, host = int(os.environ["NODE_RANK"]), socket.gethostname()
addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
print(f"rank {rank} on {host} world {os.environ['WORLD_SIZE']} master {addr}:{port}", flush=True)
if rank == 0:
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("0.0.0.0", port))
    srv.listen(1)
    srv.settimeout(120)
    conn, _ = srv.accept()
    peer = conn.recv(200).decode()
    conn.sendall(f"welcome from {host}".encode())
    print(f"rank 0 on {host} accepted: {peer}", flush=True)
else:
    for _ in range(240):
        try:
            conn = socket.create_connection((addr, port), timeout=5)
            break
        except OSError:
            time.sleep(0.5)
    conn.sendall(f"hello from rank 1 on {host}".encode())
    print(f"rank 1 on {host} got: {conn.recv(200).decode()}", flush=True)
PY
test -e /etc/tao-toolkit-release && echo "rank $NODE_RANK inside the image"
"""


async def test_two_nodes_rendezvous_inside_the_container(ph: Harness, good_key: None) -> None:
    name = unique("pyxis2n")
    await ph.submit(name, RENDEZVOUS, **image_job(num_nodes=2, num_gpus=1))
    job = await ph.tick_until(name, lambda j: j.status.terminal, timeout=PULL, interval=2)
    out = main_out(job)
    assert job.status is TaoStatus.COMPLETE, (job.status_json(), out, main_err(job))
    ranks = dict(re.findall(r"^rank ([01]) on (\S+) world 2 master", out, re.M))
    assert set(ranks) == {"0", "1"} and ranks["0"] != ranks["1"], out
    master = re.search(r"master (\S+):", out)
    assert master and master.group(1) == ranks["0"]
    accepted = re.search(r"^rank 0 on (\S+) accepted: hello from rank 1 on (\S+)$", out, re.M)
    assert accepted and accepted.groups() == (ranks["0"], ranks["1"]), out
    assert f"rank 1 on {ranks['1']} got: welcome from {ranks['0']}" in out
    assert "rank 0 inside the image" in out and "rank 1 inside the image" in out


# ----------------------------------------------------------------------------------- registry


def registry_auth_file(tmp_path: Path) -> Path:
    token = base64.b64encode(f"$oauthtoken:{ngc_key()}".encode()).decode()
    path = tmp_path / "auth.json"
    path.write_text(json.dumps({"auths": {sandbox.info()["registry"]: {"auth": token}}}))
    path.chmod(0o600)
    return path


def test_registry_works_around_both_enroot_bugs(cluster: None, tmp_path: Path) -> None:
    """enroot 4.1.2 silently fails a pull (rc 1, no message) from a registry that speaks HTTP/2
    (curl logs ``authorization:`` in lower case, enroot's awk wants ``Authorization:``) or that
    serves an OCI manifest (its Basic-auth probe sends no Accept header and gets a 404)."""
    registry = sandbox.info()["registry"]
    image = sandbox.info()["demo_image"]
    # 1. HTTP/2 is off: even a client that offers h2 (ALPN) gets HTTP/1.1.
    head = subprocess.run(
        ["curl", "-sS", "--http2", "-o", "/dev/null", "-w", "%{http_version}", "-I",
         f"https://{registry}/v2/"],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert head.returncode == 0, head.stderr
    assert head.stdout.strip() == "1.1"
    # 2. The demo image is a Docker v2 schema 2 manifest, not OCI.
    raw = subprocess.run(
        ["skopeo", "inspect", "--raw", "--authfile", str(registry_auth_file(tmp_path)),
         f"docker://{image}"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert raw.returncode == 0, raw.stderr
    assert '"application/vnd.docker.distribution.manifest.v2+json"' in raw.stdout
    # 3. With both in place, enroot's own Basic-auth probe gets a token with the key: an
    #    import on the login host succeeds (the same code path Pyxis runs on the nodes).
    home = tmp_path / "home"
    (tmp_path / "config").mkdir()
    creds = tmp_path / "config" / ".credentials"
    creds.write_text(f"machine {registry_host()} login $oauthtoken password {ngc_key()}\n")
    creds.chmod(0o600)
    out = tmp_path / "demo.sqsh"
    env = {**os.environ, "HOME": str(home), "ENROOT_TEMP_PATH": str(tmp_path)}
    for what in ("CONFIG", "CACHE", "DATA", "RUNTIME"):
        env[f"ENROOT_{what}_PATH"] = str(tmp_path / what.lower())
    pull = subprocess.run(
        ["enroot", "import", "-o", str(out), "docker://" + image.replace("/", "#", 1)],
        capture_output=True, text=True, timeout=300, check=False, env=env,
    )  # fmt: skip
    assert pull.returncode == 0, pull.stdout + pull.stderr
    assert "Authentication succeeded" in pull.stderr
    assert sqsh_magic(out) == b"hsqs"
