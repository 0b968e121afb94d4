"""Capacity numbers people read, added up from one refresh's parsed records (pure).

Per partition: GPUs total / allocated / free by type, nodes by state (down and drained ones with
their reason), the largest free block on one node, CPUs and memory free, running and pending
jobs with their GPUs. For the user: their running and pending GPUs, and the QOS / association
limits the site sets, against current use. :meth:`CapacityReport.to_json` is the
``capacity --json`` contract.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, NamedTuple

from tao_slurm_tui.core.capacity import (
    LINE_CACHE,
    CapacityRaw,
    Job,
    Node,
    NodeState,
    Partition,
)
from tao_slurm_tui.core.capacity_limits import LimitUse, limits_in_use
from tao_slurm_tui.core.slurm_fields import GpuCounts

UNTYPED = ""
"""Key of GPUs configured without a type (``gpu:4``)."""


def type_label(kind: str) -> str:
    """How a GPU type is shown: the type, or ``gpu`` for untyped ones."""
    return kind or "gpu"


@dataclass(frozen=True)
class GpuTypeCapacity:
    """GPUs of one type in a partition."""

    kind: str
    """The GRES type (``a100``); '' for untyped."""
    total: int
    """Configured on every node of the partition."""
    allocated: int
    free: int
    """Not allocated, on nodes that accept jobs."""
    unavailable: int
    """Not allocated, on down or drained nodes."""


@dataclass(frozen=True)
class FreeBlock:
    """The most GPUs one node can give a new job right now."""

    gpus: int
    node: str
    kind: str
    cpus_free: int
    mem_free_mb: int


@dataclass(frozen=True)
class PartitionCapacity:
    """Everything the capacity view shows for one partition."""

    name: str
    default: bool
    state: str
    max_time: str
    nodes: dict[NodeState, int]
    """Node count per state (every state present, zeros included)."""
    gpu_types: list[GpuTypeCapacity]
    largest_block: FreeBlock | None
    """None when no node has a free GPU."""
    blocks: dict[str, FreeBlock]
    """The largest free block of each GPU type (types with a free GPU only), for a request
    that names a type (``--gres=gpu:a100:4``)."""
    cpus_total: int
    cpus_free: int
    """On nodes that accept jobs."""
    mem_total_mb: int
    mem_free_mb: int
    running_jobs: int
    running_gpus: int
    pending_jobs: int
    pending_gpus: int

    @property
    def gpus_total(self) -> int:
        """Configured GPUs of every type."""
        return sum(t.total for t in self.gpu_types)

    @property
    def gpus_allocated(self) -> int:
        """Allocated GPUs of every type."""
        return sum(t.allocated for t in self.gpu_types)

    @property
    def gpus_free(self) -> int:
        """Free GPUs (usable nodes only) of every type."""
        return sum(t.free for t in self.gpu_types)

    @property
    def gpus_unavailable(self) -> int:
        """Unallocated GPUs on down or drained nodes."""
        return sum(t.unavailable for t in self.gpu_types)


@dataclass(frozen=True)
class UnavailableNode:
    """A down, drained or draining node and why."""

    name: str
    state: NodeState
    raw_state: str
    reason: str
    by: str
    since: str
    partitions: tuple[str, ...]
    gpus: int


@dataclass(frozen=True)
class MyShare:
    """The user's own jobs."""

    running_jobs: int = 0
    running_gpus: int = 0
    pending_jobs: int = 0
    pending_gpus: int = 0


