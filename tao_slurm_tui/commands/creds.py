"""``tao-slurm-tui creds``."""

from __future__ import annotations

import argparse

from tao_slurm_tui.commands.context import CliContext
from tao_slurm_tui.errors import OperationFailed


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``creds``."""


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    """Run ``creds``."""
    raise OperationFailed("'creds' is not available yet in this build.")
