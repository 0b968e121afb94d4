"""What the cluster itself says a job may ask for: its partitions and the size of their nodes.

A spec that names a partition the cluster does not have, or asks one node for more CPUs, GPUs
or memory than any node of its partition has, is refused by ``sbatch`` -- after the job's files
were staged -- or, worse, pends forever. These facts let :func:`tao_slurm_tui.core.spec.resolve`
say so before anything is written to the cluster, with the field to change.

They come with the partitions' MaxTime in the same round trip (``services/partitions.py``):
``scontrol show partition -o`` (names, memory defaults, ``MaxCPUsPerNode``) and one ``sinfo``
line per partition and node shape (:data:`NODES_COMMAND`: CPUs, memory, GRES, node count --
a few lines however many nodes the cluster has). Pure: parsing and the arithmetic of fitting a
request on a node.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tao_slurm_tui.core.slurm_fields import GpuCounts, parse_gres, parse_key_values

NODES_COMMAND = ["sinfo", "-h", "-o", "%P|%c|%m|%G|%D"]
"""Argument vector whose output :func:`parse_node_shapes` reads: partition (``*`` marks the
default), CPUs per node, memory per node (MB), GRES, node count -- one line per partition and
node shape."""


@dataclass(frozen=True)
class NodeShape:
    """Nodes of one partition that look alike."""

    cpus: int
    """CPUs of one node."""
    memory_mb: int
    """Memory of one node (SLURM's RealMemory, MB)."""
    gpus: GpuCounts
    """GPUs of one node by type (``""``: untyped)."""
    count: int = 1
    """How many nodes have this shape."""

    def gpus_of(self, kind: str) -> int:
        """GPUs of ``kind`` on one node (any type when ``kind`` is '')."""
        return self.gpus.get(kind, 0) if kind else sum(self.gpus.values())


@dataclass(frozen=True)
class PartitionFacts:
    """One partition as the cluster describes it."""

    name: str
    nodes: tuple[NodeShape, ...] = ()
    """Its node shapes (empty: the cluster did not say)."""
    def_mem_per_cpu_mb: int | None = None
    """``DefMemPerCPU``: memory a job gets per CPU without ``--mem`` (None: not set)."""
    def_mem_per_node_mb: int | None = None
    """``DefMemPerNode``: memory a job gets per node without ``--mem`` (None: unlimited)."""
    max_cpus_per_node: int | None = None
    """``MaxCPUsPerNode`` (None: unlimited)."""

    def to_json(self) -> dict[str, Any]:
        """As JSON data (cached with the partitions' limits)."""
        return {
            "name": self.name,
            "nodes": [
                {"cpus": n.cpus, "memory_mb": n.memory_mb, "gpus": n.gpus, "count": n.count}
                for n in self.nodes
            ],
            "def_mem_per_cpu_mb": self.def_mem_per_cpu_mb,
            "def_mem_per_node_mb": self.def_mem_per_node_mb,
            "max_cpus_per_node": self.max_cpus_per_node,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PartitionFacts:
        """Read :meth:`to_json`'s data.

        Raises:
            ValueError: not such data (a damaged cache).
        """
        try:
            nodes = tuple(
                NodeShape(
                    int(n["cpus"]),
                    int(n["memory_mb"]),
                    {str(k): int(v) for k, v in dict(n["gpus"]).items()},
                    int(n["count"]),
                )
                for n in data["nodes"]
            )
            return cls(
                str(data["name"]),
                nodes,
                _optional_int(data.get("def_mem_per_cpu_mb")),
                _optional_int(data.get("def_mem_per_node_mb")),
                _optional_int(data.get("max_cpus_per_node")),
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"damaged partition facts ({exc})") from None


Partitions = Mapping[str, PartitionFacts]
"""The cluster's partitions by name."""


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _number(text: str) -> int | None:
    value = text.strip().rstrip("+")
    return int(value) if value.isdigit() else None


def _limit(text: str | None) -> int | None:
    """A SLURM number that may be ``UNLIMITED``/``0`` (no limit): None then."""
    value = _number(text or "")
    return value or None


def parse_node_shapes(output: str) -> dict[str, list[NodeShape]]:
    """Parse :data:`NODES_COMMAND`'s output: ``polar*|8|8192|gpu:a100:4(S:0)|2`` lines.

    Lines that do not parse are skipped (a partial answer is better than none).
    """
    shapes: dict[str, list[NodeShape]] = {}
    for line in output.splitlines():
        parts = line.strip().split("|")
        if len(parts) != 5:
            continue
        name = parts[0].strip().rstrip("*")
        cpus, memory, count = _number(parts[1]), _number(parts[2]), _number(parts[4])
        if not name or cpus is None or memory is None:
            continue
        shapes.setdefault(name, []).append(
            NodeShape(cpus, memory, parse_gres(parts[3]), count or 1)
        )
    return shapes


def parse_partitions(scontrol_output: str, node_output: str) -> dict[str, PartitionFacts]:
    """The partitions ``scontrol show partition -o`` names, with the node shapes ``sinfo``
    gave (:func:`parse_node_shapes`); a partition only sinfo names is kept too."""
    shapes = parse_node_shapes(node_output)
    facts: dict[str, PartitionFacts] = {}
    for line in scontrol_output.splitlines():
        fields = parse_key_values(line)
        name = fields.get("PartitionName", "").strip()
        if not name:
            continue
        facts[name] = PartitionFacts(
            name,
            tuple(shapes.get(name, ())),
            _limit(fields.get("DefMemPerCPU")),
            _limit(fields.get("DefMemPerNode")),
            _limit(fields.get("MaxCPUsPerNode")),
        )
    for name, nodes in shapes.items():
        facts.setdefault(name, PartitionFacts(name, tuple(nodes)))
    return facts


# ----------------------------------------------------------------------------------- fitting


@dataclass(frozen=True)
class NodeRequest:
    """What a job asks of each of its nodes."""

    cpus: int
    """CPUs on one node (CPUs per task times tasks per node)."""
    gpus: int
    """GPUs on one node."""
    gpu_type: str = ""
    """The GPU type asked for ('' for any)."""
    exclusive: bool = False
    """Whole nodes: every CPU and all the memory are the job's anyway."""

    def memory_mb(self, partition: PartitionFacts) -> int | None:
        """Memory SLURM gives the job on one node without ``--mem`` (None: a whole node's or
        unlimited: always fits)."""
        if self.exclusive:
            return None
        if partition.def_mem_per_cpu_mb:
            return partition.def_mem_per_cpu_mb * self.cpus
        return partition.def_mem_per_node_mb


def with_gpus(nodes: Iterable[NodeShape], request: NodeRequest) -> list[NodeShape]:
    """The nodes with enough GPUs (of the type asked for) for ``request``."""
    return [n for n in nodes if n.gpus_of(request.gpu_type) >= request.gpus]


def most_gpus(partition: PartitionFacts, kind: str) -> int:
    """The most GPUs (of ``kind``; any when '') one node of ``partition`` has."""
    return max((n.gpus_of(kind) for n in partition.nodes), default=0)


def most_cpus(nodes: Iterable[NodeShape], partition: PartitionFacts) -> int:
    """The most CPUs a job may use on one of ``nodes`` (``MaxCPUsPerNode`` caps it)."""
    best = max((n.cpus for n in nodes), default=0)
    cap = partition.max_cpus_per_node
    return min(best, cap) if cap else best


def fits(node: NodeShape, partition: PartitionFacts, request: NodeRequest) -> bool:
    """True when one such node could ever hold ``request``."""
    cap = partition.max_cpus_per_node
    memory = request.memory_mb(partition)
    return (
        node.gpus_of(request.gpu_type) >= request.gpus
        and node.cpus >= request.cpus
        and (not cap or request.cpus <= cap)
        and (memory is None or memory <= node.memory_mb)
    )