@dataclass(frozen=True)
class CapacityReport:
    """The capacity of one cluster as one refresh saw it."""

    user: str
    partitions: list[PartitionCapacity]
    unavailable: list[UnavailableNode]
    mine: MyShare
    limits: list[LimitUse]
    accounting: bool
    gpus_free: int = 0
    """Free GPUs on the whole cluster (each node once, whatever its partitions)."""
    notes: list[str] = field(default_factory=list)

    def partition(self, name: str) -> PartitionCapacity | None:
        """The partition called ``name``, if the cluster has it."""
        return next((p for p in self.partitions if p.name == name), None)

    def to_json(self) -> dict[str, Any]:
        """The ``capacity --json`` object."""
        return {
            "user": self.user,
            "gpus_free": self.gpus_free,
            "partitions": [_partition_json(p) for p in self.partitions],
            "unavailable_nodes": [
                {
                    "node": n.name,
                    "state": str(n.state),
                    "slurm_state": n.raw_state,
                    "reason": n.reason,
                    "by": n.by,
                    "since": n.since,
                    "partitions": list(n.partitions),
                    "gpus": n.gpus,
                }
                for n in self.unavailable
            ],
            "mine": {
                "running_jobs": self.mine.running_jobs,
                "running_gpus": self.mine.running_gpus,
                "pending_jobs": self.mine.pending_jobs,
                "pending_gpus": self.mine.pending_gpus,
            },
            "limits": [
                {
                    "scope": lim.scope,
                    "kind": lim.kind,
                    "resource": lim.resource,
                    "limit": lim.limit,
                    "used": lim.used,
                    "reached": lim.reached,
                }
                for lim in self.limits
            ],
            "accounting": self.accounting,
            "notes": list(self.notes),
        }


def _partition_json(p: PartitionCapacity) -> dict[str, Any]:
    block = p.largest_block
    return {
        "name": p.name,
        "default": p.default,
        "state": p.state,
        "max_time": p.max_time,
        "nodes": {str(state): count for state, count in p.nodes.items()},
        "gpus": {
            "total": p.gpus_total,
            "allocated": p.gpus_allocated,
            "free": p.gpus_free,
            "unavailable": p.gpus_unavailable,
            "by_type": {
                type_label(t.kind): {
                    "total": t.total,
                    "allocated": t.allocated,
                    "free": t.free,
                    "unavailable": t.unavailable,
                    "largest_free_block": p.blocks[t.kind].gpus if t.kind in p.blocks else 0,
                }
                for t in p.gpu_types
            },
        },
        "largest_free_block": None
        if block is None
        else {
            "gpus": block.gpus,
            "node": block.node,
            "type": type_label(block.kind),
            "cpus_free": block.cpus_free,
            "mem_free_mb": block.mem_free_mb,
        },
        "cpus": {"total": p.cpus_total, "free": p.cpus_free},
        "memory_mb": {"total": p.mem_total_mb, "free": p.mem_free_mb},
        "running": {"jobs": p.running_jobs, "gpus": p.running_gpus},
        "pending": {"jobs": p.pending_jobs, "gpus": p.pending_gpus},
    }


# ----------------------------------------------------------------------------------- adding up


def _derive_alloc(nodes: list[Node], jobs: Iterable[Job]) -> dict[str, GpuCounts]:
    """GPUs allocated per node from running jobs, for nodes that do not report it."""
    wanted = {n.name for n in nodes if n.gpus_alloc is None}
    alloc: dict[str, Counter[str]] = {}
    if not wanted:
        return {}
    for job in jobs:
        if not job.running or not job.gpus_per_node:
            continue
        for host in job.node_list:
            if host in wanted:
                alloc.setdefault(host, Counter()).update(job.gpus_per_node)
    by_name = {n.name: n for n in nodes}
    derived: dict[str, GpuCounts] = {}
    for name in wanted:
        counts = dict(alloc.get(name, Counter()))
        configured = by_name[name].gpus
        if UNTYPED in counts and UNTYPED not in configured and len(configured) == 1:
            (kind,) = configured
            counts[kind] = counts.get(kind, 0) + counts.pop(UNTYPED)
        derived[name] = counts
    return derived


def _free_by_type(node: Node, alloc: GpuCounts) -> GpuCounts:
    return {k: max(0, v - alloc.get(k, 0)) for k, v in node.gpus.items()}


def _block(node: Node, alloc: GpuCounts) -> FreeBlock | None:
    """The node's biggest same-type free block, if it can take a job (a free CPU too)."""
    if not node.state.usable or node.cpus_free <= 0:
        return None
    free = _free_by_type(node, alloc)
    if not free:
        return None
    kind, gpus = max(free.items(), key=lambda kv: (kv[1], kv[0]))
    if gpus <= 0:
        return None
    return FreeBlock(gpus, node.name, kind, node.cpus_free, node.mem_free_mb)


