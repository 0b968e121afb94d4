"""``tao-slurm-tui status``."""

from __future__ import annotations

import argparse

from tao_slurm_tui.commands.context import CliContext
from tao_slurm_tui.errors import OperationFailed


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``status``."""


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    """Run ``status``."""
    raise OperationFailed("'status' is not available yet in this build.")
