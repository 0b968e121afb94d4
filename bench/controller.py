"""Benchmark: what watching a queue costs slurmctld, and how soon each watcher shows a change.

Run as root on the sandbox (``.venv/bin/python bench/controller.py``), under the cluster lock
for numbers to keep (``flock -x /tmp/tao-cluster.lock …``). slurmctld counts RPCs and their
time per user (``sdiag``), so every watcher runs as its own cluster account
(:mod:`_accounts`), all at the same time, each over its own copy of the same workload:

- **tui**: the real app (``build_tui``, as ``tao-slurm-tui`` opens it) headless, its queue
  screen open; what it shows is recorded each time its job snapshot changes;
- **cli**: ``tao-slurm-tui status --watch --json`` (its output lines, timestamped);
- **watch**: ``watch -n 2 squeue -u $USER`` in an ssh session (the anchor);
- **ref**: the platform reference's SLURM handler, reproduced: per job, from its submission
  until it ends, every 30 s a new OpenSSH process running ``squeue --job=ID --format='%T'
  --noheader``, and ``sacct --job=ID --format=State --noheader --parsable2`` when squeue has
  no answer (``slurm_handler.get_slurm_job_status``, polled by the job's 30 s loop);
- **none**: the same workload, watched by nobody: what the workload itself costs (its sbatch,
  srun and completion RPCs), taken off the others.

The workload is one hour of a typical day compressed ``--compress`` times (default 10: six
minutes): two trainings each followed by an evaluation step (pending until the training ends),
a long training with a step that stays pending all hour, three short jobs submitted during the
hour (one fails), and one training requeued by an admin (``scontrol requeue``) mid-run. The
moment of every start, end and requeue is slurmctld's own (its log, to the millisecond); the
delay to each watcher is from there to the first snapshot that shows it.

Per user-hour: a clock drives the watch loop and the reference's polls, so their counts scale
with the compression; the paced monitors' asks are split by why they asked
(``TickResult.asked_by``): those the pace's clock drives scale with it, those the hour's
events drive (a start, an end, a new job) happen once per event whatever the compression.

Also measured: what one command of each form costs the controller (RPCs, their types and
time), and a site simulation: many simulated users on this slurmctld, the RPC rate and the
latency a plain ``squeue`` sees for everyone else with our monitors versus ``watch squeue``.

Prints Markdown tables and writes them into bench/RESULTS.md (section "controller").
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _accounts import Account, bench_accounts
from _sandbox import REPO, fmt_s, sandbox, table, write_results

from tao_slurm_tui.core.spec import SpecDraft
from tao_slurm_tui.remote.connection import Connection
from tao_slurm_tui.services.store import JobStore
from tao_slurm_tui.services.submit import Submitter
from tests.integration.monitor_helpers import status_line
from tests.integration.submit_helpers import submit

ROLES = ("tui", "cli", "watch", "ref", "none")
HOUR = 3600.0
TAIL = 45.0
"""Seconds watched after the compressed hour (the last events settle)."""
REF_INTERVAL = 30.0
"""The reference's poll interval (slurm_handler, actions.py: ``time.sleep(30)``)."""
CTLD_LOG = sandbox.STATE_DIR / "log" / "slurmctld.log"
PYTHON = str(REPO / ".venv" / "bin" / "python")
CLOCK_DRIVEN = {"running", "pending", "legacy", "failure", "idle", "every"}
"""Why a paced monitor asked, when its clock (not an event) made it ask."""


# ----------------------------------------------------------------------------------- sdiag


def sdiag() -> tuple[dict[str, tuple[int, int]], dict[str, tuple[int, int]]]:
    """(by user, by message type): name → (RPC count, total controller time in µs)."""
    text = subprocess.run(["sdiag"], capture_output=True, text=True, check=True).stdout
    users: dict[str, tuple[int, int]] = {}
    types: dict[str, tuple[int, int]] = {}
    section: dict[str, tuple[int, int]] | None = None
    for line in text.splitlines():
        if "statistics by message type" in line:
            section = types
        elif "statistics by user" in line:
            section = users
        elif "Pending RPC" in line:
            section = None
        elif section is not None and "count:" in line:
            count = int(re.search(r"count:(\d+)", line).group(1))  # type: ignore[union-attr]
            total = int(re.search(r"total_time:(\d+)", line).group(1))  # type: ignore[union-attr]
            section[line.split()[0]] = (count, total)
    return users, types


def sdiag_since() -> str:
    """sdiag's "Data since" (a reset, a restart or a failover to the backup moves it)."""
    text = subprocess.run(["sdiag"], capture_output=True, text=True, check=True).stdout
    match = re.search(r"Data since\s+.*\((\d+)\)", text)
    return match.group(1) if match else ""


def delta(
    after: dict[str, tuple[int, int]], before: dict[str, tuple[int, int]], key: str
) -> tuple[int, int]:
    a, b = after.get(key, (0, 0)), before.get(key, (0, 0))
    if a[0] < b[0]:  # counters were reset in between: take all since
        return a
    return a[0] - b[0], a[1] - b[1]


# ----------------------------------------------------------------------------------- workload


@dataclass(frozen=True)
class Plan:
    """One job of the typical hour (and its follow-up steps)."""

    name: str
    submit_min: float
    command: str
    then: tuple[tuple[str, str], ...] = ()


