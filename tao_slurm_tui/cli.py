"""Command line: ``tao-slurm-tui [--profile NAME] [--config PATH] [VERB ...]``.

Without a verb the TUI opens. Every verb lives in :mod:`tao_slurm_tui.commands`; errors reach
stderr as one plain sentence with exit code 1 (operation failed) or 2 (bad input), never a
traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from tao_slurm_tui import __version__
from tao_slurm_tui.commands import VERBS
from tao_slurm_tui.commands.context import CliContext
from tao_slurm_tui.config import ConfigError, config_path
from tao_slurm_tui.core.shown import shown_text
from tao_slurm_tui.errors import TaoError

_HELP = {
    "render": "print the sbatch script for a spec (no network)",
    "submit": "validate, stage and submit a spec (or a pipeline); print the job id(s)",
    "status": "jobs with their status (one monitor tick first)",
    "logs": "print or follow main.out / main.err of a job's latest attempt",
    "cancel": "cancel every attempt of a job (--pipeline ID: every step of a pipeline)",
    "doctor": "preflight checks, each with a fix; exit 0 iff all pass",
    "creds": "install the NGC key into the remote enroot credentials (from stdin)",
    "config": "config file helpers (config path)",
    "capacity": "free/allocated GPUs per partition and type, the largest free block, your share",
    "history": "your jobs from sacct (also those not submitted here) with what they used",
    "tao": "the TAO catalogue: networks, actions, images, default experiment specs (no cluster)",
    "compare": "TAO runs side by side: the spec keys that differ, the last and best KPIs",
    "shell": "an interactive shell inside a running job (on its node, in its Pyxis container)",
}


class EmptyArgument(Exception):
    """An option or argument was given an empty value (``--profile ''``): bad input, never
    "the default". ``str()`` is the sentence for the user."""


_EMPTY_HINTS = {
    "--profile": "give it the NAME of a profile in your config, or leave it out for the "
    "default profile",
    "--config": "give it the PATH of a config file, or leave it out for the default one",
}


def _not_empty(action: argparse.Action, convert: Any) -> Callable[[str], Any]:
    """``action``'s type conversion, refusing ''."""

    def check(value: str) -> Any:
        if value == "":
            raise EmptyArgument(_empty_message(action))
        return value if convert is None else convert(value)

    # argparse names the type in its own messages ("invalid int value: 'x'").
    check.__name__ = getattr(convert, "__name__", "str")
    return check


def _empty_message(action: argparse.Action) -> str:
    """What to do instead of an empty ``action``: give its value, or leave it out."""
    if action.option_strings:
        name = max(action.option_strings, key=len)
        if name in _EMPTY_HINTS:
            return f"{name} is empty; {_EMPTY_HINTS[name]}."
        label, optional = name, True
    else:
        label, optional = f"the {action.metavar or action.dest} argument", action.nargs == "?"
    what = str(action.metavar or action.dest)
    if action.help:
        what += f" ({action.help.split(' (')[0]})"
    return f"{label} is empty; give {what}" + (", or leave it out." if optional else ".")


class _Parser(argparse.ArgumentParser):
    """Every option and argument that takes a value refuses an empty one (sub-verbs' parsers
    are of this class too: argparse makes subparsers of the parent's class)."""

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        # nargs 0: a flag; a hidden argument (creds' stray key) is refused by its verb.
        if action.nargs != 0 and action.help != argparse.SUPPRESS:
            action.type = _not_empty(action, action.type)
        return action


def _global_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--profile", metavar="NAME", help="cluster profile to use")
    parser.add_argument("--config", metavar="PATH", help="config file to use")
    parser.add_argument(
        "--spec",
        metavar="PATH",
        # Not "spec": render/submit's positional SPEC and doctor's --spec use that name.
        dest="tui_spec",
        help="open the dashboard's composer pre-filled from this spec TOML (no verb)",
    )


