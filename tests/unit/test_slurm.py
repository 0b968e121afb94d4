"""SLURM parsers, merge, state mapping, reasons and times, on output recorded on the sandbox."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from tao_slurm_tui.core.models import Attempt, TaoStatus
from tao_slurm_tui.core.slurm import (
    LIVE_STATES,
    TERMINAL_STATES,
    MappedState,
    StateAction,
    explain_reason,
    is_terminal,
    map_state,
    normalize_state,
    reason_for_state,
)
from tao_slurm_tui.core.slurm_poll import (
    NODELIST_REASON,
    SLURM_ENV_VARS,
    SlurmRow,
    merge,
    parse_poll_output,
    parse_rows,
    poll_command,
    sacct_format,
    squeue_format,
)
from tao_slurm_tui.core.slurm_text import (
    expand_nodelist,
    format_duration,
    is_unlimited,
    parse_duration,
    parse_sbatch_output,
)

# The recipe's formats: squeue -o '%i|%j|%T|%M|%l|%R|%P';
# sacct --format=JobID,JobName,State,ExitCode,Elapsed,Start,End,NodeList,Partition.
RECIPE_SQ = ("job_id", "name", "state", "elapsed", "time_limit", NODELIST_REASON, "partition")
RECIPE_SA = (
    "job_id",
    "name",
    "state",
    "exit_code",
    "elapsed",
    "start_time",
    "end_time",
    "nodes",
    "partition",
)


def sq(line: str) -> SlurmRow:
    rows, messages = parse_rows(line, RECIPE_SQ, "|")
    assert not messages
    assert len(rows) == 1
    return rows[0]


def sa(text: str) -> list[SlurmRow]:
    rows, messages = parse_rows(text, RECIPE_SA, "|")
    assert not messages
    return rows


# ------------------------------------------------------------------------------ recorded states


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("20|heldjob|PENDING|0:00|1:00:00|(JobHeldUser)|polar", "JobHeldUser"),
        ("21|later|PENDING|0:00|1:00:00|(BeginTime)|polar", "BeginTime"),
        ("14|big1|PENDING|0:00|1:00:00|(Resources)|polar", "Resources"),
        ("14|big1|PENDING|0:00|1:00:00|(Priority)|polar", "Priority"),
        ("14|big1|PENDING|0:00|1:00:00|(Dependency)|polar", "Dependency"),
        ("14|big1|PENDING|0:00|1:00:00|(None)|polar", "None"),
        ("30|long|PENDING|0:00|5:00:00|(PartitionTimeLimit)|polar", "PartitionTimeLimit"),
        ("31|wide|PENDING|0:00|1:00:00|(PartitionNodeLimit)|polar", "PartitionNodeLimit"),
        ("32|fat|PENDING|0:00|1:00:00|(PartitionConfig)|polar", "PartitionConfig"),
    ],
)
def test_pending_with_each_reason(line: str, reason: str) -> None:
    snap = merge(sq(line), None)
    assert snap.found and snap.source == "squeue"
    assert snap.state == "PENDING"
    assert snap.reason == reason
    assert snap.nodes == ""
    assert snap.mapped == MappedState(StateAction.STATUS, TaoStatus.PENDING)
    assert snap.reason_text == explain_reason(reason) != ""
    assert not snap.terminal and not snap.settled


def test_pending_sacct_only_row_has_no_times_or_nodes() -> None:
    snap = merge(None, sa("21|later|PENDING|0:0|00:00:00|Unknown|Unknown|None assigned|polar"))
    assert snap.source == "sacct"
    assert snap.state == "PENDING"
    assert (snap.start_time, snap.end_time, snap.nodes) == ("", "", "")


def test_running_squeue_is_truth_and_sacct_step_rows_are_dropped() -> None:
    rows = sa(
        "13|hello|RUNNING|0:0|00:00:04|2026-11-29T21:08:34|Unknown|vm|polar\n"
        "13.batch|batch|RUNNING|0:0|00:00:04|2026-11-29T21:08:34|Unknown|vm|\n"
    )
    assert [r.job_id for r in rows] == ["13"]
    snap = merge(sq("13|hello|RUNNING|0:04|1:00:00|vm|polar"), rows)
    assert snap.state == "RUNNING"
    assert snap.nodes == "vm"
    assert snap.reason == ""
    assert snap.reason_text == ""
    assert parse_duration(snap.elapsed) == 4
    assert snap.end_time == ""  # squeue's end of a live job is only an expectation
    assert snap.mapped.status is TaoStatus.RUNNING
    assert not snap.settled


def test_completed_merges_exit_code_from_sacct() -> None:
    snap = merge(
        sq("13|hello|COMPLETED|0:06|1:00:00|vm|polar"),
        sa(
            "13|hello|COMPLETED|0:0|00:00:06|2026-11-29T21:08:34|2026-11-29T21:08:40|vm|polar\n"
            "13.batch|batch|COMPLETED|0:0|00:00:06|2026-11-29T21:08:34|2026-11-29T21:08:40|vm|"
        ),
    )
    assert snap.source == "both"
    assert snap.state == "COMPLETED"
    assert snap.exit_code == "0:0"
    assert snap.end_time == "2026-11-29T21:08:40"
    assert snap.settled
    assert snap.mapped == MappedState(StateAction.NEEDS_STATUS_JSON, TaoStatus.COMPLETE)


def test_failed_exit_1() -> None:
    snap = merge(
        sq("15|failjob|FAILED|0:00|1:00:00|(NonZeroExitCode)|polar"),
        sa("15|failjob|FAILED|1:0|00:00:00|2026-11-29T21:08:34|2026-11-29T21:08:34|vm|polar"),
    )
    assert (snap.state, snap.exit_code, snap.reason, snap.nodes) == (
        "FAILED",
        "1:0",
        "NonZeroExitCode",
        "vm",  # from sacct: squeue's %R showed the reason instead
    )
    assert snap.mapped == MappedState(StateAction.MAYBE_RETRY, TaoStatus.ERROR)
    assert snap.settled


def test_cancelled_by_uid_running() -> None:
    rows = sa(
        "14|longjob|CANCELLED by 1001|0:0|00:00:04|2026-11-29T21:08:34|"
        "2026-11-29T21:08:38|vm|polar\n"
        "14.batch|batch|CANCELLED|0:15|00:00:04|2026-11-29T21:08:34|2026-11-29T21:08:38|vm|"
    )
    only_sacct = merge(None, rows)
    assert only_sacct.state == "CANCELLED"
    assert only_sacct.raw_state == "CANCELLED by 1001"
    assert only_sacct.exit_code == "0:0"  # the allocation row, not the step's 0:15
    assert only_sacct.mapped.status is TaoStatus.CANCELED
    both = merge(sq("14|longjob|CANCELLED|0:04|1:00:00|vm|polar"), rows)
    assert both.state == "CANCELLED" and both.settled


def test_cancelled_while_pending() -> None:
    snap = merge(
        None,
        sa(
            "21|toolong|CANCELLED by 1001|0:0|00:00:00|None|2026-11-29T21:00:30|None assigned|polar"
        ),
    )
    assert snap.state == "CANCELLED"
    assert snap.start_time == "" and snap.nodes == ""
    assert snap.end_time == "2026-11-29T21:00:30"
    assert snap.settled


def test_timeout() -> None:
    snap = merge(
        sq("16|tojob|TIMEOUT|1:27|1:00|(TimeLimit)|polar"),
        sa(
            "16|tojob|TIMEOUT|0:0|00:01:27|2026-11-29T21:08:34|2026-11-29T21:10:01|vm|polar\n"
            "16.batch|batch|CANCELLED|0:15|00:01:27|2026-11-29T21:08:34|2026-11-29T21:10:01|vm|"
        ),
    )
    assert snap.state == "TIMEOUT"
    assert parse_duration(snap.time_limit) == 60
    assert parse_duration(snap.elapsed) == 87
    assert snap.mapped == MappedState(StateAction.STATUS, TaoStatus.ERROR)
    assert explain_reason(snap.reason) == "the job ran out of its time limit"


def test_requeued_history_from_sacct_d() -> None:
    rows = sa(
        "17|rqjob|REQUEUED|0:0|00:00:09|2026-11-29T21:08:34|2026-11-29T21:08:43|vm|polar\n"
        "17.batch|batch|CANCELLED|0:15|00:00:09|2026-11-29T21:08:34|2026-11-29T21:08:43|vm|\n"
        "17|rqjob|RUNNING|0:0|00:00:01|2026-11-29T21:09:15|Unknown|vm|polar\n"
    )
    snap = merge(None, rows)
    assert snap.state == "RUNNING"
    assert snap.restarts == 1
    assert snap.start_time == "2026-11-29T21:09:15"
    # Right after the requeue squeue says PENDING (BeginTime).
    pending = merge(sq("17|rqjob|PENDING|0:00|1:00:00|(BeginTime)|polar"), rows[:1])
    assert pending.state == "PENDING" and pending.reason == "BeginTime"


def test_job_launch_failure_0_53() -> None:
    snap = merge(
        sq("18|nodir|FAILED|0:00|1:00:00|(JobLaunchFailure)|polar"),
        sa(
            "18|nodir|FAILED|0:53|00:00:00|2026-11-29T21:08:34|2026-11-29T21:08:34|vm|polar\n"
            "18.batch|batch|CANCELLED|0:53|00:00:00|2026-11-29T21:08:34|2026-11-29T21:08:34|vm|"
        ),
    )
    assert (snap.state, snap.exit_code, snap.reason) == ("FAILED", "0:53", "JobLaunchFailure")
    assert "output directory" in explain_reason(snap.reason)


def test_transient_allocation_row_is_ignored_while_squeue_says_running() -> None:
    transient = sa("2|allocation|PENDING|0:0|00:00:02|2026-11-29T21:08:34|Unknown|vm|")
    snap = merge(sq("2|hello|RUNNING|0:02|1:00:00|vm|polar"), transient)
    assert snap.state == "RUNNING" and snap.name == "hello" and snap.source == "squeue"
    # sacct alone with only the transient row knows nothing useful yet.
    assert not merge(None, transient, "2").found


def test_sacct_lagging_behind_a_finish_is_not_settled() -> None:
    snap = merge(sq("2|hello|COMPLETED|0:02|1:00:00|vm|polar"), None)
    assert snap.state == "COMPLETED" and snap.terminal
    assert not snap.settled and snap.exit_code == ""


def test_no_row_anywhere_right_after_submit() -> None:
    snap = merge(None, None, "42")
    assert snap.job_id == "42" and not snap.found and snap.state == ""
    assert snap.mapped.action is StateAction.UNKNOWN and snap.mapped.status is None


def test_federated_id_and_step_and_messages() -> None:
    rows, messages = parse_rows(
        "13;cluster|hello|COMPLETED|0:0|00:00:06|a|b|vm|polar\n"
        "13.extern|extern|COMPLETED|0:0|00:00:06|a|b|vm|\n"
        "sacct: error: Problem talking to the database: Connection refused\n",
        RECIPE_SA,
        "|",
    )
    assert [r.job_id for r in rows] == ["13"]
    assert messages == ["sacct: error: Problem talking to the database: Connection refused"]


def test_separator_inside_a_free_last_field_is_kept_else_the_line_is_no_row() -> None:
    # A recorded format whose last column is a name may let it hold the separator.
    rows, _ = parse_rows("1\tRUNNING\tweird\tname", ("job_id", "state", "name"), free_last=True)
    assert rows[0].get("name") == "weird\tname"
    # Our formats have no free text: a line with another number of fields is not a row.
    rows, messages = parse_rows("1\tRUNNING\tweird\tname", ("job_id", "state", "name"))
    assert rows == [] and messages == ["1\tRUNNING\tweird\tname"]


# ----------------------------------------------------------------------------------- poll output

# Recorded on the sandbox (SLURM 22.05) with poll_command(["1", "2", "3", "4", "99999"], ["88888"]).
RECORDED_POLL = (
    "@@tao-poll:squeue rc=0\n"
    "1\tCOMPLETED\tNone\tvm\t0:20\t1:00:00\tpolar\t2026-11-29T21:50:13\t2026-11-29T21:50:13\t"
    "2026-11-29T21:50:33\t0\n"
    "2\tFAILED\tNonZeroExitCode\tvm\t0:00\t1:00:00\tpolar\t2026-11-29T21:50:13\t"
    "2026-11-29T21:50:13\t2026-11-29T21:50:13\t0\n"
    "4\tPENDING\tBeginTime\t\t0:00\t1:00:00\tpolar\t2026-11-29T21:50:30\t2026-11-29T21:51:01\t"
    "2026-11-29T22:51:01\t1\n"
    "3\tPENDING\tJobHeldUser\t\t0:00\t1:00:00\tpolar\t2026-11-29T21:50:13\tN/A\tN/A\t0\n"
    "@@tao-poll:sacct rc=0 ids=1,2,99999,88888\n"
    "1\tCOMPLETED\t0:0\tNone\tvm\t00:00:20\t01:00:00\tpolar\t2026-11-29T21:50:13\t"
    "2026-11-29T21:50:13\t2026-11-29T21:50:33\n"
    "2\tFAILED\t1:0\tNone\tvm\t00:00:00\t01:00:00\tpolar\t2026-11-29T21:50:13\t"
    "2026-11-29T21:50:13\t2026-11-29T21:50:13\n"
    "@@tao-poll:end\n"
)


def test_recorded_poll_output() -> None:
    out = parse_poll_output(RECORDED_POLL)
    assert out.complete and out.error == ""
    assert out.squeue_rc == 0 and out.sacct_rc == 0
    assert out.sacct_ids == ["1", "2", "99999", "88888"]
    snaps = out.snapshots(["1", "2", "3", "4", "99999", "88888"])
    assert (snaps["1"].state, snaps["1"].exit_code, snaps["1"].settled) == (
        "COMPLETED",
        "0:0",
        True,
    )
    assert (snaps["2"].state, snaps["2"].exit_code) == ("FAILED", "1:0")
    assert (snaps["3"].reason, snaps["3"].est_start) == ("JobHeldUser", "")
    assert snaps["4"].restarts == 1
    assert snaps["4"].est_start == "2026-11-29T21:51:01" and snaps["4"].start_time == ""
    assert not snaps["99999"].found and not snaps["88888"].found


def test_unknown_ids_make_squeue_fail_but_the_tick_succeeds() -> None:
    out = parse_poll_output(
        "@@tao-poll:squeue rc=1\n"
        "slurm_load_jobs error: Invalid job id specified\n"
        "@@tao-poll:sacct rc=0 ids=7\n"
        "7\tCOMPLETED\t0:0\tNone\tvm\t00:00:06\t01:00:00\tpolar\ta\tb\tc\n"
        "@@tao-poll:end\n"
    )
    assert out.squeue_unknown_ids
    assert out.error == ""
    snap = out.snapshot("7")
    assert snap.source == "sacct" and snap.state == "COMPLETED" and snap.settled


def test_controller_down_falls_back_to_sacct() -> None:
    out = parse_poll_output(
        "@@tao-poll:squeue rc=1\n"
        "squeue: error: Unable to contact slurm controller (connect failure)\n"
        "@@tao-poll:sacct rc=0 ids=7\n"
        "7\tRUNNING\t0:0\tNone\tvm\t00:01:00\t01:00:00\tpolar\ta\tb\tUnknown\n"
        "@@tao-poll:end\n"
    )
    assert not out.squeue_unknown_ids
    assert out.error == ""  # sacct answered for every id
    assert out.snapshot("7").state == "RUNNING"


def test_sacct_failure_and_cut_output_are_errors() -> None:
    down = parse_poll_output(
        "@@tao-poll:squeue rc=0\n"
        "@@tao-poll:sacct rc=1 ids=7\n"
        "sacct: error: Problem talking to the database: Connection refused\n"
        "@@tao-poll:end\n"
    )
    assert down.error.startswith("sacct failed: sacct: error: Problem talking")
    cut = parse_poll_output("@@tao-poll:squeue rc=0\n1\tRUNNING\tNone\tvm\n")
    assert cut.error == "the poll output was cut short"


# ----------------------------------------------------------------------------------- poll command


def test_poll_command_is_explicit_and_env_proof() -> None:
    cmd = poll_command(["13", "14"], ["9"])
    assert cmd.startswith("sh -c ")
    assert "squeue -h -t all -j 13,14 -O " in cmd
    assert "sacct -X -D -n -P --delimiter" in cmd
    assert sacct_format() in cmd
    assert "RestartCnt:0" in squeue_format()
    for var in ("SQUEUE_FORMAT", "SQUEUE_FORMAT2", "SQUEUE_SORT", "SACCT_FORMAT", "SQUEUE_USERS"):
        assert var in SLURM_ENV_VARS and var in cmd
    # Nothing a csh-family login shell chokes on inside the quoted script.
    assert "\n" not in cmd and "!" not in cmd


@pytest.mark.parametrize("bad", ["1;rm -rf ~", "$(id)", "", "12 13", "abc"])
def test_poll_command_rejects_non_ids(bad: str) -> None:
    with pytest.raises(ValueError, match="not a SLURM job id"):
        poll_command([bad])


FAKE_SQUEUE = """#!/bin/sh
echo "$*" >> "$FAKE_LOG.squeue"
env | grep -E '^(SQUEUE|SACCT)_' >> "$FAKE_LOG.env"
cat "$FAKE_DIR/squeue.out"
exit "$(cat "$FAKE_DIR/squeue.rc")"
"""
FAKE_SACCT = """#!/bin/sh
echo "$*" >> "$FAKE_LOG.sacct"
cat "$FAKE_DIR/sacct.out"
"""


def _run_fake(tmp_path: Path, cmd: str, squeue_out: str, squeue_rc: int = 0) -> str:
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    for name, body in (("squeue", FAKE_SQUEUE), ("sacct", FAKE_SACCT)):
        path = bindir / name
        path.write_text(body)
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    (tmp_path / "squeue.out").write_text(squeue_out)
    (tmp_path / "squeue.rc").write_text(str(squeue_rc))
    (tmp_path / "sacct.out").write_text("")
    env = {
        "PATH": f"{bindir}:{os.environ['PATH']}",
        "FAKE_DIR": str(tmp_path),
        "FAKE_LOG": str(tmp_path / "log"),
        "SQUEUE_FORMAT": "%i",
        "SQUEUE_PARTITION": "nosuch",
        "SACCT_FORMAT": "JobID",
    }
    # The remote side runs the command through the user's login shell; use a plain one here.
    result = subprocess.run(
        ["/bin/sh", "-c", cmd], env=env, capture_output=True, text=True, check=True
    )
    return result.stdout


def _log(tmp_path: Path, tool: str) -> list[str]:
    path = tmp_path / f"log.{tool}"
    return path.read_text().splitlines() if path.exists() else []


def test_poll_command_asks_sacct_only_for_ids_squeue_does_not_report_live(tmp_path: Path) -> None:
    out = _run_fake(
        tmp_path,
        poll_command(["1", "2", "3"], ["9"]),
        "1\tRUNNING\tNone\tvm\t0:04\t1:00:00\tpolar\ta\tb\tc\t0\n"
        "2\tCOMPLETED\tNone\tvm\t0:06\t1:00:00\tpolar\ta\tb\tc\t0\n",
    )
    assert _log(tmp_path, "env") == []  # the user's SQUEUE_*/SACCT_* were unset
    assert len(_log(tmp_path, "squeue")) == 1
    assert _log(tmp_path, "sacct")[0].endswith("-j 2,3,9")
    parsed = parse_poll_output(out)
    assert parsed.complete and parsed.sacct_ids == ["2", "3", "9"]
    assert parsed.snapshot("1").state == "RUNNING"


def test_poll_command_falls_back_to_sacct_when_squeue_fails(tmp_path: Path) -> None:
    out = _run_fake(
        tmp_path,
        poll_command(["5", "6"]),
        "slurm_load_jobs error: Invalid job id specified\n",
        squeue_rc=1,
    )
    parsed = parse_poll_output(out)
    assert parsed.squeue_rc == 1 and parsed.squeue_unknown_ids
    assert parsed.sacct_ids == ["5", "6"]
    assert _log(tmp_path, "sacct")[0].endswith("-j 5,6")


def test_quiet_tick_runs_no_sacct(tmp_path: Path) -> None:
    out = _run_fake(
        tmp_path,
        poll_command(["1"]),
        "1\tPENDING\tPriority\t\t0:00\t1:00:00\tpolar\ta\tN/A\tN/A\t0\tx\n",
    )
    assert _log(tmp_path, "sacct") == []
    parsed = parse_poll_output(out)
    assert parsed.sacct_rc is None and parsed.complete
    nothing = parse_poll_output(_run_fake(tmp_path, poll_command([], []), ""))
    assert nothing.complete and nothing.squeue_rc is None and nothing.sacct_rc is None


# ----------------------------------------------------------------------------------- sbatch


@pytest.mark.parametrize(
    ("text", "job_id"),
    [
        ("13\n", "13"),
        ("13;cluster\n", "13"),
        ("Submitted batch job 22\n", "22"),
        ("Submitted batch job 22 on cluster taotest\n", "22"),
        ("sbatch: warning: something\n31\n", "31"),
    ],
)
def test_parse_sbatch_output(text: str, job_id: str) -> None:
    assert parse_sbatch_output(text) == job_id


def test_parse_sbatch_output_without_id() -> None:
    with pytest.raises(ValueError, match="no job id"):
        parse_sbatch_output("sbatch: error: Batch job submission failed\n")


# ----------------------------------------------------------------------------------- mapping

MAPPING = {
    "PENDING": (StateAction.STATUS, TaoStatus.PENDING),
    "CONFIGURING": (StateAction.STATUS, TaoStatus.PENDING),
    "REQUEUED": (StateAction.STATUS, TaoStatus.PENDING),
    "REQUEUE_HOLD": (StateAction.STATUS, TaoStatus.PENDING),
    "REQUEUE_FED": (StateAction.STATUS, TaoStatus.PENDING),
    "SPECIAL_EXIT": (StateAction.STATUS, TaoStatus.PENDING),
    "RESV_DEL_HOLD": (StateAction.STATUS, TaoStatus.PENDING),
    "RUNNING": (StateAction.STATUS, TaoStatus.RUNNING),
    "COMPLETING": (StateAction.STATUS, TaoStatus.RUNNING),
    "RESIZING": (StateAction.STATUS, TaoStatus.RUNNING),
    "SIGNALING": (StateAction.STATUS, TaoStatus.RUNNING),
    "STAGE_OUT": (StateAction.STATUS, TaoStatus.RUNNING),
    "COMPLETED": (StateAction.NEEDS_STATUS_JSON, TaoStatus.COMPLETE),
    "FAILED": (StateAction.MAYBE_RETRY, TaoStatus.ERROR),
    "BOOT_FAIL": (StateAction.MAYBE_RETRY, TaoStatus.ERROR),
    "DEADLINE": (StateAction.MAYBE_RETRY, TaoStatus.ERROR),
    "OUT_OF_MEMORY": (StateAction.MAYBE_RETRY, TaoStatus.ERROR),
    "NODE_FAIL": (StateAction.MAYBE_RETRY, TaoStatus.ERROR),
    "CANCELLED": (StateAction.STATUS, TaoStatus.CANCELED),
    "PREEMPTED": (StateAction.STATUS, TaoStatus.CANCELED),
    "REVOKED": (StateAction.STATUS, TaoStatus.CANCELED),
    "TIMEOUT": (StateAction.STATUS, TaoStatus.ERROR),
    "SUSPENDED": (StateAction.STATUS, TaoStatus.PAUSED),
    "STOPPED": (StateAction.STATUS, TaoStatus.PAUSED),
}


@pytest.mark.parametrize(("state", "expected"), sorted(MAPPING.items()))
def test_map_state_table(state: str, expected: tuple[StateAction, TaoStatus]) -> None:
    assert map_state(state) == MappedState(*expected)


def test_every_known_state_is_mapped_and_classified() -> None:
    assert set(MAPPING) == LIVE_STATES | TERMINAL_STATES
    assert not LIVE_STATES & TERMINAL_STATES
    for state in MAPPING:
        assert is_terminal(state) == (state in TERMINAL_STATES)
        assert map_state(state).status is not None


def test_state_spellings() -> None:
    assert map_state("CANCELLED by 1001").status is TaoStatus.CANCELED
    assert normalize_state("cancelled+") == "CANCELLED"
    assert normalize_state("  ") == ""
    assert map_state("WHATEVER") == MappedState(StateAction.UNKNOWN, None)


# ----------------------------------------------------------------------------------- reasons


@pytest.mark.parametrize(
    ("reason", "words"),
    [
        ("(Resources)", "nodes/GPUs"),
        ("Priority", "higher priority"),
        ("(PartitionTimeLimit)", "partition's limit"),
        ("PartitionNodeLimit", "node count"),
        ("PartitionConfig", "configuration"),
        ("Dependency", "depends on"),
        ("DependencyNeverSatisfied", "never start"),
        ("BeginTime", "start time"),
        ("JobHeldUser", "scontrol release"),
        ("JobHeldAdmin", "administrator"),
        ("QOSMaxJobsPerUserLimit", "per-user"),
        ("AssocGrpGRES", "GPU"),
        ("ReqNodeNotAvail, UnavailableNodes:vm", "unavailable"),
        ("(None)", "first look"),
        ("NonZeroExitCode", "non-zero"),
        ("JobLaunchFailure", "could not launch"),
        ("TimeLimit", "time limit"),
        ("NodeDown", "down"),
        ("launch failed requeued held", "launch failed"),
        ("QOSGrpCpuLimit", "QOS limit"),
        ("AssocGrpMemLimit", "association"),
    ],
)
def test_explain_reason(reason: str, words: str) -> None:
    assert words in explain_reason(reason)


def test_explain_reason_fallback() -> None:
    assert explain_reason("SomethingNew") == "SLURM reason: SomethingNew"
    assert explain_reason("") == "" and explain_reason("()") == ""


# ----------------------------------------------------------------------------------- times


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1-02:03:04", 93784),
        ("4:00:00", 14400),
        ("04:00:00", 14400),
        ("1:27", 87),
        ("0:00", 0),
        ("00:01:27", 87),
        ("2-00:00:00", 172800),
        ("3-12", 302400),
        ("1-01:30", 91800),
        ("30", 1800),
        ("00:00.123", 0),
        ("UNLIMITED", None),
        ("INVALID", None),
        ("Partition_Limit", None),
        ("", None),
        ("x-1:00", None),
        ("1:2:3:4", None),
        ("ab:cd", None),
    ],
)
def test_parse_duration(text: str, seconds: int | None) -> None:
    assert parse_duration(text) == seconds


def test_format_duration_round_trips() -> None:
    for seconds in (0, 59, 87, 3600, 14400, 93784):
        assert parse_duration(format_duration(seconds)) == seconds
    assert format_duration(87) == "1:27"
    assert format_duration(93784) == "1-02:03:04"
    assert format_duration(None) == ""
    assert is_unlimited("UNLIMITED") and not is_unlimited("1:00")


# ----------------------------------------------------------------------------------- nodes


@pytest.mark.parametrize(
    ("text", "nodes"),
    [
        ("vm", ["vm"]),
        ("gpu[01-03,07],login1", ["gpu01", "gpu02", "gpu03", "gpu07", "login1"]),
        ("a[1-2]b[3-4]", ["a1b3", "a1b4", "a2b3", "a2b4"]),
        ("None assigned", []),
        ("", []),
        ("(Resources)", []),
    ],
)
def test_expand_nodelist(text: str, nodes: list[str]) -> None:
    assert expand_nodelist(text) == nodes


def test_apply_to_attempt_keeps_what_is_unknown() -> None:
    attempt = Attempt(number=0, slurm_job_id="15", login_host="login1", nodes="old")
    snap = merge(
        sq("15|failjob|FAILED|0:00|1:00:00|(NonZeroExitCode)|polar"),
        sa("15|failjob|FAILED|1:0|00:00:00|2026-11-29T21:08:34|2026-11-29T21:08:34|vm|polar"),
    )
    updated = snap.apply_to(attempt)
    assert (updated.state, updated.exit_code, updated.nodes) == ("FAILED", "1:0", "vm")
    assert updated.login_host == "login1" and updated.reason == "NonZeroExitCode"
    assert merge(None, None, "15").apply_to(attempt) == attempt


@pytest.mark.parametrize(
    ("state", "reason", "shown"),
    [
        ("PENDING", "(Resources)", "(Resources)"),
        ("PENDING", "None", "None"),
        ("RUNNING", "None", ""),
        ("CANCELLED by 1001", "(BeginTime)", ""),
        ("CANCELLED", "JobHeldUser", ""),
        ("FAILED", "(NonZeroExitCode)", "(NonZeroExitCode)"),
        ("FAILED", "JobLaunchFailure", "JobLaunchFailure"),
        ("TIMEOUT", "(TimeLimit)", "(TimeLimit)"),
        ("COMPLETED", "None", ""),
    ],
)
def test_waiting_reasons_are_dropped_once_the_job_left_pending(
    state: str, reason: str, shown: str
) -> None:
    assert reason_for_state(state, reason) == shown


def test_parsed_rows_are_kept_for_the_latest_output_only() -> None:
    """The soak (bench/soak.py) found memory growing for its whole 30 minutes: parsed rows were
    cached by line in an LRU of 8,192, and a running job prints a new elapsed time on every
    tick, so the cache filled with lines that never came back. Rows are now reused from the
    previous output of the same kind only: a steady tick still re-parses nothing."""
    import gc

    from tao_slurm_tui.core.slurm_poll import SEP, SQUEUE_FIELDS, SlurmRow, parse_rows

    keys = [k for k, _ in SQUEUE_FIELDS]

    def line(job: int, tick: int) -> str:
        values = {"job_id": str(job), "state": "RUNNING", "elapsed": f"{tick}", "name": "j"}
        return SEP.join(values.get(k, "x") for k in keys)

    def alive() -> int:
        gc.collect()
        return sum(1 for o in gc.get_objects() if type(o) is SlurmRow)

    before = alive()
    for tick in range(1000):  # 10 running jobs: 10,000 distinct lines
        rows, _ = parse_rows("\n".join(line(j, tick) for j in range(10)), keys)
        assert [r.get("elapsed") for r in rows] == [str(tick)] * 10
    assert alive() - before <= 20
    # A steady output is not parsed again: the same row objects come back.
    text = "\n".join(line(j, 0) for j in range(10))
    first, _ = parse_rows(text, keys)
    again, _ = parse_rows(text, keys)
    assert all(a is b for a, b in zip(first, again, strict=True))