def workload(k: float) -> tuple[list[Plan], list[tuple[str, float]]]:
    """The hour's jobs (minutes of the real hour; commands in compressed seconds) and the
    admin's requeues (job, minute)."""

    def m(minutes: float) -> int:
        return max(1, round(minutes * 60 / k))

    ok = status_line("SUCCESS", "done")
    rerun = 'if [ "${SLURM_RESTART_COUNT:-0}" = 0 ]; then sleep 100000; fi; '
    fail = "echo 'Traceback (most recent call last):' >&2; exit 1"
    plans = [
        Plan("t1", 0, f"sleep {m(20)}; {ok}", (("evaluate", f"sleep {m(6)}; {ok}"),)),
        Plan("t2", 0, f"{rerun}sleep {m(20)}; {ok}", (("evaluate", f"sleep {m(6)}; {ok}"),)),
        Plan("long", 0, "sleep 100000", (("evaluate", ok),)),
        Plan("g", 15, f"sleep {m(5)}; {ok}"),
        Plan("h", 35, f"sleep {m(3)}; {fail}"),
        Plan("i", 50, f"sleep {m(6)}; {ok}"),
    ]
    return plans, [("t2", 25.0)]


def draft(name: str, plan: Plan) -> SpecDraft:
    values: dict[str, Any] = {
        "name": name,
        "image": "nvcr.io/nvidia/tao/tao-toolkit:6.26.3-pyt",
        "command": plan.command,
        "num_gpus": 0,
        "cpus_per_task": 1,
        "time_hours": 0.5,
        "timeout_hours": 0.45,
        "use_sqsh": False,
        "container_mounts": [],
        "then": [{"action": a, "command": c} for a, c in plan.then],
    }
    return SpecDraft(values)


def xdg(root: Path, role: str) -> dict[str, str]:
    """The environment of a role's local processes: its own config and state dirs."""
    base = root / role
    return {
        "XDG_CONFIG_HOME": str(base / "config"),
        "XDG_DATA_HOME": str(base / "data"),
        "XDG_CACHE_HOME": str(base / "cache"),
    }


def store_path(root: Path, role: str) -> Path:
    return Path(xdg(root, role)["XDG_DATA_HOME"]) / "tao-slurm-tui" / "state.db"


def write_config(root: Path, role: str, account: Account) -> Path:
    """The role's config.toml: the account's profile as the default, the default poll."""
    import tomli_w

    path = Path(xdg(root, role)["XDG_CONFIG_HOME"]) / "tao-slurm-tui" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    store_path(root, role).parent.mkdir(parents=True, exist_ok=True)
    data = {
        "default_profile": "bench",
        "profiles": {"bench": account.profile().model_dump(mode="json")},
    }
    path.write_text(tomli_w.dumps(data))
    return path


# ----------------------------------------------------------------------------------- watchers


def probe_env(root: Path, role: str) -> dict[str, str]:
    return {**os.environ, **xdg(root, role), "PYTHONPATH": str(REPO)}


def start_tui(root: Path, seconds: float) -> tuple[subprocess.Popen[bytes], Path, Path]:
    """The app, headless, in its own process (see :func:`tui_probe`)."""
    config = root / "tui" / "config" / "tao-slurm-tui" / "config.toml"
    shows, ticks = root / "tui-shows.jsonl", root / "tui-ticks.jsonl"
    argv = [PYTHON, __file__, "--tui-probe", str(config), str(shows), str(ticks), str(seconds)]
    proc = subprocess.Popen(argv, env=probe_env(root, "tui"), stdin=subprocess.DEVNULL)
    return proc, shows, ticks


def start_cli(root: Path) -> tuple[subprocess.Popen[bytes], Path, list[tuple[float, str]]]:
    """``status --watch --json`` in its own process (see :func:`cli_probe`), its output lines
    timestamped as they arrive."""
    config = root / "cli" / "config" / "tao-slurm-tui" / "config.toml"
    ticks = root / "cli-ticks.jsonl"
    argv = [PYTHON, __file__, "--cli-probe", str(config), str(ticks)]
    proc = subprocess.Popen(
        argv, env=probe_env(root, "cli"), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE
    )
    lines: list[tuple[float, str]] = []

    def read() -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            lines.append((time.time(), raw.decode()))

    threading.Thread(target=read, daemon=True).start()
    return proc, ticks, lines


def start_watch(account: Account) -> subprocess.Popen[bytes]:
    """``watch -n 2 squeue -u $USER`` in an ssh session with a terminal."""
    argv = [*account.ssh_argv("-tt"), "watch -n 2 squeue -u $USER"]
    return subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


