"""The real app in tmux on demo mode's fake cluster, seeded before it starts so a test can steer
the cluster (``World``) while the app runs on it."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.terminal.tmux import Terminal, clean_env


def demo_directory(home: Path) -> Path:
    """Where demo mode keeps its world for a user with this home (``XDG_CACHE_HOME``)."""
    return home / ".cache" / "tao-slurm-tui" / "demo"


def start(terminals: list[Terminal], home: Path, args: list[str], **env: str) -> Terminal:
    """``tao-slurm-tui ARGS`` in demo mode in a new tmux terminal (``ARGV=...``: a shell command
    line instead, for a redirection), with a clean environment and CI=true."""
    workdir = home.parent / f"run{len(terminals)}"
    workdir.mkdir()
    environment = clean_env(home, CI="true", TAO_SLURM_TUI_DEMO="1", **env)
    argv = [sys.executable, "-m", "tao_slurm_tui", *args]
    if "ARGV" in environment:
        argv = ["sh", "-c", environment.pop("ARGV")]
    terminal = Terminal(argv, environment, workdir)
    terminals.append(terminal)
    return terminal
