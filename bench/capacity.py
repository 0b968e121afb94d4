"""Benchmark: one capacity refresh from a few nodes to 1,000 — one round trip, flat in N.

Run on the sandbox (``make bench`` or ``.venv/bin/python bench/capacity.py``). Side by side in
one run:

- **live**: :func:`fetch_capacity` on the sandbox as it is (one remote command: scontrol nodes
  and partitions, squeue, sacctmgr), over the open asyncssh connection;
- **replayed**: the live answer recorded once, grown to N = 2 … 1,000 nodes
  (:func:`tests.capacity_data.scaled_output`: every node line copied under new names, with its
  jobs), uploaded, and served by ``cat`` in place of the command — the same
  :func:`fetch_capacity` (one round trip carrying N nodes' bytes, then parsing and adding up);
- **per node**: what tools that ask node by node pay: ``scontrol show node NAME`` once per node
  over the same open connection (sampled on the live nodes, scaled to N);
- **floor**: a bare ``true`` on the open connection.

Round trips are counted by a proxy around the connection. Prints a Markdown table and writes it
into bench/RESULTS.md (section "capacity").
"""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any

from _sandbox import floor_seconds, fmt_b, fmt_s, sandbox, table, write_results

from tao_slurm_tui.core.capacity import capacity_command, parse_capacity_output
from tao_slurm_tui.core.capacity_report import build_report
from tao_slurm_tui.core.quoting import join, quote
from tao_slurm_tui.remote.connection import Connection
from tao_slurm_tui.services.capacity import fetch_capacity
from tests.capacity_data import scaled_output

SIZES = (2, 100, 1000)
REPEATS = 7
PER_NODE_SAMPLE = 10


class Counting:
    """The connection, counting round trips; optionally serving a recorded answer."""

    def __init__(self, conn: Connection, replay_path: str | None = None) -> None:
        self.conn = conn
        self.replay_path = replay_path
        self.round_trips = 0

    async def run(self, command: Any, **kwargs: Any) -> Any:
        self.round_trips += 1
        if self.replay_path is not None:
            assert command == capacity_command(), "the replay serves only the capacity command"
            return await self.conn.run(join(["cat", self.replay_path]), **kwargs)
        return await self.conn.run(command, **kwargs)

    async def upload_text(self, path: str, content: str, *, mode: int = 0o644) -> Any:
        return await self.conn.upload_text(path, content, mode=mode)


async def median_refresh(remote: Counting) -> tuple[float, float, int, int]:
    """(median refresh s, median parse+add-up s, round trips per refresh, answer bytes)."""
    times, parse_times = [], []
    size = 0
    for _ in range(REPEATS):
        before = remote.round_trips
        t0 = time.perf_counter()
        await fetch_capacity(remote)
        times.append(time.perf_counter() - t0)
        trips = remote.round_trips - before
    # Parsing alone, on the same bytes (what grows with N).
    answer = (
        await remote.conn.run(join(["cat", remote.replay_path]))
        if remote.replay_path
        else await remote.conn.run(capacity_command())
    )
    size = len(answer.stdout.encode())
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        build_report(parse_capacity_output(answer.stdout))
        parse_times.append(time.perf_counter() - t0)
    return statistics.median(times), statistics.median(parse_times), trips, size


def row(
    label: str,
    nodes: int,
    size: int,
    trips: int,
    refresh: float,
    parse: float,
    base: float,
    per_node_s: float,
) -> list[str]:
    """One table row; ``base`` is the smallest replayed refresh (the flatness reference)."""
    return [
        label,
        fmt_b(size),
        str(trips),
        fmt_s(refresh),
        fmt_s(parse),
        fmt_s(max(0.0, refresh - parse)),
        f"{parse / nodes * 1e6:.0f} µs",
        f"{parse / refresh:.0%}",
        f"{refresh / base:.1f}x" if base else "-",
        fmt_s(per_node_s * nodes),
        f"{per_node_s * nodes / refresh:.1f}x",
    ]


async def main() -> None:
    why = sandbox.reachable()
    if why:
        raise SystemExit(f"sandbox not up: {why}")
    profile = sandbox.sandbox_profile()
    rows: list[list[str]] = []
    async with Connection(profile) as conn:
        await conn.run("true")
        floor_s = await floor_seconds(conn)

        live = Counting(conn)
        live_s, live_parse, live_trips, live_bytes = await median_refresh(live)
        recorded = (await conn.run(capacity_command())).stdout
        raw = parse_capacity_output(recorded)
        names = [n.name for n in raw.nodes]
        per_node = []
        for name in (names * PER_NODE_SAMPLE)[:PER_NODE_SAMPLE]:
            t0 = time.perf_counter()
            await conn.run(join(["scontrol", "show", "node", "-o", name]))
            per_node.append(time.perf_counter() - t0)
        per_node_s = statistics.median(per_node)
        live_row = row(
            f"{len(names)} (live)",
            len(names),
            live_bytes,
            live_trips,
            live_s,
            live_parse,
            0.0,
            per_node_s,
        )
        print(live_row, flush=True)
        path = f"{sandbox.HOME}/.tao-bench-capacity.txt"
        base = 0.0
        try:
            for n in SIZES:
                answer = scaled_output(recorded, n)
                nodes = len(parse_capacity_output(answer).nodes)
                await conn.upload_text(path, answer)
                replay = Counting(conn, path)
                ours, parse_s, trips, size = await median_refresh(replay)
                base = base or ours
                rows.append(
                    row(f"{nodes} (replayed)", nodes, size, trips, ours, parse_s, base, per_node_s)
                )
                print(rows[-1], flush=True)
        finally:
            await conn.run(f"rm -f {quote(path)}")
    rows.append(live_row)
    text = "\n\n".join(
        [
            "## Capacity refresh (`bench/capacity.py`)",
            f"Measured {time.strftime('%Y-%m-%d %H:%M')} on the sandbox, all rows in one run; "
            f"median of {REPEATS} refreshes each (`fetch_capacity`: the remote command, "
            "parsing and adding up). Replayed rows: the live answer grown to N nodes and served "
            "by `cat` in place of the command (same bytes a cluster of that size sends, with "
            "the recording's jobs copied along). Parsing + adding up: `parse_capacity_output` "
            "and `build_report` alone on the same bytes; the round trip is the rest. Per node: "
            f"`scontrol show node -o NAME` per node, median of {PER_NODE_SAMPLE} calls on the "
            f"live nodes times N. Floor (`true` on the open connection): {fmt_s(floor_s)}.",
            table(
                [
                    "nodes",
                    "answer",
                    "round trips",
                    "ours: one refresh",
                    "parsing + adding up",
                    "round trip (the rest)",
                    "parsing per node",
                    "parsing share",
                    "refresh vs 2 nodes",
                    "per node: scontrol per node",
                    "per node vs ours",
                ],
                rows,
            ),
            "Notes: every refresh is one round trip at every size. The replayed rows skip the "
            "tools and show what grows with N: the bytes (~1 KiB a node: `scontrol show node "
            "-o` prints some 40 fields, a dozen are read) and parsing them. The live refresh is "
            "bound by the tools, not the transport: the sections run side by side and "
            "`sacctmgr` (~0.25 s a call on the sandbox's slurmdbd) is the longest. Before the "
            "single-pass parser (2026-11-30, same machine) parsing + adding up took 349 ms at "
            "999 nodes (~0.35 ms a node): each node line was split on every `Key=`, each job "
            "built a frozen dataclass and each partition re-scanned every node and job.",
        ]
    )
    print()
    print(text)
    write_results("capacity", text)


if __name__ == "__main__":
    asyncio.run(main())
