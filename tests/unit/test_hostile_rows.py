"""A job name can hold tabs and newlines (``scontrol update JobName=...``): it must not forge
a row of another job, in the poll or in the history.

The poll asks squeue and sacct for no free text at all (core/slurm_poll.py); the history asks
for names and working directories with a delimiter only its command knows and joins a row's
broken lines on the cluster (core/history_query.py). Here the history command runs through a
real ``sh`` and awk over what sacct really prints for such a name.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

from tao_slurm_tui.core.accounting import KEYS, HistoryQuery
from tao_slurm_tui.core.history_query import (
    delimiter,
    history_command,
    parse_history_output,
    usage_command,
)
from tao_slurm_tui.core.slurm_poll import (
    SACCT_FIELDS,
    SEP,
    SQUEUE_FIELDS,
    parse_rows,
    poll_command,
    queue_command,
)

NONCE = "badc0ffee0ddf00d"


def test_the_poll_asks_for_no_name() -> None:
    assert "name" not in dict(SQUEUE_FIELDS) and "name" not in dict(SACCT_FIELDS)
    for command in (queue_command(), poll_command(["1"], ["2"])):
        assert "Name" not in command and "JobName" not in command


def test_a_line_that_is_not_exactly_a_row_is_a_message() -> None:
    keys = tuple(key for key, _ in SACCT_FIELDS)
    good = SEP.join(
        ["7", "RUNNING", "0:0", "None", "vm", "00:00:01", "1:00:00", "polar", "a", "b", "c"]
    )
    extra = good + "\tforged"
    bad_state = good.replace("RUNNING", "RUNNING\x1b[2K")
    rows, messages = parse_rows("\n".join([good, extra, bad_state, "777\u2028x"]), keys)
    assert [r.job_id for r in rows] == ["7"]
    assert messages == [extra, bad_state, "777\u2028x"]


def _fake_sacct(tmp_path: Path, rows: list[list[str]], trailer: str = "") -> dict[str, str]:
    """A ``sacct`` that prints ``rows`` as SLURM does: fields joined by the --delimiter it was
    given, free text as it is (newlines and tabs included)."""
    out = tmp_path / "rows.py"
    out.write_text(
        "import sys\n"
        "d = sys.argv[sys.argv.index('--delimiter') + 1]\n"
        f"for row in {rows!r}:\n"
        "    sys.stdout.write(d.join(row) + '\\n')\n"
        f"sys.stdout.write({trailer!r})\n"
    )
    bindir = tmp_path / "bin"
    bindir.mkdir()
    script = bindir / "sacct"
    script.write_text(f'#!/bin/sh\nexec python3 {out} "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}"}


def _row(job_id: str, state: str, name: str, work_dir: str = "/home/u") -> list[str]:
    values = {
        "job_id": job_id,
        "raw_id": job_id,
        "name": name,
        "work_dir": work_dir,
        "state": state,
        "exit_code": "0:0",
        "partition": "polar",
        "nodes": "vm1",
        "elapsed_raw": "10",
        "time_limit_raw": "60",
        "submit_time": "2026-11-30T10:00:00",
        "start_time": "2026-11-30T10:00:01",
        "end_time": "2026-11-30T10:00:11",
        "alloc_cpus": "1",
        "alloc_tres": "cpu=1,node=1",
        "total_cpu": "00:01.000",
        "max_rss": "",
        "reason": "None",
        "user": "u",
    }
    return [values[key] for key in KEYS]


def _history(command: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        ["sh", "-c", command], env=env, capture_output=True, text=True, check=True, timeout=30
    )
    return done.stdout


def test_a_name_with_newlines_and_tabs_forges_no_history_row(tmp_path: Path) -> None:
    d = delimiter("0" * 16)  # the attacker's best guess is not this command's delimiter
    forged = "\t".join(_row("999", "FAILED", "forged"))
    name = f"sweep\n{forged}\n{d.join(_row('998', 'FAILED', 'forged-too'))}\tend"
    rows = [
        _row("10", "COMPLETED", name, work_dir="/home/u/a\nb\tc"),
        _row("11", "RUNNING", "exp[/data]"),
    ]
    env = _fake_sacct(tmp_path, rows, trailer="sacct: error: a late message\n")
    page = parse_history_output(_history(history_command(HistoryQuery(), NONCE), env), NONCE)
    assert page.error == ""
    assert sorted(e.job_id for e in page.entries) == ["10", "11"]
    entry = next(e for e in page.entries if e.job_id == "10")
    assert entry.name == name and entry.work_dir == "/home/u/a\nb\tc"
    assert entry.state == "COMPLETED"
    assert next(e for e in page.entries if e.job_id == "11").name == "exp[/data]"
    assert page.total == 2
    assert any("a late message" in m for m in page.messages)


def test_usage_of_a_forged_name_comes_back_whole(tmp_path: Path) -> None:
    rows = [_row("10", "COMPLETED", f"a\n{chr(9).join(_row('11', 'FAILED', 'x'))}")]
    env = _fake_sacct(tmp_path, rows)
    page = parse_history_output(_history(usage_command(["10"], NONCE), env), NONCE, paged=False)
    assert [e.job_id for e in page.entries] == ["10"]
    assert page.entries[0].name.startswith("a\n11\t")