def _block_key(block: FreeBlock) -> tuple[int, int, int]:
    """Which block is larger: more GPUs first, then more CPUs and memory."""
    return (block.gpus, block.cpus_free, block.mem_free_mb)


class _NodeFigures(NamedTuple):
    """What one node adds to every partition it is in (worked out once per refresh)."""

    node: Node
    usable: bool
    gpus: tuple[tuple[str, int, int], ...]
    """(type, configured, allocated) per GPU type."""
    cpus_free: int
    mem_free_mb: int
    block: FreeBlock | None
    typed_blocks: tuple[FreeBlock, ...]
    """The node's free GPUs of each type as a block, when it can take a job now."""
    shape: int
    """Everything above but the node's name, as a number (:func:`_shape_id`): nodes of one
    shape add up alike, so a partition counts its members by shape (in C) and adds up each
    shape once."""


_SHAPE = attrgetter("shape")
_SHAPE_IDS: dict[tuple[Any, ...], int] = {}
_NEXT_SHAPE = itertools.count()


def _shape_id(shape: tuple[Any, ...]) -> int:
    """A number per distinct shape: an int hashes at once, a nested tuple is hashed again at
    every look-up. Numbers are never reused, so emptying the memo (at the line cache's size)
    can only split a shape in two, which adds up the same."""
    known = _SHAPE_IDS.get(shape)
    if known is None:
        if len(_SHAPE_IDS) >= LINE_CACHE:
            _SHAPE_IDS.clear()
        known = _SHAPE_IDS[shape] = next(_NEXT_SHAPE)
    return known


def _figures(node: Node, alloc: GpuCounts) -> _NodeFigures:
    block = _block(node, alloc)
    typed: tuple[FreeBlock, ...] = ()
    if block is not None:
        typed = tuple(
            block
            if kind == block.kind
            else FreeBlock(free, node.name, kind, block.cpus_free, block.mem_free_mb)
            for kind, free in _free_by_type(node, alloc).items()
            if free > 0
        )
    usable = node.state.usable
    gpus = tuple((kind, count, min(count, alloc.get(kind, 0))) for kind, count in node.gpus.items())
    cpus_free = node.cpus_free if usable else 0
    mem_free = node.mem_free_mb if usable else 0
    shape = _shape_id(
        (
            node.state,
            gpus,
            node.cpus_total,
            node.mem_total_mb,
            cpus_free,
            mem_free,
            tuple((b.kind, b.gpus, b.cpus_free, b.mem_free_mb) for b in typed),
            block and block.kind,
        )
    )
    return _NodeFigures(node, usable, gpus, cpus_free, mem_free, block, typed, shape)


_FIGURES: dict[int, _NodeFigures] = {}
"""A node's figures by the node object's identity: :func:`~tao_slurm_tui.core.capacity.
parse_node_line` hands back the same object for a line it has seen, so a refresh where a node
did not change works nothing out for it again. The entry holds the node, so an id is not
reused while remembered; the memo is emptied when it reaches the line cache's size."""


def _remembered_figures(node: Node) -> _NodeFigures:
    """:func:`_figures` of a node that reports its own allocation, remembered (see _FIGURES)."""
    known = _FIGURES.get(id(node))
    if known is not None and known.node is node:
        return known
    if len(_FIGURES) >= LINE_CACHE:
        _FIGURES.clear()
    figures = _FIGURES[id(node)] = _figures(node, node.gpus_alloc or {})
    return figures


def _count_job(tally: list[int], running: bool, tasks: int, gpus: int) -> None:
    """Add a job to a ``[running jobs, running GPUs, pending jobs, pending GPUs]`` tally (the
    order of :class:`MyShare`'s fields)."""
    at = 0 if running else 2
    tally[at] += tasks
    tally[at + 1] += gpus


