"""``tao-slurm-tui history [--since DATE] [--state S] [--name TEXT] [--json]``: the user's jobs
from sacct, those not submitted by this tool too, with what each used.

One ``sacct`` call per page (``--limit`` jobs, newest first); ``--before ID`` continues from a
page's cursor and ``--all`` walks every page of the window. The first page carries the window's
totals (the summary line). ``--json`` prints a list of objects: the SLURM job id, state,
elapsed, time limit, CPU efficiency, GPU-hours, peak memory, queue wait, ... and ``tao_id``
when the job is one of ours.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from typing import Any

from tao_slurm_tui.commands.context import CliContext
from tao_slurm_tui.core.accounting import (
    DEFAULT_PAGE_SIZE,
    MAX_PAGE_SIZE,
    HistoryEntry,
    HistoryQuery,
    Summary,
    format_memory,
    linked_record,
    links_by_slurm_id,
)
from tao_slurm_tui.core.history_query import check_name_filter, parse_since, parse_states
from tao_slurm_tui.core.models import JobRecord
from tao_slurm_tui.core.shown import shown
from tao_slurm_tui.core.slurm_text import format_duration
from tao_slurm_tui.errors import BadInput
from tao_slurm_tui.services.backend import Backend


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``history``."""
    parser.add_argument(
        "--since",
        default="7d",
        metavar="DATE",
        help="window start: 7d, 12h, 2w, today or a date like 2026-11-01 (default 7d)",
    )
    parser.add_argument("--state", metavar="S", help="only these SLURM states (comma list)")
    parser.add_argument("--name", metavar="TEXT", help="only names containing TEXT")
    parser.add_argument(
        "--limit",
        type=int,
        default=DEFAULT_PAGE_SIZE,
        metavar="N",
        help=f"jobs per page (default {DEFAULT_PAGE_SIZE})",
    )
    parser.add_argument(
        "--before", type=int, metavar="ID", help="the next page: jobs older than this raw id"
    )
    parser.add_argument("--all", action="store_true", help="every page of the window")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def _query(args: argparse.Namespace) -> HistoryQuery:
    try:
        since = parse_since(args.since)
        states = parse_states(args.state or "")
        name = check_name_filter(args.name or "")
    except ValueError as exc:
        raise BadInput(f"{exc}.") from None
    if not 1 <= args.limit <= MAX_PAGE_SIZE:
        raise BadInput(f"--limit must be between 1 and {MAX_PAGE_SIZE}.")
    if args.before is not None and args.before < 1:
        raise BadInput("--before takes a SLURM job id (a positive number).")
    return HistoryQuery(since=since, states=states, name=name, before=args.before, limit=args.limit)


def entry_json(entry: HistoryEntry, linked: JobRecord | None) -> dict[str, Any]:
    """The ``history --json`` object: the entry's keys plus the TAO link."""
    data = entry.to_json()
    data["tao_id"] = linked.id if linked else None
    data["tao_status"] = str(linked.status) if linked else None
    return data


def _pct(value: float | None) -> str:
    return "" if value is None else f"{value * 100:.0f}%"


def format_table(entries: list[HistoryEntry], links: dict[str, JobRecord]) -> str:
    """The human-readable history table."""
    rows = [
        (
            "SLURM ID",
            "NAME",
            "STATE",
            "PARTITION",
            "ELAPSED/LIMIT",
            "CPU EFF",
            "GPU-H",
            "PEAK MEM",
            "WAIT",
            "EXIT",
            "TAO",
        )
    ]
    for e in entries:
        u = e.usage
        limit = format_duration(u.time_limit_s) or "none"
        elapsed = format_duration(u.elapsed_s) or "-"
        linked = linked_record(e, links)
        name = shown(e.name)  # any job of the user's, named anyhow: data, one line
        rows.append(
            (
                shown(e.job_id),
                name if len(name) <= 24 else name[:23] + "…",
                shown(e.raw_state if len(e.raw_state) <= 16 else e.state),
                shown(e.partition),
                f"{elapsed}/{limit}",
                _pct(u.cpu_efficiency),
                f"{u.gpu_hours:.2f}" if u.gpus else "",
                format_memory(u.peak_rss_bytes),
                format_duration(u.queue_wait_s),
                shown(e.exit_code),
                linked.id if linked else "",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    hints = [f"  {e.job_id}: {e.usage.hint}" for e in entries if e.usage.hint]
    if hints:
        lines += ["", "Hints:", *hints]
    return "\n".join(lines)


async def _history(args: argparse.Namespace, ctx: CliContext, backend: Backend) -> int:
    query = _query(args)
    page = await backend.history_page(query)
    summary: Summary | None = page.summary
    entries = list(page.entries)
    while args.all and page.next_before is not None:
        page = await backend.history_page(replace(query, before=page.next_before))
        entries += page.entries
    links = links_by_slurm_id(backend.jobs())
    if args.json:
        ctx.out(json.dumps([entry_json(e, linked_record(e, links)) for e in entries]))
    elif not entries:
        ctx.out("No jobs in this window; widen it with --since (e.g. --since 30d).")
    else:
        ctx.out(format_table(entries, links))
    if summary is not None and not args.json:
        ctx.out("")
        ctx.out(summary.text)
    if page.next_before is not None:
        ctx.err(
            f"older jobs remain in the window; the next page: --before {page.next_before} "
            "(or --all)."
        )
    return 0


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    """Run ``history``.

    Raises:
        BadInput: a bad --since/--state/--name/--limit.
        OperationFailed: sacct failed or the cluster could not be reached.
    """
    _query(args)  # bad flags are exit 2 before the back end is opened
    return ctx.run(lambda backend: _history(args, ctx, backend))
