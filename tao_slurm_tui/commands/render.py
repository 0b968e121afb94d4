"""``tao-slurm-tui render``."""

from __future__ import annotations

import argparse

from tao_slurm_tui.commands.context import CliContext
from tao_slurm_tui.errors import OperationFailed


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``render``."""


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    """Run ``render``."""
    raise OperationFailed("'render' is not available yet in this build.")
