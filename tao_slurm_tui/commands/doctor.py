"""``tao-slurm-tui doctor [--json] [--spec SPEC.toml]``: the preflight checks, each with a fix."""

from __future__ import annotations

import argparse
import json

from tao_slurm_tui.commands.context import CliContext
from tao_slurm_tui.core.preflight import CheckStatus, DoctorReport
from tao_slurm_tui.core.shown import shown, shown_text
from tao_slurm_tui.core.words import plural

_MARK = {
    CheckStatus.PASS: "ok  ",
    CheckStatus.FAIL: "FAIL",
    CheckStatus.WARN: "warn",
    CheckStatus.SKIP: "skip",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``doctor``."""
    parser.add_argument("--json", action="store_true", help="print the checks as a JSON list")
    parser.add_argument("--spec", metavar="SPEC", help="also check this job spec's input paths")


def format_report(report: DoctorReport) -> str:
    """The human table: one line per check, the fix indented under anything not passing."""
    width = max((len(r.title) for r in report.results), default=10)
    lines = []
    for res in report.results:
        # A detail may quote what the login host answered: one line, spelled out.
        lines.append(f"[{_MARK[res.status]}] {res.title:<{width}}  {shown(res.detail)}")
        if res.fix and res.status in (CheckStatus.FAIL, CheckStatus.WARN):
            lines.append(f"       {'':<{width}}  fix: {shown(res.fix)}")
    failed = sum(1 for r in report.results if r.failed)
    lines.append("")
    lines.append(
        "All needed checks pass."
        if not failed
        else f"{plural(failed, 'check')} failed; fix them first."
    )
    if report.remediation:
        lines.append("")
        lines.append(shown_text(report.remediation.rstrip()))
    return "\n".join(lines)


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    """Run ``doctor``: exit 0 only when no check failed."""
    report = ctx.run(lambda backend: backend.doctor(args.spec))
    if args.json:
        ctx.out(json.dumps(report.to_json(), indent=2))
    else:
        ctx.out(format_report(report))
    return 0 if report.ok else 1
