"""What every CLI verb gets: the loaded config, the application layer and the output streams."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TextIO, TypeVar

from tao_slurm_tui.commands.terminal import shown_stream
from tao_slurm_tui.commands.terminal_prompt import terminal_prompter
from tao_slurm_tui.config import Config
from tao_slurm_tui.services.backend import Backend
from tao_slurm_tui.services.session import open_backend

T = TypeVar("T")


@dataclass
class CliContext:
    """Shared state of one CLI invocation."""

    config_override: str | None
    """``--config PATH`` if given."""
    profile_override: str | None
    """``--profile NAME`` if given."""
    stdout: TextIO = field(default_factory=lambda: sys.stdout)
    stderr: TextIO = field(default_factory=lambda: sys.stderr)
    stdin: TextIO = field(default_factory=lambda: sys.stdin)

    def __post_init__(self) -> None:
        # The cluster's words are data: no control character reaches the terminal raw.
        self.stdout = shown_stream(self.stdout)
        self.stderr = shown_stream(self.stderr)

    @cached_property
    def config(self) -> Config:
        """The config file, loaded on first use (raises ConfigError if broken)."""
        return Config.load(self.config_override)

    @cached_property
    def backend(self) -> Backend:
        """The application layer of the selected profile, opened once (nothing connects yet).

        ``TAO_SLURM_TUI_DEMO=1`` gives the deterministic fake back end, as for the TUI.

        A one-time code the cluster asks for is asked on the terminal (not at all when a
        dashboard of the same login lends its connection, nor where there is no terminal).
        """
        backend = open_backend(self.config, self.profile_override)
        backend.use_prompter(terminal_prompter())
        return backend

    def run(self, work: Callable[[Backend], Awaitable[T]]) -> T:
        """Run ``work(backend)`` on an event loop, closing the back end afterwards."""

        async def main() -> T:
            try:
                return await work(self.backend)
            finally:
                for notice in self.backend.take_notices():
                    self.err(notice)
                await self.backend.close()

        return asyncio.run(main())

    def out(self, text: str = "") -> None:
        """Print a line to stdout."""
        print(text, file=self.stdout)

    def err(self, text: str) -> None:
        """Print ``tao-slurm-tui: text`` to stderr."""
        print(f"tao-slurm-tui: {text}", file=self.stderr)
