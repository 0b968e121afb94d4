"""Benchmark: incremental log tailing vs re-reading ``tail -n 200`` over a new connection.

Run on the sandbox (``make bench`` or ``.venv/bin/python bench/logs.py``); it needs root to
write the test logs under /home/slurmtest (deleted afterwards). Measures, side by side in one run:

1. refreshing a growing 50 MB log: bytes and time per refresh, ours (offset read over the open
   connection) vs the reference's ``ssh ... tail -n 200`` (a new OpenSSH process per refresh);
2. write→seen latency for a writer producing 10,000 lines/s: our offset polling (adaptive
   interval) vs a long-lived remote ``tail -c +1 -F`` process;
3. peak RSS of a process following a 1 GB log from its first byte to its last.

Prints Markdown tables and writes them into bench/RESULTS.md (section "logs").
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

from _sandbox import REPO, fmt_b, fmt_s, openssh, sandbox, table, timed, write_results

from tao_slurm_tui.core.models import Attempt, JobRecord, TaoStatus
from tao_slurm_tui.remote.connection import Connection
from tao_slurm_tui.services.logs import LogTailer, log_path

LINE = 100  # bytes per synthetic log line


def make_job(base: str, job_id: str, status: TaoStatus = TaoStatus.RUNNING) -> JobRecord:
    """A job record whose only attempt's log lives under ``base``."""
    job = JobRecord(id=job_id, profile="sandbox", base_results_dir=base, status=status)
    job.attempts = [Attempt(number=0, slurm_job_id="1")]
    return job


def lines_blob(count: int, start: int = 0) -> bytes:
    """``count`` log lines of LINE bytes."""
    out = bytearray()
    for i in range(start, start + count):
        head = f"step {i:09d} loss=0.{i % 9973:04d} lr=1e-4 "
        out += head.encode() + b"." * (LINE - len(head) - 1) + b"\n"
    return bytes(out)


def prepare(path: str) -> None:
    """Create the log's directory, readable by the sandbox user."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)


# ----------------------------------------------------------------------------------- 1. growing log


async def bench_growing(conn: Connection, base: str) -> list[list[str]]:
    job = make_job(base, "bench-grow")
    path = log_path(job, job.attempts[0])
    prepare(path)
    size = 50 * 1024 * 1024
    with open(path, "wb") as handle:
        block = lines_blob(10_000)
        written = 0
        while written < size:
            handle.write(block)
            written += len(block)
    tailer = LogTailer(conn, job)
    start = time.perf_counter()
    while True:
        await tailer.read_new()
        if tailer.caught_up:
            break
    catch_up = time.perf_counter() - start
    catch_up_bytes = tailer.bytes_read

    refreshes = 20
    ours_t: list[float] = []
    ours_b: list[int] = []
    ref_t: list[float] = []
    ref_b: list[int] = []
    idle_t: list[float] = []
    idle_b: list[int] = []
    n = written // LINE
    for _ in range(refreshes):
        with open(path, "ab") as handle:
            handle.write(lines_blob(200, n))
        n += 200
        before = tailer.bytes_read
        t0 = time.perf_counter()
        got = 0
        while True:
            got += sum(len(b.lines) for b in await tailer.read_new())
            if tailer.caught_up:
                break
        ours_t.append(time.perf_counter() - t0)
        ours_b.append(tailer.bytes_read - before)
        assert got == 200, got
        seconds, result = timed(openssh, f"tail -n 200 {path}")
        ref_t.append(seconds)
        ref_b.append(len(result.stdout))
        before = tailer.bytes_read
        t0 = time.perf_counter()
        await tailer.read_new()
        idle_t.append(time.perf_counter() - t0)
        idle_b.append(tailer.bytes_read - before)
    os.unlink(path)
    med = statistics.median
    return [
        [
            "refresh after 200 new lines (20 KB) of a 50 MB log",
            f"{fmt_s(med(ours_t))}, {fmt_b(med(ours_b))}",
            f"{fmt_s(med(ref_t))}, {fmt_b(med(ref_b))}",
            f"{med(ref_t) / med(ours_t):.0f}x faster",
        ],
        [
            "refresh with nothing new",
            f"{fmt_s(med(idle_t))}, {fmt_b(med(idle_b))}",
            f"{fmt_s(med(ref_t))}, {fmt_b(med(ref_b))} (same 200 lines again)",
            f"{med(ref_t) / med(idle_t):.0f}x faster",
        ],
        [
            "first read of the whole 50 MB (1 MiB per round trip)",
            f"{fmt_s(catch_up)}, {fmt_b(catch_up_bytes)} "
            f"({catch_up_bytes / catch_up / 1e6:.0f} MB/s)",
            "n/a (only ever sees the last 200 lines)",
            "",
        ],
    ]


# ----------------------------------------------------------------------------------- 2. latency

WRITER = r"""
import sys, time
path, rate, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
batch = rate // 100
pad = "." * 60
end = time.time() + seconds
i = 0
with open(path, "a") as f:
    while time.time() < end:
        now = time.time_ns()
        f.write("".join(f"{i + k} {now} {pad}\n" for k in range(batch)))
        f.flush()
        i += batch
        time.sleep(0.01)
