"""LogTailer on an in-memory 'remote' filesystem: offsets, truncation, attempts, bounded memory."""

from __future__ import annotations

from typing import Any

import pytest

from tao_slurm_tui.core.models import Attempt, JobRecord, TaoStatus
from tao_slurm_tui.remote.connection import CommandResult
from tao_slurm_tui.services.logs import LogTailer, log_path, read_whole, tail

BASE = "/home/u/tao"


class FakeConn:
    """read_file/run over a dict of path → bytes, counting round trips."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.calls: list[tuple[str, int, int | None]] = []

    async def read_file(
        self, path: str, *, offset: int = 0, max_bytes: int | None = None, missing_ok: bool = False
    ) -> bytes:
        self.calls.append((path, offset, max_bytes))
        data = self.files.get(path)
        if data is None:
            assert missing_ok
            return b""
        end = None if max_bytes is None else offset + max_bytes
        return data[offset:end]

    async def run(self, command: str, **_: Any) -> CommandResult:
        self.calls.append((command, 0, None))
        path = next((p for p in self.files if p in command), None)
        if path is None:
            return CommandResult(command, 66, "", "", "h")
        n = int(command.split("tail -n ")[1].split()[0].rstrip(";"))
        lines = self.files[path].decode().splitlines(keepends=True)[-n:]
        return CommandResult(command, 0, "".join(lines), "", "h")


def make_job(*slurm_ids: str, status: TaoStatus = TaoStatus.RUNNING) -> JobRecord:
    job = JobRecord(id="job-a", profile="p", base_results_dir=BASE, status=status)
    job.attempts = [Attempt(number=i, slurm_job_id=s) for i, s in enumerate(slurm_ids)]
    return job


def lines_of(batches: list[Any]) -> list[str]:
    return [line for b in batches for line in b.lines]


async def test_waits_quietly_then_reads_only_new_bytes() -> None:
    conn = FakeConn()
    job = make_job("11")
    tailer = LogTailer(conn, job)  # type: ignore[arg-type]
    path = log_path(job, job.attempts[0])
    assert path == f"{BASE}/slurm-logs/job-a-11/main.out"
    assert await tailer.read_new() == []
    first = b"one\n" + b"z" * 100 + b"\npar"
    conn.files[path] = first
    assert lines_of(await tailer.read_new()) == ["one", "z" * 100]
    conn.files[path] += b"tial\nthree\n"
    assert lines_of(await tailer.read_new()) == ["partial", "three"]
    # The last read started OVERLAP (64) bytes before the offset, not at 0.
    _, offset, _ = conn.calls[-1]
    assert offset == len(first) - 64
    assert await tailer.read_new() == []


async def test_err_stream_path() -> None:
    job = make_job("5")
    assert log_path(job, job.attempts[0], "err").endswith("/job-a-5/main.err")


async def test_truncation_restarts_at_zero_with_separator() -> None:
    conn = FakeConn()
    job = make_job("11")
    path = log_path(job, job.attempts[0])
    conn.files[path] = b"".join(b"old line %d\n" % i for i in range(20))
    tailer = LogTailer(conn, job)  # type: ignore[arg-type]
    assert len(lines_of(await tailer.read_new())) == 20
    conn.files[path] = b"new 1\n"
    batches = await tailer.read_new()
    batches += await tailer.read_new()
    assert lines_of(batches) == ["new 1"]
    assert any(b.separator and "again" in b.separator for b in batches)


async def test_rewritten_longer_file_is_detected_by_overlap() -> None:
    conn = FakeConn()
    job = make_job("11")
    path = log_path(job, job.attempts[0])
    conn.files[path] = b"a" * 100 + b"\n"
    tailer = LogTailer(conn, job)  # type: ignore[arg-type]
    await tailer.read_new()
    conn.files[path] = b"b" * 300 + b"\n"  # truncated and regrown past the offset
    batches = await tailer.read_new()
    batches += await tailer.read_new()
    assert lines_of(batches) == ["b" * 300]


async def test_switches_to_new_attempt_with_separator() -> None:
    conn = FakeConn()
    job = make_job("11")
    first = log_path(job, job.attempts[0])
    conn.files[first] = b"attempt one\n"
    tailer = LogTailer(conn, job)  # type: ignore[arg-type]
    assert lines_of(await tailer.read_new()) == ["attempt one"]
    conn.files[first] += b"NCCL error"  # unterminated last line
    job2 = make_job("11", "12")
    job2.attempts[0].retry_reason = "NCCL error"
    second = log_path(job2, job2.attempts[1])
    conn.files[second] = b"attempt two\n"
    tailer.update_job(job2)
    batches = await tailer.read_new()
    assert batches[0].lines == ["NCCL error"]
    sep = [b for b in batches if b.separator]
    assert len(sep) == 1 and "SLURM job 12" in (sep[0].separator or "")
    assert "NCCL error" in (sep[0].separator or "")
    assert sep[0].attempt == 1 and sep[0].lines == ["attempt two"]


async def test_bounded_chunks_and_long_lines() -> None:
    conn = FakeConn()
    job = make_job("11", status=TaoStatus.COMPLETE)
    path = log_path(job, job.attempts[0])
    conn.files[path] = b"x" * 5000 + b"\n" + b"y\n" * 3000
    tailer = LogTailer(conn, job, chunk_bytes=1024, max_line_bytes=1000)  # type: ignore[arg-type]
    out: list[str] = []
    while not tailer.done:
        out += lines_of(await tailer.read_new())
        assert all(size is not None and size <= 1024 + 64 for _, _, size in conn.calls)
    assert "".join(out[:5]) == "x" * 5000
    assert out[5:] == ["y"] * 3000


async def test_follow_stops_when_done() -> None:
    conn = FakeConn()
    job = make_job("11", status=TaoStatus.COMPLETE)
    conn.files[log_path(job, job.attempts[0])] = b"a\nb\nlast-no-newline"
    tailer = LogTailer(conn, job)  # type: ignore[arg-type]
    got = [b async for b in tailer.follow(min_interval=0, max_interval=0)]
    assert lines_of(got) == ["a", "b", "last-no-newline"]


async def test_read_whole_and_tail() -> None:
    conn = FakeConn()
    job = make_job("10", "11")
    conn.files[log_path(job, job.attempts[1])] = b"".join(b"%d\n" % i for i in range(100))
    chunks = [c async for c in read_whole(conn, job, chunk_bytes=100)]  # type: ignore[arg-type]
    assert [x for c in chunks for x in c] == [str(i) for i in range(100)]
    assert await tail(conn, job, "out", 3) == ["97", "98", "99"]  # type: ignore[arg-type]
    assert await tail(conn, job, "err", 3) is None  # type: ignore[arg-type]


@pytest.mark.parametrize("chunk", [65, 100, 4096])
async def test_utf8_split_across_reads(chunk: int) -> None:
    conn = FakeConn()
    job = make_job("11", status=TaoStatus.COMPLETE)
    text = "".join(f"zeile {i} ✓ größe\n" for i in range(50))
    conn.files[log_path(job, job.attempts[0])] = text.encode()
    tailer = LogTailer(conn, job, chunk_bytes=chunk)  # type: ignore[arg-type]
    out: list[str] = []
    while not tailer.done:
        out += lines_of(await tailer.read_new())
    assert out == text.splitlines()
