"""Soak benchmark (not in CI): the product's own services for 30 minutes on the sandbox.

Run on the sandbox under the SHARED cluster lock (other work may run beside it)::

    flock -s /tmp/tao-cluster.lock .venv/bin/python bench/soak.py            # 100 jobs, 30 min
    flock -s /tmp/tao-cluster.lock .venv/bin/python bench/soak.py --minutes 2 --jobs 10 --no-write

What runs is what the TUI runs: one :class:`~tao_slurm_tui.services.cluster.ClusterBackend`
(its one SSH connection, the monitor, the submitter, the store) polled the way the queue
screen polls it (``refresh()`` then ``followup()``, every ``poll_interval`` = 2 s, backing off
while the cluster cannot be reached), while a driver submits jobs through ``backend.submit`` and
cancels some through ``backend.cancel`` -- as the composer and the queue's cancel key do, side
by side with the poller. An operator (a second connection, not the product's) requeues some
running jobs with ``scontrol requeue``.

The jobs are short sleeps on 1 CPU submitted at an even pace (the last one at 95 % of the run),
so only a handful of ours are live at a time and the three nodes stay free for other work. Each
job gets a fate at random: *ok* (exits 0), *fail* (exits 3: an application error, not retried),
*infra* (its first attempt prints an NCCL error and exits 1: the monitor resubmits it, the
second attempt succeeds), *requeue* (``scontrol requeue`` once while running) or *cancel*
(``backend.cancel`` while pending or running).

Every ``--sample`` seconds it samples the process: RSS, open file descriptors, SSH channels open
on the product's connection (asyncssh's own table), asyncio tasks, threads, Python objects, and
the tick times since the last sample -- and, interleaved, squeue alone on the same connection
(so a loaded machine shows in both). At the end it prints the start and end figures side by
side with the ratio end/start (start = the median of the samples after a warm-up of 5 % of the
run, over 10 % of it; end = the median over the last 10 %), every error, each job's outcome
against its fate, and whether any SLURM job of ours is left (an orphan). Without ``--no-write``
it writes them to bench/RESULTS.md (section "soak").
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import random
import statistics
import tempfile
import threading
import time
import traceback
import tracemalloc
import uuid
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from _sandbox import fmt_b, fmt_s, sandbox, table, write_results

from tao_slurm_tui.config import Config
from tao_slurm_tui.core.models import JobRecord, TaoStatus
from tao_slurm_tui.core.quoting import quote
from tao_slurm_tui.core.slurm_poll import queue_command
from tao_slurm_tui.core.spec import SpecDraft
from tao_slurm_tui.errors import TaoError
from tao_slurm_tui.remote.connection import Connection
from tao_slurm_tui.services.backend import SubmitStage
from tao_slurm_tui.services.cluster import ClusterBackend
from tao_slurm_tui.services.store import JobStore

IMAGE = "nvcr.io/nvidia/tao/tao-toolkit:6.26.3-pyt"
FATES = {"ok": 30, "fail": 15, "infra": 15, "requeue": 20, "cancel": 20}
"""Relative weights of each job's fate."""
CONCURRENCY = 4
"""Jobs of ours live at a time on average (the sleeps are sized for it)."""
MAX_BACKOFF = 60.0
FLAT = 0.10
"""End within 10 % of start counts as flat."""


@dataclass
class Sample:
    """One look at the process."""

    t: float
    """Seconds since the soak started."""
    rss: int
    fds: int
    channels: int
    tasks: int
    threads: int
    objects: int
    tick: float | None
    """Median tick (refresh) time since the previous sample."""
    squeue: float | None
    """Median time of squeue alone on the product's connection since the previous sample."""
    ticks: int
    live: int
    stored: int
    load: float
    types: dict[str, int] = field(default_factory=dict)
    """Live objects per type name (gc), for what grows."""


@dataclass
class Plan:
    """What the driver does to one job."""

    name: str
    fate: str
    seconds: int
    submitted_at: float = 0.0
    act_after: float = 0.0
    done: str = ""
    """What the driver did: 'canceled', 'requeued', '' (nothing)."""


