"""``tao-slurm-tui tao networks [--json]`` and ``tao-slurm-tui tao spec NETWORK ACTION``.

The TAO catalogue of the profile's TAO version (``tao_version``; default the newest this
tao-slurm-tui knows) with the profile's image settings, read from NVIDIA's ``nvidia-tao-core``
wheel (docs/TAO.md). No cluster is involved. The first use on a workstation downloads the pinned
wheel (or takes the local copy named by ``TAO_SLURM_TUI_TAO_WHEEL`` / ``tao_wheel``); offline
without one: exit 1 with the sentence naming those settings. An unknown network or action:
exit 2 with the nearest valid names.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from tao_slurm_tui.commands.context import CliContext

if TYPE_CHECKING:
    from tao_slurm_tui.services.tao import TaoCatalogue


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Sub-verbs of ``tao``."""
    sub = parser.add_subparsers(dest="tao_verb", metavar="{networks,spec}")
    sub.required = True
    networks = sub.add_parser(
        "networks",
        help="every network of the TAO version with its actions and image",
        description="Every network of the profile's TAO version with its actions, container "
        "kind and image (after the profile's tao_registry / tao_images).",
    )
    networks.add_argument("--json", action="store_true", help="machine-readable output")
    spec = sub.add_parser(
        "spec",
        help="the default experiment spec of NETWORK ACTION as YAML",
        description="The default experiment spec of NETWORK ACTION as YAML: the tables the "
        "action uses, mandatory values as ???, a header naming what to fill in.",
    )
    spec.add_argument("network", metavar="NETWORK")
    spec.add_argument("action", metavar="ACTION")


def format_networks(tao: TaoCatalogue) -> str:
    """The human-readable catalogue: a table of networks, then the image of each container."""
    catalog = tao.catalog
    rows = [("NETWORK", "CONTAINER", "ACTIONS")]
    elsewhere = False
    for network in catalog.networks:
        names = []
        for action in network.actions:
            mark = "*" if action.kind != network.kind else ""
            elsewhere = elsewhere or bool(mark)
            names.append(action.name + mark)
        rows.append((network.name, network.kind, ", ".join(names)))
    widths = [max(len(r[i]) for r in rows) for i in range(2)]
    lines = [
        f"TAO {tao.version}: {len(catalog.networks)} networks. In the container: "
        "<network> <action> -e spec.yaml ('tao spec NETWORK ACTION' prints a spec).",
        "",
    ]
    lines += [f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]}" for r in rows]
    if elsewhere:
        lines.append("* runs in another container: TensorRT actions in TAO_DEPLOY.")
    images = tao.kind_images()
    width = max(len(k) for k in images)
    lines += ["", f"{'CONTAINER':<{width}}  IMAGE"]
    lines += [f"{kind:<{width}}  {image}" for kind, image in images.items()]
    if catalog.skipped:
        lines += [
            "",
            f"Not runnable here ({len(catalog.skipped)}, docs/TAO.md says why): "
            + ", ".join(catalog.skipped)
            + ".",
        ]
    return "\n".join(lines)


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    """Run ``tao networks`` or ``tao spec``.

    Raises:
        BadInput: unknown network or action, an unknown ``tao_version``, a bad wheel path.
        OperationFailed: the pinned wheel cannot be obtained (offline, no local copy).
    """
    from tao_slurm_tui.services.tao import open_tao

    config = ctx.config
    tao = open_tao(config, config.profile(ctx.profile_override))
    if args.tao_verb == "networks":
        ctx.out(json.dumps(tao.to_json(), indent=2) if args.json else format_networks(tao))
        return 0
    ctx.stdout.write(tao.default_spec(args.network, args.action))
    return 0
