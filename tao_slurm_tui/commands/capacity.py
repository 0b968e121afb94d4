"""``tao-slurm-tui capacity [--json]``: where GPUs are free, per partition and type.

One round trip (:func:`~tao_slurm_tui.services.capacity.fetch_capacity`): GPUs free / allocated /
total by type, the largest free block on one node, nodes by state (down and drained ones with
their reason), CPUs and memory free, running and pending jobs; the user's own share and the
QOS / association limits against use. ``--json`` prints
:meth:`~tao_slurm_tui.core.capacity_report.CapacityReport.to_json`. Exit 1 when the cluster
cannot be read.
"""

from __future__ import annotations

import argparse
import json

from tao_slurm_tui.commands.context import CliContext
from tao_slurm_tui.core.capacity import NodeState
from tao_slurm_tui.core.capacity_report import CapacityReport, PartitionCapacity, type_label
from tao_slurm_tui.core.shown import shown
from tao_slurm_tui.core.words import plural


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``capacity``."""
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def _gib(mb: int) -> str:
    return f"{mb / 1024:.0f} GiB" if mb >= 1024 else f"{mb} MiB"


def _types(p: PartitionCapacity) -> str:
    return ", ".join(f"{type_label(t.kind)} {t.free}/{t.total}" for t in p.gpu_types) or "-"


def _block(p: PartitionCapacity) -> str:
    b = p.largest_block
    return f"{b.gpus} {type_label(b.kind)} on {b.node}" if b else "none"


def _nodes(p: PartitionCapacity) -> str:
    n = p.nodes
    out = n[NodeState.DRAINED] + n[NodeState.DRAINING] + n[NodeState.DOWN]
    return f"{n[NodeState.IDLE]}/{n[NodeState.MIXED]}/{n[NodeState.ALLOCATED]}/{out}"


def format_report(report: CapacityReport) -> str:
    """The human-readable capacity."""
    rows = [
        (
            "PARTITION",
            "GPUS FREE",
            "BY TYPE (free/total)",
            "LARGEST FREE BLOCK",
            "NODES i/m/a/out",
            "CPUS FREE",
            "MEM FREE",
            "PENDING",
        )
    ]
    for p in report.partitions:
        rows.append(
            (
                p.name + ("*" if p.default else ""),
                f"{p.gpus_free}/{p.gpus_total}",
                _types(p),
                _block(p),
                _nodes(p),
                f"{p.cpus_free}/{p.cpus_total}",
                _gib(p.mem_free_mb),
                f"{p.pending_jobs} ({plural(p.pending_gpus, 'GPU')})",
            )
        )
    # Partition, type and node names and the admins' reasons are the cluster's words: one line
    # each, spelled out.
    cells = [[shown(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(cells[0]))]
    lines = [
        f"{plural(report.gpus_free, 'GPU')} free on the cluster (* marks the default partition)."
    ]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    if report.unavailable:
        lines += ["", "Nodes that take no new job:"]
        for n in report.unavailable:
            why = shown(n.reason or "no reason given")
            by = f" (by {shown(n.by)}, {shown(n.since)})" if n.by else ""
            lines.append(f"  {shown(n.name):<12} {n.state!s:<9} {why}{by}")
    mine = report.mine
    lines += [
        "",
        f"Your jobs ({shown(report.user)}): {mine.running_jobs} running with "
        f"{plural(mine.running_gpus, 'GPU')}, {mine.pending_jobs} pending asking for "
        f"{plural(mine.pending_gpus, 'GPU')}.",
    ]
    if report.limits:
        lines += ["", "Limits:"]
        for lim in report.limits:
            used = "per job" if lim.used is None else f"{lim.used}/{lim.limit} used"
            flag = "  REACHED: new jobs wait" if lim.reached else ""
            what = shown(f"{lim.scope}: {lim.kind} {lim.resource}={lim.limit}")
            lines.append(f"  {what} ({used}){flag}")
    elif report.accounting:
        lines += ["", "No QOS or account limits apply to you."]
    for note in report.notes:
        lines += ["", f"Note: {shown(note)}"]
    return "\n".join(lines)


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    """Run ``capacity``.

    Raises:
        OperationFailed: the cluster could not be reached or did not list its nodes.
    """
    report = ctx.run(lambda backend: backend.capacity())
    ctx.out(json.dumps(report.to_json(), indent=2) if args.json else format_report(report))
    return 0
