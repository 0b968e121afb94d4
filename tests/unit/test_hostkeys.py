"""Host key rules: fingerprints as ssh-keygen prints them, known_hosts matching and writing."""

from __future__ import annotations

import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from tao_slurm_tui.errors import BadInput
from tao_slurm_tui.remote.connection import KeyLoadError, KeyPermissionError
from tao_slurm_tui.remote.hostkeys import (
    fingerprint,
    host_pattern,
    keys_for_host,
    known_hosts_line,
    normalize_public_key,
    split_public_key,
    trust_host_key,
)
from tao_slurm_tui.remote.keys import check_key_permissions

# Recorded with `ssh-keygen -t ed25519` / `-t rsa` and `ssh-keygen -lf KEY.pub`.
ED25519 = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMv+cu9Kb8aBcCEaKqUF/lmcdK5x707RJWlY9DTbQImc vec"
ED25519_FP = "SHA256:64foT7EOOxg/9/p25TcnoK+pjv+MsUYef1CxK0vs2tU"
RSA = (
    "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQCpDDRv2YOs/EW8bLsP41h7sqbTHfTcrBewEmecA8w8BPce9JdMzRjmo"
    "ejG5gdtBkt8NamWFihTszaTKQyo3v76nH9siwZyGNHX78/bSUIUhsAmFeQ5Xsvcp9UY47mlPPqaLO3+sVWBoEGxO5OPRG"
    "svypHHRA9VdWZphXZBMPbDspmrcBv41PddD0yhHap1sz4gGxPaKgLY9j7CJzU5s7J1RI8j3j8MkkeKfvQnpa1c1hWjXdA1"
    "g6cwDeqLq32Ux0EwhetWNPf108g8VtnCcAESY3zQBRw0lxyasCRZX+ZwPEyzLIQAT/wT4PMpqxhMAgCasZahKLI5ic/iyr"
    "ldyCqr vec"
)
RSA_FP = "SHA256:AoqRkB0uyFF+5rcpAWY5h1xCCslD4JrBomp6DenKOA8"
# `ssh-keygen -H` of "[login1.example.org]:2222 <ED25519>".
HASHED = (
    "|1|QiqflWAH+9YPtYdKJ1ZgRk6nQKQ=|t58r5K1TiCyrDShbofWYUADCncU= "
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMv+cu9Kb8aBcCEaKqUF/lmcdK5x707RJWlY9DTbQImc"
)
ED25519_BARE = normalize_public_key(ED25519)


def test_fingerprint_matches_recorded_ssh_keygen_output() -> None:
    assert fingerprint(ED25519) == ED25519_FP
    assert fingerprint(RSA) == RSA_FP
    # The comment does not take part.
    assert fingerprint(ED25519_BARE) == ED25519_FP


@pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="ssh-keygen not installed")
def test_fingerprint_matches_live_ssh_keygen(tmp_path: Path) -> None:
    key = tmp_path / "k"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ecdsa", "-N", "", "-C", "t", "-f", str(key)], check=True
    )
    printed = subprocess.run(
        ["ssh-keygen", "-lf", f"{key}.pub"], check=True, capture_output=True, text=True
    ).stdout.split()[1]
    assert fingerprint(Path(f"{key}.pub").read_text()) == printed


@pytest.mark.parametrize(
    "text",
    ["", "ssh-ed25519", "ssh-ed25519 !!!notbase64", "ssh-rsa " + ED25519.split()[1]],
)
def test_split_public_key_rejects_garbage(text: str) -> None:
    with pytest.raises(ValueError):
        split_public_key(text)


def test_known_hosts_line_uses_brackets_only_off_port_22() -> None:
    assert host_pattern("login1", 22) == "login1"
    assert host_pattern("127.0.0.1", 2222) == "[127.0.0.1]:2222"
    assert known_hosts_line("127.0.0.1", 2222, ED25519) == f"[127.0.0.1]:2222 {ED25519_BARE}"
    assert known_hosts_line("login1", 22, ED25519) == f"login1 {ED25519_BARE}"


