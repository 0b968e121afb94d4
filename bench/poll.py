"""Benchmark: one full refresh of N jobs — ours vs the reference's way vs the floor.

Run on the sandbox (``make bench`` or ``.venv/bin/python bench/poll.py``). For N = 1, 10, 50,
500 jobs (half live: held with ``sbatch --hold``; half finished: cancelled, so squeue reports
them as not live and the same command asks sacct), it measures side by side in one run:

- **ours**: one :meth:`Monitor.tick` — ONE remote command over the open asyncssh connection
  (squeue for every id, sacct only for the finished ones);
- **reference**: a new OpenSSH process per job running ``squeue --job=ID``, then another for
  ``sacct --job=ID`` (what the reference platform does); for N = 500 it is extrapolated from a
  sample of 50 jobs (said so in the table);
- **floor**: a bare ``true`` on the open connection (the cost of any round trip at all).

Jobs are cancelled and nothing is left behind. Prints a Markdown table and writes it into
bench/RESULTS.md (section "poll").
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
import uuid

from _sandbox import floor_seconds, fmt_s, openssh, sandbox, table, write_results

from tao_slurm_tui.core.models import Attempt, JobRecord, TaoStatus
from tao_slurm_tui.core.quoting import join
from tao_slurm_tui.remote.connection import Connection
from tao_slurm_tui.services.monitor import Monitor
from tao_slurm_tui.services.store import JobStore

SIZES = (1, 10, 50, 500)
REFERENCE_SAMPLE = 50
REPEATS = 5


async def submit_many(conn: Connection, prefix: str, count: int, *, hold: bool) -> list[str]:
    """Submit ``count`` tiny jobs in one remote command; return their SLURM ids."""
    args = ["sbatch", "--parsable", "-p", "polar", "-c", "1", "-o", "/dev/null", "-e", "/dev/null"]
    if hold:
        args.append("--hold")
    loop = (
        f"for i in $(seq 1 {count}); do "
        + join([*args, "-J", prefix])
        + " --wrap true || exit 1; done"
    )
    result = await conn.run(loop, timeout=600, check=True)
    return [line.split(";")[0] for line in result.stdout.split()]


async def wait_finished(conn: Connection, ids: list[str]) -> None:
    """Wait until every id has left squeue's live states."""
    while True:
        result = await conn.run(
            ["squeue", "-h", "-t", "PD,R,CG,CF", "-j", ",".join(ids), "-o", "%i"]
        )
        if not result.stdout.strip():
            return
        await asyncio.sleep(1)


def reference_refresh(ids: list[str]) -> float:
    """The reference's way: a new OpenSSH process per job for squeue, then one for sacct."""
    start = time.perf_counter()
    for job_id in ids:
        openssh(f"squeue --job={job_id}")
        openssh(f"sacct --job={job_id}")
    return time.perf_counter() - start


async def main() -> None:
    why = sandbox.reachable()
    if why:
        raise SystemExit(f"sandbox not up: {why}")
    profile = sandbox.sandbox_profile()
    prefix = f"bench-poll-{uuid.uuid4().hex[:6]}"
    rows: list[list[str]] = []
    all_ids: list[str] = []
    async with Connection(profile) as conn:
        await conn.run("true")
        try:
            biggest = max(SIZES)
            print(f"submitting {biggest} held jobs, cancelling half of them ...", flush=True)
            held = await submit_many(conn, prefix, biggest, hold=True)
            all_ids += held
            # Finished jobs: cancelled ones (final without reading status.json or logs, so
            # every tick is exactly one round trip and measures the poll itself).
            done, held = held[: biggest // 2], held[biggest // 2 :]
            await conn.run(["scancel", *done], check=True)
            await wait_finished(conn, done)
            floor_s = await floor_seconds(conn)
            for n in SIZES:
                ids = (done[: n - n // 2] + held[: n // 2]) if n > 1 else held[:1]
                with tempfile.TemporaryDirectory() as tmp:
                    store = JobStore(os.path.join(tmp, "state.db"))
                    for i, sid in enumerate(ids):
                        store.create_job(
                            JobRecord(
                                id=f"{prefix}-{i}",
                                profile="bench",
                                base_results_dir=sandbox.RESULTS,
                                status=TaoStatus.PENDING,
                                submitted=True,
                                attempts=[Attempt(number=0, slurm_job_id=sid)],
                            )
                        )
                    # Measure the poll itself (no store writes): the remote round trip + parsing.
                    monitor = Monitor(conn, store, "bench", profile)
                    times = []
                    for _ in range(REPEATS):
                        t0 = time.perf_counter()
                        await monitor.tick()
                        times.append(time.perf_counter() - t0)
                        # Reset the finished ones so every tick asks about all N again.
                        for j in store.list_jobs("bench"):
                            if j.status.terminal:
                                store.update_job("bench", j.id, status=TaoStatus.PENDING)
                    ours = statistics.median(times)
                    # Steady state: the finished jobs are stored as terminal after one tick
                    # and never asked again, so a tick is one squeue for the live ones.
                    await monitor.tick()
                    steady_times = []
                    for _ in range(REPEATS):
                        t0 = time.perf_counter()
                        await monitor.tick()
                        steady_times.append(time.perf_counter() - t0)
                    steady = statistics.median(steady_times)
                    store.close()
                sample = ids[: min(len(ids), REFERENCE_SAMPLE)]
                ref_s = await asyncio.to_thread(reference_refresh, sample)
                extrapolated = len(sample) < len(ids)
                ref_total = ref_s * len(ids) / len(sample)
                rows.append(
                    [
                        str(n),
                        fmt_s(ours),
                        fmt_s(ref_total)
                        + (f" (extrapolated from {len(sample)})" if extrapolated else ""),
                        fmt_s(steady),
                        fmt_s(floor_s),
                        f"{ref_total / ours:,.0f}x",
                        f"{ref_total / steady:,.0f}x",
                        f"{ours / floor_s:.1f}x",
                        f"{steady / floor_s:.1f}x",
                    ]
                )
                print(rows[-1], flush=True)
        finally:
            for i in range(0, len(all_ids), 500):
                await conn.run(["scancel", *all_ids[i : i + 500]])
    text = "\n\n".join(
        [
            "## Polling (`bench/poll.py`)",
            f"Measured {time.strftime('%Y-%m-%d %H:%M')} on the sandbox, all rows in one run; "
            "half the jobs live (held, PENDING), half finished (CANCELLED); "
            f"ours = median of {REPEATS} ticks "
            "(one remote command each, parsing and merging included).",
            table(
                [
                    "jobs",
                    "ours: tick asking sacct about every finished job",
                    "reference: ssh per job (squeue, then sacct)",
                    "ours: steady tick (finished jobs stored, never asked again)",
                    "floor: `true` on the open connection",
                    "ours vs reference",
                    "steady vs reference",
                    "ours vs floor",
                    "steady vs floor",
                ],
                rows,
            ),
        ]
    )
    print()
    print(text)
    write_results("poll", text)


if __name__ == "__main__":
    asyncio.run(main())