def _partition_capacity(
    part: Partition, members: list[_NodeFigures], tally: list[int]
) -> PartitionCapacity:
    states = dict.fromkeys(NodeState, 0)
    totals: dict[str, list[int]] = {}
    cpus_total = cpus_free = mem_total = mem_free = 0
    # A thousand nodes come in a few shapes: count them by shape and add each shape up once.
    # Each shape's first member stands for it (reversed, so the first one is what stays).
    shapes = list(map(_SHAPE, members))
    first = dict(zip(reversed(shapes), reversed(members), strict=True))
    counted = Counter(shapes)
    for shape, times in counted.items():
        figures = first[shape]
        node = figures.node
        states[node.state] += times
        free_column = 2 if figures.usable else 3
        for kind, count, used in figures.gpus:
            row = totals.get(kind)
            if row is None:
                row = totals[kind] = [0, 0, 0, 0]
            row[0] += count * times
            row[1] += used * times
            row[free_column] += (count - used) * times
        cpus_total += node.cpus_total * times
        mem_total += node.mem_total_mb * times
        cpus_free += figures.cpus_free * times
        mem_free += figures.mem_free_mb * times
    block, blocks = _largest_blocks(shapes, first, counted)
    return PartitionCapacity(
        name=part.name,
        default=part.default,
        state=part.state,
        max_time=part.max_time,
        nodes=states,
        gpu_types=[
            GpuTypeCapacity(kind, *row)
            for kind, row in sorted(totals.items(), key=lambda kv: kv[0])
        ],
        largest_block=block,
        blocks=dict(sorted(blocks.items())),
        cpus_total=cpus_total,
        cpus_free=cpus_free,
        mem_total_mb=mem_total,
        mem_free_mb=mem_free,
        running_jobs=tally[0],
        running_gpus=tally[1],
        pending_jobs=tally[2],
        pending_gpus=tally[3],
    )


def _largest_blocks(
    shapes: list[int], first: dict[int, _NodeFigures], counted: Iterable[int]
) -> tuple[FreeBlock | None, dict[str, FreeBlock]]:
    """The largest free block of a partition, and of each GPU type: more GPUs, then more CPUs
    and memory; on a tie the first node of the partition wins (a stable answer), i.e. the
    shape met first."""
    order = dict(zip(reversed(shapes), range(len(shapes) - 1, -1, -1), strict=True))
    best: tuple[tuple[int, int, int, int], FreeBlock] | None = None
    best_of_kind: dict[str, tuple[tuple[int, int, int, int], FreeBlock]] = {}
    for shape in counted:
        figures = first[shape]
        if figures.block is None:
            continue
        rank = (*_block_key(figures.block), -order[shape])
        if best is None or rank > best[0]:
            best = (rank, figures.block)
        for typed in figures.typed_blocks:
            rank = (*_block_key(typed), -order[shape])
            known = best_of_kind.get(typed.kind)
            if known is None or rank > known[0]:
                best_of_kind[typed.kind] = (rank, typed)
    if best is None:
        return None, {}
    return best[1], {kind: found for kind, (_, found) in best_of_kind.items()}


def build_report(raw: CapacityRaw) -> CapacityReport:
    """Add up one refresh.

    Partitions come in ``scontrol``'s order; a partition the nodes name but ``scontrol show
    partition`` did not list (it failed, or the partition is hidden) is still shown.
    Linear in nodes and jobs: each node's figures (allocation, free block) are worked out once
    whatever its partitions, and the jobs are tallied per partition in one pass.
    """
    partitions = _all_partitions(raw)
    figures = _node_figures(raw)
    members = _members(partitions, figures)
    tallies, mine = _tally_jobs(raw, partitions)
    free = sum(count - used for f in figures.values() if f.usable for _, count, used in f.gpus)
    notes = list(raw.notes)
    if raw.skipped:
        notes.append(f"{raw.skipped} line(s) of SLURM's answer could not be read and were skipped.")
    return CapacityReport(
        user=raw.user,
        partitions=[_partition_capacity(p, members[p.name], tallies[p.name]) for p in partitions],
        unavailable=_unavailable(raw.nodes),
        mine=MyShare(*mine),
        limits=limits_in_use(raw),
        accounting=raw.accounting,
        notes=notes,
        gpus_free=free,
    )