@dataclass
class Soak:
    """State of one soak run."""

    backend: ClusterBackend
    operator: Connection
    started: float
    deadline: float
    rng: random.Random
    plans: dict[str, Plan] = field(default_factory=dict)
    samples: list[Sample] = field(default_factory=list)
    ticks: list[float] = field(default_factory=list)
    squeues: list[float] = field(default_factory=list)
    errors: list[tuple[float, str, str]] = field(default_factory=list)
    warnings: Counter[str] = field(default_factory=Counter)
    stopping: bool = False
    total_ticks: int = 0
    snapshot: tracemalloc.Snapshot | None = None
    types_from: float = 0.0
    """The first sample at or after this time keeps its type counts (the growth's start)."""
    types_start: Sample | None = None

    def now(self) -> float:
        return time.monotonic() - self.started

    def error(self, where: str, exc: BaseException) -> None:
        text = (
            str(exc)
            if isinstance(exc, TaoError)
            else "".join(traceback.format_exception_only(type(exc), exc)).strip()
        )
        self.errors.append((self.now(), where, text))
        print(f"[{self.now():7.1f}s] ERROR in {where}: {text}", flush=True)


# ----------------------------------------------------------------------------- process figures


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def ssh_channels(backend: ClusterBackend) -> int:
    """Channels open on the product's SSH connection (asyncssh's channel table)."""
    conn = backend.conn._conn
    if conn is None:
        return 0
    return len(getattr(conn, "_channels", {}))


def type_counts() -> dict[str, int]:
    gc.collect()  # garbage not yet collected is no leak
    return dict(Counter(type(o).__qualname__ for o in gc.get_objects()))


def sample(soak: Soak) -> Sample:
    ticks, soak.ticks = soak.ticks, []
    squeues, soak.squeues = soak.squeues, []
    types = type_counts()  # before this function holds records of its own
    jobs = soak.backend.jobs()
    return Sample(
        t=soak.now(),
        rss=rss_bytes(),
        fds=open_fds(),
        channels=ssh_channels(soak.backend),
        tasks=len(asyncio.all_tasks()),
        threads=threading.active_count(),
        types=types,
        objects=sum(types.values()),
        tick=statistics.median(ticks) if ticks else None,
        squeue=statistics.median(squeues) if squeues else None,
        ticks=len(ticks),
        live=sum(1 for j in jobs if not j.status.terminal),
        stored=len(jobs),
        load=os.getloadavg()[0],
    )


# ----------------------------------------------------------------------------- the three actors


async def poller(soak: Soak) -> None:
    """The queue screen's poll loop: refresh, then the background sacct's answer, re-armed."""
    backend = soak.backend
    failures = 0
    while not soak.stopping:
        delay = backend.poll_interval
        start = time.perf_counter()
        try:
            await backend.refresh()
        except TaoError as exc:
            failures += 1
            delay = min(MAX_BACKOFF, backend.poll_interval * 2**failures)
            soak.error("refresh", exc)
        else:
            soak.ticks.append(time.perf_counter() - start)
            soak.total_ticks += 1
            failures = 0
            if backend.poll_warning:
                soak.warnings[backend.poll_warning] += 1
            try:
                if await backend.followup():
                    delay = 0.05
            except TaoError as exc:
                soak.error("followup", exc)
            if soak.total_ticks % 5 == 0:
                # squeue alone on the same connection, right after a tick: the load's share.
                start = time.perf_counter()
                try:
                    await backend.conn.run_framed(queue_command())
                    soak.squeues.append(time.perf_counter() - start)
                except TaoError as exc:
                    soak.error("squeue alone", exc)
        await asyncio.sleep(delay)


def command_for(plan: Plan, run_id: str) -> str:
    """The job's bash command for its fate."""
    sleep = f"sleep {plan.seconds}"
    if plan.fate == "fail":
        return f"{sleep}; echo 'soak: an application error' >&2; exit 3"
    if plan.fate == "infra":
        mark = f"{sandbox.RESULTS}/soak-marks/{run_id}/{plan.name}"
        return (
            f"if [ -e {quote(mark)} ]; then {sleep}; else mkdir -p {quote(os.path.dirname(mark))}"
            f" && touch {quote(mark)}; sleep {max(5, plan.seconds // 3)}; "
            "echo 'RuntimeError: NCCL error in: soak.cpp:1, unhandled system error' >&2; "
            "exit 1; fi"
        )
    return sleep


