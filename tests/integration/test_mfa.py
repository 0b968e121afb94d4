"""One code per working session, on the sandbox's real key + TOTP login (REAL-CLUSTER §5).

The real app runs in a real terminal (tmux) as a researcher at an MFA site starts it: it asks for
the one-time code in its masked modal and reaches the queue. Three CLI verbs run beside it, in
processes with no terminal at all (so they could not have typed a code: a login of their own
would end with exit 2). The codes typed are counted where the site counts them, in the MFA
sshd's own log ("Accepted keyboard-interactive/pam for slurmmfa"): one for all four. Then the
dashboard's connection is dropped by the server side, and the dashboard asks once more, with the
queue waiting and the header saying so, and goes on after the code.
"""

from __future__ import annotations

import getpass
import os
import re
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import sandbox
from tests.terminal.tmux import Terminal
from tests.tools import require

pytestmark = [pytest.mark.usefixtures("cluster"), pytest.mark.xdist_group("mfa")]

ACCEPTED = re.compile(r"Accepted keyboard-interactive/pam for (\S+) from \S+ port (\d+)")


def accepted(user: str) -> list[int]:
    """The client ports of the code logins of ``user`` in the MFA sshd's log, in order."""
    log = Path(sandbox.info()["mfa"]["auth_log"]).read_text(errors="replace")
    return [int(port) for who, port in ACCEPTED.findall(log) if who == user]


def config_text(mfa: dict[str, Any]) -> str:
    return f"""default_profile = "mfa"
[profiles.mfa]
user = "{mfa["user"]}"
hostnames = ["{mfa["host"]}"]
port = {mfa["port"]}
ssh_key_path = "{mfa["key"]}"
known_hosts = "{mfa["known_hosts"]}"
use_ssh_config = false
partition = "polar"
base_results_dir = "{mfa["home"]}/results"
container_runtime = "none"
connect_timeout = 10
"""


