"""The user's SLURM history and what each job cost, as pure functions.

Nothing here does I/O. The history service sends :func:`history_command` (one page of one
window: one remote command, never one per job) and hands the text back to
:func:`parse_history_output`; :func:`usage_command` asks about a list of ids in one call (the
finished attempts of our own jobs); :func:`summarize` turns a window's entries into the
per-profile summary line.

sacct facts (SLURM 22.05) that shaped the parser:

- ``-P`` with our ``--delimiter`` gives one line per job allocation and one per step
  (``13.batch``, ``13.extern``, ``13.0``); ``JobIDRaw`` is a plain integer for each
  allocation, also for array tasks (``20_3`` → ``23``) and het components (``30+1`` → ``31``).
  A pending array's meta row (``20_[4-999]``) shares the raw id of its array job.
- ``TotalCPU`` is ``[D-][HH:]MM:SS.mmm``; ``MaxRSS`` only has values on step rows and carries a
  unit suffix (``1234K``, ``12.50M``, ``2G``), a bare number being bytes.
- ``Start``/``End`` are ``Unknown``/``None`` until they happen; ``State`` can carry a suffix
  (``CANCELLED by 0`` when root or slurmctld cancelled it).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from tao_slurm_tui.core.models import JobRecord
from tao_slurm_tui.core.slurm import TERMINAL_STATES, normalize_state
from tao_slurm_tui.core.slurm_poll import SEP
from tao_slurm_tui.core.slurm_text import clean_time, format_duration, parse_duration

# ----------------------------------------------------------------------------------- fields

HISTORY_FIELDS: tuple[tuple[str, str], ...] = (
    ("job_id", "JobID"),
    ("raw_id", "JobIDRaw"),
    ("name", "JobName"),
    ("work_dir", "WorkDir"),
    ("state", "State"),
    ("exit_code", "ExitCode"),
    ("partition", "Partition"),
    ("nodes", "NodeList"),
    ("elapsed_raw", "ElapsedRaw"),
    ("time_limit_raw", "TimelimitRaw"),
    ("submit_time", "Submit"),
    ("start_time", "Start"),
    ("end_time", "End"),
    ("alloc_cpus", "AllocCPUS"),
    ("alloc_tres", "AllocTRES"),
    ("total_cpu", "TotalCPU"),
    ("max_rss", "MaxRSS"),
    ("reason", "Reason"),
    ("user", "User"),
)
"""(key, sacct ``--format`` name) of every history column, in order. The job name and the
working directory are free text (tabs and newlines too: ``scontrol update JobName=...``): the
history command separates fields by a delimiter only that command knows, so a row has exactly
one delimiter less than it has fields, and joins a row's broken lines on the cluster
(:mod:`~tao_slurm_tui.core.history_query`); the free fields are not last, so a line without
a delimiter after a whole row is a message, never the rest of a name."""

KEYS = tuple(key for key, _ in HISTORY_FIELDS)
"""The history columns' keys, in order."""

FAILED_STATES: frozenset[str] = TERMINAL_STATES - {"COMPLETED"}
"""Finished states whose resources count as lost in the summary (all but COMPLETED)."""

KNOWN_STATES: frozenset[str] = TERMINAL_STATES | frozenset(
    {"PENDING", "RUNNING", "REQUEUED", "SUSPENDED", "COMPLETING", "RESIZING"}
)
"""States ``history --state`` accepts (what sacct prints, first word)."""

SHORT_LIMIT_FRACTION = 0.25
"""A completed job that used less than this share of its time limit gets the hint to ask for
less (shorter jobs backfill sooner)."""

DEFAULT_PAGE_SIZE = 200
"""Jobs per history page: one sacct call per page."""

MAX_PAGE_SIZE = 5000

# ----------------------------------------------------------------------------------- parsing

_ALLOC_ID_RE = re.compile(r"[0-9]+(?:_[0-9]+|_\[[0-9,\-%]+\]|\+[0-9]+)?(?:;\S+)?")
_STEP_ID_RE = re.compile(r"([0-9]+(?:_[0-9]+|\+[0-9]+)?)\.[A-Za-z0-9_+\-]+(?:;\S+)?")
_GPU_TRES_RE = re.compile(r"(?:^|,)gres/gpu(?::[^=,]+)?=(\d+)")
_GPU_UNTYPED_RE = re.compile(r"(?:^|,)gres/gpu=(\d+)")
_RSS_RE = re.compile(r"(\d+(?:\.\d+)?)([KMGTP]?)", re.IGNORECASE)
_RSS_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4, "P": 1024**5}
_TIME_FORMATS = ("%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M:%S")


