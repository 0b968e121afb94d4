"""The doctor against the real sandbox cluster: healthy, then one thing broken at a time.

Each broken case is checked twice: through the service (what the TUI calls) and through
``tao-slurm-tui doctor --json`` in a subprocess with a ``--config`` file, which must agree.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from tao_slurm_tui.core.preflight import CheckStatus, FixAction
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.remote.connection import Connection
from tao_slurm_tui.services import sshsetup
from tao_slurm_tui.services.onboarding import DoctorReport, create_results_dir, run_doctor
from tests import sandbox


def statuses(report: DoctorReport) -> dict[str, str]:
    return {r.check: str(r.status) for r in report.results}


def run_cli(tmp_path: Path, profile: Profile, *extra: str) -> tuple[int, list[dict[str, Any]]]:
    """``tao-slurm-tui --config CFG doctor --json ...`` in a subprocess."""
    cfg = tmp_path / "config.toml"
    cfg.write_text(
        tomli_w.dumps(
            {
                "default_profile": "sb",
                "profiles": {"sb": profile.model_dump(mode="json", exclude_none=True)},
            }
        )
    )
    proc = subprocess.run(
        [sys.executable, "-m", "tao_slurm_tui", "--config", str(cfg), "doctor", "--json", *extra],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ},
    )
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def cli_entry(entries: list[dict[str, Any]], check: str) -> dict[str, Any]:
    return next(e for e in entries if e["check"] == check)


async def test_healthy_sandbox_passes(sandbox_profile: Profile, tmp_path: Path) -> None:
    seen: list[str] = []
    report = await run_doctor(sandbox_profile, on_result=lambda r: seen.append(r.check))
    got = statuses(report)
    for check in (
        "profile",
        "ssh_key",
        "host_keys",
        "login",
        "slurm_tools",
        "account",
        "partitions",
        "results_dir",
    ):
        assert got[check] == "pass", report.get(check)
    assert got["pyxis"] == "skip"  # container_runtime = none
    # Credentials are not needed with the bare srun runtime (another test may have made them).
    assert got["enroot_credentials"] in ("skip", "pass")
    assert got["inputs"] == "skip"
    assert report.ok and report.host == sandbox.HOST
    assert seen == [r.check for r in report.results]
    partitions = report.get("partitions")
    assert partitions is not None and "polar (MaxTime 04:00:00)" in partitions.detail

    code, entries = run_cli(tmp_path, sandbox_profile)
    assert code == 0
    cli = {e["check"]: e["status"] for e in entries}
    # (enroot_credentials may flip between the two runs: the credentials tests run in parallel.)
    assert {k: v for k, v in cli.items() if k != "enroot_credentials"} == {
        k: v for k, v in got.items() if k != "enroot_credentials"
    }
    assert all({"check", "status", "detail", "fix"} <= set(e) for e in entries)


async def test_missing_key(sandbox_profile: Profile, tmp_path: Path) -> None:
    profile = sandbox_profile.model_copy(update={"ssh_key_path": str(tmp_path / "id_missing")})
    report = await run_doctor(profile)
    key = report.get("ssh_key")
    assert key is not None and key.status is CheckStatus.FAIL
    assert key.action is FixAction.GENERATE_KEY and "ssh-keygen -t ed25519" in key.fix
    login = report.get("login")
    assert login is not None and login.status is CheckStatus.FAIL
    assert not report.ok

    code, entries = run_cli(tmp_path, profile)
    assert code == 1
    entry = cli_entry(entries, "ssh_key")
    assert entry["status"] == "fail" and entry["fix"] == key.fix
    assert entry["action"] == "generate_key"


async def test_unknown_host_key(sandbox_profile: Profile, tmp_path: Path) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    profile = sandbox_profile.model_copy(update={"known_hosts": str(empty)})
    report = await run_doctor(profile)
    hk = report.get("host_keys")
    assert hk is not None and hk.status is CheckStatus.FAIL
    assert hk.action is FixAction.TRUST_HOST and hk.target == sandbox.HOST
    expected = subprocess.run(
        ["ssh-keygen", "-lf", str(sandbox.HOST_KEY_PUB)], capture_output=True, text=True, check=True
    ).stdout.split()[1]
    assert expected in hk.detail and expected in hk.fix
    assert hk.data["hosts"][0]["fingerprint"] == expected
    login = report.get("login")
    assert login is not None and login.status is CheckStatus.FAIL
    assert empty.read_text() == ""  # the doctor never trusts by itself

    code, entries = run_cli(tmp_path, profile)
    assert code == 1
    entry = cli_entry(entries, "host_keys")
    assert entry["status"] == "fail" and entry["action"] == "trust_host"
    assert expected in entry["fix"]


async def test_wrong_partition(sandbox_profile: Profile, tmp_path: Path) -> None:
    profile = sandbox_profile.model_copy(update={"partition": "polar,nosuch"})
    report = await run_doctor(profile)
    part = report.get("partitions")
    assert part is not None and part.status is CheckStatus.FAIL
    assert "nosuch" in part.detail and "polar" in part.fix and "batch" in part.fix
    assert report.get("slurm_tools").status is CheckStatus.PASS  # type: ignore[union-attr]

    code, entries = run_cli(tmp_path, profile)
    assert code == 1
    entry = cli_entry(entries, "partitions")
    assert entry["status"] == "fail" and entry["fix"] == part.fix


@pytest.mark.parametrize("root_dir", ["/", str(sandbox.STATE_DIR), f"{sandbox.STATE_DIR}/nowrite"])
async def test_unwritable_results_dir(
    sandbox_profile: Profile, tmp_path: Path, root_dir: str
) -> None:
    profile = sandbox_profile.model_copy(update={"base_results_dir": root_dir})
    report = await run_doctor(profile)
    res = report.get("results_dir")
    assert res is not None and res.status is CheckStatus.FAIL
    assert res.action is FixAction.EDIT_PROFILE and "base_results_dir" in res.fix
    if root_dir != "/":
        return  # one CLI run is enough to show --json agrees

    code, entries = run_cli(tmp_path, profile)
    assert code == 1
    entry = cli_entry(entries, "results_dir")
    assert entry["status"] == "fail" and entry["fix"] == res.fix


async def test_missing_results_dir_is_created_by_its_fix(sandbox_profile: Profile) -> None:
    top = f"{sandbox.RESULTS}/doctor-{uuid.uuid4().hex[:8]}"
    path = f"{top}/sub"
    profile = sandbox_profile.model_copy(update={"base_results_dir": path})
    try:
        report = await run_doctor(profile)
        res = report.get("results_dir")
        assert res is not None and res.status is CheckStatus.FAIL
        assert res.action is FixAction.CREATE_RESULTS_DIR and res.target == path
        assert f"mkdir -p {path}" in res.fix
        async with Connection(profile) as conn:
            await create_results_dir(conn, res.target)
        again = await run_doctor(profile)
        assert again.get("results_dir").status is CheckStatus.PASS  # type: ignore[union-attr]
    finally:
        shutil.rmtree(top, ignore_errors=True)


async def test_missing_input_path(sandbox_profile: Profile, tmp_path: Path) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text(
        'name = "doctor-inputs"\n'
        'image = "nvcr.io/nvidia/tao/tao-toolkit:6.26.3-pyt"\n'
        'command = "true"\n'
        f'inputs = ["lustre:///nonexistent/x", "lustre://{sandbox.RESULTS}"]\n'
    )
    report = await run_doctor(sandbox_profile, spec_path=spec)
    res = report.get("inputs")
    assert res is not None and res.status is CheckStatus.FAIL
    assert "/nonexistent/x" in res.detail and sandbox.RESULTS not in res.detail
    assert res.action is FixAction.EDIT_SPEC

    code, entries = run_cli(tmp_path, sandbox_profile, "--spec", str(spec))
    assert code == 1
    entry = cli_entry(entries, "inputs")
    assert entry["status"] == "fail" and entry["detail"] == res.detail and entry["fix"] == res.fix


def test_human_table_names_each_fix(sandbox_profile: Profile, tmp_path: Path) -> None:
    cfg = tmp_path / "config.toml"
    profile = sandbox_profile.model_copy(update={"partition": "nosuch"})
    cfg.write_text(
        tomli_w.dumps({"profiles": {"sb": profile.model_dump(mode="json", exclude_none=True)}})
    )
    proc = subprocess.run(
        [sys.executable, "-m", "tao_slurm_tui", "--config", str(cfg), "doctor"],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 1
    assert "[FAIL] Partitions" in proc.stdout
    assert "fix: Set partition to existing ones" in proc.stdout
    assert "[ok  ] Key-only login" in proc.stdout


async def test_doctor_reuses_the_callers_connection(sandbox_profile: Profile) -> None:
    conn = Connection(sandbox_profile)
    try:
        report = await run_doctor(sandbox_profile, connection=conn)
        assert report.ok, [r for r in report.results if r.failed]
        assert report.host == sandbox.HOST
        assert conn.connected  # warmed up and left open for the caller
    finally:
        await conn.close()


async def test_private_image_needs_no_credentials_when_nothing_pulls_it(
    sandbox_profile: Profile, tmp_path: Path
) -> None:
    # container_runtime = none and no SQSH conversion: the image is never pulled, so a private
    # image must not fail the credentials check (it did: "the spec's image is private").
    spec = tmp_path / "spec.toml"
    spec.write_text(
        'name = "doctor-private"\n'
        'image = "nvcr.io/nvstaging/tao/tao-toolkit:dev"\n'
        'command = "true"\n'
        "use_sqsh = false\n"
    )
    report = await run_doctor(sandbox_profile, spec_path=spec)
    creds = report.get("enroot_credentials")
    assert creds is not None and creds.status in (CheckStatus.SKIP, CheckStatus.PASS), creds
    assert report.ok, [r for r in report.results if r.failed]


# Serial: the check needs a free compute node within its 30 s (srun --immediate); beside the
# parallel suite every node can be busy with other tests' jobs, and then the doctor rightly warns.
@pytest.mark.serial
async def test_pyxis_profile_checks_enroot_and_pyxis_on_a_compute_node(cluster: None) -> None:
    info = sandbox.info()
    profile = sandbox.sandbox_profile(container_runtime="pyxis")
    report = await run_doctor(profile)
    pyxis = next(r for r in report.results if r.check == "pyxis")
    assert pyxis.status is CheckStatus.PASS, pyxis
    assert "srun --help lists --container-image" in pyxis.detail
    node = pyxis.detail.split("; on ", 1)[1].split(":", 1)[0]
    assert node in info["nodes"]
    assert "enroot 4.1.2" in pyxis.detail and "Pyxis plugin" in pyxis.detail


async def test_ssh_config_alias_is_checked_and_trusted_as_the_login_sees_it(
    sandbox_profile: Profile, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 11: a profile naming a ~/.ssh/config Host alias connected, but the doctor's host-key
    check and its trust fix said "unreachable (name or service not known)"."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True, mode=0o700)
    (home / ".ssh" / "config").write_text(
        "Host tao-lab\n"
        f"  HostName {sandbox.HOST}\n"
        f"  Port {sandbox.PORT}\n"
        f"  User {sandbox.USER}\n"
        f"  IdentityFile {sandbox.SSH_KEY}\n"
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text("")
    profile = sandbox_profile.model_copy(
        update={
            "hostnames": ["tao-lab"],
            "port": 22,  # the alias says 2222
            "ssh_key_path": "",
            "known_hosts": str(known_hosts),
            "use_ssh_config": True,
        }
    )
    report = await run_doctor(profile)
    hk = report.get("host_keys")
    assert hk is not None and hk.status is CheckStatus.FAIL, hk
    assert "unreachable" not in hk.detail
    assert hk.action is FixAction.TRUST_HOST and hk.target == "tao-lab"
    expected = subprocess.run(
        ["ssh-keygen", "-lf", str(sandbox.HOST_KEY_PUB)], capture_output=True, text=True, check=True
    ).stdout.split()[1]
    assert expected in hk.detail and f"tao-lab ({sandbox.HOST}:{sandbox.PORT})" in hk.detail

    # The trust fix, as the back end runs it for the set-up screen: fetch (shown), then trust.
    info = await sshsetup.fetch_host(profile, hk.target)
    assert info.fingerprint == expected
    sshsetup.trust_host(profile, info)
    assert known_hosts.read_text().startswith(f"[{sandbox.HOST}]:{sandbox.PORT} ")
    after = statuses(await run_doctor(profile))
    assert after["host_keys"] == "pass" and after["login"] == "pass", after
