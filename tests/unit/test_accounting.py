"""History and usage figures from recorded sacct output (core/accounting.py)."""

from __future__ import annotations

import os
import stat
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from tao_slurm_tui.core.accounting import (
    KEYS,
    HistoryEntry,
    HistoryQuery,
    Usage,
    format_memory,
    gpus_from_tres,
    parse_cpu_time,
    parse_entries,
    parse_memory,
    suggested_limit,
    summarize,
    window_words,
)
from tao_slurm_tui.core.history_query import (
    delimiter,
    history_command,
    joiner,
    parse_history_output,
    parse_since,
    parse_states,
    usage_command,
)
from tao_slurm_tui.core.job_output import default_output_path, job_output_command, parse_job_output

RECORDED = Path(__file__).parent / "recorded"
NONCE = "c0ffee00d15ea5e5"
ODD = (RECORDED / "sacct_history_odd.txt").read_text()


RECORDED_ORDER = (
    "job_id", "raw_id", "state", "exit_code", "partition", "nodes", "elapsed_raw",
    "time_limit_raw", "submit_time", "start_time", "end_time", "alloc_cpus", "alloc_tres",
    "total_cpu", "max_rss", "reason", "user", "work_dir", "name",
)  # fmt: skip
"""The column order the recorded files were taken in (tab-separated, the name last)."""


def as_sacct(text: str, sep: str = "") -> str:
    """Recorded rows as sacct prints them for our format today: our columns' order, our
    command's delimiter (a name's tab stays in the name). Other lines stay as they are."""
    sep = sep or delimiter(NONCE)
    out = []
    for line in text.split("\n"):
        parts = line.split("\t", len(RECORDED_ORDER) - 1)
        if len(parts) == len(RECORDED_ORDER):
            row = dict(zip(RECORDED_ORDER, parts, strict=True))
            line = sep.join(row[key] for key in KEYS)
        out.append(line)
    return "\n".join(out)


def parse_recorded(text: str) -> tuple[list[HistoryEntry], list[str]]:
    return parse_entries(as_sacct(text), delimiter(NONCE), joiner(NONCE))


def _by_id(text: str = ODD) -> dict[str, HistoryEntry]:
    entries, _ = parse_recorded(text)
    return {e.job_id: e for e in entries}


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("00:19.876", 19.876),
        ("01:02:03", 3723.0),
        ("1-00:00:00", 86400.0),
        ("2-01:00:00", 176400.0),
        ("05:00", 300.0),
        ("", None),
        ("garbage", None),
        ("x-01:00:00", None),
    ],
)
def test_parse_cpu_time(text: str, seconds: float | None) -> None:
    assert parse_cpu_time(text) == (pytest.approx(seconds) if seconds is not None else None)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1524K", 1524 * 1024),
        ("812.50M", int(812.5 * 1024**2)),
        ("2.5G", int(2.5 * 1024**3)),
        ("1000", 1000),
        ("0", 0),
        ("", None),
        ("12Q", None),
    ],
)
def test_parse_memory_suffixes(text: str, value: int | None) -> None:
    assert parse_memory(text) == value


def test_format_memory() -> None:
    assert format_memory(None) == ""
    assert format_memory(512) == "512 B"
    assert format_memory(1524 * 1024) == "1.5 MiB"
    assert format_memory(int(2.5 * 1024**3)) == "2.5 GiB"
    assert format_memory(300 * 1024**2) == "300 MiB"


def test_gpus_from_tres_untyped_total_wins_typed_are_added() -> None:
    assert gpus_from_tres("billing=32,cpu=32,gres/gpu=8,mem=64G,node=2") == 8
    assert gpus_from_tres("cpu=8,gres/gpu:a100=2,gres/gpu=2,node=1") == 2
    assert gpus_from_tres("cpu=8,gres/gpu:a100=2,gres/gpu:t4=1,node=1") == 3
    assert gpus_from_tres("cpu=1,mem=100M,node=1") == 0
    assert gpus_from_tres("") == 0


