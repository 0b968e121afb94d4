"""Why a job waits: the one command, and its answer as the sandbox's multifactor gives it."""

from __future__ import annotations

import pytest

from tao_slurm_tui.core.why_wait import advice, parse_why, why_command

# Recorded on the sandbox (PriorityType=priority/multifactor): 6772 waits in polar behind
# nobody, two jobs of the same user rank below it.
ANSWER = """\
@@tao-why:sprio
6772|polar|4732|170|2000|562|1000|1000|0|slurmtest
@@tao-why:weights
Weights|||1000|10000|1000|1000|1000||
@@tao-why:rank
6770|polar|4357|170|2000|188|1000|1000|0|slurmtest
6772|polar|4732|170|2000|562|1000|1000|0|slurmtest
6793|polar|4187|0|2000|188|1000|1000|0|slurmtest
@@tao-why:share
tao|slurmtest|1|0.250000|4367|0.527878|0.200000
@@tao-why:job
Resources|N/A|polar
"""


def test_the_answer_gives_priority_factors_rank_and_fair_share() -> None:
    report = parse_why(ANSWER, "big-job", "6772", reason="Priority", account="tao")
    (row,) = report.priorities
    assert (row.partition, row.priority, row.user) == ("polar", 4732, "slurmtest")
    assert row.factors == {
        "age": 170,
        "fairshare": 2000,
        "jobsize": 562,
        "partition": 1000,
        "qos": 1000,
    }
    assert report.weights == {
        "age": 1000,
        "fairshare": 10000,
        "jobsize": 1000,
        "partition": 1000,
        "qos": 1000,
    }
    assert report.ranks == {"polar": (1, 3)}
    share = report.fairshare
    assert share is not None
    assert (share.account, share.factor, share.share, share.usage) == ("tao", 0.2, 0.25, 0.527878)
    assert report.reason == "Resources"  # squeue's reason now beats the last poll's
    assert report.est_start == "" and not report.problem
    assert report.advice.startswith("The GPUs it asks for are busy.")


def test_rank_counts_higher_priority_then_older_jobs_ahead() -> None:
    text = ANSWER.replace("6793|polar|4187", "6701|polar|4732").replace(
        "6770|polar|4357", "6770|polar|9000"
    )
    report = parse_why(text, "big-job", "6772")
    assert report.ranks == {"polar": (3, 3)}  # 6770 higher, 6701 as high and older


def test_a_job_in_two_partitions_is_ranked_in_each() -> None:
    text = ANSWER.replace(
        "@@tao-why:weights",
        "6772|batch|4700|170|2000|562|1000|1000|0|slurmtest\n@@tao-why:weights",
    )
    report = parse_why(text, "big-job", "6772")
    assert [r.partition for r in report.priorities] == ["polar", "batch"]
    assert report.ranks["batch"] == (1, 1)


def _unranked(reason: str) -> str:
    """The answer for a job sprio does not list, pending for ``reason``."""
    return ANSWER.replace(
        "6772|polar|4732|170|2000|562|1000|1000|0|slurmtest\n@@tao-why:weights",
        "Unable to find jobs matching user/id(s) specified\n@@tao-why:weights",
    ).replace("Resources|N/A|polar", f"{reason}|N/A|polar")


def test_a_job_sprio_does_not_list_is_not_ranked_and_says_why() -> None:
    text = _unranked("Dependency")
    report = parse_why(text, "step-2", "6772", reason="Dependency")
    assert report.priorities == () and report.ranks == {}
    assert report.problem == "SLURM does not rank it yet: only jobs free to start are ranked."
    assert report.advice.startswith("It starts when the job it depends on")


def test_a_job_the_scheduler_has_not_looked_at_yet_says_so() -> None:
    text = _unranked("None")
    report = parse_why(text, "new", "6772", reason="None")
    assert report.problem == "The scheduler has not looked at it yet; it is ranked once it has."
    assert report.advice.startswith("The scheduler has not looked at it yet")


def test_a_cluster_without_multifactor_says_jobs_start_in_order() -> None:
    refusal = (
        "You are not running a supported priority plugin\n(priority/basic).\n"
        "Only 'priority/multifactor' is supported.\n"
    )
    text = (
        f"@@tao-why:sprio\n{refusal}@@tao-why:weights\n{refusal}@@tao-why:rank\n{refusal}"
        "@@tao-why:share\n@@tao-why:job\nPriority|2026-05-10T14:30:00|polar\n"
    )
    report = parse_why(text, "a", "9")
    assert "does not weigh priorities (priority/basic)" in report.problem
    assert report.fairshare is None and report.weights == {}
    assert report.est_start == "2026-05-10T14:30:00"


def test_the_fair_share_row_is_the_jobs_account() -> None:
    text = ANSWER.replace(
        "tao|slurmtest|1|0.250000|4367|0.527878|0.200000",
        "tao|slurmtest|1|0.250000|4367|0.527878|0.200000\n"
        "vision|slurmtest|1|0.500000|10|0.010000|0.900000",
    )
    share = parse_why(text, "a", "6772", account="vision").fairshare
    assert share is not None and share.factor == 0.9


@pytest.mark.parametrize(
    ("reason", "words"),
    [
        ("Priority", "Jobs of higher priority are ahead."),
        ("(Resources)", "The GPUs it asks for are busy."),
        ("JobHeldUser", "Release it (scontrol release)"),
        ("QOSMaxGRESPerUser", "It starts when your running jobs"),
        ("AssocGrpGRES", "It starts when your running jobs"),
        ("ReqNodeNotAvail, UnavailableNodes:n3", "A node it needs is down"),
        ("Nodes required for job are DOWN, DRAINED or reserved", "A node it needs is down"),
        ("PartitionTimeLimit", "Cancel it and ask for less wall time"),
        ("SomethingNew", ""),
    ],
)
def test_every_reason_says_what_to_do(reason: str, words: str) -> None:
    assert advice(reason).startswith(words) if words else advice(reason) == ""


def test_the_command_asks_everything_in_one_go_and_quotes_what_it_must() -> None:
    command = why_command("6772", ["polar", "batch"], "o'brien")
    assert command.count("@@tao-why:") == 5
    assert "sprio -h -j 6772 -o" in command and "-p polar,batch" in command
    assert "sshare -h -P -U -u 'o'\"'\"'brien'" in command
    with pytest.raises(ValueError):
        why_command("6772;ls", [], "u")
