"""``tao-slurm-tui creds install|check``: the NGC key into the remote enroot credentials.

The key is read from stdin when stdin is not a terminal (``... | tao-slurm-tui creds install``),
else from a hidden prompt; it is never accepted as an argument (argv is visible to every user
of the machine in ``ps``).
"""

from __future__ import annotations

import argparse
import getpass

from tao_slurm_tui.commands.context import CliContext
from tao_slurm_tui.core.secrets import CREDENTIALS_PATH, Secret, validate_ngc_key
from tao_slurm_tui.errors import BadInput, OperationFailed


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Sub-verbs of ``creds``."""
    sub = parser.add_subparsers(dest="creds_verb", metavar="{install,check}")
    sub.required = True
    install = sub.add_parser(
        "install",
        help="read the NGC key from stdin (or a hidden prompt) and write "
        f"{CREDENTIALS_PATH} on the cluster",
    )
    # Catches a key typed as an argument, so it is refused without argparse echoing it back.
    install.add_argument("stray", nargs="*", help=argparse.SUPPRESS)
    sub.add_parser("check", help=f"exit 0 when {CREDENTIALS_PATH} exists and is not empty")


def _read_key(ctx: CliContext) -> Secret:
    if ctx.stdin.isatty():
        try:
            typed = getpass.getpass("NGC API key (input hidden): ")
        except EOFError:
            raise BadInput("No NGC key was entered.") from None
        return validate_ngc_key(typed)
    data = ctx.stdin.read()
    if not data:
        raise BadInput("No NGC key on stdin; pipe it in or run the command in a terminal.")
    # A single trailing newline (echo, a file) is fine; anything else inside is refused.
    return validate_ngc_key(data)


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    """Run ``creds install`` or ``creds check``."""
    if getattr(args, "stray", None):
        raise BadInput(
            "creds install takes no arguments and never the NGC key itself (argv shows in "
            "'ps' and your shell history): pipe the key on stdin or type it at the hidden "
            "prompt, and rotate it on ngc.nvidia.com if it was a real key."
        )
    if args.creds_verb == "install":
        secret = _read_key(ctx)
        try:
            host = ctx.run(lambda backend: backend.install_credentials(secret))
        finally:
            secret.clear()
        ctx.out(f"Installed the NGC key into {CREDENTIALS_PATH} on {host} (mode 0600).")
        return 0
    present, host = ctx.run(lambda backend: backend.credentials_present())
    if present:
        ctx.out(f"{CREDENTIALS_PATH} is present on {host}.")
        return 0
    raise OperationFailed(
        f"{CREDENTIALS_PATH} is missing on {host}; install it with: tao-slurm-tui creds install."
    )