"""


def start_writer(path: str, rate: int, seconds: float) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", WRITER, path, str(rate), str(seconds)])


def latencies_from(lines: list[str], seen_ns: int, out: list[float]) -> None:
    for line in lines:
        parts = line.split(" ", 2)
        if len(parts) >= 2 and parts[1].isdigit():
            out.append((seen_ns - int(parts[1])) / 1e9)


async def latency_polling(conn: Connection, base: str, seconds: float) -> tuple[list[float], int]:
    job = make_job(base, "bench-lat-poll")
    path = log_path(job, job.attempts[0])
    prepare(path)
    Path(path).write_bytes(b"")
    tailer = LogTailer(conn, job)
    writer = start_writer(path, 10_000, seconds)
    lat: list[float] = []

    async def consume() -> None:
        async for batch in tailer.follow(min_interval=0.25, max_interval=1.0, stop_when_done=False):
            latencies_from(batch.lines, time.time_ns(), lat)

    task = asyncio.create_task(consume())
    await asyncio.to_thread(writer.wait)
    await asyncio.sleep(1.0)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    os.unlink(path)
    return lat, tailer.reads


async def latency_tail_f(conn: Connection, base: str, seconds: float) -> list[float]:
    job = make_job(base, "bench-lat-tailf")
    path = log_path(job, job.attempts[0])
    prepare(path)
    Path(path).write_bytes(b"")
    process = await conn.create_process(f"tail -c +1 -F {path}", encoding=None)
    writer = start_writer(path, 10_000, seconds)
    lat: list[float] = []
    partial = b""

    async def consume() -> None:
        nonlocal partial
        while True:
            data = await process.stdout.read(1 << 20)
            if not data:
                return
            seen = time.time_ns()
            buf = partial + data
            *complete, partial = buf.split(b"\n")
            latencies_from([c.decode() for c in complete], seen, lat)

    task = asyncio.create_task(consume())
    await asyncio.to_thread(writer.wait)
    await asyncio.sleep(1.0)
    process.close()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    os.unlink(path)
    return lat


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def bench_latency(conn: Connection, base: str) -> list[list[str]]:
    seconds = 8.0
    poll, reads = await latency_polling(conn, base, seconds)
    tail_f = await latency_tail_f(conn, base, seconds)
    rows = []
    for name, lat, extra in (
        ("offset polling (ours, 0.25 s interval)", poll, f"{reads} round trips"),
        ("long-lived `tail -c +1 -F` process", tail_f, "1 channel held open"),
    ):
        rows.append(
            [
                name,
                f"{len(lat):,}",
                fmt_s(statistics.median(lat)),
                fmt_s(pct(lat, 0.95)),
                fmt_s(max(lat)),
                extra,
            ]
        )
    return rows


# ----------------------------------------------------------------------------------- 3. 1 GB RSS


def rss_child(base: str) -> None:
    """Child mode: follow the 1 GB log to its end; print baseline and peak RSS (KiB) and bytes."""

    async def run() -> None:
        profile = sandbox.sandbox_profile()
        async with Connection(profile) as conn:
            job = make_job(base, "bench-1g", TaoStatus.COMPLETE)
            await conn.run("true")
            baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            tailer = LogTailer(conn, job)
            lines = 0
            start = time.perf_counter()
            async for batch in tailer.follow(min_interval=0, max_interval=0):
                lines += len(batch.lines)
            seconds = time.perf_counter() - start
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            print(baseline, peak, tailer.bytes_read, lines, f"{seconds:.3f}")

    asyncio.run(run())


def bench_rss(base: str) -> list[list[str]]:
    job = make_job(base, "bench-1g")
    path = log_path(job, job.attempts[0])
    prepare(path)
    size = 1 << 30
    block = lines_blob(40_000)
    with open(path, "wb") as handle:
        written = 0
        while written < size:
            handle.write(block)
            written += len(block)
    try:
        out = subprocess.run(
            [sys.executable, __file__, "--rss-child", base],
            capture_output=True,
            text=True,
            check=True,
            cwd=REPO,
        ).stdout.split()
    finally:
        os.unlink(path)
    baseline, peak, nbytes, lines, seconds = int(out[0]), int(out[1]), int(out[2]), out[3], out[4]
    return [
        [
            f"follow a {fmt_b(written)} log from byte 0 to the end",
            f"{peak / 1024:.1f} MiB",
            f"{baseline / 1024:.1f} MiB",
            f"+{(peak - baseline) / 1024:.1f} MiB",
            f"{fmt_b(nbytes)} in {float(seconds):.1f} s, {int(lines):,} lines",
        ]
    ]


# ----------------------------------------------------------------------------------- main


async def main() -> None:
    if os.geteuid() != 0:
        sys.exit("bench/logs.py writes test logs under /home/slurmtest: run it as root.")
    why = sandbox.reachable()
    if why:
        sys.exit(f"sandbox not up: {why}")
    base = f"{sandbox.HOME}/bench-logs-{uuid.uuid4().hex[:8]}"
    profile = sandbox.sandbox_profile()
    try:
        async with Connection(profile) as conn:
            await conn.run("true")
            print("1/3 growing 50 MB log ...", flush=True)
            growing = await bench_growing(conn, base)
            print("2/3 write→seen latency at 10,000 lines/s ...", flush=True)
            latency = await bench_latency(conn, base)
        print("3/3 following a 1 GB log ...", flush=True)
        rss = bench_rss(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    text = "\n\n".join(
        [
            "## Logs (`bench/logs.py`)",
            f"Measured {time.strftime('%Y-%m-%d %H:%M')} on the sandbox (sshd on 127.0.0.1:2222, "
            f"{os.cpu_count()} cores), all rows in one run.",
            "### Refreshing a growing 50 MB log (median of 20 refreshes)",
            table(
                [
                    "what",
                    "ours: offset read on the open connection",
                    "reference: new `ssh … tail -n 200`",
                    "ratio",
                ],
                growing,
            ),
            "### Write→seen latency, writer at 10,000 lines/s for 8 s",
            table(["follower", "lines", "median", "p95", "max", "cost"], latency),
            "### Peak RSS while following a 1 GB log (separate process)",
            table(["what", "peak RSS", "RSS before reading", "growth", "read"], rss),
        ]
    )
    print()
    print(text)
    write_results("logs", text)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rss-child", metavar="BASE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rss_child:
        rss_child(args.rss_child)
    else:
        asyncio.run(main())
