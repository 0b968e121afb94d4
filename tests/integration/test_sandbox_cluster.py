"""Smoke checks of the sandbox cluster that ``scripts/sandbox-cluster up`` brings up.

Everything goes through the real sshd as the test user, the way the app talks to a cluster.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from tao_slurm_tui.core.images import parse_image
from tests import sandbox

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "sandbox-cluster"

pytestmark = pytest.mark.usefixtures("cluster")

LIVE_STATES = {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING"}


def ssh(
    command: str, user: str = sandbox.USER, timeout: float = 20
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` on the sandbox login node with the OpenSSH client, key-only."""
    return subprocess.run(
        [
            *sandbox.openssh_argv(user),
            command,
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def test_partitions_and_limits() -> None:
    result = ssh("sinfo -h -o '%P|%l|%a'")
    assert result.returncode == 0, result.stderr
    rows = set(result.stdout.split())
    assert "polar*|4:00:00|up" in rows  # the default partition
    assert "batch|2-00:00:00|up" in rows


def test_gpu_job_completes_and_is_accounted() -> None:
    name = f"smoke-{uuid.uuid4().hex[:8]}"
    workdir = f"{sandbox.RESULTS}/{name}"
    submit = ssh(
        f"mkdir -p {workdir} && cd {workdir} && "
        f"sbatch --parsable -J {name} --gres=gpu:1 --time=00:05:00 -o {workdir}/%x-%j.out "
        "--wrap 'echo gpus=$CUDA_VISIBLE_DEVICES'"
    )
    assert submit.returncode == 0, submit.stderr
    job_id = submit.stdout.strip()
    assert job_id.isdigit(), submit.stdout

    # sacct lags (RECIPE gotcha 3): poll until the allocation row reaches a final state. The
    # bound allows for the job pending (~2 min) while parallel tests hold the node's 4 GPUs.
    state = ""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        result = ssh(f"sacct -X -n -P -j {job_id} --format=JobName,State,ExitCode")
        fields = result.stdout.strip().split("|")
        # Before the real record sacct may show no row or a transient "allocation" row.
        if len(fields) == 3 and fields[0] == name and fields[1].split()[0] not in LIVE_STATES:
            state = fields[1].split()[0]
            assert fields[2] == "0:0"
            break
        time.sleep(1)
    assert state == "COMPLETED"
    log = ssh(f"cat {workdir}/{name}-{job_id}.out")
    # Exactly one fake GPU; which one depends on what other jobs hold (parallel tests).
    assert re.fullmatch(r"gpus=[0-3]", log.stdout.strip()), log.stdout


def test_enforce_part_limits_rejects_over_limit_time() -> None:
    result = ssh("sbatch --parsable --time=05:00:00 --wrap true")
    assert result.returncode == 1
    assert result.stdout == ""
    assert (
        "sbatch: error: Batch job submission failed: Requested time limit is invalid "
        "(missing or exceeds some limit)" in result.stderr
    )


def test_only_the_test_user_may_log_in() -> None:
    result = ssh("true", user="root")  # the right key, but AllowUsers only has the test user
    assert result.returncode == 255
    assert "Permission denied (publickey)." in result.stderr


def test_status_reports_everything_up() -> None:
    result = subprocess.run(
        [str(SCRIPT), "status"],
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    up = {tuple(line.split()[:2]) for line in result.stdout.splitlines()}
    nodes = sandbox.info()["nodes"]
    assert len(nodes) >= 2
    daemons = ["munged", "mariadbd", "slurmdbd", "slurmctld", "slurmctld-backup", "registry"]
    daemons += ["sshd", "sshd-login2", "sshd-mfa"]
    for daemon in daemons + [f"slurmd-{node}" for node in nodes]:
        assert (daemon, "up") in up, result.stdout
    assert ("registry", "ok") in up and ("ssh", "ok") in up, result.stdout
    assert "ssh login2     ok" in result.stdout and "ssh mfa        ok" in result.stdout


def test_info_json_is_the_contract_and_its_paths_exist() -> None:
    result = subprocess.run(
        [str(SCRIPT), "info", "--json"], capture_output=True, text=True, timeout=30, check=False
    )
    assert result.returncode == 0, result.stderr
    info = json.loads(result.stdout)
    assert set(info) == {
        "ssh",
        "partition",
        "nodes",
        "gpus",
        "registry",
        "demo_image",
        "ngc_key_file",
        "container_runtime",
        "mfa",
        "login_hosts",
        "controllers",
        "priority",
        "small_fs",
        "small_home",
        "gpu_load_dir",
        "tao",
    }
    assert set(info["mfa"]) >= {
        "user", "host", "port", "key", "known_hosts", "totp_secret_file", "auth_log",
    }  # fmt: skip
    for path in (info["mfa"]["key"], info["mfa"]["known_hosts"], info["mfa"]["auth_log"]):
        assert Path(path).is_file(), path
    assert [h["name"] for h in info["login_hosts"]] == ["login1", "login2"]
    assert info["controllers"]["in_control"] in {"tao-ctl", "tao-ctl2"}
    assert Path(info["small_fs"]["path"]).is_dir() and Path(info["small_home"]["home"]).is_dir()
    assert Path(info["gpu_load_dir"]).is_dir()
    assert info["tao"]["image"] == info["demo_image"]
    assert {"classification_pyt", "dino"} <= set(info["tao"]["networks"])
    for spec in info["tao"]["example_specs"].values():
        assert Path(spec).is_file(), spec
    assert set(info["ssh"]) == {"user", "host", "port", "key", "known_hosts"}
    assert info["ssh"]["user"] == sandbox.USER and info["ssh"]["port"] == sandbox.PORT
    assert info["ssh"]["host"] == sandbox.HOST
    for path in (info["ssh"]["key"], info["ssh"]["known_hosts"], info["ngc_key_file"]):
        assert Path(path).is_file(), path
    assert Path(info["ngc_key_file"]).read_text().strip()
    assert info["partition"] == "polar" and info["container_runtime"] == "pyxis"
    assert len(info["nodes"]) >= 2
    sinfo = ssh("sinfo -h -N -p polar -o %N")
    assert sorted(set(sinfo.stdout.split())) == sorted(info["nodes"])
    # The fake GPUs are typed (two types), and SLURM configures each node as info says.
    assert set(info["gpus"]) == set(info["nodes"])
    assert len({g["type"] for g in info["gpus"].values()}) >= 2
    gres = ssh("sinfo -h -N -p polar -O 'NodeHost:|,Gres:|'")
    configured = {
        name.strip(): value.strip()
        for name, value, *_ in (line.split("|") for line in gres.stdout.splitlines())
    }
    for node, gpus in info["gpus"].items():
        assert configured[node].startswith(f"gpu:{gpus['type']}:{gpus['count']}"), configured
    host, _, port = info["registry"].rpartition(":")
    assert host and port.isdigit()
    assert info["demo_image"].startswith(info["registry"] + "/")
    # The image is written as a researcher would write it, and the product accepts it.
    assert parse_image(info["demo_image"]).registry == info["registry"]


def test_every_node_has_enroot_and_pyxis() -> None:
    nodes = sandbox.info()["nodes"]
    result = ssh(
        f"srun -N{len(nodes)} --ntasks-per-node=1 -l sh -c "
        "'echo $(hostname) $(enroot version) $SLURM_NODEID' </dev/null; srun --help",
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    seen = {line.split()[1] for line in result.stdout.splitlines() if "4.1.2" in line}
    assert seen == set(nodes), result.stdout
    assert "--container-image" in result.stdout