@pytest.fixture
def world(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """A researcher's machine: home, XDG dirs, runtime dir, the config; the env to run in."""
    require("tmux")
    mfa = sandbox.info()["mfa"]
    home = tmp_path / "home"
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    home.mkdir()
    config = tmp_path / "config.toml"
    config.write_text(config_text(mfa))
    env = {
        "HOME": str(home),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "TERM": "xterm-256color",
        "LANG": "C.UTF-8",
        "USER": getpass.getuser(),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "TAO_SLURM_TUI_RUNTIME_DIR": str(runtime),
    }
    yield {"mfa": mfa, "env": env, "config": config, "runtime": runtime, "tmp": tmp_path}


def cli(world: dict[str, Any], *verb: str) -> subprocess.CompletedProcess[str]:
    """A CLI verb as a script would run it: no terminal at all (its own session, no stdin)."""
    return subprocess.run(
        [sys.executable, "-m", "tao_slurm_tui", "--config", str(world["config"]), *verb],
        env=world["env"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        start_new_session=True,
    )


def type_code(terminal: Terminal, user: str) -> str:
    """Wait for the dashboard's code modal, type a fresh code and Enter; the code."""
    terminal.wait_for(f"One-time code for {user}@", timeout=90)
    terminal.wait_for("Verification code:")
    code = sandbox.totp_code()
    terminal.text(code)
    screen = terminal.screen()
    assert code not in screen, "the code is shown while typed"
    terminal.keys("Enter")
    return code


def wait_gone(terminal: Terminal, text: str, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while text in (screen := terminal.screen()):
        if time.monotonic() > deadline:
            pytest.fail(f"{text!r} stayed on the screen:\n{screen}")
        time.sleep(0.2)
    return screen


def session_pids(client_port: int, server_port: int) -> list[int]:
    """The sshd processes holding the server end of one client connection."""
    out = subprocess.run(
        [
            "ss",
            "-Htnp",
            "state",
            "established",
            f"( sport = :{server_port} and dport = :{client_port} )",
        ],
        capture_output=True,
        text=True,
        timeout=10,
        check=True,
    ).stdout
    return sorted({int(pid) for pid in re.findall(r"pid=(\d+)", out)})


def test_one_code_for_the_dashboard_and_three_commands_and_a_drop_asks_once(
    world: dict[str, Any],
) -> None:
    require("ss")
    mfa, user = world["mfa"], world["mfa"]["user"]
    before = accepted(user)
    argv = [sys.executable, "-m", "tao_slurm_tui", "--config", str(world["config"])]
    terminal = Terminal(argv, world["env"], world["tmp"], size=(110, 32))
    try:
        code = type_code(terminal, user)
        screen = terminal.wait_for("● connected", timeout=60)
        assert "One-time code" not in screen
        logins = sandbox.wait_for(lambda: len(accepted(user)) == len(before) + 1 or None, 10, "")
        assert logins and len(accepted(user)) == len(before) + 1
        sockets = [p for p in world["runtime"].iterdir() if p.suffix == ".sock"]
        assert len(sockets) == 1 and stat.S_IMODE(sockets[0].stat().st_mode) == 0o600

        # Three commands beside it, each needing the cluster, with no terminal: no login, no code.
        for verb in (["capacity"], ["history"]):
            done = cli(world, *verb)
            assert done.returncode == 0, (verb, done.stdout, done.stderr)
        doctor = cli(world, "doctor")
        assert "over the dashboard's connection" in doctor.stdout, doctor.stdout
        assert "refused the SSH login" not in doctor.stdout + doctor.stderr
        assert len(accepted(user)) == len(before) + 1, "a command beside the dashboard logged in"

        # The server drops the dashboard's connection: asked once, the queue waits, saying so.
        port = accepted(user)[-1]
        pids = session_pids(port, mfa["port"])
        assert pids, "no sshd session for the dashboard's connection"
        for pid in pids:
            os.kill(pid, signal.SIGTERM)
        terminal.wait_for("One-time code for", "waiting for your code", timeout=90)
        second = type_code(terminal, user)
        assert second != code
        screen = wait_gone(terminal, "One-time code for")
        terminal.wait_for("● connected", timeout=60)
        time.sleep(3)  # a storm would show another modal by now
        assert "One-time code for" not in terminal.screen()
        assert len(accepted(user)) == len(before) + 2

        # And a command beside it still needs no code.
        done = cli(world, "capacity")
        assert done.returncode == 0, done.stderr
        assert len(accepted(user)) == len(before) + 2
        terminal.keys("C-q")
        assert terminal.wait_exit() == 0
        assert not [p for p in world["runtime"].iterdir() if p.suffix == ".sock"]
    finally:
        terminal.close()
    log = Path(mfa["auth_log"]).read_text(errors="replace")
    assert code not in log and second not in log


def test_a_command_alone_without_a_terminal_says_how_to_get_a_code_free_session(
    world: dict[str, Any],
) -> None:
    """No dashboard, no terminal: exit 2 and one sentence; never the old 'install the key'."""
    done = cli(world, "capacity")
    assert done.returncode == 2, (done.stdout, done.stderr)
    message = done.stderr.strip()
    assert "asks slurmmfa for a one-time code ('Verification code:')" in message
    assert "no terminal" in message and "dashboard" in message
    assert "install the public key" not in message and "refused the SSH login" not in message
    assert len(message.splitlines()) == 1


def test_a_command_alone_in_a_terminal_asks_there_without_echo(world: dict[str, Any]) -> None:
    user = world["mfa"]["user"]
    before = len(accepted(user))
    argv = [sys.executable, "-m", "tao_slurm_tui", "--config", str(world["config"]), "capacity"]
    terminal = Terminal(argv, world["env"], world["tmp"], size=(110, 32))
    try:
        terminal.wait_for(f"One-time code for {user}@", timeout=60)
        terminal.wait_for("Verification code:")
        code = sandbox.totp_code()
        terminal.text(code)
        assert code not in terminal.screen(), "the code is echoed"
        terminal.keys("Enter")
        assert terminal.wait_exit(timeout=90) == 0, terminal.stderr()
        assert "GPUs free" in terminal.screen() and code not in terminal.screen()
    finally:
        terminal.close()
    assert len(accepted(user)) == before + 1
