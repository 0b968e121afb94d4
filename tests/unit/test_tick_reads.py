"""The monitor's second round trip, run through a real ``sh``: what it reads, how it is split.

:func:`finished_reads_command` is sent to the login host when jobs newly finished; here it runs
against files on this machine (the same ``tail``/``sinfo``-free shell text), so the framing, a
missing log, a requeue reason and a cut-short answer are checked on real output.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tao_slurm_tui.core.tick_reads import (
    FinishedReads,
    finished_reads_command,
    parse_finished_reads,
    requeue_why,
)

NONCE = "5eed5eed0123abcd"


def run(command: str) -> str:
    return subprocess.run(
        ["/bin/sh", "-c", command], capture_output=True, text=True, timeout=30, check=True
    ).stdout


def test_a_finished_job_s_files_come_back_by_job(tmp_path: Path) -> None:
    status = tmp_path / "done" / "train" / "status.json"  # where TAO 7.3 writes it
    status.parent.mkdir(parents=True)
    status.write_text(json.dumps({"status": "SUCCESS", "message": "done"}) + "\n")
    out = tmp_path / "main.out"
    out.write_text("".join(f"line {i}\n" for i in range(600)))
    reason = tmp_path / "requeue.reason"
    reason.write_text("2026-01-01 restart=1 rc=143 timeout after 3.5 h\n")
    reads = FinishedReads()
    for job in ("done", "failed", "requeued"):
        reads.add(job)
    reads.status["done"] = str(tmp_path / "done")
    reads.logs["failed"] = (str(out), str(tmp_path / "no-such-main.err"))
    reads.requeue["requeued"] = str(reason)

    answers = parse_finished_reads(run(finished_reads_command(reads, NONCE)), reads, NONCE)

    assert json.loads(answers.status["done"])["status"] == "SUCCESS"
    assert answers.out["failed"] is not None and len(answers.out["failed"]) >= 500
    assert answers.out["failed"][-2] == "line 599"  # the last lines, then the framing newline
    assert answers.err["failed"] is None  # missing, not empty
    assert requeue_why(answers.requeue["requeued"]) == "timeout after 3.5 h"


def test_an_answer_without_the_end_marker_is_refused() -> None:
    reads = FinishedReads(status={"j": "/nowhere"}, order=["j"])
    text = run(finished_reads_command(reads, NONCE))
    assert parse_finished_reads(text, reads, NONCE).status == {"j": ""}
    with pytest.raises(ValueError, match="end marker"):
        parse_finished_reads(text[: text.rindex(f"@@tao-mon:{NONCE}:end")], reads, NONCE)


def test_a_requeue_line_of_another_shape_is_kept_whole() -> None:
    assert requeue_why("node failure on tao-n2\n") == "node failure on tao-n2"
    assert requeue_why("") == ""