def test_cpu_burner_usage() -> None:
    burn = _by_id()["101"]
    usage = burn.usage
    assert usage.elapsed_s == 21
    assert usage.time_limit_s == 600
    assert usage.cpu_efficiency == pytest.approx(19.876 / 21)
    assert usage.gpu_hours == 0
    assert usage.peak_rss_bytes == 1524 * 1024  # max over batch (1524K) and extern (0)
    assert usage.queue_wait_s == 3
    assert usage.completed and usage.finished
    assert burn.steps == ("batch", "extern")


def test_gpu_job_gpu_hours_efficiency_and_peak_memory_from_steps() -> None:
    job = _by_id()["102"]
    usage = job.usage
    assert usage.gpus == 8
    assert usage.gpu_hours == pytest.approx(8.0)  # 8 GPUs x 1 h
    # Allocation TotalCPU (1 day) is more than the steps' sum (10 h + 14 h = 1 day): kept.
    assert usage.cpu_efficiency == pytest.approx(86400 / (32 * 3600))
    assert usage.peak_rss_bytes == int(2.5 * 1024**3)
    assert usage.queue_wait_s == 600
    assert usage.hint == ""  # failed: no hint about the time limit
    assert job.reason == "NonZeroExitCode"


def test_cancelled_by_root_while_pending_has_no_times() -> None:
    job = _by_id()["103"]
    assert job.state == "CANCELLED"
    assert job.cancelled_by == "0"
    assert job.start_time == ""
    assert job.nodes == ""
    usage = job.usage
    assert usage.elapsed_s is None and usage.queue_wait_s is None
    assert usage.cpu_efficiency is None
    assert usage.gpu_hours == 0


def test_node_fail_without_cpu_accounting() -> None:
    job = _by_id()["104"]
    usage = job.usage
    assert job.state == "NODE_FAIL"
    assert usage.gpus == 1
    assert usage.total_cpu_s is None and usage.cpu_efficiency is None
    assert usage.gpu_hours == pytest.approx(120 / 3600)


def test_array_tasks_het_components_and_pending_array_meta_row() -> None:
    jobs = _by_id()
    assert {"200_0", "200_1", "200_[2-999]", "300+0", "300+1"} <= set(jobs)
    assert jobs["200_0"].raw_id == "201"
    assert jobs["200_0"].usage.peak_rss_bytes == 1000
    assert jobs["200_[2-999]"].state == "PENDING"
    assert jobs["300+1"].usage.peak_rss_bytes == 20 * 1024**2
    assert jobs["300+0"].usage.peak_rss_bytes is None


def test_running_job_keeps_a_tab_in_its_name_and_has_no_limit() -> None:
    job = _by_id()["400"]
    assert job.name == "live\tname with tab"
    assert job.usage.time_limit_s is None
    assert job.usage.limit_fraction is None
    assert not job.finished
    assert job.end_time == ""


def test_garbage_and_error_lines_are_messages_not_rows() -> None:
    entries, messages = parse_recorded(ODD)
    assert len(entries) == 10
    assert any(m.startswith("sacct: error: slurmdbd") for m in messages)
    assert "garbage\tline" in messages


def test_time_limit_hint_only_for_short_completed_jobs() -> None:
    short = Usage(elapsed_s=600, time_limit_s=4 * 3600, completed=True, finished=True)
    assert "used 4% of its 4:00:00 time limit" in short.hint
    assert "about 15:00" in short.hint and "start sooner" in short.hint
    assert Usage(elapsed_s=3700, time_limit_s=4 * 3600, completed=True).hint == ""
    assert Usage(elapsed_s=10, time_limit_s=4 * 3600, completed=False).hint == ""
    assert Usage(elapsed_s=10, time_limit_s=None, completed=True).hint == ""
    assert suggested_limit(600) == 900
    assert suggested_limit(3000) == 4500
    assert suggested_limit(3700) == 6300


def test_summary_line() -> None:
    entries, _ = parse_recorded(ODD)
    summary = summarize(entries, window_words("now-7days"))
    assert summary.jobs == 10
    assert summary.failed == 3  # FAILED, CANCELLED by 0, NODE_FAIL
    gpu = 8.0 + 120 / 3600
    assert summary.gpu_hours == pytest.approx(gpu)
    assert summary.lost_fraction == pytest.approx(1.0)  # every GPU-hour was in a failed job
    assert (
        summary.text
        == "last 7 days: 10 jobs, 8.0 GPU-hours, 100 % lost to failed or cancelled jobs"
    )
    cpu_only = summarize([_by_id()["101"]], "today")
    assert (
        cpu_only.text
        == "today: 1 job, 0.0 CPU-hours (no GPUs), 0 % lost to failed or cancelled jobs"
    )
    assert summarize([], "last 1 day").text.startswith("last 1 day: 0 jobs")


