"""Benchmark: one queue refresh -- ours vs the floor vs ControlMaster + squeue vs ssh per job.

Run on the sandbox (``make bench`` or ``.venv/bin/python bench/poll.py``), under the cluster
lock. For N = 1, 50, 500, 1,000 stored jobs (half live: held with ``sbatch --hold``; half
ended and stored as such) and with 0 / +20 ms injected round-trip time (a TCP proxy on
127.0.0.1 delaying every chunk by 10 ms each way, :class:`tests.latency.DelayProxy`), it
measures side by side in one run:

- **ours, paced tick** (what the TUI and ``status --watch`` do on a tick where nothing happened,
  issue 23): one :meth:`Monitor.tick` of a paced monitor -- a ``stat`` of the jobs' run-event
  files on the login host and the status.json of running jobs, no squeue (the pace is not due:
  the jobs are held, a pending job is asked about every minute or more);
- **ours, a tick that asks**: one :meth:`Monitor.tick` of an unpaced monitor -- one command on
  the connection's long-lived shell (``squeue --local -u <me> -t all``, filtered locally),
  parsing and merging included (what a paced tick costs when an event or the pace asks);
- **ours, tick after jobs finished**: the tick right after 5 % of the live jobs (at least 1, at
  most 25) were cancelled: squeue shows them ended, sacct is asked in the background (not
  awaited by the tick);
- **floor**: ``true`` on the open connection's shell -- one round trip, no server work
  (``squeue alone`` adds squeue's own time: the least any refresh can cost);
- **ControlMaster + squeue**: what a power user does instead -- an OpenSSH master connection
  and ``ssh -S sock host 'squeue -u $USER'`` per refresh (a process spawn, a channel, no
  parsing);
- **reference**: a new OpenSSH process per job running ``squeue --job=ID``, then another for
  ``sacct --job=ID`` (the reference platform's way), timed on a sample of jobs and multiplied
  by N (said so in the table).

Prints a Markdown table and whether each target of issue 14 is met (with the measured reason
where not), and writes both into bench/RESULTS.md (section "poll").
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

from _sandbox import floor_seconds, fmt_s, sandbox, table, write_results

from tao_slurm_tui.core.models import Attempt, JobRecord, TaoStatus
from tao_slurm_tui.core.quoting import join
from tao_slurm_tui.core.slurm_poll import queue_command
from tao_slurm_tui.remote.connection import Connection
from tao_slurm_tui.services.monitor import Monitor
from tao_slurm_tui.services.store import JobStore
from tests.latency import DelayProxy

SIZES = (1, 50, 500, 1000)
DELAY = 0.010
"""Seconds the proxy adds each way: +20 ms round-trip time."""
REPEATS = 11
FINISH_REPEATS = 3
REFERENCE_SAMPLE = 5


def victims_for(n: int) -> int:
    """Live jobs that finish before a 'tick after jobs finished': 5 % of N, 1 to 25."""
    return min(25, max(1, n // 20))


async def submit_held(conn: Connection, prefix: str, count: int) -> list[str]:
    """Submit ``count`` held jobs in one remote command; return their SLURM ids."""
    args = ["sbatch", "--parsable", "--hold", "-p", "polar", "-c", "1", "-o", "/dev/null"]
    loop = f"for i in $(seq 1 {count}); do " + join([*args, "-J", prefix]) + " --wrap true; done"
    result = await conn.run(loop, timeout=1200, check=True)
    return [line.split(";")[0] for line in result.stdout.split()]


async def wait_not_live(conn: Connection, ids: list[str]) -> None:
    """Wait until squeue no longer reports any of ``ids`` in a live state."""
    while True:
        result = await conn.run(
            ["squeue", "-h", "-t", "PD,R,CG,CF,S", "-j", ",".join(ids), "-o", "%i"]
        )
        if not result.stdout.strip():
            return
        await asyncio.sleep(0.5)


async def median_time(fn: Callable[[], Awaitable[object]], repeats: int = REPEATS) -> float:
    """Median wall time of ``repeats`` awaited calls."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        await fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def record(prefix: str, i: int, slurm_id: str, status: TaoStatus) -> JobRecord:
    """A stored job for ``slurm_id``."""
    return JobRecord(
        id=f"{prefix}-{i}",
        profile="bench",
        base_results_dir=sandbox.RESULTS,
        status=status,
        submitted=True,
        attempts=[Attempt(number=0, slurm_job_id=slurm_id)],
    )


