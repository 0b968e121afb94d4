"""Two-factor sites: an in-process asyncssh server that asks for a one-time code.

No cluster needed: the server runs on loopback inside the test. It offers only
keyboard-interactive auth and asks for a password, then a verification code (or the code only).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncssh
import pytest

from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.remote.authprobe import probe_login
from tao_slurm_tui.remote.hostkeys import known_hosts_line
from tao_slurm_tui.services import sshsetup

PASSWORD = "right-password"


class _OtpServer(asyncssh.SSHServer):
    password_first = True

    def begin_auth(self, username: str) -> bool:
        return True

    def password_auth_supported(self) -> bool:
        return False

    def public_key_auth_supported(self) -> bool:
        return False

    def kbdint_auth_supported(self) -> bool:
        return True

    def get_kbdint_challenge(self, username: str, lang: str, submethods: str) -> Any:
        if self.password_first:
            return "", "", "", [("Password: ", False)]
        return "", "", "", [("Verification code: ", True)]

    def validate_kbdint_response(self, username: str, responses: Any) -> Any:
        if self.password_first and list(responses) == [PASSWORD]:
            self.password_first = False
            return "", "", "", [("Verification code: ", True)]
        return False


class _OtpOnlyServer(_OtpServer):
    password_first = False


async def _serve(tmp_path: Path, factory: type[asyncssh.SSHServer]) -> tuple[Any, Profile]:
    host_key = asyncssh.generate_private_key("ssh-ed25519")
    server = await asyncssh.listen(
        "127.0.0.1", 0, server_host_keys=[host_key], server_factory=factory
    )
    port = server.sockets[0].getsockname()[1]
    kh = tmp_path / "known_hosts"
    kh.write_text(known_hosts_line("127.0.0.1", port, host_key.export_public_key().decode()) + "\n")
    client_key = sshsetup.generate_key(tmp_path / "id_ed25519")
    profile = Profile(
        user="alice",
        hostnames=["127.0.0.1"],
        port=port,
        ssh_key_path=str(client_key.path),
        known_hosts=str(kh),
        use_ssh_config=False,
        partition="p",
        connect_timeout=5,
    )
    return server, profile


@pytest.fixture
async def otp_site(tmp_path: Path) -> AsyncIterator[Profile]:
    server, profile = await _serve(tmp_path, _OtpServer)
    yield profile
    server.close()


@pytest.fixture
async def otp_only_site(tmp_path: Path) -> AsyncIterator[Profile]:
    server, profile = await _serve(tmp_path, _OtpOnlyServer)
    yield profile
    server.close()


async def test_probe_sees_the_second_factor(otp_site: Profile) -> None:
    probe = await probe_login(otp_site, "127.0.0.1", password=PASSWORD)
    assert not probe.ok and probe.two_factor
    assert "keyboard-interactive" in probe.methods
    assert probe.prompts == ("Verification code:",)


async def test_install_key_explains_the_one_code_route(otp_site: Profile) -> None:
    """An agent does not avoid the code (it is asked per connection): the advice is the one
    that works, the dashboard's shared connection."""
    with pytest.raises(sshsetup.TwoFactorRequired) as info:
        await sshsetup.install_public_key(otp_site, PASSWORD)
    message = str(info.value)
    assert "one-time code" in message and "an ssh-agent does not avoid it" in message
    assert "dashboard" in message and "one code serves" in message
    assert "SSH_AUTH_SOCK" not in message
    assert PASSWORD not in message


async def test_key_only_login_reports_two_factor(otp_only_site: Profile) -> None:
    checks = await sshsetup.verify_key_login(otp_only_site)
    assert len(checks) == 1
    assert not checks[0].ok and checks[0].two_factor
    reason = checks[0].reason
    assert "keyboard-interactive" in reason and "'Verification code:'" in reason
    assert "an ssh-agent does not avoid it" in reason