@pytest.mark.parametrize(
    ("text", "since"),
    [
        ("7d", "now-7days"),
        ("12h", "now-12hours"),
        ("2w", "now-2weeks"),
        ("30m", "now-30minutes"),
        ("3 days", "now-3days"),
        ("today", "midnight"),
        ("2026-11-01", "2026-11-01"),
        ("2026-11-01 08:00", "2026-11-01T08:00"),
    ],
)
def test_parse_since(text: str, since: str) -> None:
    assert parse_since(text) == since


@pytest.mark.parametrize("text", ["yesterdayish", "2026-13-01", "-7d", "7 fortnights", ""])
def test_parse_since_rejects_with_a_sentence(text: str) -> None:
    with pytest.raises(ValueError, match=r"use e\.g\. 7d"):
        parse_since(text)


def test_parse_states() -> None:
    assert parse_states("failed, Canceled,FAILED") == ("FAILED", "CANCELLED")
    assert parse_states("") == ()
    with pytest.raises(ValueError, match="not a SLURM job state"):
        parse_states("broken")


def test_window_words() -> None:
    assert window_words("now-1days") == "last 1 day"
    assert window_words("now-12hours") == "last 12 hours"
    assert window_words("2026-11-01") == "since 2026-11-01"


# ------------------------------------------------------------- the remote command, run locally