class Reference:
    """The reference handler's status polls: per job, a new OpenSSH process per command."""

    def __init__(self, account: Account) -> None:
        self.account = account
        self.seen: list[tuple[float, str, str]] = []
        """(when, SLURM id, state shown)."""
        self.calls = {"squeue": 0, "sacct": 0}
        self.stop = threading.Event()
        self.threads: list[threading.Thread] = []

    def _ssh(self, command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self.account.ssh_argv(), command],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
            check=False,
        )

    def status(self, sid: str) -> str:
        """``get_slurm_job_status``: squeue, then sacct when squeue has no answer."""
        self.calls["squeue"] += 1
        done = self._ssh(f"squeue --job={sid} --format='%T' --noheader")
        if done.returncode == 0 and done.stdout.strip():
            return done.stdout.strip()
        self.calls["sacct"] += 1
        done = self._ssh(f"sacct --job={sid} --format=State --noheader --parsable2")
        lines = [ln.strip() for ln in done.stdout.splitlines() if ln.strip()]
        return lines[0].split()[0] if lines else "NOT_FOUND"

    def follow(self, sid: str) -> None:
        """Start the job's loop: a status at once, then every 30 s until it ends."""

        def loop() -> None:
            while not self.stop.is_set():
                state = self.status(sid)
                self.seen.append((time.time(), sid, state))
                if state in TERMINAL:
                    return
                self.stop.wait(REF_INTERVAL)

        thread = threading.Thread(target=loop, daemon=True)
        thread.start()
        self.threads.append(thread)


TERMINAL = {
    "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "BOOT_FAIL", "DEADLINE",
    "OUT_OF_MEMORY", "PREEMPTED",
}  # fmt: skip


# ----------------------------------------------------------------------------------- the hour


@dataclass
class Hour:
    """What one run of the typical hour gave."""

    k: float
    seconds: float
    started: float
    sdiag_users: dict[str, tuple[int, int]]
    sdiag_types: dict[str, tuple[int, int]]
    users: dict[str, str]
    """Role → account name."""
    sids: dict[str, dict[str, str]] = field(default_factory=dict)
    """Role → SLURM id → job name (without the run tag)."""
    truth: list[tuple[float, str, str, int]] = field(default_factory=list)
    """(when, SLURM id, start|end|requeue, run) from slurmctld's log."""
    shows: dict[str, list[tuple[float, str, str, int]]] = field(default_factory=dict)
    """Role → (when, SLURM id, state shown, restarts shown)."""
    ticks: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    ref_calls: dict[str, int] = field(default_factory=dict)
    cpu: dict[str, float] = field(default_factory=dict)
    """Role → CPU seconds of its local process over the run."""
    load: float = 0.0


async def drive(
    accounts: dict[str, Account],
    root: Path,
    k: float,
    tag: str,
    ref: Reference,
    started: Callable[[], None],
) -> dict[str, dict[str, str]]:
    """Submit every role's copy of the workload at its minute, requeue at its minute;
    ``started()`` once the first jobs are in (``status --watch`` ends when none is active)."""
    plans, requeues = workload(k)
    conns = {r: Connection(accounts[r].profile()) for r in ROLES}
    stores = {r: JobStore(store_path(root, r)) for r in ROLES}
    submitters = {r: Submitter(conns[r], stores[r], "bench", accounts[r].profile()) for r in ROLES}
    sids: dict[str, dict[str, str]] = {r: {} for r in ROLES}
    t0 = time.time()
    events = sorted(
        [(p.submit_min, "submit", p.name) for p in plans]
        + [(minute, "requeue", name) for name, minute in requeues]
    )

    async def submit_one(role: str, plan: Plan) -> None:
        await submit(submitters[role], draft(f"{tag}-{plan.name}", plan))
        for job in stores[role].list_jobs("bench"):
            if job.id.startswith(f"{tag}-{plan.name}") and job.slurm_job_id not in sids[role]:
                sids[role][job.slurm_job_id] = job.id.removeprefix(f"{tag}-")
                if role == "ref":
                    ref.follow(job.slurm_job_id)

    try:
        for minute, what, name in events:
            await asyncio.sleep(max(0.0, t0 + minute * 60 / k - time.time()))
            if what == "submit":
                plan = next(p for p in plans if p.name == name)
                await asyncio.gather(*(submit_one(r, plan) for r in ROLES))
                if minute == 0 and name == plans[0].name:
                    started()
            else:
                for role in ROLES:
                    sid = stores[role].require("bench", f"{tag}-{name}").slurm_job_id
                    subprocess.run(["scontrol", "requeue", sid], check=True, capture_output=True)
        await asyncio.sleep(max(0.0, t0 + HOUR / k - time.time()))
    finally:
        for conn in conns.values():
            await conn.close()
        for store in stores.values():
            store.close()
    return sids