async def driver(soak: Soak, jobs: int, run_id: str, span: float) -> None:
    """Submit ``jobs`` jobs through the product at an even pace over ``span`` seconds."""
    spacing = span / jobs
    mean = max(15.0, CONCURRENCY * spacing)
    names, weights = zip(*FATES.items(), strict=True)
    for i in range(jobs):
        at = i * spacing
        if at > soak.now():
            await asyncio.sleep(at - soak.now())
        if soak.stopping:
            return
        fate = soak.rng.choices(names, weights)[0]
        seconds = int(soak.rng.uniform(0.5 * mean, 1.5 * mean))
        plan = Plan(name=f"soak-{run_id}-{i:03d}", fate=fate, seconds=seconds)
        spec: dict[str, Any] = {
            "name": plan.name,
            "image": IMAGE,
            "command": command_for(plan, run_id),
            "num_gpus": 0,
            "cpus_per_task": 1,
            "time_hours": 0.25,
            "use_sqsh": False,
            "container_mounts": [],
        }

        def progress(stage: SubmitStage, detail: str) -> None:
            pass

        try:
            # As the CLI's submit does: the spec resolved on the profile, then submitted.
            job = soak.backend.resolve(SpecDraft(spec)).require()
            await soak.backend.submit(job, progress)
        except TaoError as exc:
            soak.error(f"submit {plan.name}", exc)
            continue
        plan.submitted_at = soak.now()
        plan.act_after = plan.submitted_at + soak.rng.uniform(3, max(4, seconds * 0.6))
        soak.plans[plan.name] = plan


async def actor(soak: Soak) -> None:
    """Cancel (through the product) and requeue (as an operator) the jobs whose fate says so."""
    jobs: dict[str, JobRecord] = {}
    while not soak.stopping:
        jobs.clear()  # not held while asleep: the samples count the product's objects only
        await asyncio.sleep(1.0)
        jobs = {j.id: j for j in soak.backend.jobs()}
        for plan in list(soak.plans.values()):
            job = jobs.get(plan.name)
            if job is None or plan.done or job.status.terminal or soak.now() < plan.act_after:
                continue
            if plan.fate == "cancel":
                try:
                    await soak.backend.cancel(plan.name)
                    plan.done = "canceled"
                except TaoError as exc:
                    soak.error(f"cancel {plan.name}", exc)
            elif plan.fate == "requeue" and job.status is TaoStatus.RUNNING:
                result = await soak.operator.run(["scontrol", "requeue", job.slurm_job_id])
                if result.ok:
                    plan.done = "requeued"
                else:
                    soak.error(f"scontrol requeue {plan.name}", RuntimeError(result.stderr))


async def sampler(soak: Soak, every: float, dump: Path | None) -> None:
    while not soak.stopping:
        await asyncio.sleep(every)
        s = sample(soak)
        soak.samples.append(s)
        if soak.types_start is None and s.t >= soak.types_from:
            soak.types_start = s
        for old in soak.samples[:-1]:
            if old is not soak.types_start:
                old.types = {}  # the soak's own memory must not grow with its samples
        if dump is not None:
            dump.write_text(json.dumps([asdict(x) for x in soak.samples], indent=1))
        print(
            f"[{s.t:7.1f}s] rss {fmt_b(s.rss)}  fds {s.fds}  channels {s.channels}  tasks "
            f"{s.tasks}  threads {s.threads}  objects {s.objects:,}  tick "
            f"{fmt_s(s.tick) if s.tick else '-'} ({s.ticks})  squeue alone "
            f"{fmt_s(s.squeue) if s.squeue else '-'}  live {s.live}  stored {s.stored}  "
            f"load {s.load:.1f}  errors {len(soak.errors)}",
            flush=True,
        )


async def snapshot_later(soak: Soak, at: float) -> None:
    await asyncio.sleep(at)
    gc.collect()
    soak.snapshot = tracemalloc.take_snapshot()
    print(f"[{soak.now():7.1f}s] tracemalloc snapshot taken", flush=True)


def grown(before: tracemalloc.Snapshot, after: tracemalloc.Snapshot) -> None:
    """Print where the traced memory grew (by line, then the biggest by traceback)."""
    gc.collect()
    ignore = [tracemalloc.Filter(False, tracemalloc.__file__)]
    before, after = before.filter_traces(ignore), after.filter_traces(ignore)
    print("\ntracemalloc: growth by line")
    for stat in after.compare_to(before, "lineno")[:25]:
        print(" ", stat)
    print("\ntracemalloc: the 5 biggest growths by traceback")
    for stat in after.compare_to(before, "traceback")[:5]:
        print(f"  {stat.size_diff / 1024:+.1f} KiB in {stat.count_diff:+d} blocks")
        for line in stat.traceback.format()[-16:]:
            print("     ", line)


