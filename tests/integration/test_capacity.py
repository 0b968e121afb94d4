"""Capacity and the start estimate on the real sandbox: GPUs occupied by running and held jobs,
a drained node with its reason, QOS / account limits set with sacctmgr, sbatch --test-only now
vs later.

These tests drain a node, change accounting limits and fill every GPU of a partition, so they
are ``serial`` (``make test`` runs them alone after the parallel phase), need root for
scontrol/sacctmgr (as the node-failure test does) and undo what they change in a ``finally``.
The expected numbers come from a second, independent SLURM view: ``sinfo -N -O`` with
``GresUsed`` (not the ``AllocTRES`` the capacity command reads). The tests adapt to the nodes
``scontrol`` lists (one node or several).
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from tao_slurm_tui.config import Profile
from tao_slurm_tui.core.capacity import NodeState
from tao_slurm_tui.core.capacity_report import CapacityReport
from tao_slurm_tui.core.render import render_sbatch
from tao_slurm_tui.core.spec import SpecDraft, resolve
from tao_slurm_tui.core.start_estimate import NOW_SLACK
from tao_slurm_tui.remote.connection import Connection
from tao_slurm_tui.services.capacity import estimate_start, fetch_capacity
from tests import sandbox

pytestmark = [pytest.mark.serial]

PARTITION = "polar"


@pytest.fixture(autouse=True)
def _root() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root for scontrol/sacctmgr on the sandbox")


def admin(*argv: str) -> str:
    """A SLURM admin command on the controller (root), its stdout."""
    return subprocess.run(list(argv), check=True, capture_output=True, text=True, timeout=60).stdout


@dataclass(frozen=True)
class SinfoNode:
    """One node as ``sinfo -N -O`` with GresUsed says (the independent view)."""

    name: str
    state: str
    gpus: int
    used: int

    @property
    def usable(self) -> bool:
        return not re.search(r"drain|down|fail|not_responding|\*", self.state)

    @property
    def free(self) -> int:
        return self.gpus - self.used


def _count(gres: str) -> int:
    total = 0
    for item in re.sub(r"\(.*?\)", "", gres).split(","):
        parts = item.split(":")
        if parts[0] == "gpu" and parts[-1].isdigit():
            total += int(parts[-1])
    return total


def sinfo_nodes() -> list[SinfoNode]:
    """Nodes of :data:`PARTITION` with configured and used GPUs, from sinfo."""
    out = admin(
        "sinfo", "-N", "-h", "-p", PARTITION, "-O", "NodeHost:|,StateLong:|,Gres:|,GresUsed:|"
    )
    nodes = {}
    for line in out.splitlines():
        name, state, gres, used, *_ = (f.strip() for f in line.split("|"))
        nodes[name] = SinfoNode(name, state.lower(), _count(gres), _count(used))
    return list(nodes.values())


@pytest.fixture
async def conn(sandbox_profile: Profile) -> AsyncIterator[Connection]:
    async with Connection(sandbox_profile) as connection:
        yield connection


class Jobs:
    """Jobs this test submits (cancelled in the end, whatever happens)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.ids: list[str] = []
        self.tag = f"cap-{uuid.uuid4().hex[:6]}"

    async def submit(self, *args: str, wait_running: bool = False) -> str:
        argv = ["sbatch", "--parsable", "-J", self.tag, "-o", "/dev/null", "-c", "1", *args]
        result = await self.conn.run([*argv, "--wrap", "sleep 600"], check=True)
        job_id = result.stdout.strip().split(";")[0]
        self.ids.append(job_id)
        if wait_running:
            await self.wait_state(job_id, "RUNNING")
        return job_id

    async def wait_state(self, job_id: str, state: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while True:
            out = (await self.conn.run(["squeue", "-h", "-j", job_id, "-o", "%T"])).stdout
            if out.strip() == state:
                return
            if time.monotonic() > deadline:
                pytest.fail(f"job {job_id} not {state} after {timeout:g} s (is {out.strip()!r})")
            await asyncio.sleep(0.5)

    async def cancel(self) -> None:
        if self.ids:
            await self.conn.run(["scancel", *self.ids])


@pytest.fixture
async def jobs(conn: Connection) -> AsyncIterator[Jobs]:
    tracker = Jobs(conn)
    try:
        yield tracker
    finally:
        await tracker.cancel()


def _resume(node: str) -> None:
    state = admin("sinfo", "-h", "-n", node, "-o", "%T").strip()
    if "drain" in state or "down" in state:
        admin("scontrol", "update", f"NodeName={node}", "State=RESUME")


async def _report(conn: Connection, user: str) -> CapacityReport:
    return await fetch_capacity(conn, user=user)


async def test_occupied_gpus_held_job_and_drained_node(
    conn: Connection, jobs: Jobs, sandbox_profile: Profile
) -> None:
    gpu_nodes = [n for n in sinfo_nodes() if n.gpus >= 2 and n.usable]
    if not gpu_nodes:
        pytest.fail(f"no usable node with 2+ GPUs in {PARTITION}: {sinfo_nodes()}")
    busy = gpu_nodes[0]
    drained = gpu_nodes[-1]  # the same node on a one-node sandbox: then it is draining
    before = await _report(conn, sandbox_profile.user)
    base = before.partition(PARTITION)
    assert base is not None
    await jobs.submit("-p", PARTITION, "-w", busy.name, "--gres=gpu:2", "-t", "10",
                      wait_running=True)  # fmt: skip
    await jobs.submit("--hold", "-p", PARTITION, "--gres=gpu:1", "-t", "10")
    reason = f"tao-slurm-tui capacity test {jobs.tag}"
    try:
        admin("scontrol", "update", f"NodeName={drained.name}", "State=DRAIN", f"Reason={reason}")
        report = await _report(conn, sandbox_profile.user)
        seen = sinfo_nodes()
    finally:
        _resume(drained.name)
    polar = report.partition(PARTITION)
    assert polar is not None
    # GPUs: the independent view, node by node.
    assert polar.gpus_total == sum(n.gpus for n in seen)
    assert polar.gpus_allocated == sum(n.used for n in seen)
    assert polar.gpus_allocated == base.gpus_allocated + 2
    assert polar.gpus_free == sum(n.free for n in seen if n.usable)
    assert polar.gpus_unavailable == sum(n.free for n in seen if not n.usable)
    best = max((n.free for n in seen if n.usable), default=0)
    if best:
        assert polar.largest_block is not None and polar.largest_block.gpus == best
    else:
        assert polar.largest_block is None
    # The drained (or draining) node, with the reason as set.
    out = {n.name: n for n in report.unavailable}
    assert drained.name in out, report.unavailable
    assert out[drained.name].reason == reason
    expected = NodeState.DRAINING if drained.name == busy.name else NodeState.DRAINED
    assert out[drained.name].state is expected
    assert out[drained.name].by == "root"
    # The held job pends with its GPU; the running one counts as the user's.
    assert polar.pending_gpus == base.pending_gpus + 1
    assert polar.pending_jobs == base.pending_jobs + 1
    assert report.mine.running_gpus == before.mine.running_gpus + 2
    assert report.mine.pending_jobs == before.mine.pending_jobs + 1
    # And the drain is undone (right after RESUME SLURM shows the node IDLE+NOT_RESPONDING
    # until its next ping: down for a moment, as the scheduler sees it).
    deadline = time.monotonic() + 60
    while True:
        after = await _report(conn, sandbox_profile.user)
        if drained.name not in {n.name for n in after.unavailable}:
            break
        assert time.monotonic() < deadline, after.unavailable
        await asyncio.sleep(1)


def _limits(report: CapacityReport) -> dict[tuple[str, str, str], tuple[int, int | None]]:
    return {(x.scope, x.kind, x.resource): (x.limit, x.used) for x in report.limits}


async def test_qos_and_account_limits_against_use(
    conn: Connection, jobs: Jobs, sandbox_profile: Profile
) -> None:
    user = sandbox_profile.user
    assoc = admin(
        "sacctmgr", "-nP", "show", "assoc", "where", f"users={user}", "format=Account,QOS"
    )
    account, qos_list = assoc.splitlines()[0].split("|")
    qos = qos_list.split(",")[0]
    old_qos = admin("sacctmgr", "-nP", "show", "qos", qos, "format=MaxTRESPU").strip()
    old_acct = admin(
        "sacctmgr", "-nP", "show", "assoc", "where", f"accounts={account}", "format=User,GrpTRES"
    )
    assert not old_qos and not any(
        line.split("|")[1] for line in old_acct.splitlines() if not line.split("|")[0]
    ), "the sandbox has limits already; this test sets and removes its own"
    await jobs.submit("-p", PARTITION, "--gres=gpu:1", "-t", "10", wait_running=True)
    try:
        admin("sacctmgr", "-i", "modify", "qos", qos, "set", "MaxTRESPerUser=gres/gpu=3")
        admin("sacctmgr", "-i", "modify", "account", account, "set", "GrpTRES=gres/gpu=1")
        report = await _report(conn, user)
    finally:
        admin("sacctmgr", "-i", "modify", "qos", qos, "set", "MaxTRESPerUser=gres/gpu=-1")
        admin("sacctmgr", "-i", "modify", "account", account, "set", "GrpTRES=gres/gpu=-1")
    mine_in_qos = report.mine.running_gpus  # the sandbox user runs in its default QOS
    limits = _limits(report)
    assert limits[(f"QOS {qos}", "MaxTRESPerUser", "gres/gpu")] == (3, mine_in_qos)
    account_limit = limits[(f"account {account}", "GrpTRES", "gres/gpu")]
    assert account_limit[0] == 1 and account_limit[1] is not None and account_limit[1] >= 1
    reached = {(x.scope, x.kind) for x in report.limits if x.reached}
    assert (f"account {account}", "GrpTRES") in reached
    cleared = await _report(conn, user)
    assert (f"QOS {qos}", "MaxTRESPerUser", "gres/gpu") not in _limits(cleared)


def _script(profile: Profile, gpus: int, name: str, minutes: int = 30) -> str:
    draft = SpecDraft(
        {
            "name": name,
            "image": "ubuntu:22.04",
            "command": "true",
            "num_nodes": 1,
            "num_gpus": gpus,
            "cpus_per_task": 1,
            "time_hours": minutes / 60,
            "timeout_hours": minutes / 60 - 0.05,
            "partition": PARTITION,
            "use_sqsh": False,
        }
    )
    return render_sbatch(resolve(draft, profile).require().steps[0].plan)


async def test_start_estimate_now_then_later_and_matches_the_queue(
    conn: Connection, jobs: Jobs, sandbox_profile: Profile
) -> None:
    nodes = [n for n in sinfo_nodes() if n.usable and n.free > 0]
    if not nodes:
        pytest.fail(f"no free GPU in {PARTITION}: {sinfo_nodes()}")
    profile = sandbox_profile
    want = max(n.free for n in nodes)
    name = f"estimate-{uuid.uuid4().hex[:6]}"
    empty = await estimate_start(conn, _script(profile, want, name), [PARTITION])
    assert empty.estimates[0].now, empty.estimates[0]
    # Fill every free GPU of the partition for 10 minutes.
    for node in nodes:
        await jobs.submit("-p", PARTITION, "-w", node.name, f"--gres=gpu:{node.free}", "-t", "10",
                          wait_running=True)  # fmt: skip
    full = await estimate_start(conn, _script(profile, want, name), [PARTITION])
    first = full.estimates[0]
    assert not first.error, first
    assert first.wait_seconds is not None and NOW_SLACK < first.wait_seconds <= 11 * 60
    assert full.headline.endswith("(in ~10 min)") or "min)" in full.headline
    # No job was created by the estimates (neither queued nor in accounting).
    queued = (await conn.run(["squeue", "-h", "-n", name, "-o", "%i"])).stdout.split()
    accounted = (await conn.run(["sacct", "-n", "-X", "--name", name, "-o", "JobID"])).stdout
    assert queued == [] and accounted.split() == [], (queued, accounted)
    # The queue's estimate for a real pending job of the same shape agrees (within a minute).
    pending = await jobs.submit("-p", PARTITION, f"--gres=gpu:{want}", "-t", "30")
    deadline = time.monotonic() + 90
    start = ""
    while time.monotonic() < deadline:
        out = await conn.run(["squeue", "-h", "-j", pending, "-o", "%S"])
        start = out.stdout.strip()
        if start and start not in ("N/A", "Unknown"):
            break
        await asyncio.sleep(2)
    assert start and start not in ("N/A", "Unknown"), "squeue gave the pending job no start"
    from datetime import datetime

    in_queue = datetime.fromisoformat(start)
    estimated = datetime.fromisoformat(first.start)
    assert abs((in_queue - estimated).total_seconds()) <= 60, (start, first.start)


def sinfo_typed() -> dict[str, tuple[bool, dict[str, int], dict[str, int]]]:
    """Node → (usable, configured GPUs by type, used GPUs by type), from sinfo (typed GRES)."""

    def by_type(gres: str) -> dict[str, int]:
        out: dict[str, int] = {}
        for item in re.sub(r"\(.*?\)", "", gres).split(","):
            parts = item.split(":")
            if parts[0] == "gpu" and len(parts) == 3 and parts[2].isdigit():
                out[parts[1]] = out.get(parts[1], 0) + int(parts[2])
        return out

    nodes = {}
    for node in sinfo_nodes():
        line = admin("sinfo", "-N", "-h", "-n", node.name, "-O", "Gres:|,GresUsed:|")
        gres, used, *_ = (f.strip() for f in line.splitlines()[0].split("|"))
        nodes[node.name] = (node.usable, by_type(gres), by_type(used))
    return nodes


async def test_free_gpus_by_type_and_a_typed_estimate(
    conn: Connection, jobs: Jobs, sandbox_profile: Profile
) -> None:
    types = {node: gpus["type"] for node, gpus in sandbox.info()["gpus"].items()}
    assert len(set(types.values())) >= 2, types
    # The type fewest nodes have (the sandbox's last node): one GPU of it taken by type.
    rare = min(set(types.values()), key=lambda t: (list(types.values()).count(t), t))
    rare_node = next(node for node, kind in types.items() if kind == rare)
    await jobs.submit("-p", PARTITION, f"--gres=gpu:{rare}:1", "-t", "10", wait_running=True)
    report = await _report(conn, sandbox_profile.user)
    seen = sinfo_typed()
    polar = report.partition(PARTITION)
    assert polar is not None
    by_type = {t.kind: t for t in polar.gpu_types}
    assert set(by_type) == set(types.values())
    for kind, row in by_type.items():
        nodes = [v for v in seen.values() if kind in v[1]]
        assert row.total == sum(v[1][kind] for v in nodes)
        assert row.allocated == sum(v[2].get(kind, 0) for v in nodes)
        assert row.free == sum(v[1][kind] - v[2].get(kind, 0) for v in nodes if v[0])
    usable, configured, used = seen[rare_node]
    assert usable and used.get(rare, 0) >= 1, seen[rare_node]
    free_rare = configured[rare] - used.get(rare, 0)
    block = polar.blocks[rare]
    assert (block.node, block.gpus, block.kind) == (rare_node, free_rare, rare)
    # A script asking for a whole node of that type: SLURM says it waits, the hint names the
    # type's block, and the fewer-GPUs run keeps the type.
    want = configured[rare]
    plain = _script(sandbox_profile, want, f"typed-{uuid.uuid4().hex[:6]}")
    assert f"#SBATCH --gres=gpu:{want}\n" in plain
    script = plain.replace(f"--gres=gpu:{want}\n", f"--gres=gpu:{rare}:{want}\n")
    estimate = await estimate_start(conn, script, [PARTITION], capacity=report)
    assert not estimate.estimates[0].now, estimate.estimates[0]
    assert estimate.block == (
        f"The largest free block is {free_rare} {rare} GPUs ({rare_node}); "
        f"{want} {rare} GPUs per node waits."
    )
    fewer = next(e for e in estimate.estimates if e.variant.kind == "gpus")
    assert fewer.variant.args == (f"--gres=gpu:{rare}:{want // 2}",)
    assert fewer.now and fewer.nodes == rare_node, fewer
