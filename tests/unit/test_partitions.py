"""Partition MaxTime: SLURM time formats, sinfo/scontrol output and the wall-time check."""

from __future__ import annotations

import pytest

from tao_slurm_tui.core.partitions import (
    PACKAGED_LIMITS,
    check_wall_time,
    format_hours,
    format_slurm_time,
    hours_to_seconds,
    parse_scontrol_limits,
    parse_sinfo_limits,
    parse_slurm_time,
    split_partitions,
)

# Recorded on the sandbox (SLURM 22.05): `sinfo -h -o '%P|%l'`.
SINFO = "polar*|4:00:00\nbatch|2-00:00:00\n"
# `scontrol show partition -o` (two partitions, one line each; shortened a little).
SCONTROL = (
    "PartitionName=polar AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL AllocNodes=ALL "
    "Default=YES QoS=N/A DefaultTime=01:00:00 DisableRootJobs=NO ExclusiveUser=NO GraceTime=0 "
    "Hidden=NO MaxNodes=UNLIMITED MaxTime=04:00:00 MinNodes=0 LLN=NO MaxCPUsPerNode=UNLIMITED "
    "Nodes=vm PriorityJobFactor=1 PriorityTier=1 RootOnly=NO ReqResv=NO OverSubscribe=NO "
    "OverTimeLimit=NONE PreemptMode=OFF State=UP TotalCPUs=8 TotalNodes=1 "
    "SelectTypeParameters=NONE "
    "JobDefaults=(null) DefMemPerNode=UNLIMITED MaxMemPerNode=UNLIMITED TRES=cpu=8,mem=8G,node=1\n"
    "PartitionName=batch AllowGroups=ALL Default=NO DefaultTime=01:00:00 MaxTime=2-00:00:00 "
    "State=UP\n"
    "PartitionName=free Default=NO MaxTime=UNLIMITED State=UP\n"
)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("4:00:00", 4 * 3600),
        ("04:00:00", 4 * 3600),
        ("2-00:00:00", 2 * 86400),
        ("1-12", 86400 + 12 * 3600),
        ("1-2:30", 86400 + 2 * 3600 + 30 * 60),
        ("30", 30 * 60),
        ("30:15", 30 * 60 + 15),
        ("UNLIMITED", None),
        ("infinite", None),
        (" 1:00:00 ", 3600),
    ],
)
def test_parse_slurm_time(text: str, seconds: int | None) -> None:
    assert parse_slurm_time(text) == seconds


@pytest.mark.parametrize("text", ["", "junk", "1:2:3:4", "-1", "1-"])
def test_parse_slurm_time_rejects_junk(text: str) -> None:
    with pytest.raises(ValueError):
        parse_slurm_time(text)


def test_parse_sinfo_strips_the_default_marker() -> None:
    assert parse_sinfo_limits(SINFO) == {"polar": 4 * 3600, "batch": 2 * 86400}


def test_parse_sinfo_skips_bad_lines() -> None:
    assert parse_sinfo_limits("garbage\n|1:00\nx|what\nok|infinite\n") == {"ok": None}


def test_parse_scontrol() -> None:
    assert parse_scontrol_limits(SCONTROL) == {
        "polar": 4 * 3600,
        "batch": 2 * 86400,
        "free": None,
    }


def test_packaged_list_is_four_hour_queues() -> None:
    expected = {p: 4 * 3600 for p in ("polar", "polar3", "polar4", "grizzly")}
    assert expected == PACKAGED_LIMITS


def test_format_slurm_time() -> None:
    assert format_slurm_time(hours_to_seconds(4)) == "04:00:00"
    assert format_slurm_time(hours_to_seconds(3.8)) == "03:48:00"
    assert format_slurm_time(hours_to_seconds(0.5)) == "00:30:00"
    assert format_slurm_time(hours_to_seconds(30)) == "1-06:00:00"


def test_format_hours() -> None:
    assert format_hours(4 * 3600) == "4 h"
    assert format_hours(2 * 86400) == "2 d"
    assert format_hours(5400) == "1.5 h"
    assert format_hours(1800) == "30 min"
    assert format_hours(None) == "unlimited"


def test_within_the_limit_passes() -> None:
    assert check_wall_time(4, "polar") is None
    assert check_wall_time(3.5, "polar,polar3,polar4,grizzly") is None


def test_above_the_packaged_limit_names_partition_and_limit() -> None:
    message = check_wall_time(5, "polar")
    assert message is not None
    assert "'polar'" in message and "4 h" in message and "time_hours = 5" in message


def test_twelve_hours_is_rejected_on_the_default_partitions() -> None:
    message = check_wall_time(12, "polar,polar3,polar4,grizzly")
    assert message is not None
    for name in ("polar", "polar3", "polar4", "grizzly"):
        assert f"'{name}'" in message


def test_a_comma_list_is_checked_against_each_partition() -> None:
    limits = {"polar": 4 * 3600, "batch": 2 * 86400}
    message = check_wall_time(10, "batch, polar", limits)
    assert message is not None
    assert "'polar'" in message and "'batch'" not in message
    assert check_wall_time(10, ["batch"], limits) is None


def test_unlimited_and_unknown_partitions_pass() -> None:
    limits = {"free": None}
    assert check_wall_time(1000, "free", limits) is None
    assert check_wall_time(1000, "elsewhere", limits) is None


def test_limits_from_sinfo_are_used() -> None:
    limits = parse_sinfo_limits(SINFO)
    assert check_wall_time(47, "batch", limits) is None
    assert check_wall_time(49, "batch", limits) is not None


def test_split_partitions() -> None:
    assert split_partitions(" a, b ,,c") == ["a", "b", "c"]
    assert split_partitions(["a", " "]) == ["a"]
