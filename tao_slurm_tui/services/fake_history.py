"""The fake back end's SLURM history: deterministic sacct lines, parsed by the real parser.

About 1,000 jobs over the last two weeks of the fake's frozen clock: the seeded TAO jobs under
their SLURM ids (so they link to their records), a colleague-style mix of foreign jobs (CPU
pre-processing, GPU sweeps, an array, jobs that failed, timed out, were cancelled or lost a
node), with realistic efficiency and memory. Paging and filters follow the remote command's
rules (newest first by raw id, cursor, state, name), so screens behave as on a cluster.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from tao_slurm_tui.core.accounting import (
    FAILED_STATES,
    HistoryEntry,
    HistoryPage,
    HistoryQuery,
    parse_entries,
    summarize,
    window_words,
)
from tao_slurm_tui.core.job_output import JobOutput, default_output_path
from tao_slurm_tui.core.models import JobRecord
from tao_slurm_tui.core.slurm_poll import SEP
from tao_slurm_tui.core.slurm_text import format_duration

FAKE_HISTORY_SIZE = 1000
"""Foreign jobs the fake history holds (SLURM ids 1..1000; the seeded TAO jobs come after)."""

_NAMES = ("preprocess-coco", "sweep-lr", "eval-ckpt", "notebook", "export-onnx", "rsync-data")
_STATES = (
    ("COMPLETED", "0:0"),
    ("COMPLETED", "0:0"),
    ("COMPLETED", "0:0"),
    ("COMPLETED", "0:0"),
    ("FAILED", "1:0"),
    ("CANCELLED by 4242", "0:15"),
    ("TIMEOUT", "0:15"),
    ("COMPLETED", "0:0"),
    ("COMPLETED", "0:0"),
    ("COMPLETED", "0:0"),
    ("COMPLETED", "0:0"),
    ("NODE_FAIL", "0:0"),
    ("COMPLETED", "0:0"),
    ("OUT_OF_MEMORY", "0:125"),
)


@dataclass(frozen=True)
class _Job:
    """What the fake knows about one allocation: becomes its sacct line and its batch step."""

    job_id: str
    raw: str
    state: str
    code: str
    partition: str
    node: str
    elapsed: int
    limit_min: int
    times: tuple[str, str, str]
    cpus: int
    tres: str
    cpu_time: str
    rss: str
    work_dir: str
    name: str

    def lines(self) -> list[str]:
        alloc = (self.job_id, self.raw, self.state, self.code, self.partition, self.node,
                 self.elapsed, self.limit_min, *self.times, self.cpus, self.tres, self.cpu_time,
                 "", "None", "researcher", self.work_dir, self.name)  # fmt: skip
        step = (f"{self.job_id}.batch", f"{self.raw}.batch", self.state.split()[0], self.code, "",
                self.node, self.elapsed, "", *self.times, self.cpus, self.tres, self.cpu_time,
                self.rss, "", "", "", "batch")  # fmt: skip
        return [SEP.join(str(f) for f in alloc), SEP.join(str(f) for f in step)]


def _local(now: float) -> datetime:
    # The cluster's local time, as sacct prints it; UTC so the fake is the same everywhere.
    return datetime.fromtimestamp(int(now), tz=UTC).replace(tzinfo=None)


def _ts(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S")


def fake_sacct_text(now: float, jobs: list[JobRecord], size: int = FAKE_HISTORY_SIZE) -> str:
    """sacct ``-P`` lines (allocations and steps) for the fake history."""
    end_of_window = _local(now)
    lines: list[str] = []
    for i in range(size):
        raw = i + 1
        state, code = _STATES[(i * 3) % len(_STATES)]
        name = _NAMES[(i * 5) % len(_NAMES)]
        gpus = (0, 1, 4, 8)[(i * 3) % 4] if name not in {"rsync-data", "notebook"} else 0
        cpus = max(2, gpus * 8)
        limit_min = (30, 60, 240, 480)[i % 4]
        elapsed = max(20, (limit_min * 60 * ((i * 37) % 100)) // 100)
        if state == "TIMEOUT":
            elapsed = limit_min * 60
        efficiency = 0.15 + ((i * 53) % 80) / 100
        submit = end_of_window - timedelta(minutes=(size - i) * 19 + 600)
        start = submit + timedelta(seconds=(i * 97) % 5400)
        end = start + timedelta(seconds=elapsed)
        node = f"gpu-a{(i % 8) + 1:02d}" if gpus else f"cpu-{(i % 4) + 1:02d}"
        tres = f"billing={cpus},cpu={cpus}" + (f",gres/gpu={gpus}" if gpus else "") + ",node=1"
        cpu_time = format_duration(int(cpus * elapsed * efficiency)) + ".000"
        rss = f"{(i * 131) % 60000 + 800}M"
        job_id = f"301_{i - 300}" if 300 <= i < 400 else str(raw)
        times = (_ts(submit), _ts(start), _ts(end))
        lines += _Job(
            job_id, str(raw), state, code, "polar" if gpus else "batch", node, elapsed,
            limit_min, times, cpus, tres, cpu_time, rss, "/lustre/fsw/users/researcher/work",
            name,
        ).lines()  # fmt: skip
    for job in jobs:
        for attempt in job.attempts:
            if not attempt.slurm_job_id or not attempt.start_time:
                continue
            begin = datetime.fromisoformat(attempt.start_time)
            queued = datetime.fromisoformat(attempt.submit_time or attempt.start_time)
            ended = datetime.fromisoformat(attempt.end_time) if attempt.end_time else None
            elapsed = max(0, int(((ended or end_of_window) - begin).total_seconds()))
            gpus = int(job.spec.get("num_gpus", 0)) * int(job.spec.get("num_nodes", 1))
            cpus = int(job.spec.get("cpus_per_task", 1)) * int(job.spec.get("num_nodes", 1))
            limit_min = int(float(job.spec.get("time_hours", 4)) * 60)
            cpu_time = format_duration(int(cpus * elapsed * 0.62)) + ".000"
            tres = f"billing={cpus},cpu={cpus},gres/gpu={gpus},node={job.spec.get('num_nodes', 1)}"
            times = (_ts(queued), _ts(begin), _ts(ended) if ended else "Unknown")
            lines += _Job(
                attempt.slurm_job_id, attempt.slurm_job_id, attempt.state,
                attempt.exit_code or "0:0", attempt.partition, attempt.nodes, elapsed, limit_min,
                times, cpus, tres, cpu_time, "21480M", job.base_results_dir, job.id,
            ).lines()  # fmt: skip
    return "\n".join(lines) + "\n"


class FakeHistory:
    """The fake's history, paged and filtered like :func:`history_command` does remotely."""

    def __init__(self, now: float, jobs: list[JobRecord]) -> None:
        entries, _ = parse_entries(fake_sacct_text(now, jobs))
        self.entries = sorted(entries, key=lambda e: -int(e.raw_id))
        """Every entry, newest first."""
        self.now = _local(now)
        self.pages = 0
        """Pages served (the fake's round trips)."""

    def _since(self, since: str) -> datetime:
        units = {"minutes": 60, "hours": 3600, "days": 86400, "weeks": 604800}
        if since.startswith("now-"):
            number = int("".join(ch for ch in since[4:] if ch.isdigit()))
            unit = since[4 + len(str(number)) :]
            return self.now - timedelta(seconds=number * units[unit])
        if since == "midnight":
            return self.now.replace(hour=0, minute=0, second=0)
        return datetime.fromisoformat(since)

    def page(self, query: HistoryQuery) -> HistoryPage:
        """One page of the window (state/name filters, cursor, newest first)."""
        self.pages += 1
        start = self._since(query.since)
        window = [
            e for e in self.entries if not e.end_time or datetime.fromisoformat(e.end_time) >= start
        ]
        matching = [
            e
            for e in window
            if (not query.states or e.state in query.states)
            and (not query.name or query.name.lower() in e.name.lower())
            and (query.before is None or int(e.raw_id) < query.before)
        ]
        summary = None
        if query.before is None:
            summary = replace(summarize(window), window=window_words(query.since))
        return HistoryPage(
            entries=matching[: query.limit],
            total=len(matching),
            more=len(matching) > query.limit,
            sacct_rc=0,
            complete=True,
            summary=summary,
        )

    def output(self, entry: HistoryEntry) -> JobOutput:
        """A plausible StdOut for a foreign job; a failed one also wrote a traceback."""
        path = default_output_path(entry)
        lines = [f"[{entry.name}] step {n}/40 loss={2.0 / (n + 1):.4f}" for n in range(40)]
        if entry.state in FAILED_STATES:
            lines += [
                "Traceback (most recent call last):",
                '  File "train.py", line 88, in <module>',
                "RuntimeError: CUDA error: an illegal memory access was encountered",
            ]
        return JobOutput(
            stdout_path=path,
            stderr_path=path,
            stdout_readable=True,
            stderr_readable=True,
            source="default",
            stdout="\n".join(lines),
        )
