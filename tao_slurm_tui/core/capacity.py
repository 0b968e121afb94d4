"""Cluster capacity as records: nodes, partitions, jobs, QOS and associations, parsed (pure).

:func:`parse_capacity_output` takes the answer to the one command of a refresh
(:mod:`tao_slurm_tui.core.capacity_command`) and parses each section's lines into records;
:mod:`tao_slurm_tui.core.capacity_report` turns them into the numbers people read.

GPU counts come from the nodes' configured GRES (``Gres=gpu:a100:8(S:0-1)``, ``gpu:4``) and
allocated GRES (``AllocTRES=...,gres/gpu=2,gres/gpu:a100=2``; older SLURM prints
``GresUsed=gpu:a100:2(IDX:0-1)``). When a node reports neither, its allocation is derived from
the running jobs' node lists (see :func:`tao_slurm_tui.core.capacity_report.build_report`).

Lines that do not parse are skipped and counted, never fatal: a partial picture is better than
none, and the report says how many lines it could not read.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from functools import lru_cache
from typing import NamedTuple, TypeVar

from tao_slurm_tui.core.capacity_command import (
    ASSOC_FORMAT,
    NODE_FIELDS,
    QOS_FORMAT,
    split_sections,
)
from tao_slurm_tui.core.slurm import clean_reason
from tao_slurm_tui.core.slurm_fields import (
    GpuCounts,
    gpus_from_tres,
    parse_gres,
    parse_key_values,
    parse_tres,
    pick_fields,
)
from tao_slurm_tui.core.slurm_text import clean_time, expand_nodelist

T = TypeVar("T")

SEP = "|"
"""Field separator of the squeue and sacctmgr sections (``-P``/fixed formats; no field we read
contains it, and the free-text reason comes last)."""
LINE_CACHE = 16384
"""Node and job lines whose parse is remembered (a few MiB at most; a line that changed is
simply a new line)."""


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


_REASON_RE = re.compile(r"^(.*?)\s*\[([^@\]]*)@([^\]]*)\]\s*\Z")


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
_ARRAY_RE = re.compile(r"_\[([^\]]+)\]\Z")


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
    """Parse the whole answer of :func:`~tao_slurm_tui.core.capacity_command.capacity_command`.

    Args:
        output: the command's stdout.
        user: the login user, used when the ``user`` section is missing.

    Raises:
        CapacityUnavailable: the node section is missing or failed (nothing to show).
    """
    sections = split_sections(output)
    nodes_section = sections.get("nodes")
    if nodes_section is None or not nodes_section.ok:
        why = nodes_section.error if nodes_section else "no answer"
        raise CapacityUnavailable(f"SLURM did not list its nodes ({why}).")

    def lines(name: str) -> list[str]:
        section = sections.get(name)
        if section is None:
            return []
        return [ln for ln in section.text.splitlines() if ln.strip()]

    notes: list[str] = []
    nodes, skipped_nodes = _parsed(lines("nodes"), parse_node_line)
    jobs_section = sections.get("jobs")
    jobs: list[Job] = []
    skipped_jobs = 0
    if jobs_section is not None and jobs_section.ok:
        jobs, skipped_jobs = _parsed(lines("jobs"), parse_job_line)
    else:
        notes.append(
            "squeue did not answer, so pending and running jobs are not counted"
            + (f" ({jobs_section.error})." if jobs_section else ".")
        )
    qos_section, assoc_section = sections.get("qos"), sections.get("assoc")
    accounting = bool(qos_section and qos_section.ok)
    if not accounting:
        notes.append(
            "SLURM accounting (sacctmgr) did not answer, so QOS and account limits are not shown."
        )
    assoc_ok = assoc_section is not None and assoc_section.ok
    user_lines = lines("user")
    return CapacityRaw(
        user=user_lines[0].strip() if user_lines else user,
        nodes=nodes,
        partitions=_parsed(lines("partitions"), parse_partition_line)[0],
        jobs=jobs,
        qos=_parsed(lines("qos"), parse_qos_line)[0] if accounting else [],
        associations=_parsed(lines("assoc"), parse_assoc_line)[0] if assoc_ok else [],
        accounting=accounting,
        skipped=skipped_nodes + skipped_jobs,
        notes=notes,
    )


def _parsed(lines: list[str], parse: Callable[[str], T | None]) -> tuple[list[T], int]:
    """The records ``parse`` makes of ``lines``, and how many lines it could not read."""
    records = [r for r in map(parse, lines) if r is not None]
    return records, len(lines) - len(records)
