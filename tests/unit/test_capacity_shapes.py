"""A partition adds its nodes up by shape (nodes alike but for the name, counted once): checked
against the plain node-by-node sums on random clusters, ties and all."""

from __future__ import annotations

import random

import pytest

from tao_slurm_tui.core.capacity import CapacityRaw, Node, NodeState, Partition
from tao_slurm_tui.core.capacity_report import FreeBlock, build_report

STATES = [
    ("IDLE", NodeState.IDLE),
    ("MIXED", NodeState.MIXED),
    ("ALLOCATED", NodeState.ALLOCATED),
    ("MIXED+DRAIN", NodeState.DRAINING),
    ("IDLE+DRAIN", NodeState.DRAINED),
    ("DOWN*", NodeState.DOWN),
]


def random_node(rng: random.Random, index: int, partitions: tuple[str, ...]) -> Node:
    raw, state = rng.choice(STATES)
    kinds = rng.choice([("a100",), ("h100",), ("a100", "h100"), ("",), ()])
    gpus = {kind: rng.choice([2, 4, 8]) for kind in kinds}
    alloc = {kind: rng.randint(0, count) for kind, count in gpus.items()}
    cpus = rng.choice([8, 16])
    return Node(
        name=f"n{index:04d}",
        state=state,
        raw_state=raw,
        partitions=partitions,
        cpus_total=cpus,
        cpus_alloc=rng.choice([0, cpus // 2, cpus]),
        mem_total_mb=8192,
        mem_alloc_mb=rng.choice([0, 4096]),
        gpus=gpus,
        gpus_alloc=alloc,
    )


def reference(nodes: list[Node]) -> dict[str, object]:
    """The sums node by node, and the largest blocks with the first node winning a tie."""
    totals: dict[str, list[int]] = {}
    states = dict.fromkeys(NodeState, 0)
    cpus_total = cpus_free = mem_total = mem_free = 0
    best: FreeBlock | None = None
    best_of_kind: dict[str, FreeBlock] = {}

    def key(block: FreeBlock) -> tuple[int, int, int]:
        return (block.gpus, block.cpus_free, block.mem_free_mb)

    for node in nodes:
        usable = node.state.usable
        states[node.state] += 1
        alloc = node.gpus_alloc or {}
        for kind, count in node.gpus.items():
            row = totals.setdefault(kind, [0, 0, 0, 0])
            used = min(count, alloc.get(kind, 0))
            row[0] += count
            row[1] += used
            row[2 if usable else 3] += count - used
        cpus_total += node.cpus_total
        mem_total += node.mem_total_mb
        cpus_free += node.cpus_free if usable else 0
        mem_free += node.mem_free_mb if usable else 0
        if not usable or node.cpus_free <= 0:
            continue
        free = {k: v - min(v, alloc.get(k, 0)) for k, v in node.gpus.items()}
        free = {k: v for k, v in free.items() if v > 0}
        if not free:
            continue
        for kind, gpus in free.items():
            block = FreeBlock(gpus, node.name, kind, node.cpus_free, node.mem_free_mb)
            if kind not in best_of_kind or key(block) > key(best_of_kind[kind]):
                best_of_kind[kind] = block
        top = max(free.items(), key=lambda kv: (kv[1], kv[0]))
        block = FreeBlock(top[1], node.name, top[0], node.cpus_free, node.mem_free_mb)
        if best is None or key(block) > key(best):
            best = block
    return {
        "gpus": {k: tuple(v) for k, v in sorted(totals.items())},
        "nodes": states,
        "cpus": (cpus_total, cpus_free),
        "mem": (mem_total, mem_free),
        "largest": best,
        "blocks": dict(sorted(best_of_kind.items())),
    }


@pytest.mark.parametrize("seed", range(40))
def test_sums_by_shape_equal_the_sums_node_by_node(seed: int) -> None:
    rng = random.Random(seed)
    count = rng.choice([1, 3, 50, 400])
    nodes = [
        random_node(rng, i, rng.choice([("p1",), ("p2",), ("p1", "p2")])) for i in range(count)
    ]
    # The partition lists its nodes in its own order (the tie-break), not the nodes' order.
    listed = [n.name for n in nodes if "p1" in n.partitions]
    rng.shuffle(listed)
    partitions = [Partition("p1", True, "UP", "1:00:00", tuple(listed))]
    raw = CapacityRaw("alice", nodes, partitions, [], [], [], accounting=False)
    report = build_report(raw)
    by_name = {n.name: n for n in nodes}
    for name, members in (
        ("p1", [by_name[n] for n in listed]),
        ("p2", [n for n in nodes if "p2" in n.partitions]),
    ):
        part = report.partition(name)
        if not members:
            assert part is None or part.gpus_total == 0
            continue
        assert part is not None
        want = reference(members)
        got = {
            "gpus": {t.kind: (t.total, t.allocated, t.free, t.unavailable) for t in part.gpu_types},
            "nodes": dict(part.nodes),
            "cpus": (part.cpus_total, part.cpus_free),
            "mem": (part.mem_total_mb, part.mem_free_mb),
            "largest": part.largest_block,
            "blocks": part.blocks,
        }
        assert got == want, (seed, name)