def _fake_sacct(tmp_path: Path, output: str, rc: int = 0) -> dict[str, str]:
    """A ``sacct`` on PATH that prints ``output`` and records its argv."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    (tmp_path / "out.txt").write_text(as_sacct(output))
    script = bindir / "sacct"
    script.write_text(
        f'#!/bin/sh\nprintf "%s\\n" "$*" >> {tmp_path}/argv.txt\n'
        f"cat {tmp_path}/out.txt\nexit {rc}\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return {"PATH": f"{bindir}:{os.environ['PATH']}", "SACCT_FORMAT": "JobID"}


def _run(command: str, env: dict[str, str]) -> str:
    # The command is one `sh -c '…'` string, as the connection sends it.
    done = subprocess.run(
        ["sh", "-c", command], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


def _many_jobs(n: int, start: int = 1000) -> str:
    lines = []
    for i in range(n):
        jid = str(start + i)
        state = "FAILED" if i % 10 == 0 else "COMPLETED"
        base = [jid, jid, state, "0:0", "polar", "vm1", "1", "1", "2026-11-30T13:00:00",
                "2026-11-30T13:00:00", "2026-11-30T13:00:01", "1", "cpu=1,node=1", "00:00.5",
                "", "None", "slurmtest", "/home/slurmtest", f"job-{i}"]  # fmt: skip
        step = [f"{jid}.batch", f"{jid}.batch", *base[2:14], "1000K", "", "", "", "batch"]
        lines += ["\t".join(base), "\t".join(step)]
    return "\n".join(lines) + "\n"


def test_history_command_pages_newest_first_with_steps(tmp_path: Path) -> None:
    env = _fake_sacct(tmp_path, _many_jobs(1000))
    page = parse_history_output(_run(history_command(HistoryQuery(limit=200), NONCE), env), NONCE)
    assert page.error == ""
    assert page.total == 1000 and page.more
    assert [e.raw_id for e in page.entries[:3]] == ["1999", "1998", "1997"]
    assert len(page.entries) == 200
    assert all(e.usage.peak_rss_bytes == 1000 * 1024 for e in page.entries)  # steps came along
    seen = [e.raw_id for e in page.entries]
    cursor = page.next_before
    pages = 1
    while cursor is not None:
        page = parse_history_output(
            _run(history_command(HistoryQuery(before=cursor), NONCE), env), NONCE
        )
        seen += [e.raw_id for e in page.entries]
        cursor = page.next_before
        pages += 1
    assert pages == 5
    assert seen == [str(i) for i in range(1999, 999, -1)]
    argv = (tmp_path / "argv.txt").read_text().splitlines()
    assert len(argv) == 5  # one sacct per page, never one per job
    assert all("-S now-7days -E now+1hours" in a and "-u " in a for a in argv)


def test_history_command_filters_state_and_name_on_the_cluster(tmp_path: Path) -> None:
    env = _fake_sacct(tmp_path, _many_jobs(100) + ODD)
    query = HistoryQuery(states=("FAILED", "CANCELLED"), name="JOB-1", limit=50)
    page = parse_history_output(_run(history_command(query, NONCE), env), NONCE)
    # FAILED jobs are i % 10 == 0; names containing "job-1": job-10, job-100.. only job-10 here.
    assert [e.name for e in page.entries] == ["job-10"]
    assert page.total == 1 and not page.more
    cancelled = parse_history_output(
        _run(history_command(HistoryQuery(states=("CANCELLED",)), NONCE), env), NONCE
    )
    assert [e.job_id for e in cancelled.entries] == ["103"]
    assert cancelled.entries[0].raw_state == "CANCELLED by 0"
    # The error line and the garbage line came through as messages, not rows.
    assert any("slurmdbd" in m for m in cancelled.messages)


def test_history_command_reports_a_failing_sacct(tmp_path: Path) -> None:
    env = _fake_sacct(tmp_path, "sacct: error: Problem talking to the database: refused", rc=1)
    page = parse_history_output(_run(history_command(HistoryQuery(), NONCE), env), NONCE)
    assert page.complete
    assert page.error == "sacct failed: sacct: error: Problem talking to the database: refused"
    assert page.entries == []


def test_cut_short_output_is_an_error() -> None:
    assert (
        parse_history_output("101\t101\tCOMPLETED", NONCE).error == "the sacct output was cut short"
    )


def test_history_command_rejects_bad_queries() -> None:
    with pytest.raises(ValueError, match="page size"):
        history_command(HistoryQuery(limit=0), NONCE)
    with pytest.raises(ValueError, match="backslash"):
        history_command(HistoryQuery(name="a\\tb"), NONCE)
    with pytest.raises(ValueError, match="not a SLURM job state"):
        history_command(HistoryQuery(states=("NOPE",)), NONCE)


def test_usage_command_one_call_for_many_ids(tmp_path: Path) -> None:
    env = _fake_sacct(tmp_path, ODD)
    page = parse_history_output(
        _run(usage_command(["101", "102", "101"], NONCE), env), NONCE, paged=False
    )
    assert page.complete and page.error == ""
    assert "-j 101,102" in (tmp_path / "argv.txt").read_text()
    with pytest.raises(ValueError, match="not a SLURM job id"):
        usage_command(["1; rm -rf ~"], NONCE)
    with pytest.raises(ValueError, match="no job ids"):
        usage_command([], NONCE)


def test_json_keys() -> None:
    data = _by_id()["102"].to_json()
    assert data["slurm_job_id"] == "102"
    assert data["elapsed"] == "1:00:00" and data["time_limit"] == "4:00:00"
    assert data["gpu_hours"] == 8.0
    assert data["cpu_efficiency"] == pytest.approx(0.75)
    assert data["peak_rss_bytes"] == int(2.5 * 1024**3)
    assert data["queue_wait_s"] == 600


def test_first_page_totals_the_whole_window_like_summarize(tmp_path: Path) -> None:
    text = _many_jobs(50) + ODD
    env = _fake_sacct(tmp_path, text)
    page = parse_history_output(
        _run(history_command(HistoryQuery(limit=5, name="job"), NONCE), env), NONCE
    )
    assert page.summary is not None
    entries, _ = parse_recorded(text)
    expected = summarize(entries)
    # Every job of the window, not the 5 of the page nor only the name filter's matches.
    assert page.summary.jobs == expected.jobs == 60
    assert page.summary.failed == expected.failed == 5 + 3
    assert page.summary.finished == expected.finished
    assert page.summary.gpu_hours == pytest.approx(expected.gpu_hours, abs=1 / 3600)
    assert page.summary.cpu_hours == pytest.approx(expected.cpu_hours, abs=1 / 3600)
    assert page.summary.lost_fraction == pytest.approx(expected.lost_fraction, abs=1e-3)
    later = parse_history_output(
        _run(history_command(HistoryQuery(limit=5, before=page.next_before), NONCE), env), NONCE
    )
    assert later.summary is None


def test_job_output_command_falls_back_to_the_default_file(tmp_path: Path) -> None:
    """Run locally: no scontrol knows the id, so sbatch's default file in WorkDir is read."""
    (tmp_path / "slurm-101.out").write_text("first\n" + "x" * 10 + "\nlast line\n")
    entries, _ = parse_recorded(ODD)
    entry = replace(next(e for e in entries if e.job_id == "101"), work_dir=str(tmp_path))
    bindir = tmp_path / "bin"
    bindir.mkdir()
    env = {"PATH": f"{bindir}:{os.environ['PATH']}"}
    (bindir / "scontrol").write_text(
        "#!/bin/sh\necho 'slurm_load_jobs error: Invalid job id'\nexit 1\n"
    )
    (bindir / "scontrol").chmod(0o755)
    output = parse_job_output(_run(job_output_command(entry, max_bytes=20), env))
    assert output is not None
    assert output.source == "default" and output.stdout_readable and output.same_file
    assert output.stdout_path == f"{tmp_path}/slurm-101.out"
    assert output.stdout == "x" * 9 + "\nlast line"  # the last 20 bytes only
    assert output.stderr == ""
    array_task = replace(entry, job_id="200_1", raw_id="200")
    assert default_output_path(array_task) == f"{tmp_path}/slurm-200_1.out"


