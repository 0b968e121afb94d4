"""The fake cluster's state and clock: what slurmctld, slurmdbd and the running jobs would know.

Standard library only: the fake tools (:mod:`.tools`) import it in a process started with
``python -IS`` for every tool call, so it must load in a few milliseconds.

The whole cluster is one JSON file (``state.json`` in the world directory), read and written
under an exclusive ``flock`` by every tool call and by the in-process :class:`~.world.World`.
Before answering, a tool brings the state up to the clock (:func:`catch_up`): a pending job
whose start time came starts on a free node, a running job writes the epochs its clock allows
to its ``status.json`` and ``main.out``, and ends when its training (or its time limit) does.
``status.json`` is written as TAO 7.3 writes it: in ``results/<id>/train/``, 0-based ``epoch``
with ``max_epoch`` = epochs - 1, durations as ``timedelta`` strings, and no SUCCESS line (RUNNING
"Train finished successfully." ends a run that succeeded).
With a frozen clock nothing moves until the world is told to (``advance``, ``train``).

The cluster's file system (``/lustre``, ``/home``) lives under ``<world>/fs``: :func:`local`
maps a cluster path there, :func:`cluster_text` maps the local prefix back in what is shown.
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import json
import os
import time
from collections.abc import Iterator
from typing import Any

from tao_slurm_tui.services.fakecluster import site

Job = dict[str, Any]
"""One SLURM job as the controller knows it (see :func:`new_job`)."""
State = dict[str, Any]
"""The whole cluster (see :func:`empty_state`)."""

STATE_FILE = "state.json"
HISTORY_FILE = "history.json"
WORLD_VARIABLE = "TAO_FAKE_WORLD"
"""Environment variable naming the world directory in every command the fake runs."""

MOUNTS = ("/lustre", "/home")
"""The cluster's own top-level directories; they live under ``<world>/fs``."""

LIVE = ("PENDING", "RUNNING", "SUSPENDED", "COMPLETING", "CONFIGURING", "REQUEUED")
"""States of a job that has not ended."""

EPOCH_LINE_WORDS = "Epoch {epoch:>2}/{max_epoch} step {step:>4}: loss={loss:.4f} lr=0.0001"


def empty_state(root: str, user: str) -> State:
    """A cluster with no node, partition or job yet (the world's seed fills it)."""
    return {
        "root": root,
        "user": user,
        "clock": {"frozen": None, "offset": 0.0},
        "next_id": 1100,
        "jobs": {},
        "nodes": [],
        "partitions": [],
        "qos": [],
        "assocs": [],
        "default_accounts": {},
        "enforce": "associations,limits,qos",
        "switches": {},
        "min_job_age": 300,
        "start_delay": 15.0,
        "wait": {},
        "version": "22.05.8",
    }


# ----------------------------------------------------------------------------------- storage


def world_dir() -> str:
    """The world directory of the command being run (from :data:`WORLD_VARIABLE`)."""
    return os.environ[WORLD_VARIABLE]


