"""The fake back end's cluster: nodes, jobs and limits for the capacity view and the estimate.

Deterministic and plausible: three partitions matching the fake profile (``polar`` with
A100 nodes, ``polar3`` with H100 nodes, ``gpu-long`` with V100 nodes), busy nodes running the
seeded jobs of :mod:`tao_slurm_tui.services.fake`, a drained node and a down one with their
reasons, pending jobs, and QOS / account limits. The numbers go through the real
:func:`~tao_slurm_tui.core.capacity_report.build_report`, so the screens show what the real
back end would for the same cluster.
"""

from __future__ import annotations

import time

from tao_slurm_tui.core.capacity import (
    Association,
    CapacityRaw,
    Job,
    Node,
    NodeState,
    Partition,
    Qos,
    job_gpus,
)
from tao_slurm_tui.core.capacity_report import CapacityReport, build_report
from tao_slurm_tui.core.start_estimate import (
    Estimate,
    StartEstimate,
    script_request,
    start_estimate_of,
    variants,
)

_MEM = 512_000


def _node(
    name: str,
    state: NodeState,
    parts: str,
    kind: str,
    gpus: int,
    used: int,
    cpus_used: int,
    *,
    reason: str = "",
    by: str = "",
    since: str = "",
) -> Node:
    raw = {NodeState.DRAINED: "IDLE+DRAIN", NodeState.DOWN: "DOWN*"}.get(state, state.upper())
    return Node(
        name=name,
        state=state,
        raw_state=raw,
        partitions=tuple(parts.split(",")),
        cpus_total=64,
        cpus_alloc=cpus_used,
        mem_total_mb=_MEM,
        mem_alloc_mb=_MEM * cpus_used // 64,
        gpus={kind: gpus},
        gpus_alloc={kind: used},
        reason=reason,
        reason_by=by,
        reason_time=since,
    )


def _job(
    job_id: str, user: str, part: str, state: str, nodes: int, gpus: int, where: str = ""
) -> Job:
    return Job(
        job_id=job_id,
        user=user,
        account="tao" if user == "researcher" else "vision",
        qos="normal",
        partitions=tuple(part.split(",")),
        state=state,
        nodes=nodes,
        cpus=16 * nodes,
        gpus_per_node={"": gpus},
        node_list=tuple(where.split(",")) if where else (),
        start="",
        reason="" if state != "PENDING" else "Resources",
        gpus=job_gpus({"": gpus}, nodes),
    )