def _all_partitions(raw: CapacityRaw) -> list[Partition]:
    """``scontrol``'s partitions, then those only the nodes name."""
    partitions = list(raw.partitions)
    known = {p.name for p in partitions}
    for node in raw.nodes:
        for name in node.partitions:
            if name not in known:
                known.add(name)
                partitions.append(Partition(name, False, "UP", "", ()))
    return partitions


def _node_figures(raw: CapacityRaw) -> dict[str, _NodeFigures]:
    """Each node's figures; the GPUs of a node that does not report its allocation are those
    of the running jobs on it."""
    alloc: dict[str, GpuCounts] = {
        n.name: n.gpus_alloc for n in raw.nodes if n.gpus_alloc is not None
    }
    alloc.update(_derive_alloc(raw.nodes, raw.jobs))
    return {
        n.name: _remembered_figures(n) if n.gpus_alloc is not None else _figures(n, alloc[n.name])
        for n in raw.nodes
    }


def _members(
    partitions: list[Partition], figures: dict[str, _NodeFigures]
) -> dict[str, list[_NodeFigures]]:
    """Each partition's nodes in its own order (its Nodes= list; the first node wins a tie for
    the largest block), then the nodes that name the partition but are not on its list."""
    by_partition: dict[str, list[_NodeFigures]] = {}
    named: dict[str, list[_NodeFigures]] = {}
    for f in figures.values():
        for name in f.node.partitions:
            named.setdefault(name, []).append(f)
    for part in partitions:
        members = [figures[n] for n in part.nodes if n in figures]
        seen = {f.node.name for f in members}
        members += [f for f in named.get(part.name, ()) if f.node.name not in seen]
        by_partition[part.name] = members
    return by_partition


def _tally_jobs(
    raw: CapacityRaw, partitions: list[Partition]
) -> tuple[dict[str, list[int]], list[int]]:
    """Running and pending jobs and GPUs per partition, and the user's own (tallies in the
    order of :class:`MyShare`'s fields)."""
    tallies = {p.name: [0, 0, 0, 0] for p in partitions}
    mine = [0, 0, 0, 0]
    # Thousands of jobs fall into a few kinds (mine or not, running or not, which partitions):
    # add each kind up first, then count the kinds into the tallies.
    kinds: dict[tuple[bool, bool, tuple[str, ...]], list[int]] = {}
    user = raw.user
    for job in raw.jobs:
        key = (job.user == user, job.running, job.partitions)
        sums = kinds.get(key)
        if sums is None:
            sums = kinds[key] = [0, 0]
        sums[0] += job.tasks
        sums[1] += job.gpus
    for (is_mine, running, names), (tasks, gpus) in kinds.items():
        if is_mine:
            _count_job(mine, running, tasks, gpus)
        for name in names:
            tally = tallies.get(name)
            if tally is not None:
                _count_job(tally, running, tasks, gpus)
    return tallies, mine


def _unavailable(nodes: list[Node]) -> list[UnavailableNode]:
    """The nodes no job can start on now, with why."""
    return [
        UnavailableNode(
            n.name,
            n.state,
            n.raw_state,
            n.reason,
            n.reason_by,
            n.reason_time,
            n.partitions,
            sum(n.gpus.values()),
        )
        for n in nodes
        if not n.state.usable
    ]


def gpu_type_problem(report: CapacityReport, partitions: list[str], gpu_type: str) -> str:
    """Why no node of ``partitions`` (empty: every partition) could give GPUs of ``gpu_type``,
    in one sentence; '' when one could, when no type is asked for, or when the report does not
    know the partitions (nothing to say then)."""
    if not gpu_type:
        return ""
    known = [p for p in report.partitions if not partitions or p.name in partitions]
    if not known:
        return ""
    kinds = sorted({t.kind for p in known for t in p.gpu_types if t.kind and t.total})
    if gpu_type in kinds:
        return ""
    where = (
        f"partition {known[0].name!r}"
        if len(known) == 1
        else f"partitions {', '.join(repr(p.name) for p in known)}"
    )
    has = f"it has {', '.join(kinds)}" if kinds else "its GPUs have no type"
    return f"No node of {where} has GPU type {gpu_type!r} ({has}); leave it empty for any type."
