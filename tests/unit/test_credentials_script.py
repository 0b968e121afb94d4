"""The enroot credentials install script, run by bash on this machine with a scratch $HOME.

The script is what runs on the login host; running it locally checks its netrc handling
(the cluster tests check the transport and the secrecy).
"""

from __future__ import annotations

import netrc
import subprocess
from pathlib import Path

import pytest

from tao_slurm_tui.services.credentials import INSTALL_SCRIPT

OLD = "OLDKEY0123456789"
NEW = "NEWKEY9876543210"


def install(home: Path, existing: str | None) -> str:
    creds = home / ".config" / "enroot" / ".credentials"
    if existing is not None:
        creds.parent.mkdir(parents=True)
        creds.write_text(existing)
    result = subprocess.run(
        ["bash", "-c", INSTALL_SCRIPT],
        input=NEW + "\n",
        text=True,
        capture_output=True,
        env={"HOME": str(home), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert result.returncode == 0 and "installed" in result.stdout, result.stderr
    assert (creds.stat().st_mode & 0o777) == 0o600
    return creds.read_text()


@pytest.mark.parametrize(
    "existing",
    [
        # One entry per line (the platform's own format).
        f"machine gitlab.example login bob password gl-secret\n"
        f"machine nvcr.io login $oauthtoken password {OLD}\n"
        f"machine authn.nvidia.com login $oauthtoken password {OLD}\n",
        # Multi-line entries, the NGC one in the middle: its login/password lines must go too,
        # or they would attach themselves to the entry before (gitlab's password replaced).
        f"machine gitlab.example\n  login bob\n  password gl-secret\n"
        f"machine nvcr.io\n  login $oauthtoken\n  password {OLD}\n"
        f"machine authn.nvidia.com\n\tlogin $oauthtoken\n\tpassword {OLD}\n"
        f"machine registry.example\n  login carol\n  password reg-secret\n",
        # The NGC entry first, multi-line, then another machine on one line.
        f"machine nvcr.io\n login $oauthtoken\n password {OLD}\n\n"
        f"machine gitlab.example login bob password gl-secret\n",
    ],
    ids=["one-line", "multi-line-middle", "multi-line-first"],
)
def test_old_key_replaced_and_neighbours_kept(tmp_path: Path, existing: str) -> None:
    text = install(tmp_path, existing)
    assert OLD not in text
    parsed = netrc.netrc(str(tmp_path / ".config" / "enroot" / ".credentials"))
    assert parsed.authenticators("nvcr.io") == ("$oauthtoken", "", NEW)
    assert parsed.authenticators("authn.nvidia.com") == ("$oauthtoken", "", NEW)
    assert parsed.authenticators("gitlab.example") == ("bob", "", "gl-secret")
    if "registry.example" in existing:
        assert parsed.authenticators("registry.example") == ("carol", "", "reg-secret")


def test_fresh_file(tmp_path: Path) -> None:
    text = install(tmp_path, None)
    assert text.count(NEW) == 2
