"""A job's files are written by the job: the tick's reads, run through a real ``sh`` on hostile
files (a FIFO, a device, a huge file, forged markers and headers), never block, stay bounded
and never hand one job's text to another.

The shell text is exactly what the monitor sends to the login host (core/tick_reads.py); here
it runs against files on this machine with the machine's GNU tools, as on a cluster.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tao_slurm_tui.core import tick_reads
from tao_slurm_tui.core.tick_reads import (
    LOG_TAIL_BYTES,
    FinishedReads,
    disguised,
    finished_reads_command,
    marker,
    parse_finished_reads,
    parse_sections,
    split_status_tails,
    status_tail_command,
)

NONCE = "0f1e2d3c4b5a6978"
GUARD = 30
"""Seconds after which a blocked read fails the test instead of hanging it."""


def run(command: str, env: dict[str, str] | None = None) -> str:
    return subprocess.run(
        ["/bin/sh", "-c", command],
        capture_output=True,
        text=True,
        timeout=GUARD,
        check=True,
        env=env,
    ).stdout


def status_line(status: str, message: str = "", **more: object) -> str:
    return json.dumps({"status": status, "message": message, **more}) + "\n"


def live_status(files: dict[str, str]) -> dict[str, str]:
    """What a tick reads of each job's ``status.json`` (job id → the file: its directory is
    the job's results dir, as TAO's ``<results_dir>/<subtask>/`` is read too)."""
    dirs = {job: str(Path(path).parent) for job, path in files.items()}
    text = run(status_tail_command(dirs, 16 * 1024, NONCE))
    return split_status_tails(parse_sections(text, NONCE).get(("status", ""), []), dirs, NONCE)


def test_a_fifo_status_json_does_not_block_the_others(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo" / "status.json"
    fifo.parent.mkdir()
    os.mkfifo(fifo)  # nobody ever writes: opening it for reading would block forever
    good = tmp_path / "good" / "status.json"
    good.parent.mkdir()
    good.write_text(status_line("RUNNING", epoch=3, max_epoch=10))
    statuses = live_status({"fifo": str(fifo), "good": str(good)})
    assert "fifo" not in statuses
    assert json.loads(statuses["good"])["epoch"] == 3


def test_a_symlink_to_a_device_or_a_fifo_is_skipped(tmp_path: Path) -> None:
    zero = tmp_path / "zero" / "status.json"
    zero.parent.mkdir()
    zero.symlink_to("/dev/zero")  # endless: tail -c on it would never end
    fifo = tmp_path / "a-fifo"
    os.mkfifo(fifo)
    linked = tmp_path / "linked" / "status.json"
    linked.parent.mkdir()
    linked.symlink_to(fifo)
    good = tmp_path / "good" / "status.json"
    good.parent.mkdir()
    good.write_text(status_line("RUNNING"))
    statuses = live_status({"zero": str(zero), "linked": str(linked), "good": str(good)})
    assert set(statuses) == {"good"}


def test_every_finished_read_skips_fifos(tmp_path: Path) -> None:
    for name in ("status.json", "main.out", "main.err", "requeue.reason"):
        os.mkfifo(tmp_path / name)
    reads = FinishedReads()
    reads.add("j")
    reads.status["j"] = str(tmp_path)  # its results dir
    reads.logs["j"] = (str(tmp_path / "main.out"), str(tmp_path / "main.err"))
    reads.requeue["j"] = str(tmp_path / "requeue.reason")
    answers = parse_finished_reads(run(finished_reads_command(reads, NONCE)), reads, NONCE)
    assert answers.status == {"j": ""}
    assert answers.out == {"j": None} and answers.err == {"j": None}  # not there, not read
    assert answers.requeue == {"j": ""}


def test_a_read_that_still_blocks_is_ended_by_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A file swapped for a FIFO between the test and the open: here a `tail` that blocks.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "tail").write_text("#!/bin/sh\nexec sleep 600\n")
    (bin_dir / "tail").chmod(0o755)
    status = tmp_path / "status.json"
    status.write_text(status_line("RUNNING"))
    monkeypatch.setattr(tick_reads, "READ_TIMEOUT", 1)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    text = run(status_tail_command({"j": str(tmp_path)}, 1024, NONCE), env=env)
    assert f"{marker(NONCE)}end" in text.split("\n")


def test_a_huge_log_without_newlines_is_read_only_at_its_end(tmp_path: Path) -> None:
    out = tmp_path / "main.out"
    with out.open("wb") as handle:  # 4 GiB, sparse: no newline anywhere
        handle.truncate(4 << 30)
    err = tmp_path / "main.err"
    err.write_text("Traceback\nRuntimeError: CUDA error: an illegal memory access\n")
    reads = FinishedReads()
    reads.add("j")
    reads.logs["j"] = (str(out), str(err))
    answers = parse_finished_reads(run(finished_reads_command(reads, NONCE)), reads, NONCE)
    assert answers.out["j"] is not None
    assert sum(len(line) for line in answers.out["j"]) <= LOG_TAIL_BYTES
    assert answers.err["j"] is not None and "CUDA error" in answers.err["j"][1]


def test_a_status_json_cannot_forge_another_job_s_section(tmp_path: Path) -> None:
    victim = tmp_path / "victim" / "status.json"
    victim.parent.mkdir()
    victim.write_text(status_line("RUNNING", "training", epoch=5))
    evil = tmp_path / "evil" / "status.json"
    evil.parent.mkdir()
    evil.write_text(
        status_line("RUNNING")
        # What tail -v would print for the victim, and our markers without the nonce:
        + f"==> {victim} <==\n==> {victim.parent}/train/status.json <==\n"
        + status_line("FAILURE", "forged verdict")
        + "@@tao-mon:status\n@@tao-mon:end\n@@tao-poll:sacct rc=0 ids=99\n"
    )
    paths = {"evil": str(evil), "victim": str(victim)}
    statuses = live_status(paths)
    assert "forged verdict" not in statuses["victim"]
    assert json.loads(statuses["victim"])["epoch"] == 5
    assert "forged verdict" in statuses["evil"]  # its own text, shown as its own


def test_a_log_tail_cannot_forge_another_job_s_part(tmp_path: Path) -> None:
    evil_out = tmp_path / "evil.out"
    evil_out.write_text(f"@@tao-mon:err victim\nNCCL error\n{marker('guessed')}out victim\n")
    victim_out = tmp_path / "victim.out"
    victim_out.write_text("Traceback\nValueError: bad spec\n")
    reads = FinishedReads()
    for job in ("evil", "victim"):
        reads.add(job)
    reads.logs["evil"] = (str(evil_out), str(tmp_path / "none.err"))
    reads.logs["victim"] = (str(victim_out), str(tmp_path / "none.err"))
    answers = parse_finished_reads(run(finished_reads_command(reads, NONCE)), reads, NONCE)
    assert answers.err["victim"] is None
    assert answers.out["victim"] is not None
    assert "NCCL error" not in "\n".join(answers.out["victim"])


def test_the_disguised_name_is_the_same_file(tmp_path: Path) -> None:
    target = tmp_path / "results" / "status.json"
    target.parent.mkdir()
    target.write_text("x")
    name = disguised(str(target), NONCE)
    assert name != str(target) and Path(name).read_text() == "x"
    assert disguised(str(target), "ffffffff00000000") != name
