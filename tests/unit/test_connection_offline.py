"""Connection rules that need no server: key checks before connecting, host order, the manager."""

from __future__ import annotations

from pathlib import Path

import pytest

from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.remote.connection import (
    CommandResult,
    ConnectError,
    Connection,
    ConnectionState,
    KeyLoadError,
    KeyPermissionError,
)
from tao_slurm_tui.remote.login import auth_error


def _profile(**overrides: object) -> Profile:
    data: dict[str, object] = {
        "user": "someone",
        "hostnames": ["login1", "login2", "login3"],
        "port": 2222,
        "use_ssh_config": False,
        "connect_timeout": 1,
    }
    data.update(overrides)
    return Profile.model_validate(data)


def test_command_result_ok() -> None:
    assert CommandResult("true", 0, "", "", "h").ok
    assert not CommandResult("false", 1, "", "", "h").ok


async def test_open_key_refused_before_any_network(tmp_path: Path) -> None:
    key = tmp_path / "id"
    key.write_text("not even a key")
    key.chmod(0o644)
    seen: list[ConnectionState] = []
    conn = Connection(_profile(ssh_key_path=str(key)), on_state=lambda s, _m: seen.append(s))
    with pytest.raises(KeyPermissionError, match=f"chmod 600 {key}"):
        await conn.connect()
    assert seen == [ConnectionState.CONNECTING, ConnectionState.DOWN]
    assert conn.state_message.startswith("The private key")


async def test_missing_key_is_bad_input(tmp_path: Path) -> None:
    conn = Connection(_profile(ssh_key_path=str(tmp_path / "nope")))
    with pytest.raises(KeyLoadError) as err:
        await conn.connect()
    assert err.value.exit_code == 2


async def test_ssh_config_identity_file_is_checked_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = tmp_path / "cfg_key"
    key.write_text("x")
    key.chmod(0o640)
    (tmp_path / ".ssh").mkdir()
    (tmp_path / ".ssh" / "config").write_text(f"Host login*\n  IdentityFile {key}\n")
    monkeypatch.setenv("HOME", str(tmp_path))
    conn = Connection(_profile(use_ssh_config=True, hostnames=["login1"]))
    with pytest.raises(KeyPermissionError, match=f"chmod 600 {key}"):
        await conn.connect()


async def test_no_hostnames_is_a_clear_error() -> None:
    conn = Connection(_profile(hostnames=[]))
    with pytest.raises(ConnectError, match="no login host"):
        await conn.connect()


def test_remembered_host_is_tried_first() -> None:
    conn = Connection(_profile())
    assert conn.host is None
    assert conn._host_order() == ["login1", "login2", "login3"]
    conn.host = "login3"
    assert conn._host_order() == ["login3", "login1", "login2"]


def test_refused_login_without_a_user_says_to_set_one() -> None:
    # No user in the profile: the local user name was tried; say so instead of only "add the key".
    error = auth_error(_profile(user="", ssh_key_path="/k/id"), "login1")
    assert "set user (or SLURM_USER)" in str(error) and "/k/id.pub" in str(error)
    with_user = auth_error(_profile(ssh_key_path="/k/id"), "login1")
    assert "SLURM_USER" not in str(with_user) and "someone" in str(with_user)
