"""Onboarding pieces that need no cluster: keys, the local key check, scripts run in local bash."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import asyncssh
import pytest

from tao_slurm_tui.core.preflight import CheckStatus, FixAction
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.errors import BadInput
from tao_slurm_tui.remote.authprobe import looks_like_second_factor
from tao_slurm_tui.services import credentials, sshsetup
from tao_slurm_tui.services.onboarding import check_ssh_key, load_spec_facts


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_generate_key_modes_and_fingerprint(tmp_path: Path) -> None:
    target = tmp_path / "newdir" / "id_ed25519"
    key = sshsetup.generate_key(target, comment="t@x")
    assert mode(target) == 0o600
    assert mode(key.public_path) == 0o644
    assert mode(target.parent) == 0o700
    assert key.public_key.startswith("ssh-ed25519 ") and key.public_key.endswith(" t@x")
    printed = subprocess.run(
        ["ssh-keygen", "-lf", str(key.public_path)], capture_output=True, text=True, check=True
    ).stdout
    assert printed.split()[1] == key.fingerprint
    assert asyncssh.read_private_key(target).get_algorithm() == "ssh-ed25519"


def test_generate_key_never_overwrites(tmp_path: Path) -> None:
    target = tmp_path / "id_ed25519"
    sshsetup.generate_key(target)
    before = target.read_bytes()
    with pytest.raises(BadInput, match="never overwritten"):
        sshsetup.generate_key(target)
    assert target.read_bytes() == before
    other = tmp_path / "k2"
    (tmp_path / "k2.pub").write_text("x")
    with pytest.raises(BadInput):
        sshsetup.generate_key(other)
    assert not other.exists()


def test_generate_key_with_passphrase(tmp_path: Path) -> None:
    target = tmp_path / "id_ed25519"
    sshsetup.generate_key(target, passphrase="correct horse")
    with pytest.raises((asyncssh.KeyEncryptionError, asyncssh.KeyImportError)):
        asyncssh.read_private_key(target)
    assert asyncssh.read_private_key(target, "correct horse")
    # The doctor explains that an encrypted key needs the agent.
    res = check_ssh_key(Profile(ssh_key_path=str(target)), environ={})
    assert res.status is CheckStatus.FAIL and "ssh-add" in res.fix


def test_local_key_check(tmp_path: Path) -> None:
    missing = check_ssh_key(Profile(ssh_key_path=str(tmp_path / "nope")), environ={})
    assert missing.status is CheckStatus.FAIL
    assert missing.action is FixAction.GENERATE_KEY and missing.target.endswith("nope")
    key = tmp_path / "id_ed25519"
    sshsetup.generate_key(key)
    assert check_ssh_key(Profile(ssh_key_path=str(key)), environ={}).status is CheckStatus.PASS
    os.chmod(key, 0o644)
    loose = check_ssh_key(Profile(ssh_key_path=str(key)), environ={})
    assert loose.status is CheckStatus.FAIL and loose.action is FixAction.FIX_PERMISSIONS
    assert f"chmod 600 {key}" in loose.fix
    sshsetup.fix_key_permissions(key)
    assert mode(key) == 0o600


def test_no_key_but_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    sock = tmp_path / "agent.sock"
    sock.touch()
    res = check_ssh_key(Profile(), environ={"SSH_AUTH_SOCK": str(sock)})
    assert res.status is CheckStatus.PASS and "ssh-agent" in res.detail
    res = check_ssh_key(Profile(), environ={})
    assert res.status is CheckStatus.FAIL and res.action is FixAction.GENERATE_KEY


def test_remediation_prompt_is_filled_in() -> None:
    prof = Profile(user="alice", hostnames=["login1.example"], ssh_key_path="~/.ssh/id_lab")
    text = sshsetup.remediation_prompt(prof)
    assert text.startswith("SLURM is blocked on passwordless SSH.")
    assert "ssh-copy-id -i ~/.ssh/id_lab.pub alice@login1.example" in text
    assert "ssh -o BatchMode=yes -i ~/.ssh/id_lab alice@login1.example 'hostname'" in text
    assert "chmod 600 ~/.ssh/id_lab" in text
    assert "<SLURM_USER>" not in text and "<login-host>" not in text


def test_two_factor_prompts() -> None:
    assert looks_like_second_factor("Verification code: ")
    assert looks_like_second_factor("Duo two-factor login for alice")
    assert looks_like_second_factor("Enter OTP:")
    assert not looks_like_second_factor("Password: ")
    text = sshsetup.two_factor_explanation(Profile(user="al", hostnames=["h"]), prompt="Code:")
    assert "h asks for a one-time code ('Code:') by keyboard-interactive login" in text
    assert "an ssh-agent does not avoid it" in text and "one code serves" in text


@pytest.mark.parametrize("bad", ["", "   ", "abc def", "abc\ndef", "abc\tdef", "a\x00b"])
def test_ngc_key_validation_never_echoes(bad: str) -> None:
    with pytest.raises(BadInput) as info:
        credentials.validate_ngc_key(bad)
    for part in bad.split():
        assert part not in str(info.value)


def test_secret_repr_is_masked() -> None:
    secret = credentials.validate_ngc_key("  SENTINEL-abc\n")
    assert secret.reveal() == "SENTINEL-abc"
    assert "SENTINEL" not in repr(secret) and "SENTINEL" not in str(secret)
    secret.clear()
    with pytest.raises(BadInput):
        secret.reveal()


def _run_install_script(home: Path, key: str) -> subprocess.CompletedProcess[str]:
    env = {"HOME": str(home), "PATH": os.environ["PATH"]}
    return subprocess.run(
        ["bash", "-c", credentials.INSTALL_SCRIPT],
        input=key + "\n",
        capture_output=True,
        text=True,
        env=env,
    )


def test_credentials_script_keeps_other_machines(tmp_path: Path) -> None:
    cred = tmp_path / ".config" / "enroot" / ".credentials"
    cred.parent.mkdir(parents=True)
    cred.write_text(
        "machine gitlab.example.com login bob password tok1\n"
        "machine nvcr.io login $oauthtoken password OLD\n"
        "  machine authn.nvidia.com login $oauthtoken password OLD\n"
        "machine nvcr.io.evil.example login x password y"  # no trailing newline, not nvcr.io
    )
    proc = _run_install_script(tmp_path, "NEWKEY")
    assert proc.returncode == 0, proc.stderr
    assert "NEWKEY" not in proc.stdout + proc.stderr
    assert cred.read_text() == (
        "machine gitlab.example.com login bob password tok1\n"
        "machine nvcr.io.evil.example login x password y\n"
        "machine nvcr.io login $oauthtoken password NEWKEY\n"
        "machine authn.nvidia.com login $oauthtoken password NEWKEY\n"
    )
    assert mode(cred) == 0o600 and mode(cred.parent) == 0o700
    assert [p.name for p in cred.parent.iterdir()] == [".credentials"]  # no temp left


def test_credentials_script_fresh_and_idempotent(tmp_path: Path) -> None:
    for _ in range(2):
        assert _run_install_script(tmp_path, "K1").returncode == 0
    cred = tmp_path / ".config" / "enroot" / ".credentials"
    assert cred.read_text().count("K1") == 2
    assert len(cred.read_text().splitlines()) == 2
    assert _run_install_script(tmp_path, "").returncode == 4


def test_authorize_script_adds_once(tmp_path: Path) -> None:
    key = sshsetup.generate_key(tmp_path / "k").public_key
    from tao_slurm_tui.remote.hostkeys import normalize_public_key

    home = tmp_path / "home"
    home.mkdir()
    (home / ".ssh").mkdir(mode=0o755)
    (home / ".ssh" / "authorized_keys").write_text("ssh-ed25519 AAAAother x")  # no newline
    outs = []
    for _ in range(2):
        proc = subprocess.run(
            ["bash", "-c", sshsetup.AUTHORIZE_SCRIPT],
            input=f"{normalize_public_key(key)}\n{key}\n",
            capture_output=True,
            text=True,
            env={"HOME": str(home), "PATH": os.environ["PATH"]},
        )
        outs.append(proc.stdout.strip())
    assert outs == ["added", "present"]
    lines = (home / ".ssh" / "authorized_keys").read_text().splitlines()
    assert lines == ["ssh-ed25519 AAAAother x", key]
    assert mode(home / ".ssh") == 0o700 and mode(home / ".ssh" / "authorized_keys") == 0o600


def test_spec_facts_convert_lustre(tmp_path: Path) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text(
        'name = "t1"\nimage = "nvcr.io/nvstaging/x:1"\ncommand = "true"\n'
        'inputs = ["lustre:///lustre/data/a.json", "/abs/b"]\n'
        '[specs]\ntrain = { ann = "lustre:///lustre/data/c.json", epochs = 3 }\n'
    )
    facts = load_spec_facts(spec)
    assert facts.paths[:2] == ("/lustre/data/a.json", "/abs/b")
    assert "/lustre/data/c.json" in facts.paths
    assert facts.image == "nvcr.io/nvstaging/x:1"
    assert facts.use_sqsh is True  # the platform default: the SQSH conversion pulls the image