# ----------------------------------------------------------------------------- outcome


def expected(plan: Plan, job: JobRecord) -> str:
    """'' when the job ended as its fate says, else what is wrong."""
    status = job.status
    if plan.done == "canceled" or plan.fate == "cancel":
        ok = status is TaoStatus.CANCELED or (not plan.done and status is TaoStatus.COMPLETE)
    elif plan.fate == "fail":
        ok = status is TaoStatus.ERROR and job.retries == 0
    elif plan.fate == "infra":
        ok = status is TaoStatus.COMPLETE and job.infra_retries == 1
    elif plan.fate == "requeue":
        ok = status is TaoStatus.COMPLETE and job.retries == (1 if plan.done else 0)
    else:
        ok = status is TaoStatus.COMPLETE and job.retries == 0
    if ok:
        return ""
    return (
        f"{plan.name} ({plan.fate}{', ' + plan.done if plan.done else ''}) ended {status} "
        f"after {job.retries} retries: {job.message}"
    )


async def orphans(soak: Soak, run_id: str, wait: float = 60.0) -> list[str]:
    """SLURM jobs of this run still pending or running (CG, completing, is ending) whose record
    is ended or missing, once scancel had ``wait`` seconds to take effect."""
    deadline = time.monotonic() + wait
    while True:
        result = await soak.operator.run(
            ["squeue", "-h", "-u", sandbox.USER, "-t", "PD,R,S,RQ,RS,RH", "-o", "%i %j"],
            check=True,
        )
        known = {
            a.slurm_job_id
            for j in soak.backend.jobs()
            if not j.status.terminal
            for a in j.attempts
            if a.slurm_job_id
        }
        left = []
        for line in result.stdout.splitlines():
            sid, _, name = line.strip().partition(" ")
            if name.startswith(f"soak-{run_id}-") and sid not in known:
                left.append(f"{sid} {name}")
        if not left or time.monotonic() > deadline:
            return left
        await asyncio.sleep(2)


# ----------------------------------------------------------------------------- report


def window(samples: list[Sample], start: float, end: float) -> list[Sample]:
    return [s for s in samples if start <= s.t <= end]


def med(samples: list[Sample], name: str) -> float | None:
    values = [v for s in samples if (v := getattr(s, name)) is not None]
    return statistics.median(values) if values else None


