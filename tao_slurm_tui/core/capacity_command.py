"""Cluster capacity: the one remote command of a refresh, and cutting its answer into sections.

One refresh is one round trip: :func:`capacity_command` builds a single shell command that runs
``scontrol show node -o``, ``scontrol show partition -o``, one ``squeue`` with a fixed format for
every running and pending job, and (where the site has accounting) ``sacctmgr`` for the QOS and
the user's associations. Every section is framed by marker lines carrying its exit status
(:func:`split_sections`), so one failing tool (no slurmdbd, say) costs only its own section.
:mod:`tao_slurm_tui.core.capacity` parses the sections. Nothing here does I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

MARK = "@@tao-cap:"
"""Prefix of the section marker lines the capacity command prints."""
SQUEUE_FORMAT = "%i|%u|%a|%q|%P|%T|%D|%C|%b|%N|%S|%r"
"""squeue ``-o`` format: id, user, account, QOS, partitions, state, nodes, CPUs, GRES per node,
node list, (estimated) start time, reason."""

SQUEUE_STATES = "PD,R,CG,CF,S"
"""Job states that hold or wait for resources."""

QOS_FORMAT = "Name,GrpTRES,GrpJobs,MaxTRES,MaxTRESPU,MaxJobsPU"
"""sacctmgr ``show qos`` fields (``-nP``: no header, ``|``-separated, in this order)."""

ASSOC_FORMAT = "Account,User,Partition,QOS,GrpTRES,GrpJobs,MaxTRES,MaxJobs"
"""sacctmgr ``show assoc`` fields (``-nP``)."""

SACCTMGR_TIMEOUT = 10
"""Seconds sacctmgr may take (a dead slurmdbd makes it hang far longer)."""

SECTIONS = ("user", "nodes", "partitions", "jobs", "qos", "assoc")
"""Sections of the command's output, in order."""

NODE_FIELDS = (
    "NodeName",
    "State",
    "Partitions",
    "CPUTot",
    "CPUEfctv",
    "CPUAlloc",
    "RealMemory",
    "AllocMem",
    "Gres",
    "GresUsed",
    "AllocTRES",
    "CfgTRES",
)
"""The fields of a node line a refresh reads (besides the free-text ``Reason``)."""

NODE_REDUCE_AWK = (
    'BEGIN { n = split(K, k, " ") } '
    '{ l = " " $0; if (index(l, " NodeName=") == 0) { print; next }; o = ""; '
    'for (i = 1; i <= n; i++) { p = index(l, " " k[i] "="); if (p) { '
    'r = substr(l, p + 1); e = index(r, " "); o = o " " (e ? substr(r, 1, e - 1) : r) } } '
    'p = index(l, " Reason="); if (p) o = o substr(l, p); print substr(o, 2) }'
)
"""POSIX awk run on the login host over ``scontrol show node -o`` (``index``, no regular
expression: one per key and line would be compiled again and again): each node line keeps only
:data:`NODE_FIELDS` and the reason (a line is ~1 KiB, the kept part ~250 bytes; CPULoad,
FreeMem and times, which change on every refresh, are dropped, so an unchanged node gives the
same line twice and its parse is remembered). Lines that are not node lines (an error) pass
unchanged."""


def capacity_tools() -> dict[str, str]:
    """Each section's tool, as the login host runs it (:data:`SECTIONS` order)."""
    sacctmgr = f"timeout {SACCTMGR_TIMEOUT} sacctmgr -nP"
    return {
        "user": "id -un",
        "nodes": "scontrol show node -o",
        "partitions": "scontrol show partition -o",
        "jobs": f"squeue -h -t {SQUEUE_STATES} -o '{SQUEUE_FORMAT}'",
        "qos": f"{sacctmgr} show qos format={QOS_FORMAT}",
        # The account-level rows (User empty) carry the limits shared by the whole account, so
        # the user's accounts are listed first and then shown with every row of them.
        "assoc": (
            f'a=$({sacctmgr} show assoc where users="$(id -un)" format=Account '
            "| sort -u | paste -sd, -); "
            f'[ -z "$a" ] || {sacctmgr} show assoc where accounts="$a" format={ASSOC_FORMAT}'
        ),
    }