def run_hour(accounts: dict[str, Account], root: Path, k: float) -> Hour:
    """Start every watcher, drive the hour, stop them; gather what each saw and cost."""
    tag = f"h{uuid.uuid4().hex[:5]}"
    for role in ROLES:
        write_config(root, role, accounts[role])
    seconds = HOUR / k + TAIL
    log_offset = CTLD_LOG.stat().st_size
    tui, tui_shows, tui_ticks = start_tui(root, seconds + 30)
    wait_for_file(tui_shows, tui)
    watch = start_watch(accounts["watch"])
    cli_started: list[tuple[subprocess.Popen[bytes], Path, list[tuple[float, str]]]] = []
    ref = Reference(accounts["ref"])
    subprocess.run(["sdiag", "-r"], check=True, capture_output=True)
    since = sdiag_since()
    before_users, before_types = sdiag()
    started = time.time()
    cpu0 = cpu_seconds(tui.pid)
    try:
        sids = asyncio.run(
            drive(accounts, root, k, tag, ref, lambda: cli_started.append(start_cli(root)))
        )
        cli, cli_ticks, cli_lines = cli_started[0]
        time.sleep(TAIL)
        after_users, after_types = sdiag()
        if sdiag_since() != since:
            raise SystemExit(
                "slurmctld's counters restarted during the run (a restart, or a failover to the "
                "backup): run again, under the cluster lock (flock -x /tmp/tao-cluster.lock)"
            )
        cpu = {"tui": cpu_seconds(tui.pid) - cpu0, "cli": cpu_seconds(cli.pid)}
        load = os.getloadavg()[0]
    finally:
        ref.stop.set()
        watch.terminate()
        procs = [watch, tui, *(c[0] for c in cli_started)]
        for proc in procs[1:]:
            proc.send_signal(signal.SIGINT)
        for proc in procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=30)
            if proc.poll() is None:
                proc.kill()
        for role in ROLES:
            subprocess.run(["scancel", "-u", accounts[role].user], capture_output=True)
    users = {r: accounts[r].user for r in ROLES}
    hour = Hour(
        k=k,
        seconds=time.time() - started,
        started=started,
        sdiag_users={u: delta(after_users, before_users, u) for u in users.values()},
        sdiag_types={t: delta(after_types, before_types, t) for t in after_types},
        users=users,
        sids=sids,
        truth=ctld_events(log_offset),
        cpu=cpu,
        load=load,
    )
    hour.shows["tui"] = read_tui_shows(tui_shows, sids["tui"])
    hour.shows["cli"] = read_cli_shows(cli_lines, sids["cli"])
    hour.shows["ref"] = [(t, sid, state, 0) for t, sid, state in ref.seen]
    hour.ticks["tui"] = read_jsonl(tui_ticks)
    hour.ticks["cli"] = read_jsonl(cli_ticks)
    hour.ref_calls = dict(ref.calls)
    return hour


def wait_for_file(path: Path, proc: subprocess.Popen[bytes], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not (path.exists() and path.read_text().strip()):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the TUI probe did not start (exit {proc.poll()})")
        time.sleep(0.2)


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process and its reaped children (seconds)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return sum(int(fields[i]) for i in (11, 12, 13, 14)) / ticks


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def read_tui_shows(path: Path, sids: dict[str, str]) -> list[tuple[float, str, str, int]]:
    out = []
    for entry in read_jsonl(path):
        for sid, state, restarts in entry.get("jobs", []):
            if sid in sids:
                out.append((entry["t"], sid, state, restarts))
    return out


def read_cli_shows(
    lines: list[tuple[float, str]], sids: dict[str, str]
) -> list[tuple[float, str, str, int]]:
    out = []
    for t, text in lines:
        with contextlib.suppress(ValueError):
            for job in json.loads(text):
                sid = job.get("slurm_job_id", "")
                if sid in sids:
                    out.append((t, sid, job.get("slurm_state", ""), int(job.get("retries", 0))))
    return out


_LOG_TIME = re.compile(r"^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)\] (.*)$")


def ctld_events(offset: int) -> list[tuple[float, str, str, int]]:
    """Starts, ends and requeues since ``offset`` in slurmctld's log: (when, id, kind, run)."""
    with open(CTLD_LOG, "rb") as handle:
        handle.seek(offset)
        text = handle.read().decode(errors="replace")
    runs: dict[str, int] = {}
    out: list[tuple[float, str, str, int]] = []
    for line in text.splitlines():
        match = _LOG_TIME.match(line)
        if not match:
            continue
        stamp, rest = match.groups()
        when = time.mktime(time.strptime(stamp.split(".")[0], "%Y-%m-%dT%H:%M:%S"))
        when += float("0." + stamp.split(".")[1])
        start = re.search(r"(?:sched: Allocate|backfill: Started) JobId=(\d+)", rest)
        end = re.search(r"_job_complete: JobId=(\d+) done", rest)
        requeue = re.search(r"Requeuing JobId=(\d+)", rest)
        if start:
            sid = start.group(1)
            out.append((when, sid, "start", runs.get(sid, 0)))
        elif end:
            out.append((when, end.group(1), "end", runs.get(end.group(1), 0)))
        elif requeue:
            sid = requeue.group(1)
            out.append((when, sid, "requeue", runs.get(sid, 0)))
            runs[sid] = runs.get(sid, 0) + 1
    return out


# ----------------------------------------------------------------------------------- delays

RUNNING = {"RUNNING"}
WAITING = {"", "PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD"}


def delays(
    truth: list[tuple[float, str, str, int]],
    shows: list[tuple[float, str, str, int]],
    sids: dict[str, str],
    *,
    restarts_known: bool = True,
) -> tuple[dict[str, list[float]], int]:
    """Seconds from each start, end and requeue of ``sids`` to the first snapshot showing it,
    by kind; and how many were never shown."""
    by_sid: dict[str, list[tuple[float, str, int]]] = {}
    for t, sid, state, restarts in sorted(shows):
        by_sid.setdefault(sid, []).append((t, state, restarts))
    out: dict[str, list[float]] = {"start": [], "end": [], "requeue": []}
    missed = 0
    for when, sid, kind, run in truth:
        if sid not in sids:
            continue
        seen = [(t, s, r) for t, s, r in by_sid.get(sid, []) if t >= when - 0.05]
        hit = next((t for t, s, r in seen if _shows(kind, run, s, r, restarts_known)), None)
        if hit is None:
            missed += 1
        else:
            out[kind].append(max(0.0, hit - when))
    return out, missed


def _shows(kind: str, run: int, state: str, restarts: int, restarts_known: bool) -> bool:
    if kind == "start":
        return state not in WAITING and (restarts >= run or not restarts_known)
    if kind == "end":
        return state not in WAITING and state not in RUNNING
    return restarts > run if restarts_known else state in WAITING


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


# ----------------------------------------------------------------------------------- probes


def tui_probe(config: str, shows: str, ticks: str, seconds: float) -> None:
    """The app as ``tao-slurm-tui`` opens it, headless; records each change of its queue's
    snapshot (latest SLURM id, SLURM state, restarts of every job) and each monitor tick."""
    from tao_slurm_tui.app import build_tui
    from tao_slurm_tui.config import Config

    app = build_tui(Config.load(Path(config)))
    out, tick_log = open(shows, "a", buffering=1), open(ticks, "a", buffering=1)  # noqa: SIM115

    def record(jobs: dict[str, Any]) -> None:
        rows = [
            [j.slurm_job_id, j.slurm_state, j.latest.restarts if j.latest else 0]
            for j in jobs.values()
        ]
        out.write(json.dumps({"t": time.time(), "jobs": rows}) + "\n")

    async def run() -> None:
        async with app.run_test(headless=True, size=(120, 36)):
            instrument(app.ctx.backend.monitor, tick_log)  # type: ignore[attr-defined]
            app.watch(app.home, "all_jobs", record, init=True)
            out.write(json.dumps({"t": time.time(), "ready": True}) + "\n")
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(seconds)

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run())