def test_job_output_from_scontrol_with_separate_err(tmp_path: Path) -> None:
    out, err = tmp_path / "o.txt", tmp_path / "e.txt"
    out.write_text("hello\n")
    err.write_text("oops\n")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "scontrol").write_text(
        f"#!/bin/sh\necho 'JobId=101 JobName=burn StdErr={err} StdIn=/dev/null StdOut={out}'\n"
    )
    (bindir / "scontrol").chmod(0o755)
    entries, _ = parse_recorded(ODD)
    entry = next(e for e in entries if e.job_id == "101")
    env = {"PATH": f"{bindir}:{os.environ['PATH']}"}
    output = parse_job_output(_run(job_output_command(entry), env))
    assert output is not None and output.source == "scontrol"
    assert (output.stdout, output.stderr) == ("hello", "oops")
    assert not output.same_file
    pending_array = next(e for e in entries if e.job_id == "200_[2-999]")
    assert pending_array.raw_id == "200"  # has a plain raw id, so it can be looked up
    with pytest.raises(ValueError, match="no SLURM id"):
        job_output_command(replace(entry, raw_id=""))
    assert parse_job_output("cut") is None


def test_unreadable_output_is_reported_not_read(tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "scontrol").write_text("#!/bin/sh\nexit 1\n")
    (bindir / "scontrol").chmod(0o755)
    entries, _ = parse_recorded(ODD)
    entry = replace(next(e for e in entries if e.job_id == "101"), work_dir=str(tmp_path / "gone"))
    env = {"PATH": f"{bindir}:{os.environ['PATH']}"}
    output = parse_job_output(_run(job_output_command(entry), env))
    assert output is not None and not output.stdout_readable and output.stdout == ""


def test_recorded_sandbox_lines() -> None:
    """Lines recorded on the sandbox (SLURM 22.05.8, jobacct_gather/linux): no extern step,
    MaxRSS empty for jobs shorter than the 30 s gather interval, the allocation's TotalCPU the
    sum of its steps."""
    entries, messages = parse_recorded((RECORDED / "sacct_history_sandbox.txt").read_text())
    assert messages == []
    ok, cancelled = entries
    assert ok.usage.total_cpu_s == pytest.approx(0.151)
    assert ok.usage.gpus == 1 and ok.usage.gpu_hours == pytest.approx(4 / 3600)
    assert ok.usage.cpu_efficiency == pytest.approx(0.151 / 4)
    assert ok.usage.peak_rss_bytes is None
    assert ok.steps == ("batch", "0")
    assert ok.usage.hint.startswith("used under 1% of its 1:00:00 time limit")
    assert cancelled.state == "CANCELLED" and cancelled.cancelled_by == "1001"
    assert cancelled.usage.hint == ""
