"""``tao-slurm-tui compare ID ID... [--json]``: TAO runs side by side.

The experiment-spec keys whose values differ between the jobs (each job's ``experiment.yaml``
from its results dir, read in one command; the submitted spec where there is none), then every
KPI's last value (and its best, when it was better earlier) per job. ``--json``: ``{"jobs": [{"id",
"status","spec_source","epochs","runs","forecast"}], "spec": {key: {id: value}}, "kpi": {name:
{id: {"last","best"} | null}}, "notes": [...]}``. Unknown ids, or fewer than two, exit 2.
"""

from __future__ import annotations

import argparse
import json

from tao_slurm_tui.commands.context import CliContext
from tao_slurm_tui.core.compare import Comparison


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``compare``."""
    parser.add_argument("ids", nargs="+", metavar="ID", help="two or more jobs")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def table(rows: list[list[str]]) -> list[str]:
    """Rows as aligned columns (the last column is not padded)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def format_comparison(found: Comparison) -> str:
    """The two tables a researcher reads: what differs, and how the runs did."""
    ids = [job.job_id for job in found.jobs]
    head = ["", *ids]
    lines = ["Runs:"]
    lines += table(
        [
            head,
            ["status", *(job.status for job in found.jobs)],
            ["epochs", *(job.epochs or "-" for job in found.jobs)],
            ["runs", *(str(len(job.runs.ledger.runs) or "-") for job in found.jobs)],
            ["spec from", *(job.source for job in found.jobs)],
        ]
    )
    lines.append("")
    if found.differences:
        lines.append(f"Spec differences ({len(found.differences)} keys):")
        lines += table(
            [
                head,
                *(
                    [key, *(v if v is not None else "-" for v in values)]
                    for key, values in found.differences
                ),
            ]
        )
    else:
        lines.append("Spec differences: none (the specs are the same).")
    lines.append("")
    if found.kpis:
        lines.append("KPIs (last value; the best in parentheses when it was better earlier):")
        lines += table(
            [
                head,
                *(
                    [name, *(found.kpi_cell(i, name) for i in range(len(ids)))]
                    for name, _ in found.kpis
                ),
            ]
        )
    else:
        lines.append("KPIs: none yet (they appear after the first epoch).")
    for note in found.notes:
        lines += ["", f"Note: {note}"]
    return "\n".join(lines)


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    """Run ``compare``.

    Raises:
        BadInput: fewer than two different ids, or an unknown one.
    """
    found: Comparison = ctx.run(lambda backend: backend.compare(list(args.ids)))
    ctx.out(json.dumps(found.to_json()) if args.json else format_comparison(found))
    return 0
