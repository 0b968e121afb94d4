"""Cluster capacity: the one remote command per refresh and the parsers of its output.

One refresh is one round trip: :func:`capacity_command` builds a single shell command that runs
``scontrol show node -o``, ``scontrol show partition -o``, one ``squeue`` with a fixed format for
every running and pending job, and (where the site has accounting) ``sacctmgr`` for the QOS and
the user's associations. Every section is framed by marker lines carrying its exit status, so
one failing tool (no slurmdbd, say) costs only its own section. Nothing here does I/O;
:mod:`tao_slurm_tui.core.capacity_report` turns the parsed records into the numbers people read.

GPU counts come from the nodes' configured GRES (``Gres=gpu:a100:8(S:0-1)``, ``gpu:4``) and
allocated GRES (``AllocTRES=...,gres/gpu=2,gres/gpu:a100=2``; older SLURM prints
``GresUsed=gpu:a100:2(IDX:0-1)``). When a node reports neither, its allocation is derived from
the running jobs' node lists (see :func:`tao_slurm_tui.core.capacity_report.build_report`).

Lines that do not parse are skipped and counted, never fatal: a partial picture is better than
none, and the report says how many lines it could not read.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from functools import lru_cache
from typing import NamedTuple

from tao_slurm_tui.core.slurm import clean_reason
from tao_slurm_tui.core.slurm_text import clean_time, expand_nodelist

MARK = "@@tao-cap:"
"""Prefix of the section marker lines the capacity command prints."""

SEP = "|"
"""Field separator of the squeue and sacctmgr sections (``-P``/fixed formats; no field we read
contains it, and the free-text reason comes last)."""

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

LINE_CACHE = 16384
"""Node and job lines whose parse is remembered (a few MiB at most; a line that changed is
simply a new line)."""
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


_MARK_RE = re.compile(rf"^{re.escape(MARK)}(\w+)(?: (-?\d+))?\s*$")


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


# ----------------------------------------------------------------------------------- key=value


_FIELD_SPLIT_RE = re.compile(r" +(?=[A-Z][A-Za-z0-9_]*=)")


def parse_key_values(line: str) -> dict[str, str]:
    """One ``scontrol ... -o`` line as a dict.

    Values may contain spaces (``OS=Linux 6.1.0 #1 SMP``, ``Reason=GPU fell off the bus``), so
    a value runs up to the next `` Key=`` (a capitalised word directly followed by ``=``).
    One C-level split per line: a 1,000-node answer is 1,000 such lines.
    """
    fields: dict[str, str] = {}
    for chunk in _FIELD_SPLIT_RE.split(line.strip()):
        key, eq, value = chunk.partition("=")
        if eq:
            fields[key] = value.strip()
    return fields


def pick_fields(line: str, keys: tuple[str, ...], text_key: str = "") -> dict[str, str]:
    """The fields ``keys`` (and the free-text ``text_key``) of one long ``scontrol -o`` line.

    A node line carries some 40 fields of which a refresh reads a dozen, so rather than
    splitting the whole line (:func:`parse_key_values`), each wanted field is found with one
    C-level ``str.find`` of `` Key=`` and ends at the next space. Only ``text_key`` (SLURM's
    ``Reason``, printed last) may hold spaces; it runs up to the next `` Key=``. The first
    occurrence of a key wins, so a reason quoting ``State=...`` cannot shadow the real one.
    Keys the line does not have are absent.
    """
    line = " " + line.strip()
    find = line.find
    fields: dict[str, str] = {}
    for key in keys:
        at = find(f" {key}=")
        if at >= 0:
            start = at + len(key) + 2
            end = find(" ", start)
            fields[key] = line[start:] if end < 0 else line[start:end]
    if text_key:
        at = find(f" {text_key}=")
        if at >= 0:
            rest = line[at + len(text_key) + 2 :]
            fields[text_key] = _FIELD_SPLIT_RE.split(rest, maxsplit=1)[0].strip()
    return fields


# ----------------------------------------------------------------------------------- GRES / TRES

GpuCounts = dict[str, int]
"""GPU type → count; ``""`` is the untyped ``gpu:4`` form."""


def _split_outside_parens(text: str) -> Iterator[str]:
    depth, start = 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        elif ch == "," and depth == 0:
            yield text[start:i]
            start = i + 1
    yield text[start:]


_COUNT_RE = re.compile(r"^(\d+)([KMGTP]?)$", re.IGNORECASE)
_MULTIPLIER = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4, "P": 1024**5}


def _count(text: str) -> int | None:
    match = _COUNT_RE.match(text.strip())
    if not match:
        return None
    return int(match.group(1)) * _MULTIPLIER[match.group(2).upper()]


def parse_gres(text: str) -> GpuCounts:
    """GPUs in a GRES string: ``gpu:a100:8(S:0-1),gpu:v100:2``, ``gpu:4``, ``gres:gpu:2``.

    Other GRES (``shard``, ``mps``) and ``(null)``/``N/A`` give nothing. A bare ``gpu`` or
    ``gpu:a100`` counts one, as SLURM reads it.
    """
    # The same few strings repeat on every node and job line of a big cluster.
    return dict(_parse_gres(text))


@lru_cache(maxsize=4096)
def _parse_gres(text: str) -> tuple[tuple[str, int], ...]:
    counts: GpuCounts = {}
    value = text.strip()
    if not value or value.lower() in {"(null)", "n/a", "none"}:
        return ()
    for raw in _split_outside_parens(value):
        item = re.sub(r"\(.*?\)", "", raw).strip()
        for prefix in ("gres:", "gres/"):
            if item.startswith(prefix):
                item = item[len(prefix) :]
        parts = item.split(":")
        if parts[0] != "gpu":
            continue
        kind, number = "", 1
        if len(parts) == 2:
            n = _count(parts[1])
            if n is None:
                kind = parts[1]
            else:
                number = n
        elif len(parts) >= 3:
            kind = parts[1]
            n = _count(parts[2])
            if n is None:
                continue
            number = n
        counts[kind] = counts.get(kind, 0) + number
    return tuple(counts.items())


def parse_tres(text: str) -> dict[str, int]:
    """A TRES list (``cpu=8,mem=4G,node=2,gres/gpu=4,gres/gpu:a100=4``) as name → amount.

    ``mem`` is in MB (SLURM's unit; suffixes converted). Unparsable items are dropped.
    """
    tres: dict[str, int] = {}
    value = text.strip()
    if not value or value.lower() in {"(null)", "n/a"}:
        return tres
    for item in value.split(","):
        name, sep, amount = item.strip().partition("=")
        if not sep or not name:
            continue
        number = _count(amount)
        if number is None:
            continue
        if name == "mem":
            # No suffix is MB; a suffix is bytes-based (4G = 4096 MB).
            suffix = amount.strip()[-1:].upper()
            number = number if suffix.isdigit() else number // (1024**2)
        tres[name] = number
    return tres


def gpus_from_tres(tres: Mapping[str, int]) -> GpuCounts | None:
    """GPU counts by type in a TRES dict; None when it names no GPU at all.

    ``gres/gpu`` is the total, ``gres/gpu:TYPE`` the typed part; what the types do not cover
    stays untyped.
    """
    if "gres/gpu" not in tres and not any(k.startswith("gres/gpu:") for k in tres):
        return None
    typed = {k.split(":", 1)[1]: v for k, v in tres.items() if k.startswith("gres/gpu:")}
    total = tres.get("gres/gpu", sum(typed.values()))
    counts: GpuCounts = {k: v for k, v in typed.items() if v}
    rest = total - sum(typed.values())
    if rest > 0:
        counts[""] = rest
    return counts


# ----------------------------------------------------------------------------------- nodes


class NodeState(StrEnum):
    """What a node can do for a new job, from SLURM's state and flags."""

    IDLE = "idle"
    MIXED = "mixed"
    ALLOCATED = "allocated"
    DRAINING = "draining"
    """Drain flag set while jobs still run: takes no new job."""
    DRAINED = "drained"
    DOWN = "down"

    @property
    def usable(self) -> bool:
        """A new job may start here."""
        return self in (NodeState.IDLE, NodeState.MIXED, NodeState.ALLOCATED)


_DOWN_WORDS = {"DOWN", "FAIL", "FAILING", "NOT_RESPONDING", "FUTURE", "UNKNOWN", "NO_RESPOND"}
_DRAIN_WORDS = {"DRAIN", "DRAINED", "DRAINING", "MAINT", "REBOOT_REQUESTED", "REBOOT_ISSUED"}


@lru_cache(maxsize=256)
def node_state(raw: str) -> NodeState:
    """Map ``scontrol``'s state (``IDLE``, ``MIXED+DRAIN``, ``DOWN*``) to one bucket.

    Down beats drain beats the base state; ``*`` (not responding) counts as down.
    """
    text = raw.strip().upper()
    words = set(re.split(r"[+]", text.rstrip("*~#!%$@^-")))
    base = text.split("+", 1)[0].rstrip("*~#!%$@^-")
    if text.split("+", 1)[0].endswith("*") or words & _DOWN_WORDS:
        return NodeState.DOWN
    if words & _DRAIN_WORDS:
        if base in {"ALLOCATED", "MIXED", "COMPLETING"}:
            return NodeState.DRAINING
        return NodeState.DRAINED
    if base in {"ALLOCATED", "ALLOC", "COMPLETING"}:
        return NodeState.ALLOCATED
    if base in {"MIXED", "MIX"}:
        return NodeState.MIXED
    if base in {"IDLE", "PLANNED", "POWERED_DOWN", "POWER_DOWN", "CLOUD"}:
        return NodeState.IDLE
    return NodeState.DOWN


class Node(NamedTuple):
    """One compute node as ``scontrol show node -o`` describes it.

    A named tuple, not a frozen dataclass: as immutable, and built five times faster (a frozen
    dataclass sets each field through ``object.__setattr__``), which counts at 1,000 nodes.
    """

    name: str
    state: NodeState
    raw_state: str
    partitions: tuple[str, ...]
    cpus_total: int
    cpus_alloc: int
    mem_total_mb: int
    mem_alloc_mb: int
    gpus: GpuCounts
    """Configured GPUs by type."""
    gpus_alloc: GpuCounts | None
    """Allocated GPUs by type; None when the node did not say (derived from jobs then)."""
    reason: str = ""
    """Why it is down or drained (SLURM's reason, without the ``[user@time]`` suffix)."""
    reason_by: str = ""
    """Who set the reason, when SLURM says."""
    reason_time: str = ""
    """When the reason was set."""

    @property
    def cpus_free(self) -> int:
        """CPUs not allocated."""
        return max(0, self.cpus_total - self.cpus_alloc)

    @property
    def mem_free_mb(self) -> int:
        """Memory (MB) not allocated."""
        return max(0, self.mem_total_mb - self.mem_alloc_mb)


_REASON_RE = re.compile(r"^(.*?)\s*\[([^@\]]*)@([^\]]*)\]\s*$")


def _int(value: str | None, default: int = 0) -> int:
    if value is None:
        return default
    try:
        return int(value)  # int() itself ignores surrounding whitespace
    except ValueError:
        return default


def _reconcile_types(configured: GpuCounts, alloc: GpuCounts) -> GpuCounts:
    """Put untyped allocation on the node's type when the node has exactly one type."""
    if "" in alloc and "" not in configured and len(configured) == 1:
        (kind,) = configured
        merged = {k: v for k, v in alloc.items() if k != ""}
        merged[kind] = merged.get(kind, 0) + alloc[""]
        return merged
    return alloc


@lru_cache(maxsize=4096)
def _alloc_gpus(alloc_tres: str, gres_used: str | None, gpus_tracked: bool) -> GpuCounts | None:
    """A node's allocated GPUs from its AllocTRES (or an older SLURM's GresUsed); None when
    neither says. The same few strings repeat on every node of a big cluster."""
    alloc = gpus_from_tres(parse_tres(alloc_tres))
    if alloc is None and gres_used is not None:
        alloc = parse_gres(gres_used)
    if alloc is None and gpus_tracked:
        # GPUs are tracked (CfgTRES names them) and AllocTRES does not: none allocated.
        alloc = {}
    return alloc


@lru_cache(maxsize=LINE_CACHE)
def parse_node_line(line: str) -> Node | None:
    """One ``scontrol show node -o`` line; None when it is not a node line.

    Remembered by its text (:data:`LINE_CACHE`): from one refresh to the next most nodes
    print the same (reduced) line, and parsing it again would give the same node.
    """
    fields = pick_fields(line, NODE_FIELDS, "Reason")
    name = fields.get("NodeName")
    raw_state = fields.get("State")
    if not name or raw_state is None:
        return None
    configured = parse_gres(fields.get("Gres", ""))
    alloc = _alloc_gpus(
        fields.get("AllocTRES", ""),
        fields.get("GresUsed"),
        bool(configured) and "gres/gpu" in fields.get("CfgTRES", ""),
    )
    if alloc is not None:
        alloc = _reconcile_types(configured, dict(alloc))
    reason, by, when = clean_time(fields.get("Reason", "")), "", ""
    if reason.endswith("]"):
        match = _REASON_RE.match(reason)
        if match:
            reason, by, when = match.groups()
    return Node(
        name=name,
        state=node_state(raw_state),
        raw_state=raw_state,
        partitions=_partitions(fields.get("Partitions", "")),
        cpus_total=_int(fields.get("CPUEfctv"), _int(fields.get("CPUTot"))),
        cpus_alloc=_int(fields.get("CPUAlloc")),
        mem_total_mb=_int(fields.get("RealMemory")),
        mem_alloc_mb=_int(fields.get("AllocMem")),
        gpus=configured,
        gpus_alloc=alloc,
        reason="" if reason.lower() in {"none", "(null)"} else reason,
        reason_by=by,
        reason_time=when,
    )


@lru_cache(maxsize=1024)
def _partitions(text: str) -> tuple[str, ...]:
    return tuple(p for p in text.split(",") if p and p != "(null)")


# ----------------------------------------------------------------------------------- partitions


@dataclass(frozen=True)
class Partition:
    """One partition as ``scontrol show partition -o`` describes it."""

    name: str
    default: bool
    state: str
    """``UP``, ``DOWN``, ``DRAIN``, ``INACTIVE``."""
    max_time: str
    """SLURM's MaxTime text (``4:00:00``, ``UNLIMITED``)."""
    nodes: tuple[str, ...]
    qos: str = ""
    """The partition QOS (``N/A`` → '')."""


def parse_partition_line(line: str) -> Partition | None:
    """One ``scontrol show partition -o`` line; None when it is not one."""
    fields = parse_key_values(line)
    name = fields.get("PartitionName", "")
    if not name:
        return None
    qos = fields.get("QoS", fields.get("QOS", ""))
    return Partition(
        name=name,
        default=fields.get("Default", "").upper() == "YES",
        state=fields.get("State", "UP"),
        max_time=fields.get("MaxTime", ""),
        nodes=tuple(expand_nodelist(fields.get("Nodes", ""))),
        qos="" if qos.upper() in {"N/A", "(NULL)"} else qos,
    )


# ----------------------------------------------------------------------------------- jobs


@lru_cache(maxsize=4096)
def _hosts(node_list: str) -> tuple[str, ...]:
    return tuple(expand_nodelist(node_list))


_STATE_RE = re.compile(r"[A-Z_]+")
_ARRAY_RE = re.compile(r"_\[([^\]]+)\]$")


def array_tasks(job_id: str) -> int:
    """How many tasks one squeue line stands for (``12_[3-10%2]`` is 8 pending tasks)."""
    match = _ARRAY_RE.search(job_id)
    if not match:
        return 1
    total = 0
    for part in match.group(1).split("%", 1)[0].split(","):
        lo, sep, hi = part.partition("-")
        step = 1
        if ":" in hi:
            hi, _, step_text = hi.partition(":")
            step = max(1, _int(step_text, 1))
        if sep and lo.isdigit() and hi.isdigit():
            total += len(range(int(lo), int(hi) + 1, step))
        elif lo.isdigit():
            total += 1
    return max(1, total)


class Job(NamedTuple):
    """One running or pending job (or pending array) as squeue lists it.

    A named tuple for the reason :class:`Node` is one: a big queue is thousands of lines.
    """

    job_id: str
    user: str
    account: str
    qos: str
    partitions: tuple[str, ...]
    """A pending job may list several; a running job runs in one."""
    state: str
    nodes: int
    cpus: int
    gpus_per_node: GpuCounts
    node_list: tuple[str, ...]
    start: str
    """Start time; for a pending job SLURM's estimate ('' when it has none)."""
    reason: str
    gpus: int
    """GPUs of this line: per node, times nodes, times array tasks (:func:`job_gpus`; worked
    out once, when the line is parsed, not on every refresh that reads it)."""
    tasks: int = 1
    """Array tasks this line stands for (1 for a plain job)."""

    @property
    def running(self) -> bool:
        """Holds resources now (running, completing, configuring, suspended)."""
        return self.state != "PENDING"


def job_gpus(gpus_per_node: GpuCounts, nodes: int, tasks: int = 1) -> int:
    """A job line's GPUs: per node, times nodes, times array tasks."""
    return sum(gpus_per_node.values()) * max(1, nodes) * tasks


@lru_cache(maxsize=64)
def _job_state(text: str) -> str | None:
    state = text.strip().upper()
    return state if _STATE_RE.fullmatch(state) else None


@lru_cache(maxsize=1024)
def _job_reason(text: str) -> str:
    return clean_reason(text) if text.strip().upper() != "NONE" else ""


@lru_cache(maxsize=1024)
def _job_partitions(text: str) -> tuple[str, ...]:
    return tuple(p for p in text.strip().split(",") if p)


@lru_cache(maxsize=LINE_CACHE)
def parse_job_line(line: str) -> Job | None:
    """One squeue line in :data:`SQUEUE_FORMAT`; None when it does not have the fields.

    Remembered by its text like :func:`parse_node_line` (a queue changes little between two
    refreshes).

    A big queue is thousands of lines, so the per-line work is one split; the fields that
    repeat from job to job (state, partitions, GRES, reason, node lists) go through small
    caches.
    """
    parts = line.split(SEP, 11)
    if len(parts) != 12:
        return None
    job_id, user, account, qos, partitions, state_text, nodes, cpus, gres, hosts, start, reason = (
        parts
    )
    job_id = job_id.strip()
    state = _job_state(state_text)
    if not job_id or not job_id[0].isdigit() or state is None:
        return None
    pending = state == "PENDING"
    node_count, per_node = _int(nodes, 1), parse_gres(gres)
    tasks = array_tasks(job_id) if pending and "[" in job_id else 1
    return Job(
        job_id=job_id,
        user=user.strip(),
        account=account.strip(),
        qos=qos.strip(),
        partitions=_job_partitions(partitions),
        state=state,
        nodes=node_count,
        cpus=_int(cpus),
        gpus_per_node=per_node,
        node_list=() if pending else _hosts(hosts),
        start=clean_time(start),
        reason=_job_reason(reason),
        gpus=job_gpus(per_node, node_count, tasks),
        tasks=tasks,
    )


# ----------------------------------------------------------------------------------- accounting


@dataclass(frozen=True)
class Qos:
    """A QOS's limits (only what we show against use)."""

    name: str
    grp_tres: dict[str, int] = field(default_factory=dict)
    grp_jobs: int | None = None
    max_tres_per_job: dict[str, int] = field(default_factory=dict)
    max_tres_per_user: dict[str, int] = field(default_factory=dict)
    max_jobs_per_user: int | None = None


def _opt_int(text: str) -> int | None:
    value = text.strip()
    return int(value) if value.isdigit() else None


def parse_qos_line(line: str) -> Qos | None:
    """One ``sacctmgr -nP show qos format=`` :data:`QOS_FORMAT` line."""
    parts = line.split(SEP)
    if len(parts) != len(QOS_FORMAT.split(",")) or not parts[0].strip():
        return None
    name, grp_tres, grp_jobs, max_tres, max_tres_pu, max_jobs_pu = parts
    return Qos(
        name=name.strip(),
        grp_tres=parse_tres(grp_tres),
        grp_jobs=_opt_int(grp_jobs),
        max_tres_per_job=parse_tres(max_tres),
        max_tres_per_user=parse_tres(max_tres_pu),
        max_jobs_per_user=_opt_int(max_jobs_pu),
    )


@dataclass(frozen=True)
class Association:
    """An association row: the account's own (``user == ''``) or one user's."""

    account: str
    user: str
    partition: str
    qos: tuple[str, ...]
    grp_tres: dict[str, int] = field(default_factory=dict)
    grp_jobs: int | None = None
    max_tres_per_job: dict[str, int] = field(default_factory=dict)
    max_jobs: int | None = None


def parse_assoc_line(line: str) -> Association | None:
    """One ``sacctmgr -nP show assoc format=`` :data:`ASSOC_FORMAT` line."""
    parts = line.split(SEP)
    if len(parts) != len(ASSOC_FORMAT.split(",")) or not parts[0].strip():
        return None
    account, user, partition, qos, grp_tres, grp_jobs, max_tres, max_jobs = parts
    return Association(
        account=account.strip(),
        user=user.strip(),
        partition=partition.strip(),
        qos=tuple(q for q in qos.strip().split(",") if q),
        grp_tres=parse_tres(grp_tres),
        grp_jobs=_opt_int(grp_jobs),
        max_tres_per_job=parse_tres(max_tres),
        max_jobs=_opt_int(max_jobs),
    )


# ----------------------------------------------------------------------------------- the whole


@dataclass(frozen=True)
class CapacityRaw:
    """Everything one refresh read, parsed but not yet added up."""

    user: str
    nodes: list[Node]
    partitions: list[Partition]
    jobs: list[Job]
    qos: list[Qos]
    associations: list[Association]
    accounting: bool
    """sacctmgr answered (False: the site has no accounting, or it is down)."""
    skipped: int = 0
    """Lines that did not parse."""
    notes: list[str] = field(default_factory=list)
    """One sentence per section that failed, for the user."""


class CapacityUnavailable(ValueError):
    """The nodes could not be read at all; ``str()`` is one sentence."""


def parse_capacity_output(output: str, *, user: str = "") -> CapacityRaw:
    """Parse the whole answer of :func:`capacity_command`.

    Args:
        output: the command's stdout.
        user: the login user, used when the ``user`` section is missing.

    Raises:
        CapacityUnavailable: the node section is missing or failed (nothing to show).
    """
    sections = split_sections(output)
    notes: list[str] = []
    nodes_section = sections.get("nodes")
    if nodes_section is None or not nodes_section.ok:
        why = nodes_section.error if nodes_section else "no answer"
        raise CapacityUnavailable(f"SLURM did not list its nodes ({why}).")
    skipped = 0

    def lines(name: str) -> list[str]:
        section = sections.get(name)
        if section is None:
            return []
        return [ln for ln in section.text.splitlines() if ln.strip()]

    nodes: list[Node] = []
    for line in lines("nodes"):
        node = parse_node_line(line)
        if node is None:
            skipped += 1
        else:
            nodes.append(node)
    partitions = [p for p in map(parse_partition_line, lines("partitions")) if p is not None]
    jobs_section = sections.get("jobs")
    jobs: list[Job] = []
    if jobs_section is not None and jobs_section.ok:
        for line in lines("jobs"):
            job = parse_job_line(line)
            if job is None:
                skipped += 1
            else:
                jobs.append(job)
    else:
        notes.append(
            "squeue did not answer, so pending and running jobs are not counted"
            + (f" ({jobs_section.error})." if jobs_section else ".")
        )
    qos_section, assoc_section = sections.get("qos"), sections.get("assoc")
    accounting = bool(qos_section and qos_section.ok)
    qos = [q for q in map(parse_qos_line, lines("qos")) if q is not None] if accounting else []
    assocs: list[Association] = []
    if assoc_section is not None and assoc_section.ok:
        assocs = [a for a in map(parse_assoc_line, lines("assoc")) if a is not None]
    if not accounting:
        notes.append(
            "SLURM accounting (sacctmgr) did not answer, so QOS and account limits are not shown."
        )
    user_lines = lines("user")
    return CapacityRaw(
        user=user_lines[0].strip() if user_lines else user,
        nodes=nodes,
        partitions=partitions,
        jobs=jobs,
        qos=qos,
        associations=assocs,
        accounting=accounting,
        skipped=skipped,
        notes=notes,
    )
