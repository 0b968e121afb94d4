"""The real ``tao-slurm-tui`` in a real terminal: a detached tmux session a test types into.

Each :class:`Terminal` is its own tmux server (``-L``), so parallel tests never share one; the
app's exit status is written to a file when it ends (a crash must not look like success).
"""

from __future__ import annotations

import getpass
import os
import shlex
import subprocess
import time
import uuid
from collections.abc import Mapping
from pathlib import Path

import pytest

TIMEOUT = 60.0
"""Seconds to wait for a screen (the app starts in ~2 s; a loaded CI box is slower)."""


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    """A user's clean environment with ``home`` as HOME (XDG dirs in it), plus ``extra``."""
    return {
        "HOME": str(home),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "TERM": "xterm-256color",
        "LANG": "C.UTF-8",
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "USER": getpass.getuser(),
        **extra,
    }


class Terminal:
    """One tmux session running one command."""

    def __init__(
        self,
        argv: list[str],
        env: Mapping[str, str],
        workdir: Path,
        size: tuple[int, int] = (100, 30),
    ) -> None:
        self.socket = f"tao-test-{uuid.uuid4().hex[:8]}"
        self.status_file = workdir / "exit-status"
        # Not 2>file: Textual draws on stderr. A traceback stays in the pane after the exit.
        # The status goes to a temporary file renamed into place: the file appears complete.
        status, partial = shlex.quote(str(self.status_file)), shlex.quote(f"{self.status_file}.tmp")
        command = f"{shlex.join(argv)}; echo $? > {partial}; mv {partial} {status}; sleep 600"
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        self._tmux(
            "new-session", "-d", "-s", "app", "-x", str(size[0]), "-y", str(size[1]),
            f"env -i {exports} sh -c {shlex.quote(command)}",
        )  # fmt: skip

    def _tmux(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=30
        )
        if done.returncode != 0:
            raise AssertionError(f"tmux {args[0]} failed: {done.stderr.strip()}")
        return done.stdout

    def screen(self) -> str:
        """The visible text of the pane."""
        return self._tmux("capture-pane", "-p", "-t", "app")

    def wait_for(self, text: str, *more: str, timeout: float = TIMEOUT) -> str:
        """Wait until ``text`` (and each of ``more``) is on the screen; return the screen.

        Several texts are looked for on one capture: the app redraws a screen in parts, and a
        capture taken as the first part lands may not show the rest yet.
        """
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if all(t in screen for t in (text, *more)):
                return screen
            if self.exit_status() is not None or time.monotonic() > deadline:
                missing = [t for t in (text, *more) if t not in screen]
                pytest.fail(
                    f"{missing!r} never appeared; the screen:\n{screen}\n"
                    f"exit status: {self.exit_status()}"
                )
            time.sleep(0.2)

    def keys(self, *keys: str) -> None:
        """Type keys (tmux names: 'C-q', 'Enter', 'Escape', or literal text with -l)."""
        for key in keys:
            self._tmux("send-keys", "-t", "app", key)

    def text(self, text: str) -> None:
        """Type ``text`` literally."""
        self._tmux("send-keys", "-t", "app", "-l", text)

    def resize(self, columns: int, rows: int) -> None:
        """Resize the terminal (the program gets SIGWINCH)."""
        self._tmux("resize-window", "-t", "app", "-x", str(columns), "-y", str(rows))

    def pane_pid(self) -> int:
        """The process the pane runs (the program is among its descendants)."""
        return int(self._tmux("list-panes", "-t", "app", "-F", "#{pane_pid}").split()[0])

    def record_output(self, path: Path) -> None:
        """Append every byte the app writes to its terminal to ``path`` from now on, escape
        sequences included (tmux's ``pipe-pane``: what the terminal was sent, before tmux
        interprets it)."""
        self._tmux("pipe-pane", "-O", "-t", "app", f"cat >> {shlex.quote(str(path))}")

    def exit_status(self) -> int | None:
        """The app's exit status once it ended, else None."""
        try:
            return int(self.status_file.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None

    def wait_exit(self, timeout: float = TIMEOUT) -> int:
        """Wait for the app to end; its exit status."""
        deadline = time.monotonic() + timeout
        while (status := self.exit_status()) is None:
            if time.monotonic() > deadline:
                pytest.fail(f"the app did not exit; the screen:\n{self.screen()}")
            time.sleep(0.2)
        return status

    def stderr(self) -> str:
        """The pane with its scroll-back (after the exit: whatever the app printed last,
        a traceback included)."""
        return self._tmux("capture-pane", "-p", "-S", "-500", "-t", "app")

    def close(self) -> None:
        """Stop this tmux server (and whatever still runs in it)."""
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=30)
