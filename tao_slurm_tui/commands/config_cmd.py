"""``tao-slurm-tui config path`` and ``config set-profile`` (used by scripts/sandbox-cluster)."""

from __future__ import annotations

import argparse
import json

from pydantic import ValidationError

from tao_slurm_tui.commands.context import CliContext
from tao_slurm_tui.config import config_path, state_db_path
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.errors import BadInput


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Sub-verbs of ``config``."""
    sub = parser.add_subparsers(dest="config_verb", metavar="{path,set-profile}")
    sub.required = True
    sub.add_parser("path", help="print the config file and state DB paths")
    setp = sub.add_parser(
        "set-profile",
        help="add or update a profile from KEY=VALUE pairs (hostnames as a comma list)",
        description="Add or update a profile from KEY=VALUE pairs; keys not given keep their "
        "value (a new profile: the default).",
        epilog=profile_keys_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    setp.add_argument("name", help="profile name")
    setp.add_argument("fields", nargs="*", metavar="KEY=VALUE")
    setp.add_argument("--default", action="store_true", help="make it the default profile")


def profile_keys_help() -> str:
    """The settings ``set-profile`` accepts, one a line with its default (for ``--help``)."""
    lines = ["keys (default in brackets):"]
    defaults = Profile().model_dump()
    for key, field in Profile.model_fields.items():
        default = defaults[key]
        shown = ",".join(default) if isinstance(default, list) else str(default)
        about = f"  {field.description}" if field.description else ""
        lines.append(f"  {key} [{shown or 'empty'}]{about}")
    lines += [
        "",
        "example: tao-slurm-tui config set-profile sandbox user=alice "
        "hostnames=login1,login2 partition=polar --default",
    ]
    return "\n".join(lines)


def _coerce(fields: list[str]) -> dict[str, object]:
    values: dict[str, object] = {}
    for item in fields:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise BadInput(f"'{item}' is not KEY=VALUE; write e.g. user=alice.")
        if key not in Profile.model_fields:
            known = ", ".join(sorted(Profile.model_fields))
            raise BadInput(f"'{key}' is not a profile setting; known settings: {known}.")
        values[key] = value
    return values


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    """Run the ``config`` verb."""
    if args.config_verb == "path":
        # Works even when the file is broken: the user needs the path to fix it.
        ctx.out(f"config: {config_path(ctx.config_override)}")
        ctx.out(f"state:  {state_db_path()}")
        return 0
    cfg = ctx.config
    current = cfg.settings.profiles.get(args.name, Profile())
    merged = {**current.model_dump(), **_coerce(args.fields)}
    try:
        profile = Profile.model_validate(merged)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise BadInput(f"profile {args.name!r}: '{field}' is invalid: {first['msg']}.") from None
    cfg.upsert_profile(args.name, profile, make_default=args.default)
    ctx.out(json.dumps({"profile": args.name, "config": str(cfg.path)}))
    return 0
