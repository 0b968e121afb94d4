"""Resource shaping: how a spec's GPU/CPU request becomes SLURM directives.

The platform's rules:

* ``num_gpus`` is per node. When it reaches the node's maximum (8), the request becomes whole,
  exclusive nodes of 8 GPUs and the node count is computed from the total
  (16 GPUs on 1 node → 2 exclusive nodes of 8).
* One task per node: the TAO container spawns one rank per GPU itself.
* A single-node multi-GPU job gets CPUs for every rank's data loaders:
  ``cpus_per_task * num_gpus``, capped (default 128) but never below what was asked.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

DEFAULT_MAX_GPUS_PER_NODE = 8
DEFAULT_MAX_CPUS_PER_TASK = 128


@dataclass(frozen=True)
class Shape:
    """The resources one job asks SLURM for."""

    nodes: int
    """``--nodes``."""
    gpus_per_node: int
    """``--gres=gpu:G`` (0: no GPU request; :attr:`gres` adds the type)."""
    cpus_per_task: int
    """``--cpus-per-task`` of the one task on each node."""
    exclusive: bool
    """``--exclusive``: whole nodes."""
    ntasks_per_node: int = 1
    """Always 1: one container per node."""
    gpu_type: str = ""
    """The GPU type asked for (``a100``); '' for any type."""

    @property
    def gres(self) -> str:
        """``--gres``'s value: ``gpu:G``, or ``gpu:TYPE:G`` with a type."""
        return (
            f"gpu:{self.gpu_type}:{self.gpus_per_node}"
            if self.gpu_type
            else f"gpu:{self.gpus_per_node}"
        )

    @property
    def ntasks(self) -> int:
        """Total tasks (one per node)."""
        return self.nodes * self.ntasks_per_node

    @property
    def total_gpus(self) -> int:
        """GPUs over all nodes."""
        return self.nodes * self.gpus_per_node

    @property
    def multi_node(self) -> bool:
        """True when the job spans more than one node (rendezvous variables needed)."""
        return self.nodes > 1


def shape_resources(
    num_nodes: int,
    num_gpus: int,
    cpus_per_task: int,
    *,
    max_gpus_per_node: int = DEFAULT_MAX_GPUS_PER_NODE,
    max_cpus_per_task: int = DEFAULT_MAX_CPUS_PER_TASK,
    gpu_type: str = "",
) -> Shape:
    """Apply the platform's shaping rules.

    Args:
        num_nodes: nodes asked for (>= 1).
        num_gpus: GPUs per node asked for (>= 0).
        cpus_per_task: CPUs per rank's data loaders (>= 1).
        max_gpus_per_node: GPUs in one node of the cluster.
        max_cpus_per_task: cap for the single-node CPU product.
        gpu_type: the GPU type asked for ('' for any type).

    Raises:
        ValueError: a count below its minimum.
    """
    if num_nodes < 1 or num_gpus < 0 or cpus_per_task < 1 or max_gpus_per_node < 1:
        raise ValueError("num_nodes and cpus_per_task must be >= 1 and num_gpus >= 0")
    if num_gpus >= max_gpus_per_node:
        total = num_nodes * num_gpus
        # A total that is not a multiple of the node size rounds up: the nodes are exclusive,
        # so the spare GPUs are the job's anyway.
        nodes = math.ceil(total / max_gpus_per_node)
        return Shape(
            nodes=nodes,
            gpus_per_node=max_gpus_per_node,
            cpus_per_task=_cpus(nodes, max_gpus_per_node, cpus_per_task, max_cpus_per_task),
            exclusive=True,
            gpu_type=gpu_type,
        )
    return Shape(
        nodes=num_nodes,
        gpus_per_node=num_gpus,
        cpus_per_task=_cpus(num_nodes, num_gpus, cpus_per_task, max_cpus_per_task),
        exclusive=False,
        gpu_type=gpu_type,
    )


def _cpus(nodes: int, gpus: int, cpus_per_task: int, cap: int) -> int:
    if nodes == 1 and gpus > 1:
        return max(cpus_per_task, min(cpus_per_task * gpus, cap))
    return cpus_per_task
