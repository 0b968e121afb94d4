"""Benchmark: what making the cluster's text safe to show costs (core/shown.py), side by side.

Run with ``.venv/bin/python bench/shown.py`` (no cluster needed). In one run:

1. the queue's cells of 2,000 jobs (11 each, one tick's worth): ``shown()`` on every value vs
   taking the values as they are;
2. 10,000 TAO log lines (one in ten coloured, one in a hundred with a progress bar's carriage
   returns): ``log_line()`` vs taking them as they are;
3. 100,000 log lines through the CLI's stdout wrapper (``ShownStream``) vs the bare stream,
   one line a write (as ``print`` does) and in chunks of 1,000 lines (as ``logs`` does).

Prints the time per run (best of 5), both ways, and what it adds per item.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from typing import TextIO

from tao_slurm_tui.commands.terminal import ShownStream
from tao_slurm_tui.core.shown import log_line, shown

RUNS = 5


def best(work: Callable[[], object]) -> float:
    """Seconds of the fastest of :data:`RUNS` runs."""
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def cells() -> list[str]:
    values = []
    for i in range(2000):
        values += [f"job-{i}", "Running", "RUNNING", str(100000 + i), "polar", "1x8",
                   "1:02:03/4h", "waiting for GPUs" if i % 3 else "", "12:30", str(i % 3),
                   "███░░░ 7/20"]  # fmt: skip
    return values


def log_lines() -> list[str]:
    lines = []
    for i in range(10_000):
        line = f"Epoch {i // 500:>2}/20 step {i:>5}: loss={1 / (i + 1):.4f} lr=0.0001"
        if i % 10 == 0:
            line = f"\x1b[32mINFO\x1b[0m {line}"
        if i % 100 == 0:
            line = "10%|█  |\r50%|█████  |\r" + line
        lines.append(line)
    return lines


def through(stream: TextIO, lines: list[str], chunk: int = 1) -> None:
    for start in range(0, len(lines), chunk):
        stream.write("".join(line + "\n" for line in lines[start : start + chunk]))


def main() -> None:
    values = cells()
    logs = log_lines()
    out_lines = logs * 10

    def stdout(chunk: int) -> tuple[Callable[[], object], Callable[[], object]]:
        wrapped = ShownStream(io.StringIO())
        return (
            lambda: through(wrapped, out_lines, chunk),  # type: ignore[arg-type]
            lambda: through(io.StringIO(), out_lines, chunk),
        )

    rows = [
        ("queue cells (2,000 jobs x 11)", len(values),
         lambda: [shown(v) for v in values], lambda: list(values)),
        ("log lines (10,000)", len(logs), lambda: [log_line(x) for x in logs], lambda: list(logs)),
        ("CLI stdout, a line a write (100,000)", len(out_lines), *stdout(1)),
        ("CLI stdout, 1,000 lines a write (100,000)", len(out_lines), *stdout(1000)),
    ]  # fmt: skip
    print("| what | made safe | as is | added per item |")
    print("|---|---|---|---|")
    for what, items, safe, raw in rows:
        with_shown, as_is = best(safe), best(raw)
        per_item = (with_shown - as_is) / items * 1e6
        print(
            f"| {what} | {with_shown * 1000:.1f} ms | {as_is * 1000:.1f} ms | {per_item:.2f} µs |"
        )


if __name__ == "__main__":
    main()