def capacity_command(sources: Mapping[str, str] | None = None) -> str:
    """The one shell command of a capacity refresh (no argument comes from the user).

    The tools run side by side (sacctmgr alone takes a quarter of a second per call on a
    quiet controller), each into its own file of a private temporary directory; their outputs
    are then printed in :data:`SECTIONS` order, each framed by markers with its exit status.
    The node section goes through :data:`NODE_REDUCE_AWK` as it is printed, in the same
    background job, so its reduction costs the refresh nothing while a slower tool runs.
    The remote user is asked for with ``id -un`` so the user's share and associations match the
    login, whatever the profile says. sacctmgr is bounded by ``timeout`` so a dead accounting
    daemon cannot stall the refresh; its sections then come back with their exit status.

    Args:
        sources: replace a section's tool with another command (``{"nodes": "cat FILE"}``):
            how ``bench/`` replays a recorded big cluster through the same command.
    """
    steps = capacity_tools()
    steps.update(sources or {})
    # mawk, where the login host has it, runs the reduction three times faster than gawk.
    reduce = f"\"$awk\" -v K='{' '.join(NODE_FIELDS)}' '{NODE_REDUCE_AWK}'"

    def run(name: str, cmd: str) -> str:
        if name != "nodes":
            return f'( {{ {cmd}; }} >"$d/{name}" 2>&1; echo $? >"$d/{name}.rc" ) &'
        # The node lines are reduced as scontrol prints them, beside the other tools (sacctmgr
        # is slower than the reduction of a thousand nodes), not after them.
        return f'( {{ {{ {cmd}; }} 2>&1; echo $? >"$d/{name}.rc"; }} | {reduce} >"$d/{name}" ) &'

    background = " ".join(run(name, cmd) for name, cmd in steps.items())
    show = (
        f'for n in {" ".join(steps)}; do echo "{MARK}$n"; cat "$d/$n"; echo; '
        f'echo "{MARK}rc $(cat "$d/$n.rc" 2>/dev/null)"; done'
    )
    return (
        'd=$(mktemp -d "${TMPDIR:-/tmp}/tao-cap.XXXXXX") || exit 1; '
        "awk=$(command -v mawk 2>/dev/null || echo awk); "
        f"trap 'rm -rf \"$d\"' EXIT; {background} wait; {show}"
    )


# ----------------------------------------------------------------------------------- sections


@dataclass(frozen=True)
class Section:
    """One tool's output inside the command's answer."""

    text: str
    """The lines between the markers (stdout and stderr of the tool)."""
    rc: int | None
    """The tool's exit status; None when the section was cut off."""

    @property
    def ok(self) -> bool:
        """The tool ran and exited 0."""
        return self.rc == 0

    @property
    def error(self) -> str:
        """The last non-empty line of a failed section (what the tool said), else ''."""
        if self.ok:
            return ""
        lines = [ln.strip() for ln in self.text.splitlines() if ln.strip()]
        return (
            lines[-1] if lines else ("no answer" if self.rc is None else f"exit status {self.rc}")
        )


_MARK_RE = re.compile(rf"^{re.escape(MARK)}(\w+)(?: (-?\d+))?\s*\Z")


def split_sections(output: str) -> dict[str, Section]:
    """Cut the command's output at the marker lines.

    A section whose closing marker is missing (the command was cut off) gets ``rc=None``;
    sections never started are absent. One C-level split at the markers, not a look at
    every line: a 1,000-node answer has thousands of lines and a dozen markers.
    """
    sections: dict[str, Section] = {}
    name: str | None = None
    body: list[str] = []
    pieces = ("\n" + output).split("\n" + MARK)
    for piece in pieces[1:]:
        head, newline, rest = piece.partition("\n")
        match = _MARK_RE.match(MARK + head)
        if not match:  # the marker text inside a line of output: it is output
            if name is not None:
                body.append("\n" + MARK + piece)
            continue
        tag, number = match.groups()
        if tag == "rc":
            if name is not None:
                sections[name] = Section(_section_text(body), int(number) if number else None)
            name, body = None, []
        else:
            if name is not None:  # a section opened without the previous one closing
                sections[name] = Section(_section_text(body), None)
            name, body = tag, [rest if newline else ""]
    if name is not None:
        sections[name] = Section(_section_text(body), None)
    return sections


def _section_text(body: list[str]) -> str:
    return "".join(body)