def parse_cpu_time(text: str) -> float | None:
    """Seconds in sacct's ``TotalCPU``/``UserCPU`` (``[D-][HH:]MM:SS[.mmm]``); None for ''.

    ``00:19.876`` → 19.876, ``01:02:03`` → 3723, ``1-00:00:00`` → 86400.
    """
    whole, dot, fraction = text.strip().partition(".")
    if ":" not in whole or (dot and not fraction.isdigit()):
        return None
    seconds = parse_duration(whole)
    if seconds is None:
        return None
    return seconds + (float(f"0.{fraction}") if fraction else 0.0)


def parse_memory(text: str) -> int | None:
    """Bytes in sacct's ``MaxRSS`` (``1234K``, ``12.50M``, ``2G``; bare = bytes); None for ''."""
    match = _RSS_RE.fullmatch(text.strip())
    if not match:
        return None
    number, unit = match.groups()
    return int(float(number) * _RSS_UNITS[unit.upper()])


def format_memory(value: int | None) -> str:
    """Bytes as a short human size (``1.5 GiB``, ``820 MiB``); None → ''."""
    if value is None:
        return ""
    size, unit = float(value), "B"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            break
        size /= 1024
    return f"{size:.0f} {unit}" if unit in {"B", "KiB"} or size >= 100 else f"{size:.1f} {unit}"


def gpus_from_tres(tres: str) -> int:
    """Allocated GPUs in an ``AllocTRES`` string: ``cpu=8,gres/gpu=4,node=1`` → 4.

    The untyped ``gres/gpu=N`` is the total; without it the typed counts
    (``gres/gpu:a100=2``) are added up. No GPU entry → 0.
    """
    untyped = _GPU_UNTYPED_RE.search(tres)
    if untyped:
        return int(untyped.group(1))
    return sum(int(m) for m in _GPU_TRES_RE.findall(tres))


def parse_time(text: str) -> datetime | None:
    """A SLURM timestamp (``2026-11-30T22:31:05``) as a naive datetime in the cluster's local
    time; None for ``Unknown``/``None``/garbage."""
    value = clean_time(text)
    if not value:
        return None
    for fmt in _TIME_FORMATS:
        try:
            return datetime.strptime(value, fmt)
        except ValueError:
            continue
    return None


def _int(text: str) -> int | None:
    value = text.strip()
    return int(value) if value.isdigit() else None


@dataclass(frozen=True)
class Usage:
    """What one job used, from its sacct allocation row and its step rows."""

    elapsed_s: int | None = None
    """Wall-clock run time in seconds (None before it started)."""
    time_limit_s: int | None = None
    """The job's time limit in seconds (None: unlimited or unknown)."""
    alloc_cpus: int = 0
    gpus: int = 0
    """GPUs allocated to the whole job (all nodes), from ``AllocTRES``."""
    total_cpu_s: float | None = None
    """CPU time used by every process (user + system), in seconds."""
    peak_rss_bytes: int | None = None
    """Largest ``MaxRSS`` of the job's steps (one task's peak resident memory)."""
    queue_wait_s: int | None = None
    """Start minus submit, in seconds (None until it started)."""
    finished: bool = False
    """True when the job is in a finished state (the figures are final)."""
    completed: bool = False
    """True when it ended COMPLETED (the only end for which the time-limit hint is fair)."""

    @property
    def gpu_hours(self) -> float:
        """Allocated GPUs x elapsed, in hours (0 without GPUs or before the start)."""
        return self.gpus * (self.elapsed_s or 0) / 3600

    @property
    def cpu_hours(self) -> float:
        """Allocated CPUs x elapsed, in hours."""
        return self.alloc_cpus * (self.elapsed_s or 0) / 3600

    @property
    def cpu_efficiency(self) -> float | None:
        """TotalCPU / (AllocCPUS x elapsed), 0..1 (may pass 1 slightly on rounding); None when
        it cannot be known (no CPUs, not started, no CPU accounting)."""
        if not self.alloc_cpus or not self.elapsed_s or self.total_cpu_s is None:
            return None
        return self.total_cpu_s / (self.alloc_cpus * self.elapsed_s)

    @property
    def limit_fraction(self) -> float | None:
        """Elapsed / time limit (None when either is unknown)."""
        if not self.time_limit_s or self.elapsed_s is None:
            return None
        return self.elapsed_s / self.time_limit_s

    @property
    def hint(self) -> str:
        """Advice for the next submission ('' when there is none).

        A job that completed in under a quarter of its limit asked for too much time: the
        scheduler backfills short jobs into gaps, so a smaller limit starts sooner.
        """
        fraction = self.limit_fraction
        if not self.completed or fraction is None or fraction >= SHORT_LIMIT_FRACTION:
            return ""
        assert self.elapsed_s is not None and self.time_limit_s is not None
        suggest = suggested_limit(self.elapsed_s)
        share = "under 1%" if fraction < 0.01 else f"{fraction:.0%}"
        return (
            f"used {share} of its {format_duration(self.time_limit_s)} time limit; "
            f"ask for less (about {format_duration(suggest)}): it would start sooner"
        )

    def to_json(self) -> dict[str, Any]:
        """JSON-friendly figures (seconds, hours, fractions; None when unknown)."""
        eff = self.cpu_efficiency
        return {
            "elapsed_s": self.elapsed_s,
            "time_limit_s": self.time_limit_s,
            "limit_fraction": _round(self.limit_fraction, 4),
            "alloc_cpus": self.alloc_cpus,
            "gpus": self.gpus,
            "gpu_hours": round(self.gpu_hours, 4),
            "cpu_hours": round(self.cpu_hours, 4),
            "total_cpu_s": _round(self.total_cpu_s, 3),
            "cpu_efficiency": _round(eff, 4),
            "peak_rss_bytes": self.peak_rss_bytes,
            "queue_wait_s": self.queue_wait_s,
            "hint": self.hint,
        }


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def suggested_limit(elapsed_s: int) -> int:
    """A time limit to ask for next time: 1.5 x the run, rounded up to 15 minutes."""
    quarter = 15 * 60
    return max(quarter, math.ceil(elapsed_s * 1.5 / quarter) * quarter)