def test_keys_for_host_plain_port_and_alias_entries() -> None:
    text = "\n".join(
        [
            "# comment",
            "",
            f"login1,10.0.0.1 {ED25519}",
            f"[login2]:2222 {RSA}",
            "garbage line",
        ]
    )
    assert keys_for_host(text, "login1", 22) == [ED25519_BARE]
    # The address matches too (OpenSSH checks host and address).
    assert keys_for_host(text, "other", 22, addr="10.0.0.1") == [ED25519_BARE]
    # Port-specific entries match only that port.
    assert keys_for_host(text, "login2", 2222) == [normalize_public_key(RSA)]
    assert keys_for_host(text, "login2", 22) == []
    assert keys_for_host(text, "login1", 2222) == []


def test_keys_for_host_wildcards_negation_and_markers() -> None:
    text = "\n".join(
        [
            f"*.example.org,!bad.example.org {ED25519}",
            f"@cert-authority *.example.org {RSA}",
            f"@revoked login9 {RSA}",
            f"login? {RSA}",
        ]
    )
    assert keys_for_host(text, "Login1.Example.org", 22) == [ED25519_BARE]
    assert keys_for_host(text, "bad.example.org", 22) == []
    assert keys_for_host(text, "login9", 22) == [normalize_public_key(RSA)]
    assert keys_for_host(text, "login10", 22) == []


def test_keys_for_host_hashed_entries() -> None:
    assert keys_for_host(HASHED, "login1.example.org", 2222) == [ED25519_BARE]
    assert keys_for_host(HASHED, "login1.example.org", 22) == []
    assert keys_for_host(HASHED, "login2.example.org", 2222) == []
    assert keys_for_host("|1|broken " + ED25519, "login1", 22) == []


def test_trust_host_key_creates_private_file_and_dir(tmp_path: Path) -> None:
    kh = tmp_path / "new" / "known_hosts"
    trust_host_key(kh, "127.0.0.1", 2222, ED25519)
    assert kh.read_text() == f"[127.0.0.1]:2222 {ED25519_BARE}\n"
    assert stat.S_IMODE(kh.stat().st_mode) == 0o600
    assert stat.S_IMODE(kh.parent.stat().st_mode) == 0o700
    # Trusting the same key twice writes it once; another host is appended.
    trust_host_key(kh, "127.0.0.1", 2222, ED25519)
    trust_host_key(str(kh), "login1", 22, RSA)
    lines = kh.read_text().splitlines()
    assert lines == [f"[127.0.0.1]:2222 {ED25519_BARE}", f"login1 {normalize_public_key(RSA)}"]


def test_trust_host_key_keeps_existing_lines_intact(tmp_path: Path) -> None:
    kh = tmp_path / "known_hosts"
    kh.write_text(f"login1 {RSA}")  # no trailing newline
    trust_host_key(kh, "login2", 22, ED25519)
    assert kh.read_text().splitlines() == [f"login1 {RSA}", f"login2 {ED25519_BARE}"]
    assert keys_for_host(kh.read_text(), "login2", 22) == [ED25519_BARE]


def test_trust_host_key_rejects_a_non_key(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        trust_host_key(tmp_path / "kh", "h", 22, "not a key")
    assert not (tmp_path / "kh").exists()


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660])
def test_check_key_permissions_refuses_open_keys(tmp_path: Path, mode: int) -> None:
    key = tmp_path / "id_test"
    key.write_text("x")
    key.chmod(mode)
    with pytest.raises(KeyPermissionError) as err:
        check_key_permissions(key)
    assert f"chmod 600 {key}" in str(err.value)
    assert isinstance(err.value, BadInput)


@pytest.mark.parametrize("mode", [0o600, 0o400])
def test_check_key_permissions_accepts_private_keys(tmp_path: Path, mode: int) -> None:
    key = tmp_path / "id_test"
    key.write_text("x")
    key.chmod(mode)
    check_key_permissions(key)  # no exception
    assert stat.S_IMODE(key.stat().st_mode) == mode


def test_check_key_permissions_missing_key(tmp_path: Path) -> None:
    with pytest.raises(KeyLoadError, match="does not exist"):
        check_key_permissions(tmp_path / "nope")
