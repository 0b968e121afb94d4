"""The first start of the real app in a real terminal (tmux): nothing configured yet.

Issue 11: with a fresh home, an unknown ``--profile`` or only environment variables the app
exited 2 before the set-up screen that would have fixed it. Now it opens that screen with a new
profile pre-filled from what is known, and quits cleanly.
"""

from __future__ import annotations

import getpass
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.terminal.tmux import Terminal, clean_env

SSH_CONFIG = """\
Host hpc-login
    HostName login.hpc.example.org
    User alice
Host *.internal
    ProxyJump bastion
"""


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A fresh home: no config, an ~/.ssh/config with one concrete Host."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True, mode=0o700)
    (home / ".ssh" / "config").write_text(SSH_CONFIG)
    return home


@pytest.fixture
def terminals(tmp_path: Path) -> Iterator[list[Terminal]]:
    opened: list[Terminal] = []
    yield opened
    for terminal in opened:
        terminal.close()


def _start(terminals: list[Terminal], home: Path, args: list[str], **env: str) -> Terminal:
    workdir = home.parent / f"run{len(terminals)}"
    workdir.mkdir()
    terminal = Terminal(
        [sys.executable, "-m", "tao_slurm_tui", *args], clean_env(home, **env), workdir
    )
    terminals.append(terminal)
    return terminal


def _field_value(screen: str, label: str) -> str:
    """The line under a form label (the set-up form puts labels over their fields)."""
    lines = screen.splitlines()
    for i, line in enumerate(lines):
        if label in line and i + 1 < len(lines):
            return lines[i + 1].split("│")[1].strip() if "│" in lines[i + 1] else lines[i + 1]
    return ""


def test_fresh_home_opens_the_set_up_screen_prefilled(
    home: Path, terminals: list[Terminal]
) -> None:
    app = _start(terminals, home, [])
    screen = app.wait_for("Cluster profile")
    assert "set-up" in screen
    assert "or pick a Host from" in screen  # the ~/.ssh/config choices
    assert getpass.getuser() in _field_value(screen, "User")
    assert "default" in _field_value(screen, "Profile name")
    app.keys("C-q")
    assert app.wait_exit() == 0
    assert "Traceback" not in app.stderr()
    assert not (home / ".config" / "tao-slurm-tui" / "config.toml").exists()  # nothing saved


def test_unknown_profile_and_environment_only(home: Path, terminals: list[Terminal]) -> None:
    named = _start(terminals, home, ["--profile", "lab"])
    assert "lab" in _field_value(named.wait_for("Cluster profile"), "Profile name")
    named.keys("C-q")
    assert named.wait_exit() == 0
    assert "Traceback" not in named.stderr()

    from_env = _start(
        terminals, home, [], SLURM_USER="alice", SLURM_HOSTNAME="login1.invalid,login2.invalid"
    )
    screen = from_env.wait_for("Cluster profile")
    assert "alice" in _field_value(screen, "User")
    assert "login1.invalid, login2.invalid" in screen
    from_env.keys("C-q")
    assert from_env.wait_exit() == 0
    # Quitting while the doctor still resolves the unknown hosts leaves no stray task behind.
    assert "Traceback" not in from_env.stderr()
    assert "exception was never retrieved" not in from_env.stderr()
