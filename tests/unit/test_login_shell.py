"""Commands reach the cluster through the user's login shell, which may be tcsh.

:func:`for_login_shell` sends an argument vector as it is and anything else base64-encoded to
``sh``. Here every kind of command the product builds runs through the real ``sh`` and the
real ``tcsh`` (installed by ``make test`` and ``scripts/sandbox-cluster install``, like the
cluster's; the tcsh cases skip where it is missing), as sshd runs it (``SHELL -c COMMAND``), and
must do what ``sh -c`` does with the original.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tao_slurm_tui.core.capacity_command import capacity_command
from tao_slurm_tui.core.quoting import for_login_shell, join
from tao_slurm_tui.services.credentials import INSTALL_SCRIPT
from tests.tools import require

SHELLS = ["/bin/sh", "/bin/bash", "/usr/bin/tcsh"]

COMMANDS = {
    "argv": join(["printf", "%s|", "a b", "it's", "$HOME", "`id`", "x;y", "*"]),
    "sh syntax": 'd=$(printf ok); if [ "$d" = ok ]; then echo "$d" 2>&1; fi; echo $?',
    "newline in quotes": join(["sh", "-c", 'printf "%s\\n" one\nprintf "%s\\n" two']),
    "bang": join(["sh", "-c", "[ ! -e /nonexistent ] && echo absent"]),
    "reads stdin": join(["sh", "-c", "read a; echo got:$a"]),
    "exit status": "false; exit 3",
    "unbalanced quote": "echo 'it''s",
    "capacity-like": capacity_command(
        {n: "echo x" for n in ("user", "nodes", "partitions", "jobs", "qos", "assoc")}
    ),
}


def run(shell: str, command: str) -> tuple[int, str]:
    if shell.endswith("tcsh"):
        require("tcsh")
    done = subprocess.run(
        [shell, "-c", command], input="line\n", capture_output=True, text=True, timeout=30,
        env={"PATH": "/usr/bin:/bin", "HOME": "/tmp"},
    )  # fmt: skip
    return done.returncode, done.stdout


def test_the_shells_are_here() -> None:
    missing = [s for s in SHELLS if not shutil.which(s) and not s.endswith("tcsh")]
    assert not missing, f"{missing}: install them"
    require("tcsh")


def test_an_argument_vector_goes_as_it_is() -> None:
    for argv in (["ls", "-l"], ["scancel", "123"], ["sh", "-c", "echo a; echo b"], ["x", "a'b"]):
        assert for_login_shell(join(argv)) == join(argv)


@pytest.mark.parametrize("name", COMMANDS)
@pytest.mark.parametrize("shell", SHELLS)
def test_every_login_shell_runs_what_sh_runs(shell: str, name: str) -> None:
    command = COMMANDS[name]
    expected = run("/bin/sh", command)
    assert run(shell, for_login_shell(command)) == expected
    if name == "argv":
        assert for_login_shell(command) == command


def test_the_credentials_script_is_a_newline_script_and_goes_encoded() -> None:
    command = join(["bash", "-c", INSTALL_SCRIPT, "bash", "nvcr.io"])
    assert "\n" in command
    sent = for_login_shell(command)
    assert "\n" not in sent and sent.startswith("sh -c ")
    rc, _ = run("/usr/bin/tcsh", sent.replace("eval", "true", 1))
    assert rc == 0  # tcsh parses the line; without the encoding: "Unmatched '."
    assert run("/usr/bin/tcsh", command)[0] != 0