def instrument(monitor: Any, log: Any) -> None:
    """Log every tick of ``monitor`` (asked, why, round trips) to ``log``."""
    tick = monitor.tick

    async def logged(*args: Any, **kwargs: Any) -> Any:
        result = await tick(*args, **kwargs)
        entry = {"t": time.time(), "asked": result.asked, "by": result.asked_by}
        log.write(json.dumps({**entry, "rt": result.round_trips}) + "\n")
        return result

    monitor.tick = logged


def cli_probe(config: str, ticks: str) -> int:
    """``tao-slurm-tui --config CONFIG status --watch --json``, its monitor's ticks logged."""
    from tao_slurm_tui import cli
    from tao_slurm_tui.services import monitor as monitor_module

    log = open(ticks, "a", buffering=1)  # noqa: SIM115
    init = monitor_module.Monitor.__init__

    def init_logged(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        instrument(self, log)

    monitor_module.Monitor.__init__ = init_logged  # type: ignore[method-assign]
    return cli.main(["--config", config, "status", "--watch", "--json"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--compress", type=float, default=10.0, help="hour / run length")
    parser.add_argument("--site", default="10,25,50", help="simulated users, comma list")
    parser.add_argument("--site-seconds", type=float, default=60.0)
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--tui-probe", nargs=4, metavar=("CONFIG", "SHOWS", "TICKS", "SECONDS"))
    parser.add_argument("--cli-probe", nargs=2, metavar=("CONFIG", "TICKS"))
    args = parser.parse_args()
    if args.tui_probe:
        config, shows, ticks, seconds = args.tui_probe
        tui_probe(config, shows, ticks, float(seconds))
        return
    if args.cli_probe:
        sys.exit(cli_probe(*args.cli_probe))
    if os.geteuid() != 0:
        raise SystemExit("run as root: it creates cluster accounts and reads sdiag")
    why = sandbox.reachable()
    if why:
        raise SystemExit(f"sandbox not up: {why}")
    root = Path(tempfile.mkdtemp(prefix="bench-ctl-"))
    root.chmod(0o755)
    sizes = [int(n) for n in args.site.split(",") if n.strip()] if args.site else []
    when = time.strftime("%Y-%m-%d %H:%M")
    with bench_accounts(root, list(ROLES)) as accounts:
        hour = run_hour(accounts, root, args.compress)
        (root / "hour.json").write_text(json.dumps(hour.__dict__, default=str))
        print(f"hour done ({root}/hour.json); what one command costs ...", flush=True)
        costs = command_costs(accounts["none"])
        asks = per_hour(hour)["tui"].hour_asks
        print(f"the site: {sizes} users ...", flush=True)
        scenarios = site(accounts["none"], asks, sizes, args.site_seconds) if sizes else []
    text = report(hour, costs, scenarios, asks, when)
    print(text)
    if not args.no_write:
        write_results("controller", text)


# ----------------------------------------------------------------------------------- one command


@dataclass
class Cost:
    """What one command costs the controller (per call)."""

    label: str
    rpcs: float
    micros: float
    types: str


def command_costs(account: Account, calls: int = 30) -> list[Cost]:
    """Each command form ``calls`` times as a user of its own (numeric uid: sdiag tells it
    apart), over ``account``'s jobs: RPCs and controller time per call, and the RPC types."""
    sid = (
        sandbox_ssh(account, "sbatch --parsable -p polar -c 1 -o /dev/null --wrap 'sleep 600'")
        .strip()
        .split(";")[0]
    )
    from tao_slurm_tui.core.slurm_poll import squeue_format

    ours = f"squeue -h -r -t all --local -O '{squeue_format()}' -u {account.user}"
    stat = f"stat -L --printf '%s,' -- {account.home}/tao/slurm-logs/*/events"
    forms = [
        ("`watch -n 2 squeue -u $USER`: one refresh", f"squeue -u {account.user}"),
        ("ours, a tick that asks: `squeue --local -u me -t all -O …`", ours),
        ("ours, a quiet tick: `stat` of the events files", stat),
        ("`squeue --local -j ID` (one job)", f"squeue --local -h -j {sid}"),
        (
            "reference: `squeue --job=ID --format=%T --noheader`",
            f"squeue --job={sid} --format='%T' --noheader",
        ),
        (
            "reference, once squeue forgot: `sacct --job=ID` (slurmdbd)",
            f"sacct --job={sid} --format=State --noheader --parsable2",
        ),
    ]
    out = []
    try:
        for n, (label, command) in enumerate(forms):
            uid = 7100 + n
            users0, types0 = sdiag()
            for _ in range(calls):
                subprocess.run(
                    [*as_uid(uid), "sh", "-c", command], capture_output=True, check=False
                )
            users1, types1 = sdiag()
            count, micros = delta(users1, users0, str(uid))
            moved = {t: delta(types1, types0, t)[0] for t in types1}
            kinds = [t for t, c in sorted(moved.items(), key=lambda x: -x[1]) if c >= calls * 0.8]
            names = ", ".join(t.removeprefix("REQUEST_") for t in kinds) or "none"
            out.append(Cost(label, count / calls, micros / calls, names))
    finally:
        sandbox_ssh(account, f"scancel {sid}")
    return out


def as_uid(uid: int) -> list[str]:
    """The argv prefix that runs a command as ``uid`` (no passwd entry needed)."""
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]


def sandbox_ssh(account: Account, command: str) -> str:
    done = subprocess.run(
        [*account.ssh_argv(), command], capture_output=True, text=True, timeout=120, check=True
    )
    return done.stdout


# ----------------------------------------------------------------------------------- the site

SIM_UID = 8000
"""The first simulated user's uid (no passwd entry: slurmctld counts it by number)."""
PROBE_UID = 7999
"""The user whose plain ``squeue`` is timed."""


@dataclass
class Scenario:
    """One window of the site simulation."""

    label: str
    users: int
    rpc_rate: float
    """RPCs per second at the controller (everyone's)."""
    sim_rate: float
    """RPCs per second of the simulated users alone."""
    busy: float
    """Controller time per wall second (all RPCs)."""
    probe: list[float]
    """Wall seconds of each plain ``squeue`` (another user, once a second)."""
    cpu: float
    """Share of the machine's CPUs busy (all of it: clients, sshd, slurmctld)."""


def machine_busy() -> tuple[int, int]:
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


def simulate(label: str, users: int, command: str, interval: float, seconds: float) -> Scenario:
    """``users`` simulated users (numeric uids), each running ``command`` every ``interval``
    seconds (a random phase), while a probe user runs a plain ``squeue`` once a second."""
    loops = []
    for i in range(users):
        phase = (i * 0.6180339887 % 1.0) * interval
        script = (
            f"sleep {phase:.3f}; while :; do {command} >/dev/null 2>&1; sleep {interval:.3f}; done"
        )
        argv = [*as_uid(SIM_UID + i), "sh", "-c", script]
        loops.append(subprocess.Popen(argv, start_new_session=True))
    try:
        time.sleep(min(interval, 10.0))  # every user has started
        since = sdiag_since()
        users0, _ = sdiag()
        busy0 = machine_busy()
        t0 = time.monotonic()
        probe = []
        while time.monotonic() - t0 < seconds:
            start = time.monotonic()
            subprocess.run([*as_uid(PROBE_UID), "squeue"], capture_output=True, check=False)
            probe.append(time.monotonic() - start)
            time.sleep(max(0.0, 1.0 - (time.monotonic() - start)))
        wall = time.monotonic() - t0
        users1, _ = sdiag()
        busy1 = machine_busy()
        if sdiag_since() != since:
            raise SystemExit("slurmctld's counters restarted during the site simulation: again")
    finally:
        for proc in loops:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in loops:
            proc.wait(timeout=30)
    count = micros = sim = 0
    for user in set(users0) | set(users1):
        c, m = delta(users1, users0, user)
        count, micros = count + c, micros + m
        if user.isdigit() and SIM_UID <= int(user) < SIM_UID + users:
            sim += c
    cpu = (busy1[0] - busy0[0]) / max(1, busy1[1] - busy0[1])
    return Scenario(label, users, count / wall, sim / wall, micros / 1e6 / wall, probe, cpu)


def site(
    account: Account, asks_per_hour: float, sizes: list[int], seconds: float
) -> list[Scenario]:
    """Baseline, then for each size: that many users watching with ``watch -n 2 squeue``, and
    as many with our monitor (its asks per user-hour, as measured, spread evenly)."""
    from tao_slurm_tui.core.slurm_poll import squeue_format

    held = 3 * max(sizes)
    sandbox_ssh(
        account,
        f"for i in $(seq {held}); do sbatch --hold -p polar -c 1 -o /dev/null --wrap true; done",
    )
    watch = f"squeue -u {account.user}"
    ours = f"squeue -h -r -t all --local -O '{squeue_format()}' -u {account.user}"
    out = [simulate("nobody watching", 0, "true", 1.0, seconds)]
    try:
        for n in sizes:
            out.append(simulate("`watch -n 2 squeue -u $USER`", n, watch, 2.0, seconds))
            out.append(
                simulate("ours (the TUI's measured asks)", n, ours, 3600 / asks_per_hour, seconds)
            )
    finally:
        sandbox_ssh(account, f"scancel -u {account.user}")
    return out


# ----------------------------------------------------------------------------------- report


@dataclass
class PerHour:
    """One watcher's controller cost, in the run and per user-hour."""

    role: str
    rpcs: int
    micros: int
    asks: int
    clock_asks: int
    hour_rpcs: float
    hour_micros: float
    upper_rpcs: float
    """Everything scaled with the compression (an upper bound for a paced monitor)."""
    upper_micros: float
    hour_asks: float
    """squeue asks per user-hour (paced monitors)."""


def per_hour(hour: Hour) -> dict[str, PerHour]:
    """Each watcher's RPCs and controller time, the workload's own taken off, per user-hour."""
    base = hour.sdiag_users[hour.users["none"]]
    out = {}
    for role in ("tui", "cli", "watch", "ref"):
        count, micros = hour.sdiag_users[hour.users[role]]
        rpcs, time_us = max(0, count - base[0]), max(0, micros - base[1])
        ticks = [t for t in hour.ticks.get(role, []) if t["asked"]]
        clock = sum(1 for t in ticks if t["by"] in CLOCK_DRIVEN)
        # A paced monitor: the clock's asks scale, the events' do not; a loop: all of it scales.
        scale = (clock * hour.k + len(ticks) - clock) / len(ticks) if ticks else hour.k
        out[role] = PerHour(
            role,
            rpcs,
            time_us,
            len(ticks),
            clock,
            rpcs * scale,
            time_us * scale,
            rpcs * hour.k,
            time_us * hour.k,
            clock * hour.k + len(ticks) - clock,
        )
    return out


LABELS = {
    "tui": "ours: the TUI open (queue screen)",
    "cli": "ours: `status --watch`",
    "watch": "`watch -n 2 squeue -u $USER` over ssh (anchor)",
    "ref": "reference handler: per job, ssh squeue (sacct) every 30 s",
}


def report(
    hour: Hour, costs: list[Cost], scenarios: list[Scenario], asks_hour: float, when: str
) -> str:
    rates = per_hour(hour)
    anchor = rates["watch"]
    rows = []
    for role in ("tui", "cli", "watch", "ref"):
        r = rates[role]
        rows.append(
            [
                LABELS[role],
                f"{r.rpcs:,}",
                fmt_s(r.micros / 1e6),
                f"{r.asks:,} ({r.clock_asks:,} by the clock)" if r.asks else "—",
                f"{r.hour_rpcs:,.0f}",
                fmt_s(r.hour_micros / 1e6),
                _ratio(r.hour_rpcs, anchor.hour_rpcs),
                _ratio(r.hour_micros, anchor.hour_micros),
                f"{r.upper_rpcs:,.0f}" if r.asks else "(the same)",
            ]
        )
    base = hour.sdiag_users[hour.users["none"]]
    rows.append(
        ["the workload itself, watched by nobody (taken off the rows above)",
         f"{base[0]:,}", fmt_s(base[1] / 1e6), "—", "", "", "", "", ""]
    )  # fmt: skip
    delay_rows, tui = _delay_rows(hour)
    targets = _targets(rates, tui)
    sections = [
        "## Controller load (`bench/controller.py`)",
        f"Measured {when} on the sandbox (slurmctld 22.05, priority/multifactor, a backup "
        f"controller), every watcher at the same time as its own cluster user, over its own "
        f"copy of the workload: one hour of a typical day compressed {hour.k:g}x "
        f"({hour.seconds:.0f} s with the tail; load average {hour.load:.1f} on "
        f"{os.cpu_count()} cores). sdiag per user, reset at the start; the workload's own RPCs "
        "(sbatch, srun, completions: the user nobody watched) taken off each row.",
        table(
            [
                "watcher",
                "RPCs in the run",
                "controller time in the run",
                "squeue asks (paced monitors)",
                "RPCs per user-hour",
                "controller time per user-hour",
                "RPCs vs anchor",
                "time vs anchor",
                "upper bound: all scaled with the clock",
            ],
            rows,
        ),
        "### How soon each watcher shows a change",
        "From the moment slurmctld logged it (`sched: Allocate`/`backfill: Started`, "
        "`_job_complete … done`, `Requeuing`; to the millisecond) to the first snapshot that "
        "shows it: the TUI's queue screen (its job snapshot), `status --watch`'s output line, "
        "the reference's poll.",
        table(
            [
                "watcher",
                "changes",
                "median",
                "p95",
                "max",
                "starts (median)",
                "ends (median)",
                "requeue",
                "never shown",
            ],
            delay_rows,
        ),
        "### Targets (issue 23)",
        table(["target", "", "measured"], targets),
        "### What one command costs slurmctld",
        f"Each form {30} times as a user of its own (sdiag per user; RPC types: those that "
        "moved by at least 80 % of the calls).",
        table(
            ["command", "RPCs per call", "RPC types", "controller time per call"],
            [[c.label, f"{c.rpcs:.2f}", c.types, fmt_s(c.micros / 1e6)] for c in costs],
        ),
        *_site_sections(scenarios, rates, asks_hour),
    ]
    return "\n\n".join(sections)


def _ratio(ours: float, anchor: float) -> str:
    if not anchor:
        return "—"
    return f"{ours / anchor:.3f} (1/{anchor / ours:,.0f})" if ours else "0"


def _delay_rows(hour: Hour) -> tuple[list[list[str]], list[float]]:
    rows, tui = [], []
    for role in ("tui", "cli", "ref"):
        found, missed = delays(
            hour.truth, hour.shows.get(role, []), hour.sids[role], restarts_known=role != "ref"
        )
        every = [d for values in found.values() for d in values]
        if role == "tui":
            tui = every
        rows.append(
            [
                LABELS[role],
                str(len(every)),
                fmt_s(statistics.median(every)) if every else "—",
                fmt_s(pct(every, 0.95)) if every else "—",
                fmt_s(max(every)) if every else "—",
                fmt_s(statistics.median(found["start"])) if found["start"] else "—",
                fmt_s(statistics.median(found["end"])) if found["end"] else "—",
                ", ".join(fmt_s(d) for d in found["requeue"]) or "—",
                str(missed),
            ]
        )
    return rows, tui


def _targets(rates: dict[str, PerHour], tui: list[float]) -> list[list[str]]:
    anchor, ours = rates["watch"], rates["tui"]
    out = []
    for what, mine, upper, theirs in (
        ("RPCs", ours.hour_rpcs, ours.upper_rpcs, anchor.hour_rpcs),
        ("controller time", ours.hour_micros, ours.upper_micros, anchor.hour_micros),
    ):
        out.append(
            [
                f"TUI: controller {what} per user-hour <= 1/10 of `watch -n 2 squeue`",
                _met(mine <= theirs / 10),
                f"{_ratio(mine, theirs)}; upper bound (every ask scaled with the clock): "
                f"{_ratio(upper, theirs)}",
            ]
        )
    median, p95 = (statistics.median(tui), pct(tui, 0.95)) if tui else (float("inf"),) * 2
    out.append(
        ["TUI: median delay to show a start or an end <= 2 s", _met(median <= 2), fmt_s(median)]
    )
    out.append(["TUI: p95 delay <= 5 s", _met(p95 <= 5), fmt_s(p95)])
    return out


def _met(ok: bool) -> str:
    return "met" if ok else "NOT met"


def _site_sections(scenarios: list[Scenario], rates: dict[str, PerHour], asks: float) -> list[str]:
    if not scenarios:
        return []
    rows = []
    for sc in scenarios:
        rows.append(
            [
                sc.label,
                str(sc.users),
                f"{sc.sim_rate:.1f}",
                f"{sc.rpc_rate:.1f}",
                f"{sc.busy * 1000:.0f} ms/s",
                fmt_s(statistics.median(sc.probe)) if sc.probe else "—",
                fmt_s(pct(sc.probe, 0.95)) if sc.probe else "—",
                f"{sc.cpu * 100:.0f} %",
            ]
        )
    paper = []
    for n in (100, 1000, 5000):
        for role, label in (("watch", "`watch -n 2 squeue`"), ("tui", "ours")):
            r = rates[role]
            paper.append(
                [label, f"{n:,}", f"{r.hour_rpcs * n / 3600:,.0f}",
                 f"{r.hour_micros * n / 3600 / 1e3:,.0f} ms/s"]
            )  # fmt: skip
    return [
        "### The site: simulated users on this slurmctld",
        f"Each simulated user is a numeric uid sending what its watcher sends: `squeue -u` "
        f"every 2 s, or our ask (`squeue --local -u … -t all -O …`) at the TUI's measured "
        f"{asks:.0f} asks per user-hour, evenly spread; every user's queue is the same "
        "workload user's (a few jobs, plus three held jobs per simulated user in the "
        "controller). Another user runs a plain `squeue` once a second and times it. Clients, "
        "sshd-less shells and slurmctld share this machine's two cores (the CPU column): "
        "a real site's clients are elsewhere.",
        table(
            [
                "scenario",
                "users",
                "RPCs/s of the simulated users",
                "RPCs/s at slurmctld (all users)",
                "controller time per second",
                "plain `squeue` (median)",
                "plain `squeue` (p95)",
                "machine CPU busy",
            ],
            rows,
        ),
        "On paper, from the per-user-hour figures above (controller time per RPC as measured "
        "here, with this controller's few hundred jobs; a site's REQUEST_JOB_USER_INFO walks "
        "every job it holds, so its time per RPC is larger):",
        table(["watchers", "users", "RPCs/s", "controller time per second"], paper),
    ]


if __name__ == "__main__":
    main()