def fake_capacity_raw(user: str = "researcher", cluster: str = "fake") -> CapacityRaw:
    """The fake cluster as one refresh would read it.

    Any profile but ``fake`` gets a quieter cluster (the seeded jobs are the ``fake``
    profile's), so an overview of several fake profiles shows different numbers.
    """
    idle, mixed, alloc = NodeState.IDLE, NodeState.MIXED, NodeState.ALLOCATED
    nodes = [
        _node("gpu-a01", mixed, "polar", "a100", 8, 4, 16),
        _node("gpu-a02", mixed, "polar", "a100", 8, 6, 24),
        _node("gpu-a03", alloc, "polar", "a100", 8, 8, 64),
        _node(
            "gpu-a04",
            NodeState.DRAINED,
            "polar",
            "a100",
            8,
            0,
            0,
            reason="Xid 79: GPU has fallen off the bus",
            by="admin",
            since="2026-05-10T06:40:00",
        ),
        _node("gpu-b01", idle, "polar3", "h100", 8, 0, 0),
        _node("gpu-b02", alloc, "polar3", "h100", 8, 8, 64),
        _node(
            "gpu-b03",
            NodeState.DOWN,
            "polar3",
            "h100",
            8,
            0,
            0,
            reason="Not responding",
            by="slurm",
            since="2026-05-10T05:10:40",
        ),
        _node("gpu-c01", mixed, "gpu-long", "v100", 4, 1, 8),
        _node("gpu-c02", idle, "gpu-long", "v100", 4, 0, 0),
    ]
    partitions = [
        Partition("polar", True, "UP", "4:00:00", tuple(f"gpu-a0{i}" for i in range(1, 5))),
        Partition("polar3", False, "UP", "4:00:00", tuple(f"gpu-b0{i}" for i in range(1, 4))),
        Partition("gpu-long", False, "UP", "2-00:00:00", ("gpu-c01", "gpu-c02")),
    ]
    jobs = [
        _job("1051", "researcher", "polar", "RUNNING", 1, 4, "gpu-a01"),
        _job("1049", "researcher", "polar", "RUNNING", 1, 4, "gpu-a02"),
        _job("1044", "researcher", "polar", "SUSPENDED", 1, 4, "gpu-a03"),
        _job("2210", "kim", "polar", "RUNNING", 1, 2, "gpu-a02"),
        _job("2211", "kim", "polar", "RUNNING", 1, 4, "gpu-a03"),
        _job("2230", "ortiz", "polar3", "RUNNING", 1, 8, "gpu-b02"),
        _job("2240", "ortiz", "gpu-long", "RUNNING", 1, 1, "gpu-c01"),
        _job("1052", "researcher", "polar", "PENDING", 1, 4),
        _job("1053", "researcher", "polar", "PENDING", 2, 8),
        _job("1054", "researcher", "polar", "PENDING", 1, 4),
        _job("1055", "researcher", "polar", "PENDING", 1, 4),
        _job("2250", "kim", "polar3", "PENDING", 2, 8),
    ]
    if cluster != "fake":
        busy = {"gpu-b02", "gpu-c01"}
        nodes = [
            n
            if n.name in busy or not n.state.usable
            else _node(n.name, idle, ",".join(n.partitions), *next(iter(n.gpus.items())), 0, 0)
            for n in nodes
        ]
        jobs = [j for j in jobs if j.user != user or j.job_id == "1052"]
        jobs = [j for j in jobs if not j.node_list or set(j.node_list) <= busy]
    qos = [Qos("normal", max_tres_per_user={"gres/gpu": 16}, max_jobs_per_user=8)]
    assocs = [
        Association("tao", "", "", ("normal",), grp_tres={"gres/gpu": 48}),
        Association("tao", user, "", ("normal",), grp_tres={"gres/gpu": 24}),
    ]
    return CapacityRaw(user, nodes, partitions, jobs, qos, assocs, accounting=True)


def fake_capacity(user: str = "researcher", cluster: str = "fake") -> CapacityReport:
    """The fake cluster's capacity report."""
    return build_report(fake_capacity_raw(user, cluster))


_WAIT = {"polar": 2 * 3600, "polar3": 40 * 60, "gpu-long": 6 * 3600}
"""How long a job that does not fit a free block waits, per partition (seconds)."""


def fake_start_estimate(
    script: str, allowed: list[str], now: float, capacity: CapacityReport
) -> StartEstimate:
    """What ``sbatch --test-only`` would say on the fake cluster: now where a free block fits,
    else a fixed wait per partition (halved with half the wall time)."""
    request = script_request(script)
    runs = variants(
        request.partition, allowed, request.gpus_per_node, request.time_seconds, request.gpu_type
    )
    estimates: list[Estimate] = []
    for run in runs:
        args = dict(zip(run.args[::2], run.args[1::2], strict=False))
        partition = args.get("--partition", request.partition.split(",")[0])
        gpus = request.gpus_per_node // 2 if run.kind == "gpus" else request.gpus_per_node
        part = capacity.partition(partition)
        if part is None:
            estimates.append(Estimate(run, error="Invalid partition name specified."))
            continue
        block = part.largest_block
        fits = request.nodes == 1 and block is not None and block.gpus >= gpus
        wait = 0 if fits else _WAIT.get(partition, 3600)
        if run.kind == "time":
            wait //= 2
        start = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now + wait))
        node = block.node if fits and block is not None else part.name
        estimates.append(Estimate(run, start, wait, node, partition))
    return start_estimate_of(estimates, request, capacity)
