"""Benchmark: one capacity refresh from a few nodes to 1,000 — one round trip, flat in N.

Run on the sandbox (``make bench`` or ``.venv/bin/python bench/capacity.py``). Side by side in
one run:

- **live**: :func:`fetch_capacity` on the sandbox as it is (one remote command: scontrol nodes
  and partitions, squeue, sacctmgr), over the open asyncssh connection;
- **replayed**: the live tools' output recorded once (``scontrol show node -o`` in full), grown
  to N = 2 … 1,000 nodes (:func:`tests.capacity_data.scaled_output`: every node line copied
  under new names, with its jobs), uploaded section by section, and served by ``cat`` in place
  of each tool inside the same capacity command (markers, the node-line reduction on the login
  host) — the same :func:`fetch_capacity` (one round trip, then parsing and adding up);
- **replayed at the live tools' pace**: the same, each ``cat`` after a ``sleep`` as long as its
  live tool takes alone (sacctmgr's quarter of a second does not depend on the node count);
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

from tao_slurm_tui.core.capacity import parse_capacity_output, parse_job_line, parse_node_line
from tao_slurm_tui.core.capacity_command import (
    MARK,
    Section,
    capacity_command,
    capacity_tools,
    split_sections,
)
from tao_slurm_tui.core.capacity_report import build_report
from tao_slurm_tui.core.quoting import join, quote
from tao_slurm_tui.remote.connection import Connection
from tao_slurm_tui.services.capacity import fetch_capacity
from tests.capacity_data import scaled_output

SIZES = (2, 100, 1000, 5000)
PACED_SIZES = (2, 1000, 5000)
REPEATS = 11
PER_NODE_SAMPLE = 10


class Counting:
    """The connection, counting round trips; optionally replaying recorded tool output."""

    def __init__(self, conn: Connection, sources: dict[str, str] | None = None) -> None:
        self.conn = conn
        self.sources = sources
        self.round_trips = 0

    @property
    def command(self) -> str:
        """The capacity command as this connection sends it."""
        return capacity_command(self.sources)

    async def run(self, command: Any, **kwargs: Any) -> Any:
        self.round_trips += 1
        if self.sources is not None:
            assert command == capacity_command(), "the replay serves only the capacity command"
            return await self.conn.run(self.command, **kwargs)
        return await self.conn.run(command, **kwargs)

    async def upload_text(self, path: str, content: str, *, mode: int = 0o644) -> Any:
        return await self.conn.upload_text(path, content, mode=mode)


async def tool_seconds(conn: Connection, runs: int = 5) -> dict[str, float]:
    """Each live tool of the capacity command, alone on the login host: median seconds."""
    tools = capacity_tools()
    timed = "; ".join(
        f"s=$(date +%s%N); {{ {cmd}; }} >/dev/null 2>&1; echo {name} $(( $(date +%s%N) - s ))"
        for name, cmd in tools.items()
    )
    samples: dict[str, list[float]] = {name: [] for name in tools}
    for _ in range(runs):
        for line in (await conn.run(timed)).stdout.splitlines():
            name, ns = line.split()
            samples[name].append(int(ns) / 1e9)
    return {name: statistics.median(values) for name, values in samples.items()}


def clear_line_caches() -> None:
    """Forget every parsed line (a first refresh)."""
    parse_node_line.cache_clear()
    parse_job_line.cache_clear()


async def median_refresh(remote: Counting) -> tuple[float, float, float, float, int, int]:
    """(median refresh s, login host alone s, cold parse+add-up s, warm parse+add-up s, round
    trips, bytes).

    Cold: the line caches emptied before each parse (a first refresh, or every line changed);
    warm: the same answer again (a refresh where no node and no job changed). Login host
    alone: the same command with its output thrown away there (what the tools, the reduction
    and the shell cost, without the transfer and the parsing).
    """
    times, cold, warm, remote_only = [], [], [], []
    clear_line_caches()
    for _ in range(REPEATS):
        before = remote.round_trips
        t0 = time.perf_counter()
        await fetch_capacity(remote)
        times.append(time.perf_counter() - t0)
        trips = remote.round_trips - before
    answer = (await remote.conn.run(remote.command)).stdout
    size = len(answer.encode())
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        await remote.conn.run(f"{{ {remote.command}; }} >/dev/null")
        remote_only.append(time.perf_counter() - t0)
    for _ in range(REPEATS):
        clear_line_caches()
        t0 = time.perf_counter()
        build_report(parse_capacity_output(answer))
        cold.append(time.perf_counter() - t0)
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        build_report(parse_capacity_output(answer))
        warm.append(time.perf_counter() - t0)
    median = statistics.median
    return median(times), median(remote_only), median(cold), median(warm), trips, size


def row(
    label: str,
    nodes: int,
    size: int,
    trips: int,
    figures: tuple[float, float, float, float],
    base: tuple[float, float] | None,
    per_node_s: float,
) -> list[str]:
    """One table row; ``base`` is the smallest replayed row's (refresh, login host alone): the
    flatness reference."""
    refresh, remote_only, cold, warm = figures
    return [
        label,
        fmt_b(size),
        str(trips),
        fmt_s(refresh),
        f"{(refresh - base[0]) * 1e3:+.1f} ms" if base else "-",
        f"{refresh / base[0]:.2f}x" if base else "-",
        fmt_s(remote_only),
        f"{(remote_only - base[1]) * 1e3:+.1f} ms" if base else "-",
        fmt_s(cold),
        f"{cold / nodes * 1e6:.0f} µs",
        fmt_s(warm),
        f"{warm / refresh:.0%}",
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
        live_s, live_remote, live_cold, live_warm, live_trips, live_bytes = await median_refresh(
            live
        )
        # The tools' own output, recorded once: the node section as scontrol prints it.
        recorded = (await conn.run(capacity_command({"nodes": "scontrol show node -o"}))).stdout
        sections = split_sections(recorded)
        sections["nodes"] = Section((await conn.run("scontrol show node -o")).stdout, 0)
        recorded = "".join(f"{MARK}{k}\n{v.text}\n{MARK}rc {v.rc}\n" for k, v in sections.items())
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
            (live_s, live_remote, live_cold, live_warm),
            None,
            per_node_s,
        )
        print(live_row, flush=True)
        pace = await tool_seconds(conn)
        print("live tools alone:", {k: fmt_s(v) for k, v in pace.items()}, flush=True)
        folder = f"{sandbox.HOME}/.tao-bench-capacity"
        base: tuple[float, float] | None = None
        paced_base: tuple[float, float] | None = None
        paced_rows: list[list[str]] = []
        try:
            await conn.run(join(["mkdir", "-p", folder]))
            for n in SIZES:
                answer = split_sections(scaled_output(recorded, n))
                sources = {}
                for name, section in answer.items():
                    path = f"{folder}/{name}"
                    await conn.upload_text(path, section.text + "\n")
                    sources[name] = join(["cat", path])
                nodes = len(parse_capacity_output(scaled_output(recorded, n)).nodes)

                async def replayed(
                    label: str,
                    sources: dict[str, str],
                    base: tuple[float, float] | None,
                    nodes: int,
                ) -> tuple[list[str], tuple[float, float]]:
                    """One replayed row, and the base it was measured against (its own when
                    it is the first of its kind)."""
                    figures = await median_refresh(Counting(conn, sources))
                    refresh, remote_only, cold, warm, trips, size = figures
                    base = base or (refresh, remote_only)
                    timings = (refresh, remote_only, cold, warm)
                    line = row(f"{nodes} ({label})", nodes, size, trips, timings, base, per_node_s)
                    print(line, flush=True)
                    return line, base

                line, base = await replayed("replayed", sources, base, nodes)
                rows.append(line)
                if n not in PACED_SIZES:
                    continue
                # The same answer, each tool taking as long as it takes live (sacctmgr's quarter
                # of a second is the same for 2 nodes or 1,000).
                slowed = {k: f"sleep {pace[k]:.3f}; {cmd}" for k, cmd in sources.items()}
                line, paced_base = await replayed(
                    "replayed at the live tools' pace", slowed, paced_base, nodes
                )
                paced_rows.append(line)
        finally:
            await conn.run(f"rm -rf {quote(folder)}")
    rows += paced_rows
    rows.append(live_row)
    paced = ", ".join(f"{name} {fmt_s(seconds)}" for name, seconds in pace.items())
    text = "\n\n".join(
        [
            "## Capacity refresh (`bench/capacity.py`)",
            f"Measured {time.strftime('%Y-%m-%d %H:%M')} on the sandbox, all rows in one run; "
            f"median of {REPEATS} refreshes each (`fetch_capacity`: the remote command, "
            "parsing and adding up). Replayed rows: the live tools' output (`scontrol show node "
            "-o` in full) grown to N nodes, each section served by `cat` in place of its tool "
            "inside the same command (the node lines are reduced on the login host as live), "
            "the recording's jobs copied along. Parsing + adding up: `parse_capacity_output` "
            "and `build_report` alone on the answer: cold (line caches emptied: a first "
            "refresh, or every node and job changed) and warm (nothing changed: the steady "
            "state of a refresh every few seconds); the warm share is of one refresh. Per node: "
            f"`scontrol show node -o NAME` per node, median of {PER_NODE_SAMPLE} calls on the "
            f"live nodes times N. Floor (`true` on the open connection): {fmt_s(floor_s)}.",
            table(
                [
                    "nodes",
                    "answer",
                    "round trips",
                    "ours: one refresh",
                    "growth over 2 nodes",
                    "refresh vs 2 nodes",
                    "of it: login host alone",
                    "its growth",
                    "parsing + adding up, cold",
                    "cold per node",
                    "warm",
                    "warm share of the refresh",
                    "per node: scontrol per node",
                    "per node vs ours",
                ],
                rows,
            ),
            "Notes: every refresh is one round trip at every size, and asks SLURM nothing per "
            "node. Two replays of the same answers: with the tools instant (`cat` in their "
            "place: only our own work is left, so it shows what grows with N) and at the live "
            "tools' pace (each `cat` after a `sleep` as long as that tool takes alone on the "
            f"sandbox: {paced}; the same at every N, since a node count changes nothing for "
            "sacctmgr, though a real slurmctld would take longer to list 5,000 nodes). What "
            "grows is ours, 10-15 µs a node: on the login host the reduction of ~1 KiB of "
            "`scontrol show node -o` a node to the dozen fields read (~190 bytes; mawk where "
            "the host has it); here the bytes, then parsing and adding up. The reduction reads "
            "the node lines as scontrol prints them, in the same background job, so at the "
            "live pace it runs while sacctmgr does and the login host's growth is nil: the "
            "refresh a researcher waits for is flat (its growth is the transfer and the "
            "parse). At a site without accounting nothing slower runs beside it: scontrol "
            "and squeue are then the slowest tools (and grow with the cluster themselves), "
            "and our work shows as in the instant replay. With the tools instant our work is "
            "visible against the command's fixed "
            "cost (temporary files, six tools side by side, the base64 wrapper every login "
            "shell reads alike). Adding up: node and job lines are remembered by their text, "
            "a node's figures by the node; a partition counts its nodes by shape (nodes alike "
            "but for the name) and adds each shape up once, and jobs are added up by kind. "
            "Earlier runs on this machine: 2026-12-01 02:22, 1,000 nodes took 2.9x the 2-node "
            "refresh (gawk after the tools, every figure worked out again: warm 62 ms); "
            "2026-11-30, parsing + adding up took 349 ms at 999 nodes. This 2-core machine is "
            "shared: absolute times move by up to 2x between runs; the ratios within one run "
            "hold.",
        ]
    )
    print()
    print(text)
    write_results("capacity", text)


if __name__ == "__main__":
    asyncio.run(main())
