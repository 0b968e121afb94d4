"""The fake cluster's bad days (issue 24): its ``scontrol show reservation`` and ``sinfo -R``
print what the sandbox's SLURM 22.05 prints, its jobs wait for a maintenance window or drained
nodes with SLURM's reasons, and the monitor's parser reads it all."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tao_slurm_tui.core.site_state import parse_site, site_command
from tao_slurm_tui.services.fakecluster import seed
from tao_slurm_tui.services.fakecluster.site import host_list
from tao_slurm_tui.services.fakecluster.world import World

# Recorded on the sandbox (scontrol create reservation ... Nodes=ALL Flags=MAINT,IGNORE_JOBS;
# scontrol update NodeName=tao-n1 State=DRAIN Reason="disk replacement probe").
SANDBOX_ONE_LINE = (
    "ReservationName=site-probe StartTime=2026-12-01T23:15:58 EndTime=2026-12-01T23:45:58 "
    "Duration=00:30:00 Nodes=tao-n[1-3] NodeCnt=3 CoreCnt=24 Features=(null) "
    "PartitionName=(null) Flags=MAINT,IGNORE_JOBS,SPEC_NODES,ALL_NODES TRES=cpu=24 Users=root "
    "Groups=(null) Accounts=(null) Licenses=(null) State=INACTIVE BurstBuffer=(null) Watts=n/a "
    "MaxStartDelay=(null)"
)
SANDBOX_REASONS = """\
REASON               USER      TIMESTAMP           NODELIST
disk replacement pro root      2026-12-01T22:15:58 tao-n1
"""


def world_at(tmp_path: Path) -> World:
    world = World(tmp_path / "w", user=seed.USER)
    seed.seed_world(world, history=0)
    return world


def run(world: World, command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["/bin/sh", "-c", command], env=world.env(), capture_output=True, text=True, check=False
    )


def shape(line: str) -> list[str]:
    """A line's keys in order (values differ between the clusters)."""
    return re.findall(r"(\w+)=", line)


def test_reservations_and_reasons_print_as_slurm_does(tmp_path: Path) -> None:
    world = world_at(tmp_path)
    assert run(world, "scontrol show reservation -o").stdout == "No reservations in the system\n"
    now = world.now()
    world.reserve("site-probe", now + 3600, now + 5400)
    one_line = run(world, "scontrol show reservation -o").stdout.strip()
    assert shape(one_line) == shape(SANDBOX_ONE_LINE)
    assert "Duration=00:30:00 Nodes=gpu-a[01-04],gpu-b[01-03],gpu-c[01-02] NodeCnt=9" in one_line
    assert (
        "Flags=MAINT,IGNORE_JOBS,SPEC_NODES,ALL_NODES" in one_line and "State=INACTIVE" in one_line
    )
    lines = run(world, "scontrol show reservation site-probe").stdout.splitlines()
    assert len(lines) == 6 and lines[1].startswith("   Nodes=") and lines[-1] == ""
    missing = run(world, "scontrol show reservation other")
    assert (missing.returncode, missing.stdout) == (1, "Reservation other not found\n")
    world.drain("gpu-c01", "disk replacement probe", by="root")
    reasons = run(world, "sinfo -R").stdout.splitlines()
    assert reasons[0] == SANDBOX_REASONS.splitlines()[0]
    assert reasons[-1].startswith(SANDBOX_REASONS.splitlines()[1][:31])
    parsed = parse_site(run(world, site_command()).stdout)
    assert [(r.name, r.maintenance, r.nodes) for r in parsed.reservations] == [
        ("site-probe", True, "gpu-a[01-04],gpu-b[01-03],gpu-c[01-02]")
    ]
    assert [(n.node, n.state, n.reason, n.user) for n in parsed.nodes_out] == [
        ("gpu-a04", "drained", "Xid 79: GPU has fallen off the bus", "admin"),
        ("gpu-b03", "down*", "Not responding", "slurm"),
        ("gpu-c01", "draining", "disk replacement probe", "root"),  # a colleague's job on it
    ]
    world.advance(5400)  # slurmctld forgets a reservation at its end
    assert run(world, "scontrol show reservation -o").stdout == "No reservations in the system\n"


def test_a_job_waits_for_the_window_then_starts_at_its_end(tmp_path: Path) -> None:
    world = world_at(tmp_path)
    now = world.now()
    world.reserve("maint", now + 600, now + 2 * 3600, nodes="gpu-c01,gpu-c02")
    with world.edit() as state:
        state["jobs"]["1052"].update(pinned=False, partition="gpu-long", time_limit=3600)
    world.advance(30)
    ask = "squeue -h -j 1052 -o '%T|%r|%S'"
    assert run(world, ask).stdout == (
        "PENDING|ReqNodeNotAvail, Reserved for maintenance|2026-05-10T10:00:00\n"
    )
    world.advance(2 * 3600)
    job = world.job("1052")
    assert (job["state"], job["start"]) == ("RUNNING", now + 2 * 3600)


def test_a_job_some_drained_nodes_keep_waiting_names_the_partition_s(tmp_path: Path) -> None:
    world = world_at(tmp_path)
    with world.edit() as state:
        state["jobs"]["1052"].update(pinned=False, partition="polar3")
    world.drain("gpu-b01", "cooling")
    world.drain("gpu-b02", "cooling")
    world.advance(30)
    ask = "squeue -h -j 1052 -o '%T|%r|%S'"
    assert run(world, ask).stdout == "PENDING|ReqNodeNotAvail, UnavailableNodes:gpu-b[01-03]|N/A\n"
    world.resume("gpu-b01")
    world.advance(1)
    assert world.job("1052")["node_list"] == "gpu-b01"


def test_host_lists_are_compressed_as_slurm_does() -> None:
    assert host_list(["tao-n1", "tao-n2", "tao-n3"]) == "tao-n[1-3]"
    assert host_list(["gpu-c01"]) == "gpu-c01"
    assert host_list(["gpu01", "gpu02", "gpu04", "login"]) == "gpu[01-02,04],login"


def test_a_start_estimate_on_a_maintenance_day_is_the_window_s_end(tmp_path: Path) -> None:
    world = world_at(tmp_path)
    now = world.now()
    script = world.local("/lustre/job.sh")  # (the fake's link would map the cluster's path)
    script.write_text("#!/bin/sh\n#SBATCH --gres=gpu:1\ntrue\n")
    ask = f"sbatch --test-only -p gpu-long -t 60 {script}"
    assert "to start at 2026-05-10T08:00:00 using 1 processors on nodes gpu-c01" in (
        run(world, ask).stderr
    )
    world.reserve("maint", now + 600, now + 4 * 3600, nodes="gpu-c01,gpu-c02")
    assert "to start at 2026-05-10T12:00:00 using" in run(world, ask).stderr
    ask_short = ask.replace("-t 60", "-t 5")  # done before the window opens: starts now
    assert "to start at 2026-05-10T08:00:00 using" in run(world, ask_short).stderr