@dataclass(frozen=True)
class HistoryEntry:
    """One job allocation from sacct (array task, het component or plain job)."""

    job_id: str
    """As sacct prints it: ``13``, ``20_3``, ``30+1``, ``20_[4-999]`` (pending array)."""
    raw_id: str
    """``JobIDRaw``: the unique integer id (what scancel/sacct -j take for this row)."""
    name: str
    state: str
    """First word (``CANCELLED``)."""
    raw_state: str
    """As printed (``CANCELLED by 0``)."""
    exit_code: str = ""
    partition: str = ""
    nodes: str = ""
    submit_time: str = ""
    start_time: str = ""
    end_time: str = ""
    reason: str = ""
    user: str = ""
    work_dir: str = ""
    alloc_tres: str = ""
    usage: Usage = field(default_factory=Usage)
    steps: tuple[str, ...] = ()
    """Step ids seen (``batch``, ``extern``, ``0``)."""

    @property
    def finished(self) -> bool:
        """True when the job has ended."""
        return self.state in TERMINAL_STATES

    @property
    def cancelled_by(self) -> str:
        """The uid after ``CANCELLED by`` ('' otherwise; ``0`` = root or SLURM itself)."""
        match = re.match(r"CANCELLED by (\S+)", self.raw_state)  # (a prefix)
        return match.group(1) if match else ""

    def to_json(self) -> dict[str, Any]:
        """The ``history --json`` object of this job."""
        usage = self.usage.to_json()
        return {
            "slurm_job_id": self.job_id,
            "raw_id": self.raw_id,
            "name": self.name,
            "state": self.state,
            "raw_state": self.raw_state,
            "exit_code": self.exit_code,
            "partition": self.partition,
            "nodes": self.nodes,
            "submit": self.submit_time,
            "start": self.start_time,
            "end": self.end_time,
            "elapsed": format_duration(self.usage.elapsed_s),
            "time_limit": format_duration(self.usage.time_limit_s),
            **usage,
            "user": self.user,
            "work_dir": self.work_dir,
        }


def _split(line: str, sep: str, joiner: str) -> dict[str, str] | None:
    # One value per column, or not a row; a field's lines were joined on the cluster.
    parts = line.split(sep)
    if len(parts) != len(KEYS):
        return None
    if joiner:
        parts = [p.replace(joiner, "\n") for p in parts]
    return dict(zip(KEYS, (p.strip() for p in parts), strict=True))


