"""What every CLI verb gets: the loaded config, the chosen profile and the output streams."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from functools import cached_property
from typing import TextIO

from tao_slurm_tui.config import Config
from tao_slurm_tui.core.profile import Profile


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

    @cached_property
    def config(self) -> Config:
        """The config file, loaded on first use (raises ConfigError if broken)."""
        return Config.load(self.config_override)

    @property
    def profile_name(self) -> str:
        """Name of the selected profile."""
        return self.config.profile_name(self.profile_override)

    @cached_property
    def profile(self) -> Profile:
        """The selected profile with environment overrides applied."""
        return self.config.profile(self.profile_override)

    def out(self, text: str = "") -> None:
        """Print a line to stdout."""
        print(text, file=self.stdout)