@contextlib.contextmanager
def locked(world: str, *, write: bool = True) -> Iterator[State]:
    """The state, under the world's lock; written back at the end when ``write``."""
    fd = os.open(os.path.join(world, "state.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if write else fcntl.LOCK_SH)
        path = os.path.join(world, STATE_FILE)
        with open(path, encoding="utf-8") as handle:
            state: State = json.load(handle)
        yield state
        if write:
            tmp = path + ".tmp"
            with open(tmp, "w", encoding="utf-8") as handle:
                json.dump(state, handle, separators=(",", ":"))
            os.replace(tmp, path)
    finally:
        os.close(fd)


def history(world: str) -> list[Job]:
    """The finished jobs of the seed's history (read only: sacct and scontrol need them)."""
    try:
        with open(os.path.join(world, HISTORY_FILE), encoding="utf-8") as handle:
            jobs: list[Job] = json.load(handle)
    except FileNotFoundError:
        return []
    return jobs


# ----------------------------------------------------------------------------------- clock


def now(state: State) -> float:
    """The cluster's clock: frozen, or the real one moved by the world's offset."""
    clock = state["clock"]
    frozen = clock.get("frozen")
    return float(frozen) if frozen is not None else time.time() + float(clock.get("offset", 0))


def stamp(moment: float | None) -> str:
    """A time as SLURM prints it (the cluster runs on UTC): ``2026-05-10T08:00:00``."""
    if moment is None:
        return "Unknown"
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(moment))


def duration(seconds: float | None) -> str:
    """``[D-]HH:MM:SS`` (squeue's and sacct's form); ``UNLIMITED`` for None."""
    if seconds is None:
        return "UNLIMITED"
    total = max(0, int(seconds))
    days, rest = divmod(total, 86400)
    text = f"{rest // 3600:02d}:{rest // 60 % 60:02d}:{rest % 60:02d}"
    return f"{days}-{text}" if days else text


def short_duration(seconds: float | None) -> str:
    """squeue's TimeUsed/TimeLimit: no zero hours (``1:27``, ``4:00:00``, ``2-00:00:00``)."""
    if seconds is None:
        return "UNLIMITED"
    total = max(0, int(seconds))
    days, rest = divmod(total, 86400)
    hours, minutes, secs = rest // 3600, rest // 60 % 60, rest % 60
    if days:
        return f"{days}-{hours:02d}:{minutes:02d}:{secs:02d}"
    if hours:
        return f"{hours}:{minutes:02d}:{secs:02d}"
    return f"{minutes}:{secs:02d}"


def elapsed(job: Job, at: float) -> float:
    """Seconds the job has run (a suspended job's clock stands still)."""
    start = job.get("start")
    if start is None:
        return 0.0
    end = job.get("end") or job.get("suspended_at") or at
    return max(0.0, float(end) - float(start) - float(job.get("suspended_for", 0.0)))


# ----------------------------------------------------------------------------------- paths


def local(state: State, path: str) -> str:
    """Where a cluster path is in this world (paths outside the cluster's mounts unchanged)."""
    for mount in MOUNTS:
        if path == mount or path.startswith(mount + "/"):
            return str(state["root"]) + path
    return path


def cluster_text(root: str, text: str) -> str:
    """``text`` with the world's file-system prefix taken off (as the cluster prints paths)."""
    return text.replace(root + "/", "/") if root in text else text


# ----------------------------------------------------------------------------------- jobs


def new_job(cluster: State, **fields: Any) -> Job:
    """A job with every field the tools print, ``fields`` over the defaults."""
    state = cluster
    job: Job = {
        "id": "",
        "name": "job",
        "user": state["user"],
        "account": "",
        "qos": "normal",
        "partition": "",
        "state": "PENDING",
        "reason": "Priority",
        "held": False,
        "dependency": "",
        "nodes_req": 1,
        "cpus": 1,
        "gpus": 0,
        "gpu_type": "",
        "mem_mb": 0,
        "time_limit": 3600,
        "submit": now(state),
        "eligible": None,
        "start": None,
        "end": None,
        "est_start": None,
        "exit_code": "0:0",
        "restarts": 0,
        "node_list": "",
        "exclude": "",
        "work_dir": f"/home/{state['user']}",
        "stdout": "",
        "stderr": "",
        "script": "",
        "cancelled_by": "",
        "cpu_time": None,
        "max_rss": "",
        "train": None,
    }
    job.update(fields)
    return job


def add_job(cluster: State, **fields: Any) -> Job:
    """Give a new job the next SLURM id and keep it."""
    job_id = str(cluster["next_id"])
    cluster["next_id"] += 1
    job = new_job(cluster, id=job_id, **fields)
    cluster["jobs"][job_id] = job
    return job


def live(job: Job) -> bool:
    """The job has not ended."""
    return str(job["state"]).split(" ")[0] in LIVE


def end_job(state: State, job: Job, job_state: str, at: float, exit_code: str) -> None:
    """End ``job`` (its nodes are free again). A job whose batch script ran writes its ``end``
    run event, as the script's EXIT trap does; one cancelled while pending, or whose node
    failed, writes none (the monitor must learn those from the controller)."""
    if job["start"] is not None and job_state != "NODE_FAIL":
        run_event(state, job, "end", at, f"rc={exit_status(exit_code)}")
    job["state"] = job_state
    job["end"] = at
    job["exit_code"] = exit_code
    if job.get("suspended_at"):
        job["suspended_for"] = float(job.get("suspended_for", 0.0)) + at - job["suspended_at"]
        job["suspended_at"] = None
    if job["start"] is None:
        job["start"] = at if job_state != "CANCELLED" else None
    job["reason"] = "None"
    train = job.get("train")
    if train and job_state == "COMPLETED":
        # TAO 7.3 writes no SUCCESS line: the run's last lines are these two, then exit 0.
        _write_status(state, job, {"status": "RUNNING", "message": "Training loop complete."}, at)
        _write_status(state, job, {"status": "RUNNING", "message": train["success"]}, at)


def run_event(state: State, job: Job, kind: str, at: float, detail: str) -> None:
    """Append a run event line to the job's ``events`` file, next to its ``main.out``, as the
    batch script writes it (``start <restart> <unix time> <node>``, ``end ... rc=N``)."""
    if not job.get("stdout"):
        return
    path = os.path.join(os.path.dirname(local(state, job["stdout"])), "events")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(f"{kind} {int(job.get('restarts', 0))} {at:.6f} {detail}\n")


def exit_status(exit_code: str) -> int:
    """The status bash's EXIT trap sees for SLURM's ``code:signal`` (128 + a signal)."""
    code, _, signal = exit_code.partition(":")
    return 128 + int(signal) if signal not in ("", "0") else int(code or 0)


def gpus_free(state: State, node: Job) -> int:
    """GPUs of ``node`` no running or suspended job holds."""
    used = sum(
        int(j["gpus"])
        for j in state["jobs"].values()
        if j["state"] in ("RUNNING", "SUSPENDED", "COMPLETING") and node["name"] in _nodes(j)
    )
    return int(node["gpus"]) - used


def _nodes(job: Job) -> list[str]:
    return [n for n in str(job.get("node_list", "")).split(",") if n]


def _place(state: State, job: Job, at: float) -> str:
    """A node of the job's partition with room for it (and no reservation for its time), or
    ''."""
    wanted = [p for p in str(job["partition"]).split(",") if p]
    excluded = set(str(job.get("exclude", "")).split(","))
    for node in state["nodes"]:
        if node["name"] in excluded or node["state"] not in ("IDLE", "MIXED"):
            continue
        if wanted and not set(wanted) & set(node["partitions"]):
            continue
        if job["gpu_type"] and node["gpu_type"] != job["gpu_type"]:
            continue
        if gpus_free(state, node) >= int(job["gpus"]) and not site.blocking(
            state, node["name"], job, at
        ):
            return str(node["name"])
    return ""


def _dependency_state(state: State, job: Job) -> str:
    """``ok`` (run now), ``wait`` or ``never``."""
    verdict = "ok"
    for clause in str(job.get("dependency", "")).split(","):
        kind, _, ids = clause.partition(":")
        for dep_id in ids.split(":") if ids else []:
            dep = state["jobs"].get(dep_id)
            if dep is None:
                continue
            if live(dep):
                verdict = "wait"
            elif kind == "afterok" and dep["state"] != "COMPLETED":
                return "never"
    return verdict


def catch_up(state: State) -> None:
    """Bring every job up to the clock (starts, training progress, ends)."""
    at = now(state)
    for job in sorted(state["jobs"].values(), key=lambda j: int(j["id"])):
        if job["state"] == "PENDING" and not job["held"]:
            _maybe_start(state, job, at)
        if job["state"] == "RUNNING":
            _run(state, job, at)


def _maybe_start(state: State, job: Job, at: float) -> None:
    deps = _dependency_state(state, job)
    if deps == "never":
        job["reason"] = "DependencyNeverSatisfied"
        return
    if deps == "wait":
        job["reason"] = "Dependency"
        return
    if job.get("eligible") is None:
        job["eligible"] = at
        if job["reason"] in ("Dependency", "JobHeldUser"):
            job["reason"] = "Priority"
    if job.get("pinned"):
        return  # a seeded waiting job keeps its reason until the world is told otherwise
    delay = float(state.get("start_delay", 15.0))
    if at < float(job["eligible"]) + delay:
        return
    node = _place(state, job, at)
    if not node:
        job["reason"] = site.why_not(state, job, at) or "Resources"
        return
    start = max(float(job["eligible"]) + delay, site.start_after(job, at))
    job.update(state="RUNNING", reason="None", node_list=node, start=start)
    run_event(state, job, "start", float(job["start"]), node)
    train = job.get("train")
    if train:
        train["t0"] = job["start"]
        _write_status(state, job, {"status": "STARTED", "message": "Starting Training Loop."}, at)
        _append_log(state, job, [f"[attempt {train.get('attempt', 0) + 1}] Starting training"])


def _run(state: State, job: Job, at: float) -> None:
    limit = job.get("time_limit")
    if limit is not None and elapsed(job, at) >= float(limit):
        end_job(state, job, "TIMEOUT", float(job["start"]) + float(limit), "0:15")
        return
    train = job.get("train")
    if not train:
        return
    every = train.get("epoch_seconds")
    ran = int((at - float(train["t0"])) // float(every)) if every else 0
    target = min(int(train["max_epoch"]), int(train["epoch0"]) + int(train["bumps"]) + ran)
    while int(train["written"]) < target:
        epoch = int(train["written"]) + 1  # epochs done; TAO writes the 0-based index
        train["written"] = epoch
        total = int(train["max_epoch"])  # (the epochs of the run)
        seconds = float(every or 190)
        loss = round(1.0 / (1 + epoch * 0.25), 4)
        entry = {
            "epoch": epoch - 1,
            "step": epoch * 20,
            "max_epoch": total - 1,
            "max_step": total * 20,
            "time_per_epoch": timedelta_text(seconds),
            "time_per_step": timedelta_text(seconds / 20),
            "eta": timedelta_text((total - epoch) * seconds),
            "status": "RUNNING",
            "message": "Training loop in progress",
            "kpi": {"train_loss": loss},
        }
        _write_status(state, job, entry, at)
        _append_log(
            state,
            job,
            [EPOCH_LINE_WORDS.format(epoch=epoch, max_epoch=total, step=epoch * 20, loss=loss)],
        )
    if int(train["written"]) >= int(train["max_epoch"]):
        end_job(state, job, "COMPLETED", at, "0:0")


def timedelta_text(seconds: float) -> str:
    """A duration as TAO writes it: ``str(timedelta)`` (``0:03:10``, ``0:00:09.500000``)."""
    return str(datetime.timedelta(seconds=seconds))


def _write_status(state: State, job: Job, entry: dict[str, Any], at: float) -> None:
    """Append a line in TAO's key order: the epoch fields, then date, time, status, verbosity,
    message, kpi (date and time without zero padding)."""
    train = job["train"]
    path = local(state, train["status_json"])
    os.makedirs(os.path.dirname(path), exist_ok=True)
    stamp = time.gmtime(at)
    head = {k: v for k, v in entry.items() if k not in ("status", "message", "kpi")}
    line: dict[str, Any] = {
        **head,
        "date": f"{stamp.tm_mon}/{stamp.tm_mday}/{stamp.tm_year}",
        "time": f"{stamp.tm_hour}:{stamp.tm_min}:{stamp.tm_sec}",
        "status": entry.get("status", "RUNNING"),
        "verbosity": "INFO",
        **{k: entry[k] for k in ("message", "kpi") if k in entry},
    }
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(line) + "\n")


def _append_log(state: State, job: Job, lines: list[str]) -> None:
    if not job.get("stdout"):
        return
    path = local(state, job["stdout"])
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write("".join(line + "\n" for line in lines))


def switch(state: State, tool: str) -> str:
    """The failure a test switched on for ``tool`` ('' when it answers normally)."""
    return str(state.get("switches", {}).get(tool, ""))