def verb_of(argv: Sequence[str] | None) -> str | None:
    """The verb ``argv`` names (None: no verb, the dashboard), read with the global options
    alone, so that only that verb's module needs importing (issue 23: the dashboard's first
    frame does not wait for every verb's imports)."""
    pre = _Parser(prog="tao-slurm-tui", add_help=False)
    _global_options(pre)
    pre.add_argument("verb", nargs="?")
    known, _ = pre.parse_known_args(argv)
    verb: str | None = known.verb
    return verb


def build_parser(only: str | None = "") -> argparse.ArgumentParser:
    """The argument parser with every verb listed.

    Args:
        only: give only this verb its arguments (its module is imported); None: no verb
            (the dashboard); '': every verb.
    """
    parser = _Parser(
        prog="tao-slurm-tui",
        description="Run NVIDIA TAO training containers on a SLURM cluster over SSH. "
        "Without a verb, the terminal dashboard opens.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    _global_options(parser)
    sub = parser.add_subparsers(dest="verb", metavar="VERB")
    for verb, module_name in VERBS.items():
        verb_parser = sub.add_parser(verb, help=_HELP[verb], description=_HELP[verb])
        if only in ("", verb):
            module = importlib.import_module(f"tao_slurm_tui.commands.{module_name}")
            module.add_arguments(verb_parser)
            verb_parser.set_defaults(_module=module)
    return parser


def _run_tui(ctx: CliContext, spec_path: str | None = None) -> int:
    from tao_slurm_tui.app import run_app

    spec = None
    if spec_path:
        from tao_slurm_tui.core.spec import SpecDraft, resolve
        from tao_slurm_tui.errors import BadInput

        # Checked before the screen opens: a file that is not a spec is one sentence and exit
        # 2; what the profile or the cluster say of it, the composer shows at its fields.
        draft = SpecDraft.from_file(spec_path)
        profile = ctx.config.profile(ctx.profile_override, allow_new=True)
        if problem := resolve(draft, profile).schema_sentence():
            raise BadInput(problem)
        spec = dict(draft.table)
    return run_app(ctx.config, ctx.profile_override, spec=spec)


def _say(text: str) -> None:
    """``tao-slurm-tui: text`` on stderr; a sentence may quote the cluster (data, not codes)."""
    print(shown_text(f"tao-slurm-tui: {text}"), file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    try:
        # Inside the try: Ctrl-C while the verbs import (asyncssh takes a moment) is clean too.
        parser = build_parser(only=verb_of(argv))
        args = parser.parse_args(argv)
    except EmptyArgument as exc:
        _say(str(exc))
        return 2
    except KeyboardInterrupt:
        _say("interrupted.")
        return 130
    ctx = CliContext(config_override=args.config, profile_override=args.profile)
    try:
        if args.verb is None:
            return _run_tui(ctx, args.tui_spec)
        if args.tui_spec:
            _say(
                f"--spec opens the dashboard's composer; give the spec to "
                f"'{args.verb}' as its own argument instead."
            )
            return 2
        if args.verb != "config":
            # A broken config file is reported once, up front, before any work starts. A file
            # named with --config must exist (only `config set-profile` creates one): a typo in
            # the path would otherwise run with an empty config.
            if args.config and not config_path(args.config).exists():
                raise ConfigError(
                    f"{config_path(args.config)}: no such config file; check the --config path "
                    "(or create it with 'tao-slurm-tui --config PATH config set-profile NAME')."
                )
            _ = ctx.config
        code: int = args._module.run(args, ctx)
        return code
    except ConfigError as exc:
        _say(str(exc))
        return 2
    except TaoError as exc:
        _say(str(exc))
        return exc.exit_code
    except KeyboardInterrupt:
        _say("interrupted.")
        return 130
    except BrokenPipeError:
        # `tao-slurm-tui VERB | head` closed the pipe early: not an error. Point stdout at
        # /dev/null so the interpreter's final flush does not raise (and print) it again.
        with contextlib.suppress(OSError, ValueError):  # stdout without a file descriptor
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
