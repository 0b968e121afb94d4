"""Recorded capacity answers, and a replay that scales one up to a big cluster.

Used by the unit tests and by ``bench/capacity.py`` (the 1,000-node case replays a recorded
answer: every node line copied under new names, with the jobs on those nodes copied along).
"""

from __future__ import annotations

import re
from pathlib import Path

from tao_slurm_tui.core.capacity_command import MARK, split_sections
from tao_slurm_tui.core.slurm_text import expand_nodelist

GOLDEN = Path(__file__).parent / "unit" / "capacity_recorded"
"""Recorded answers of the capacity command (``synthetic.txt``: hand-made, 22.05 format;
``sandbox-*.txt``: recorded on the sandbox)."""

_NAME_RE = re.compile(r"(?<=\bNodeName=)(\S+)|(?<=\bNodeAddr=)(\S+)|(?<=\bNodeHostName=)(\S+)")


def _rename(line: str, suffix: str) -> str:
    return _NAME_RE.sub(lambda m: m.group(0) + suffix, line)


def scaled_output(text: str, nodes: int) -> str:
    """``text`` (a recorded answer) grown (or cut) to exactly ``nodes`` nodes.

    Copy ``k`` of node ``n`` is called ``n-kK``; running jobs are copied onto the copies of
    their nodes (one job line per copy, ids shifted) when every node they run on is copied,
    pending jobs once per copy, so per-node numbers and the share of busy GPUs stay those of
    the recording.
    """
    sections = split_sections(text)
    node_lines = [ln for ln in sections["nodes"].text.splitlines() if ln.strip()]
    job_lines = [ln for ln in sections["jobs"].text.splitlines() if ln.strip()]
    names = [
        m.group(1) for ln in node_lines if (m := re.search(r"\bNodeName=(\S+)", ln)) is not None
    ]
    out_nodes: list[str] = []
    out_jobs: list[str] = []
    per_copy = max(1, len(node_lines))
    for k in range((nodes + per_copy - 1) // per_copy):
        suffix = "" if k == 0 else f"-k{k}"
        taken = node_lines[: nodes - k * per_copy]
        out_nodes += [_rename(ln, suffix) for ln in taken]
        present = set(names[: len(taken)])
        for line in job_lines:
            fields = line.split("|")
            hosts = [] if fields[9] in ("", "(null)") else expand_nodelist(fields[9])
            if not set(hosts) <= present:
                continue
            if k:
                head = re.match(r"^\d+", fields[0])
                if head:
                    fields[0] = str(int(head.group(0)) + 100_000 * k) + fields[0][head.end() :]
                if hosts:
                    fields[9] = ",".join(f"{n}{suffix}" for n in hosts)
            out_jobs.append("|".join(fields))
    rebuilt = []
    for name, section in sections.items():
        body = {"nodes": out_nodes, "jobs": out_jobs}.get(name, section.text.splitlines())
        rebuilt += [f"{MARK}{name}", *body, f"{MARK}rc {section.rc}"]
    return "\n".join(rebuilt) + "\n"