def parse_entries(
    text: str, sep: str = SEP, joiner: str = ""
) -> tuple[list[HistoryEntry], list[str]]:
    """Parse ``sacct -P --format`` :data:`HISTORY_FIELDS` output (allocations and steps).

    Steps are folded into their allocation (peak memory, CPU time when the allocation row has
    none). Lines that are not rows (error messages, garbage, a short line) are returned apart;
    a step whose allocation is missing is ignored.

    Args:
        text: sacct's rows.
        sep: the field delimiter.
        joiner: the token the history command put between a field's lines ('' for none).

    Returns:
        (entries in output order, other lines)
    """
    allocs: dict[str, dict[str, str]] = {}
    steps: dict[str, list[dict[str, str]]] = {}
    messages: list[str] = []
    for line in text.split("\n"):
        if not line.strip():
            continue
        row = _split(line, sep, joiner)
        job_id = row["job_id"] if row else ""
        if row is None:
            messages.append(line.strip())
        elif _ALLOC_ID_RE.fullmatch(job_id):
            allocs.setdefault(job_id.split(";", 1)[0], row)
        elif step := _STEP_ID_RE.fullmatch(job_id):
            steps.setdefault(step.group(1), []).append(row)
        else:
            messages.append(line.strip())
    entries = [_entry(job_id, row, steps.get(job_id, [])) for job_id, row in allocs.items()]
    return entries, messages


def _entry(job_id: str, row: Mapping[str, str], steps: Sequence[Mapping[str, str]]) -> HistoryEntry:
    state = normalize_state(row["state"])
    elapsed = _int(row["elapsed_raw"])
    limit_min = _int(row["time_limit_raw"])
    submit, start = parse_time(row["submit_time"]), parse_time(row["start_time"])
    wait = int((start - submit).total_seconds()) if submit and start else None
    total_cpu = parse_cpu_time(row["total_cpu"])
    step_cpu = [c for s in steps if (c := parse_cpu_time(s["total_cpu"])) is not None]
    if step_cpu and (total_cpu is None or total_cpu < sum(step_cpu)):
        # Without accounting of the allocation itself the steps' sum is the best we have.
        total_cpu = sum(step_cpu)
    rss = [m for s in (row, *steps) if (m := parse_memory(s["max_rss"])) is not None]
    usage = Usage(
        elapsed_s=elapsed if (elapsed or start) else None,
        time_limit_s=limit_min * 60 if limit_min else None,
        alloc_cpus=_int(row["alloc_cpus"]) or 0,
        gpus=gpus_from_tres(row["alloc_tres"]),
        total_cpu_s=total_cpu,
        peak_rss_bytes=max(rss) if rss else None,
        queue_wait_s=max(0, wait) if wait is not None else None,
        finished=state in TERMINAL_STATES,
        completed=state == "COMPLETED",
    )
    return HistoryEntry(
        job_id=job_id,
        raw_id=row["raw_id"].split(";", 1)[0],
        name=row["name"],
        state=state,
        raw_state=row["state"],
        exit_code=row["exit_code"],
        partition=row["partition"],
        nodes="" if row["nodes"] in {"None assigned", "(null)"} else row["nodes"],
        submit_time=clean_time(row["submit_time"]),
        start_time=clean_time(row["start_time"]),
        end_time=clean_time(row["end_time"]),
        reason="" if row["reason"] in {"None", ""} else row["reason"],
        user=row["user"],
        work_dir=row["work_dir"],
        alloc_tres=row["alloc_tres"],
        usage=usage,
        steps=tuple(s["job_id"].split(".", 1)[1].split(";", 1)[0] for s in steps),
    )


# ----------------------------------------------------------------------------------- queries


@dataclass(frozen=True)
class HistoryQuery:
    """One page of one window of the user's history."""

    since: str = "now-7days"
    """``sacct -S`` value (see :func:`parse_since`)."""
    until: str = ""
    """``sacct -E`` value; '' = open-ended (see :func:`history_command`)."""
    states: tuple[str, ...] = ()
    """Only these states (first word), none = all."""
    name: str = ""
    """Only jobs whose name contains this (case-insensitive)."""
    before: int | None = None
    """Only jobs with ``JobIDRaw`` below this (the cursor of the next page)."""
    limit: int = DEFAULT_PAGE_SIZE
    """At most this many jobs (newest first)."""


