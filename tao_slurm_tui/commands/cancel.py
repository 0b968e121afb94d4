"""``tao-slurm-tui cancel``."""

from __future__ import annotations

import argparse

from tao_slurm_tui.commands.context import CliContext
from tao_slurm_tui.errors import OperationFailed


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``cancel``."""


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    """Run ``cancel``."""
    raise OperationFailed("'cancel' is not available yet in this build.")
