"""Shared bits of the benchmarks: the sandbox profile and the reference's OpenSSH-per-call way."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests import sandbox  # noqa: E402

SSH_ARGV = sandbox.openssh_argv()
"""A fresh OpenSSH client process per call, as the reference platform does it."""


def openssh(command: str, timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    """Run ``command`` over a new OpenSSH connection (the reference's way)."""
    return subprocess.run(
        [*SSH_ARGV, command], capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL
    )


def timed(fn, *args, **kwargs):  # type: ignore[no-untyped-def]
    """(seconds, result) of one call."""
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    return time.perf_counter() - start, result


def fmt_s(seconds: float) -> str:
    """Seconds in a readable unit."""
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds:.2f} s"


def fmt_b(n: float) -> str:
    """Bytes in a readable unit."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def table(headers: list[str], rows: list[list[str]]) -> str:
    """A Markdown table."""
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def write_results(section: str, text: str) -> None:
    """Replace one section (between its markers) of bench/RESULTS.md; other sections kept."""
    results = REPO / "bench" / "RESULTS.md"
    begin, end = f"<!-- {section}:begin -->", f"<!-- {section}:end -->"
    current = results.read_text() if results.exists() else "# Benchmark results\n"
    block = f"{begin}\n{text}\n{end}"
    if begin in current and end in current:
        head, _, rest = current.partition(begin)
        _, _, tail = rest.partition(end)
        current = head + block + tail
    else:
        current = current.rstrip("\n") + "\n\n" + block + "\n"
    results.write_text(current)


async def floor_seconds(conn: Any, runs: int = 20) -> float:
    """Median time of a bare ``true`` on the open connection: the cost of any round trip."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        await conn.run("true")
        times.append(time.perf_counter() - start)
    return statistics.median(times)
