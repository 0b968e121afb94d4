"""Run events: the lines the batch script writes, the shell part that reads them, the pace.

The batch script runs for real under bash (fake srun/scontrol from test_render), so the lines
are the ones a job writes: a start, an end on a normal exit, on a self-requeue and on SIGTERM
(scancel, the time limit). The events part of the tick runs through ``sh`` on real files.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tao_slurm_tui.core import pace
from tao_slurm_tui.core.pace import JobView, Pace, disagrees
from tao_slurm_tui.core.run_events import (
    EventsAnswer,
    RunEvent,
    events_parts,
    marker,
    parse_event_line,
    parse_events,
    slurm_time_to_unix,
    split_events,
)
from tao_slurm_tui.core.slurm_text import federated
from tests.unit.test_render import FULL_TIMEOUT, make_spec, run_script


def lines(logdir: Path) -> list[RunEvent]:
    text = (logdir / "events").read_text()
    return [e for e in map(parse_event_line, text.splitlines()) if e is not None]


def test_a_run_writes_its_start_and_its_end(tmp_path: Path) -> None:
    before = time.time()
    rc, _, _, logdir = run_script(tmp_path, make_spec(command="exit 3"), restart_count="2")
    assert rc == 3
    start, end = lines(logdir)
    assert (start.kind, start.restart, start.detail) == ("start", 2, "node1")
    assert (end.kind, end.restart, end.detail) == ("end", 2, "rc=3")
    assert before - 1 <= start.at <= end.at <= time.time() + 1


def test_a_self_requeue_ends_the_run_with_a_line(tmp_path: Path) -> None:
    _, _, calls, logdir = run_script(
        tmp_path, make_spec(), fake_rc="124", elapsed_seconds=FULL_TIMEOUT
    )
    assert "scontrol requeue 77" in calls
    assert [e.kind for e in lines(logdir)] == ["start", "end"]


def test_sigterm_ends_the_run_with_a_line(tmp_path: Path) -> None:
    # scancel of a running job, and the time limit, send SIGTERM to the batch script.
    me = f"{tmp_path}/job.sbatch"
    command = f"kill -TERM $(pgrep -o -f {me}); sleep 2"
    rc, _, _, logdir = run_script(tmp_path, make_spec(command=command))
    assert rc == -signal.SIGTERM  # bash died of it, and still ran its EXIT trap
    assert [e.kind for e in lines(logdir)] == ["start", "end"]


@pytest.mark.parametrize(
    ("line", "event"),
    [
        ("start 0 1796143933.123456 tao-n1", RunEvent("start", 0, 1796143933.123456, "tao-n1")),
        ("end 1 1796143933,5 rc=143", RunEvent("end", 1, 1796143933.5, "rc=143")),  # de_DE
        ("end 2 1796143933", RunEvent("end", 2, 1796143933.0, "")),  # `date +%s`: no bash 5
        ("begin 0 1 x", None),
        ("start x 1 x", None),
        ("start 0 soon x", None),
        ("", None),
    ],
)
def test_event_lines(line: str, event: RunEvent | None) -> None:
    assert parse_event_line(line) == event


NONCE = "0123456789abcdef"


def run_sh(parts: list[str]) -> str:
    return subprocess.run(
        ["sh", "-c", "; ".join(parts)], capture_output=True, text=True, check=True
    ).stdout


def answer_of(paths: dict[str, str], known: str, ask: bool) -> EventsAnswer:
    """The events part run through ``sh`` on the real files, and parsed."""
    parts = events_parts(list(paths.values()), known, ask, NONCE)
    return parse_events(run_sh(parts), paths, NONCE)


def test_the_files_are_printed_only_when_their_sizes_change(tmp_path: Path) -> None:
    a, b = tmp_path / "a" / "events", tmp_path / "b" / "events"
    a.parent.mkdir()
    b.parent.mkdir()  # b has not started: no file yet
    paths = {"a": str(a), "b": str(b)}
    a.write_text("start 0 100.0 n1\n")
    first = answer_of(paths, "", False)
    assert first.complete and first.asked and first.printed and first.cluster_now
    assert first.sizes == "17,"
    assert first.last == {"a": RunEvent("start", 0, 100.0, "n1")}
    same = answer_of(paths, "17,", False)
    assert same.complete and not same.asked and not same.printed and same.last == {}
    assert same.cluster_now is None
    due = answer_of(paths, "17,", True)
    assert due.asked and not due.printed  # the pace asks; nothing to print
    b.write_text("start 0 101.0 n2\n")
    later = answer_of(paths, "17,", False)
    assert later.asked and later.sizes == "17,17,"
    assert later.last["b"] == RunEvent("start", 0, 101.0, "n2")


def test_no_files_and_a_cut_answer() -> None:
    empty = answer_of({}, "", False)
    assert empty.complete and empty.sizes == "" and not empty.asked
    cut = f"{marker(NONCE)}sizes 1,\n{marker(NONCE)}ask 0\n"
    assert not parse_events(cut, {}, NONCE).complete
    assert split_events(cut, NONCE) == ("", "")
    with pytest.raises(ValueError):
        events_parts([], "1'; rm -rf /", False, NONCE)


def test_what_a_job_writes_cannot_steer_the_parse(tmp_path: Path) -> None:
    """A job owns its log directory: its events file may hold another job's header, the
    part's markers, queue rows; it may be a FIFO. None of it leaves the file's own entry."""
    a, b, fifo = (tmp_path / d / "events" for d in ("a", "b", "c"))
    for path in (a, b, fifo):
        path.parent.mkdir()
    b.write_text("start 0 100.0 n1\n")
    a.write_text(
        f"==> {b} <==\nend 0 200.0 rc=0\n"  # another job's header
        "@@tao-ev:done\n@@tao-ev:ask 1\n@@tao-poll:squeue rc=0\n41\tRUNNING\n"
        "start 0 150.0 n2\n"
    )
    os.mkfifo(fifo)
    paths = {"a": str(a), "b": str(b), "c": str(fifo)}
    parts = events_parts(list(paths.values()), "", False, NONCE)
    started = time.monotonic()
    text = run_sh([*parts, "echo QUEUE"])
    assert time.monotonic() - started < 5  # the FIFO is stat'ed, never opened
    part, rest = split_events(text, NONCE)
    assert rest == "QUEUE\n"  # what follows the part is the queue's, and only that
    answer = parse_events(part, paths, NONCE)
    assert answer.complete and answer.last["b"] == RunEvent("start", 0, 100.0, "n1")
    assert answer.last["a"] == RunEvent("start", 0, 150.0, "n2")
    assert "c" not in answer.last


def test_slurm_times_and_utc_offsets() -> None:
    utc = slurm_time_to_unix("2026-12-01T18:00:00", 0)
    assert utc == slurm_time_to_unix("2026-12-01T19:30:00", 5400)
    assert slurm_time_to_unix("N/A", 0) is None
    text = f"{marker(NONCE)}ask 1\n{marker(NONCE)}now 1796144287 -0130\n"
    answer = parse_events(text, {}, NONCE)
    assert answer == EventsAnswer(asked=True, cluster_now=1796144287.0, utc_offset=-5400)


def test_federated_ids_keep_the_federation_lookup() -> None:
    assert not federated(["41", "67043327", "12_3"])
    assert federated(["41", str(1 << 26)])
    assert federated([f"{(2 << 26) + 5}_1"])


# ----------------------------------------------------------------------------------- the pace


def test_the_events_against_slurm_s_last_answer() -> None:
    started = RunEvent("start", 0, 1.0, "n1")
    ended = RunEvent("end", 0, 2.0, "rc=0")
    assert disagrees(JobView("1", "PENDING", run=started))
    assert not disagrees(JobView("1", "RUNNING", run=started))
    assert disagrees(JobView("1", "RUNNING", run=ended))
    assert not disagrees(JobView("1", "COMPLETING", run=ended))
    # Requeued: the line of the earlier run says nothing; a run SLURM did not report does.
    assert not disagrees(JobView("1", "PENDING", restarts=1, run=ended))
    assert disagrees(JobView("1", "RUNNING", restarts=0, run=RunEvent("start", 1, 3.0, "n2")))
    assert not disagrees(JobView("1", "RUNNING"))


def answered(views: list[JobView], at: float = 0.0) -> Pace:
    p = Pace()
    p.answered(views, at, ok=True)
    return p


def test_the_pace_of_each_kind_of_job() -> None:
    run = RunEvent("start", 0, 0.0, "n1")
    assert Pace().due([], 0.0)  # never answered
    assert answered([]).wait([JobView("1", "")], 5.0) <= 0  # a job not answered for yet
    running = JobView("1", "RUNNING", run=run)
    assert answered([running]).wait([running], 0.0) == pace.RUNNING_QUIET
    near_end = JobView("1", "RUNNING", run=run, ends_by=20.0)
    assert answered([near_end]).wait([near_end], 0.0) == 20.0 + pace.END_GRACE
    legacy = JobView("1", "RUNNING")
    assert answered([legacy]).wait([legacy], 0.0) == pace.LEGACY
    unknown = JobView("1", "PENDING")
    assert answered([unknown]).wait([unknown], 0.0) == pace.PENDING_UNKNOWN
    far = JobView("1", "PENDING", est_start=3 * 3600.0)
    assert answered([far]).wait([far], 0.0) == pace.PENDING_MAX
    soon = JobView("1", "PENDING", est_start=60.0)
    assert answered([soon]).wait([soon], 0.0) == pace.PENDING_MIN
    # The soonest job sets the pace for all (one squeue answers for every job).
    assert answered([far, running]).wait([far, running], 0.0) == pace.RUNNING_QUIET


def test_passing_states_are_asked_every_tick_then_slower() -> None:
    completing = JobView("1", "COMPLETING")
    p = answered([completing], at=0.0)
    assert p.due([completing], 2.0)
    p.answered([completing], 2.0, ok=True)
    assert p.due([completing], pace.FAST_FOR - 1)
    p.answered([completing], pace.FAST_FOR + 1, ok=True)
    assert p.wait([completing], pace.FAST_FOR + 2) == pace.SLOW_TRANSITION - 1
    p.answered([JobView("1", "COMPLETED")], 200.0, ok=True)  # a new state: fast again
    assert p.due([JobView("1", "COMPLETED")], 202.0)


def test_a_failed_answer_waits() -> None:
    p = Pace()
    p.answered([JobView("1", "")], 0.0, ok=False)
    assert p.wait([JobView("1", "")], 1.0) == pace.AFTER_FAILURE - 1