@dataclass
class HistoryPage:
    """The parsed reply of :func:`history_command` or :func:`usage_command`."""

    entries: list[HistoryEntry] = field(default_factory=list)
    """Newest first (history) or in sacct's order (usage)."""
    total: int | None = None
    """Jobs in the window matching the filters, from this page's cursor on."""
    more: bool = False
    """True when older jobs than this page exist in the window."""
    sacct_rc: int | None = None
    messages: list[str] = field(default_factory=list)
    complete: bool = False
    """True when the closing marker arrived."""
    summary: Summary | None = None
    """Totals over the whole window, every job (first page only; None on later pages)."""

    @property
    def next_before(self) -> int | None:
        """The cursor of the next (older) page; None when this was the last."""
        ids = [int(e.raw_id) for e in self.entries if e.raw_id.isdigit()]
        return min(ids) if self.more and ids else None

    @property
    def error(self) -> str:
        """One line describing a failure ('' when the page is usable)."""
        if not self.complete:
            return "the sacct output was cut short"
        if self.sacct_rc not in (0, None):
            detail = self.messages[0] if self.messages else f"rc {self.sacct_rc}"
            return f"sacct failed: {detail}"
        return ""


# ----------------------------------------------------------------------------------- summary


@dataclass(frozen=True)
class Summary:
    """Totals over a window: the per-profile line of the history view."""

    jobs: int = 0
    finished: int = 0
    failed: int = 0
    """Finished jobs that did not complete (failed, cancelled, timed out, node failure...)."""
    gpu_hours: float = 0.0
    cpu_hours: float = 0.0
    lost_gpu_hours: float = 0.0
    lost_cpu_hours: float = 0.0
    window: str = ""
    """Words for the window (``last 7 days``)."""

    @property
    def lost_fraction(self) -> float:
        """Share of GPU-hours (CPU-hours when no job had a GPU) spent on jobs that failed or
        were cancelled."""
        if self.gpu_hours > 0:
            return self.lost_gpu_hours / self.gpu_hours
        return self.lost_cpu_hours / self.cpu_hours if self.cpu_hours > 0 else 0.0

    @property
    def text(self) -> str:
        """``last 7 days: 41 jobs, 312 GPU-hours, 18 % lost to failed or cancelled jobs``."""
        head = f"{self.window}: " if self.window else ""
        jobs = f"{self.jobs} job" + ("" if self.jobs == 1 else "s")
        if self.gpu_hours > 0:
            hours = f"{_hours(self.gpu_hours)} GPU-hours"
        else:
            hours = f"{_hours(self.cpu_hours)} CPU-hours (no GPUs)"
        lost = f"{self.lost_fraction * 100:.0f} % lost to failed or cancelled jobs"
        return f"{head}{jobs}, {hours}, {lost}"

    def to_json(self) -> dict[str, Any]:
        """JSON-friendly totals."""
        return {
            "window": self.window,
            "jobs": self.jobs,
            "finished": self.finished,
            "failed": self.failed,
            "gpu_hours": round(self.gpu_hours, 4),
            "cpu_hours": round(self.cpu_hours, 4),
            "lost_fraction": round(self.lost_fraction, 4),
            "text": self.text,
        }


def _hours(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 else f"{value:.1f}"


def summarize(entries: Iterable[HistoryEntry], window: str = "") -> Summary:
    """Totals of ``entries`` (every job of the window, not one page)."""
    jobs = finished = failed = 0
    gpu = cpu = lost_gpu = lost_cpu = 0.0
    for entry in entries:
        jobs += 1
        gpu += entry.usage.gpu_hours
        cpu += entry.usage.cpu_hours
        if entry.finished:
            finished += 1
        if entry.state in FAILED_STATES:
            failed += 1
            lost_gpu += entry.usage.gpu_hours
            lost_cpu += entry.usage.cpu_hours
    return Summary(jobs, finished, failed, gpu, cpu, lost_gpu, lost_cpu, window)


def window_words(since: str) -> str:
    """``now-7days`` → ``last 7 days``; ``midnight`` → ``today``; a date → ``since <date>``."""
    match = re.fullmatch(r"now-(\d+)(minutes|hours|days|weeks)", since)
    if match:
        number, unit = int(match.group(1)), match.group(2)
        return f"last {number} {unit[:-1] if number == 1 else unit}"
    if since == "midnight":
        return "today"
    return f"since {since}"


def links_by_slurm_id(jobs: Iterable[JobRecord]) -> dict[str, JobRecord]:
    """Our TAO records by every SLURM id they were submitted under (retries too)."""
    linked: dict[str, JobRecord] = {}
    for job in jobs:
        for attempt in job.attempts:
            if attempt.slurm_job_id:
                linked[attempt.slurm_job_id] = job
    return linked


def linked_record(entry: HistoryEntry, links: Mapping[str, JobRecord]) -> JobRecord | None:
    """The TAO record ``entry`` belongs to, if this tool submitted it."""
    return links.get(entry.raw_id) or links.get(entry.job_id)