def report(
    soak: Soak, seconds: float, jobs: int, args: argparse.Namespace, extra: dict[str, Any]
) -> str:
    samples = soak.samples
    warm, span = 0.05 * seconds, max(0.10 * seconds, args.sample)
    head = window(samples, warm, warm + span) or samples[:1]
    tail = window(samples, seconds - span, seconds + 1) or samples[-1:]
    first = samples[0] if samples else None
    rows = []
    fmt = {
        "rss": fmt_b,
        "fds": lambda v: f"{v:g}",
        "channels": lambda v: f"{v:g}",
        "tasks": lambda v: f"{v:g}",
        "threads": lambda v: f"{v:g}",
        "objects": lambda v: f"{v:,.0f}",
        "tick": fmt_s,
        "squeue": fmt_s,
        "load": lambda v: f"{v:.1f}",
    }
    labels = {
        "rss": "RSS",
        "fds": "open file descriptors",
        "channels": "SSH channels open (product's connection)",
        "tasks": "asyncio tasks",
        "threads": "threads",
        "objects": "Python objects (gc)",
        "tick": "tick (refresh), median",
        "squeue": "squeue alone on the same connection, median",
        "load": "load average (2 cores, shared)",
    }
    busy_head = [s for s in head if s.live] or head
    busy_tail = [s for s in tail if s.live] or tail
    for name, label in labels.items():
        # A tick with no active job makes no round trip: ticks compare only while jobs live.
        ticking = name in ("tick", "squeue")
        a = med(busy_head if ticking else head, name)
        b = med(busy_tail if ticking else tail, name)
        f = fmt[name]
        at_first = getattr(first, name) if first is not None else None
        if a is None or b is None:
            rows.append([label, "-", "-", "-", "-", "-"])
            continue
        ratio = b / a if a else (1.0 if b == a else float("inf"))
        flat = abs(ratio - 1) <= FLAT or (
            name in ("fds", "channels", "tasks", "threads") and b <= a
        )
        reference = name in ("load", "squeue")  # the machine's state, not the product's
        rows.append(
            [
                label,
                f(at_first) if at_first is not None else "-",
                f(a),
                f(b),
                f"{ratio:.2f}x",
                "(reference)" if reference else ("flat" if flat else "NOT flat"),
            ]
        )
    a_t, a_q, b_t, b_q = (
        med(busy_head, "tick"),
        med(busy_head, "squeue"),
        med(busy_tail, "tick"),
        med(busy_tail, "squeue"),
    )
    if a_t and a_q and b_t and b_q:
        r = (b_t / b_q) / (a_t / a_q)
        rows.append(
            [
                "tick / squeue alone",
                "-",
                f"{a_t / a_q:.2f}",
                f"{b_t / b_q:.2f}",
                f"{r:.2f}x",
                "flat" if abs(r - 1) <= FLAT else "NOT flat",
            ]
        )
    growth = []
    if head and tail:
        a_s, b_s = soak.types_start or head[len(head) // 2], tail[-1]
        jobs_added = max(1, b_s.stored - a_s.stored)
        ticks_between = sum(s.ticks for s in samples if a_s.t < s.t <= b_s.t)
        deltas = Counter(b_s.types)
        deltas.subtract(a_s.types)
        for name, n in deltas.most_common(8):
            if n <= 0:
                break
            growth.append(
                [
                    f"`{name}`",
                    f"{a_s.types.get(name, 0):,}",
                    f"{b_s.types[name]:,}",
                    f"+{n:,}",
                    f"{n / jobs_added:.1f}",
                    f"{n / max(1, ticks_between):.2f}",
                ]
            )
        growth_text = (
            f"Objects that grew most from {a_s.t / 60:.1f} to {b_s.t / 60:.1f} min, while "
            f"{jobs_added} jobs were added to the store (the queue keeps every job of the "
            f"profile) and {ticks_between:,} ticks ran: a leak per tick would grow with the "
            "ticks, the records with the jobs.\n\n"
            + table(["type", "start", "end", "growth", "per job added", "per tick"], growth)
        )
    else:
        growth_text = ""
    outcome = extra["outcomes"]
    errs = Counter(f"{where}: {text}" for _, where, text in soak.errors)
    err_lines = [f"- {n} x {text}" for text, n in errs.most_common()] or ["- none"]
    warn_lines = [f"- {n} ticks: {w}" for w, n in soak.warnings.most_common()] or ["- none"]
    fates = Counter(p.fate for p in soak.plans.values())
    done = Counter(p.done for p in soak.plans.values() if p.done)
    return "\n\n".join(
        [
            "## Soak (`bench/soak.py`)",
            f"Measured {time.strftime('%Y-%m-%d %H:%M')} on the sandbox: {seconds / 60:.0f} min, "
            f"{len(soak.plans)} of {jobs} jobs submitted through `ClusterBackend.submit` (fates: "
            + ", ".join(f"{n} {k}" for k, n in sorted(fates.items()))
            + f"; done by the driver: {dict(done) or 'nothing'}), polled every "
            f"{soak.backend.poll_interval:g} s the queue screen's way (`refresh` then `followup`), "
            f"{soak.total_ticks:,} ticks. Other helpers ran their tests on the same 2-core machine "
            "and cluster beside it (shared lock), so absolute times carry their load: compare "
            "the tick with squeue alone measured interleaved on the same connection. Start = "
            f"median of the samples from {warm / 60:.1f} to {(warm + span) / 60:.1f} min, end = "
            f"median of the last {span / 60:.1f} min; samples every {args.sample:g} s.",
            table(["", "first sample", "start", "end", "end / start", "within 10 %"], rows),
            growth_text,
            "Errors (every one, counted):\n" + "\n".join(err_lines),
            "Poll warnings (SLURM answered, something was missing):\n" + "\n".join(warn_lines),
            f"Outcomes: {outcome['ok']} of {outcome['checked']} jobs that ended by themselves "
            f"ended as their fate says; {outcome['cleanup']} still live at the end were "
            f"cancelled through the product; orphans left on the cluster: "
            f"{len(extra['orphans'])}"
            + (
                "" if not outcome["wrong"] else "\n" + "\n".join(f"- {w}" for w in outcome["wrong"])
            ),
        ]
    )


# ----------------------------------------------------------------------------- main


def write_config(tmp: Path, interval: float) -> Path:
    path = tmp / "config.toml"
    path.write_text(sandbox.config_toml(poll_interval=interval))
    return path


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument("--interval", type=float, default=2.0, help="poll interval (s)")
    parser.add_argument("--sample", type=float, default=30.0, help="seconds between samples")
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--no-write", action="store_true", help="do not touch bench/RESULTS.md")
    parser.add_argument("--json", type=Path, help="also dump the samples here as they come")
    parser.add_argument(
        "--tracemalloc",
        action="store_true",
        help="diagnosis: print where memory grew between the start window and the end",
    )
    args = parser.parse_args()
    why = sandbox.reachable()
    if why:
        raise SystemExit(f"sandbox not up: {why}")
    tmp = Path(tempfile.mkdtemp(prefix="bench-soak-"))
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        os.environ[var] = str(tmp / var.lower())
    for var in [v for v in os.environ if v.startswith("SLURM_")]:
        del os.environ[var]
    run_id = uuid.uuid4().hex[:6]
    seconds = args.minutes * 60
    config = Config.load(write_config(tmp, args.interval))
    backend = ClusterBackend(config, "sandbox", store=JobStore(tmp / "state.db"))
    operator = Connection(sandbox.sandbox_profile())
    soak = Soak(backend, operator, time.monotonic(), 0.0, random.Random(args.seed))
    print(
        f"soak {run_id}: {args.jobs} jobs, {args.minutes:g} min, poll {args.interval:g} s",
        flush=True,
    )
    await backend.refresh()
    await operator.connect()
    soak.started = time.monotonic()
    soak.types_from = 0.10 * seconds  # the middle of the start window
    soak.samples.append(sample(soak))
    if args.tracemalloc:
        tracemalloc.start(12)
        tasks_extra = [asyncio.create_task(snapshot_later(soak, 0.15 * seconds))]
    else:
        tasks_extra = []
    tasks = [
        asyncio.create_task(poller(soak)),
        asyncio.create_task(driver(soak, args.jobs, run_id, 0.95 * seconds)),
        asyncio.create_task(actor(soak)),
        asyncio.create_task(sampler(soak, args.sample, args.json)),
    ]
    try:
        await asyncio.sleep(seconds)
        soak.samples.append(sample(soak))
        if args.tracemalloc and soak.snapshot is not None:
            grown(soak.snapshot, tracemalloc.take_snapshot())
    finally:
        soak.stopping = True
        for task in tasks + tasks_extra:
            task.cancel()
        for task in tasks + tasks_extra:
            with contextlib.suppress(asyncio.CancelledError):
                await task
    if args.json:
        args.json.write_text(json.dumps([asdict(s) for s in soak.samples], indent=1))
    # Jobs still live: cancelled through the product (the queue's cancel key).
    cleanup: set[str] = set()
    for job in backend.jobs():
        if not job.status.terminal:
            cleanup.add(job.id)
            try:
                await backend.cancel(job.id)
            except TaoError as exc:
                soak.error(f"final cancel {job.id}", exc)
    await backend.refresh()
    left = await orphans(soak, run_id)
    checked, wrong = 0, []
    for job in backend.jobs():
        plan = soak.plans.get(job.id)
        if plan is None or job.id in cleanup:
            continue
        checked += 1
        if problem := expected(plan, job):
            wrong.append(problem)
    await operator.run(["rm", "-rf", f"{sandbox.RESULTS}/soak-marks/{run_id}"])
    await backend.close()
    await operator.close()
    extra = {
        "orphans": left,
        "outcomes": {
            "ok": checked - len(wrong),
            "checked": checked,
            "wrong": wrong,
            "cleanup": len(cleanup),
        },
    }
    text = report(soak, seconds, args.jobs, args, extra)
    print()
    print(text)
    if left:
        print("ORPHANS:", *left, sep="\n  ")
    if not args.no_write:
        write_results("soak", text)


if __name__ == "__main__":
    asyncio.run(main())