class OpenSsh:
    """OpenSSH argv for the sandbox on a port (direct or through the proxy)."""

    def __init__(self, port: int, known_hosts: Path, workdir: Path) -> None:
        self.port = port
        self.known_hosts = known_hosts
        self.socket = workdir / f"cm-{port}.sock"

    def argv(self, *options: str) -> list[str]:
        return sandbox.openssh_argv(port=self.port, known_hosts=self.known_hosts, options=options)

    def run(self, command: str, *options: str) -> None:
        subprocess.run(
            [*self.argv(*options), command],
            capture_output=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
            check=True,
        )

    def start_master(self) -> None:
        """A ControlMaster in the background (what ``ControlMaster auto`` gives a power user)."""
        subprocess.run(
            self.argv("-M", "-S", str(self.socket), "-f", "-N"),
            check=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def stop_master(self) -> None:
        subprocess.run(
            [*self.argv("-S", str(self.socket), "-O", "exit")],
            capture_output=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
        )

    def controlmaster_squeue(self) -> None:
        self.run("squeue -u $USER", "-S", str(self.socket))

    def reference_per_job(self, ids: list[str]) -> float:
        """Seconds per job the reference's way: an OpenSSH process for squeue, one for sacct."""
        start = time.perf_counter()
        for job_id in ids:
            self.run(f"squeue --job={job_id}")
            self.run(f"sacct --job={job_id}")
        return (time.perf_counter() - start) / len(ids)


async def thread(fn: Callable[[], object]) -> object:
    return await asyncio.to_thread(fn)


async def paced_answer(paced: Monitor) -> None:
    """Tick until the paced monitor's last squeue answered (then its pace is not due for a
    while: the jobs are held)."""
    for _ in range(10):
        result = await paced.tick(full=True)
        if not result.warning:
            return
        await asyncio.sleep(1)
    raise RuntimeError(f"squeue kept failing: {result.warning}")


async def measure(
    conn: Connection,
    near: Connection,
    n: int,
    live: list[str],
    ended: list[str],
    victims: list[str],
    tmp: Path,
    prefix: str,
    proxy: DelayProxy | None,
    ssh: OpenSsh,
) -> dict[str, float]:
    """Steady tick and tick-after-finish for N stored jobs on ``conn`` (and, through the
    proxy, the round trips a steady tick waited for, counted at the proxy). The floor,
    squeue alone and ControlMaster + squeue are timed interleaved with the steady ticks, so
    every column of a row saw the same load."""
    profile = sandbox.sandbox_profile()
    store = JobStore(tmp / f"state-{uuid.uuid4().hex[:6]}.db")
    n_live = max(1, n // 2)
    for i, sid in enumerate(live[:n_live]):
        store.create_job(record(prefix, i, sid, TaoStatus.PENDING))
    for i, sid in enumerate(ended[: n - n_live]):
        store.create_job(record(prefix, n_live + i, sid, TaoStatus.CANCELED))
    monitor = Monitor(conn, store, "bench", profile)
    paced = Monitor(conn, store, "bench", profile, paced=True)
    await monitor.tick()
    await monitor.tick()
    await paced_answer(paced)
    times: dict[str, list[float]] = {k: [] for k in ("steady", "floor", "squeue", "cm", "paced")}
    trips = 0
    for _ in range(REPEATS):
        mark = len(proxy.directions) if proxy else 0
        start = time.perf_counter()
        await monitor.tick()
        times["steady"].append(time.perf_counter() - start)
        trips += proxy.requests(mark) if proxy else 0
        start = time.perf_counter()
        quiet = await paced.tick()
        if quiet.asked:  # squeue failed under load and the pace retried it: not a quiet tick
            await paced_answer(paced)
        else:
            times["paced"].append(time.perf_counter() - start)
        for name, fn in (
            ("floor", lambda: conn.run_framed("true")),
            ("squeue", lambda: conn.run_framed(queue_command(local=True))),
            ("cm", lambda: thread(ssh.controlmaster_squeue)),
        ):
            start = time.perf_counter()
            await fn()
            times[name].append(time.perf_counter() - start)
    after: list[float] = []
    v = victims_for(n)
    for r in range(FINISH_REPEATS):
        batch = [victims.pop() for _ in range(v)]
        for i, sid in enumerate(batch):
            store.create_job(record(f"{prefix}-v{r}", i, sid, TaoStatus.PENDING))
        await monitor.tick()
        await monitor.tick()
        await near.run(["scancel", *batch], check=True)
        await wait_not_live(near, batch)
        start = time.perf_counter()
        result = await monitor.tick()
        after.append(time.perf_counter() - start)
        assert result.accounting, "the finished jobs were not sent to the background sacct"
        await monitor.wait_followup()
    store.close()
    medians = {name: statistics.median(values) for name, values in times.items()}
    return {**medians, "after": statistics.median(after), "trips": trips / REPEATS}


async def main() -> None:
    why = sandbox.reachable()
    if why:
        raise SystemExit(f"sandbox not up: {why}")
    started = time.monotonic()
    prefix = f"bench-poll-{uuid.uuid4().hex[:6]}"
    tmp = Path(tempfile.mkdtemp(prefix="bench-poll-"))
    need_victims = 2 * FINISH_REPEATS * sum(victims_for(n) for n in SIZES)
    all_ids: list[str] = []
    # Two proxies with the same delay: OpenSSH's own traffic must not count as our round trips.
    async with DelayProxy(DELAY) as proxy, DelayProxy(DELAY) as ssh_proxy:
        near = Connection(sandbox.sandbox_profile())
        far = Connection(proxy.profile(tmp / "known_hosts"))
        ssh_proxy.profile(tmp / "known_hosts_ssh")  # trusts the host key under its port
        ssh = {
            0.0: OpenSsh(sandbox.PORT, sandbox.KNOWN_HOSTS, tmp),
            proxy.rtt: OpenSsh(ssh_proxy.port, tmp / "known_hosts_ssh", tmp),
        }
        try:
            await near.run_framed("true")
            await far.run_framed("true")
            biggest = max(SIZES)
            total = biggest + need_victims
            print(f"submitting {total} held jobs (cancelling {biggest // 2}) ...", flush=True)
            ids = await submit_held(near, prefix, total)
            all_ids += ids
            ended, rest = ids[: biggest // 2], ids[biggest // 2 :]
            live, victims = rest[: biggest // 2], rest[biggest // 2 :]
            await near.run(["scancel", *ended], check=True)
            await wait_not_live(near, ended)
            for s in ssh.values():
                # In a thread: the proxy runs on this event loop.
                await asyncio.to_thread(s.start_master)
            rows: list[dict[str, float]] = []
            for rtt, conn in ((0.0, near), (proxy.rtt, far)):
                exec_floor = await floor_seconds(conn, 15)  # `true` as a new exec
                ref = await asyncio.to_thread(ssh[rtt].reference_per_job, live[:REFERENCE_SAMPLE])
                for n in SIZES:
                    m = await measure(
                        conn,
                        near,
                        n,
                        live,
                        ended,
                        victims,
                        tmp,
                        prefix,
                        proxy if rtt else None,
                        ssh[rtt],
                    )
                    rows.append({"n": n, "rtt": rtt, "exec": exec_floor, "ref": ref * n, **m})
                    print({k: round(v, 4) for k, v in rows[-1].items()}, flush=True)
        finally:
            for s in ssh.values():
                await asyncio.to_thread(s.stop_master)
            for i in range(0, len(all_ids), 500):
                await near.run(["scancel", *all_ids[i : i + 500]])
            await near.close()
            await far.close()
    text = report(rows, time.monotonic() - started)
    print()
    print(text)
    write_results("poll", text)


def report(
    rows: list[dict[str, float]], seconds: float, load: float | None = None, when: str = ""
) -> str:
    """The table and the targets of issue 14, met or not with the measured reason."""
    lines = []
    for r in rows:
        lines.append(
            [
                f"{int(r['n']):,}",
                f"+{r['rtt'] * 1000:.0f} ms" if r["rtt"] else "0",
                fmt_s(r["paced"]),
                f"{r['cm'] / r['paced']:.1f}x faster",
                fmt_s(r["steady"]),
                fmt_s(r["after"]),
                fmt_s(r["floor"]),
                fmt_s(r["squeue"]),
                fmt_s(r["exec"]),
                fmt_s(r["cm"]),
                fmt_s(r["ref"]) + f" (from {REFERENCE_SAMPLE} jobs)",
                f"{r['steady'] / r['floor']:.1f}x",
                f"{r['after'] / r['steady']:.2f}x",
                f"{r['cm'] / r['steady']:.1f}x faster",
                f"{r['ref'] / r['steady']:,.0f}x faster",
            ]
        )
    by = {(int(r["n"]), r["rtt"] > 0): r for r in rows}
    targets: list[list[str]] = []

    def target(name: str, ok: bool, measured: str, reason: str = "") -> None:
        why = "" if ok else f" -- {reason}"
        targets.append([name, "met" if ok else "NOT met", measured + why])

    r50, r1k = by[(50, False)], by[(1000, False)]
    server = r50["squeue"] - r50["floor"]
    target(
        "steady tick <= 1.5x the one-round-trip floor at 50 jobs",
        r50["steady"] <= 1.5 * r50["floor"],
        f"{r50['steady'] / r50['floor']:.1f}x ({fmt_s(r50['steady'])} vs {fmt_s(r50['floor'])})",
        f"squeue itself takes {fmt_s(server)} on the server (squeue alone over the same shell: "
        f"{fmt_s(r50['squeue'])}); our tick is {r50['steady'] / r50['squeue']:.2f}x squeue alone",
    )
    target(
        "1,000 jobs <= 1.2x the 50-job tick",
        r1k["steady"] <= 1.2 * r50["steady"],
        f"{r1k['steady'] / r50['steady']:.2f}x ({fmt_s(r1k['steady'])} vs {fmt_s(r50['steady'])})",
        "local parsing/merging of the 1,000 stored jobs",
    )
    for n in SIZES:
        far, near = by[(n, True)], by[(n, False)]
        rtt = far["rtt"]
        extra = far["steady"] - near["steady"]
        target(
            f"+{rtt * 1000:.0f} ms RTT, {n:,} jobs: tick <= 1.2 RTT + server time",
            far["trips"] <= 1.2,
            f"{far['trips']:.2f} round trips per tick counted at the proxy, so the RTT adds "
            f"{fmt_s(far['trips'] * rtt)}; the clock says {extra * 1000:+.1f} ms vs the 0 ms "
            "tick (server time varies more than that here)",
            "more than one round trip per tick",
        )
    for n in SIZES:
        for lat in (False, True):
            r = by[(n, lat)]
            label = f"+{r['rtt'] * 1000:.0f} ms" if lat else "0 ms"
            target(
                f"{label}, {n:,} jobs: the TUI's tick no slower than ControlMaster + squeue "
                "(issue 23)",
                r["paced"] <= r["cm"],
                f"{fmt_s(r['paced'])} vs {fmt_s(r['cm'])} (it asks slurmctld only when the "
                "run events or the pace call for it)",
                "the run events' stat and status.json reads",
            )
            target(
                f"{label}, {n:,} jobs: a tick that asks faster than ControlMaster + squeue",
                r["steady"] < r["cm"],
                f"{fmt_s(r['steady'])} vs {fmt_s(r['cm'])}",
                f"our squeue alone (`--local -t all`, 12 `-O` fields, ended jobs too) takes "
                f"{fmt_s(r['squeue'])} on the shell, the power user's plain `squeue -u $USER` "
                f"with ssh spawn and channel {fmt_s(r['cm'])}; parsing and merging "
                f"{n:,} stored jobs adds {fmt_s(max(0.0, r['steady'] - r['squeue']))}",
            )
            target(
                f"{label}, {n:,} jobs: tick after jobs finished <= 2x steady",
                r["after"] <= 2 * r["steady"],
                f"{r['after'] / r['steady']:.2f}x",
                "merging the finished jobs",
            )
    load = os.getloadavg()[0] if load is None else load
    return "\n\n".join(
        [
            "## Polling (`bench/poll.py`)",
            f"Measured {when or time.strftime('%Y-%m-%d %H:%M')} on the sandbox, all rows in one "
            "run of "
            f"{seconds:.0f} s (load average {load:.1f} on {os.cpu_count()} cores from other "
            "work: absolute times are inflated, compare within a row). Half the stored jobs "
            "live (held, PENDING), half ended (stored as such); medians of "
            f"{REPEATS} ticks ({FINISH_REPEATS} for the tick after 5 % of the live jobs finished, "
            "1 to 25 jobs), each tick followed by the floor, squeue alone and ControlMaster + "
            "squeue (interleaved: the same load for every column of a row). The user's queue "
            "holds ~1,300 jobs in every row (the bench's own), so squeue's server time is the "
            "same for 1 or 1,000 stored jobs. +20 ms = a proxy adding 10 ms each way.",
            table(
                [
                    "jobs",
                    "injected RTT",
                    "ours: paced tick (the TUI's: run events, no squeue)",
                    "paced tick vs ControlMaster",
                    "ours: a tick that asks (squeue --local -u me)",
                    "ours: tick after jobs finished",
                    "floor: 1 round trip (`true` on the shell)",
                    "squeue alone on the shell",
                    "`true` as a new exec (2 round trips)",
                    "ControlMaster + `squeue -u $USER`",
                    "reference: ssh per job (squeue, sacct)",
                    "steady vs floor",
                    "after finish vs steady",
                    "asking tick vs ControlMaster",
                    "vs reference",
                ],
                lines,
            ),
            "### Targets (issues 14, 23)",
            table(["target", "", "measured"], targets),
        ]
    )


if __name__ == "__main__":
    asyncio.run(main())
