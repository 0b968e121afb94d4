"""The fake ``squeue`` and ``sacct``, and what every fake tool shares (flags, failures).

See :mod:`.tools` for how they are run.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from tao_slurm_tui.services.fakecluster import engine
from tao_slurm_tui.services.fakecluster.engine import Job, State

SHORT_STATES = {
    "PD": "PENDING", "R": "RUNNING", "CG": "COMPLETING", "CF": "CONFIGURING", "S": "SUSPENDED",
    "CD": "COMPLETED", "F": "FAILED", "CA": "CANCELLED", "TO": "TIMEOUT", "NF": "NODE_FAIL",
    "PR": "PREEMPTED", "OOM": "OUT_OF_MEMORY", "RQ": "REQUEUED",
}  # fmt: skip
DOWN = {
    "squeue": "slurm_load_jobs error: Unable to contact slurm controller (connect failure)",
    "sacct": "sacct: error: Problem talking to the database: Connection refused",
    "sbatch": "sbatch: error: Batch job submission failed: Invalid account or account/partition "
    "combination specified",
    "sacctmgr": "sacctmgr: error: Problem talking to the database: Connection refused",
    "scontrol": "slurm_load_node error: Unable to contact slurm controller (connect failure)",
    "scancel": "scancel: error: Kill job error: Unable to contact slurm controller",
}


def preamble(state: State, tool: str, argv: list[str]) -> int | None:
    """What every SLURM tool answers before looking at its job: ``--version``, and the failure
    of a daemon a test switched off (None: go on)."""
    if "--version" in argv:
        print(f"slurm {state['version']}")
        return 0
    if tool in DOWN and engine.switch(state, tool) == "fail":
        print(DOWN[tool], file=sys.stderr)
        return 1
    return None


class Usage(Exception):
    """A flag the tool does not know: print SLURM's complaint, exit 1."""


def flags(argv: list[str], valued: set[str]) -> Iterator[tuple[str, str]]:
    """``(flag, value)`` pairs (``-x V``, ``-xV``, ``--x=V``, ``--x V``; value '' for switches)
    and ``("", arg)`` for positional arguments; combined short switches (``-nP``) split."""
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg.startswith("--"):
            name, eq, value = arg.partition("=")
            if not eq and name in valued:
                value, i = argv[i], i + 1
            yield name, value
        elif arg.startswith("-") and len(arg) > 1:
            flag = arg[:2]
            if flag in valued:
                value = arg[2:]
                if not value:
                    value, i = argv[i], i + 1
                yield flag, value
            else:
                for ch in arg[1:]:
                    yield f"-{ch}", ""
        else:
            yield "", arg


# ----------------------------------------------------------------------------------- squeue


def known_jobs(state: State, at: float) -> list[Job]:
    """The jobs slurmctld still has: live ones, and ended ones for ``MinJobAge``."""
    age = float(state.get("min_job_age", 300))
    return [
        j
        for j in state["jobs"].values()
        if engine.live(j) or (j["end"] is not None and at - float(j["end"]) <= age)
    ]


def _gres(job: Job) -> str:
    if not int(job["gpus"]):
        return "N/A"
    kind = f"{job['gpu_type']}:" if job["gpu_type"] else ""
    return f"gres:gpu:{kind}{job['gpus']}"


def _squeue_value(state: State, job: Job, key: str, at: float) -> str:
    pending = job["state"] == "PENDING"
    start = job["start"]
    values: dict[str, Callable[[], Any]] = {
        "jobid": lambda: job["id"],
        "state": lambda: job["state"],
        "reason": lambda: job["reason"] if pending else "None",
        "nodelist": lambda: job["node_list"],
        "timeused": lambda: engine.short_duration(engine.elapsed(job, at)),
        "timelimit": lambda: engine.short_duration(job["time_limit"]),
        "partition": lambda: job["partition"],
        "submittime": lambda: engine.stamp(job["submit"]),
        "starttime": lambda: (
            (engine.stamp(job["est_start"]) if job["est_start"] else "N/A")
            if pending
            else engine.stamp(start)
        ),
        "endtime": lambda: (
            engine.stamp(job["end"])
            if job["end"] is not None
            else ("N/A" if pending else engine.stamp(float(start) + float(job["time_limit"] or 0)))
        ),
        "restartcnt": lambda: job["restarts"],
        "name": lambda: job["name"],
        "username": lambda: job["user"],
    }
    return str(values.get(key.lower(), lambda: "")())


PERCENT = {
    "i": "jobid", "T": "state", "r": "reason", "N": "nodelist", "M": "timeused",
    "l": "timelimit", "P": "partition", "V": "submittime", "S": "starttime", "e": "endtime",
    "j": "name", "u": "username",
}  # fmt: skip


def _percent(state: State, job: Job, fmt: str, at: float) -> str:
    def one(match: re.Match[str]) -> str:
        code = match.group(2)
        extra = {
            "a": job["account"],
            "q": job["qos"],
            "D": job["nodes_req"],
            "C": job["cpus"],
            "b": _gres(job),
            "R": job["node_list"] if job["state"] != "PENDING" else f"({job['reason']})",
        }
        if code in extra:
            return str(extra[code])
        return _squeue_value(state, job, PERCENT.get(code, ""), at)

    return re.sub(r"%(\.?\d*)([a-zA-Z])", one, fmt)


def squeue(state: State, argv: list[str]) -> int:
    """``squeue``: the controller's jobs, filtered; ``-O``/``-o`` formats.

    Long because: one linear pass over the tool's options as the real squeue reads them
    (states, users, ids, names, formats), then one loop printing the rows.
    """
    at = engine.now(state)
    states: set[str] = {"PENDING", "RUNNING", "SUSPENDED", "COMPLETING", "CONFIGURING"}
    users: set[str] = set()
    ids: list[str] = []
    names: set[str] = set()
    parts: set[str] = set()
    header, fmt, fields = True, "%i %P %j %u %T %M %l %D %R", ""
    for flag, value in flags(
        argv,
        {
            "-t",
            "-u",
            "-j",
            "-n",
            "-o",
            "-O",
            "-p",
            "--states",
            "--user",
            "--jobs",
            "--name",
            "--format",
            "--Format",
        },
    ):
        if flag in ("-h", "--noheader"):
            header = False
        elif flag in ("-t", "--states"):
            states = (
                set()
                if value.lower() == "all"
                else {SHORT_STATES.get(s, s) for s in value.upper().split(",")}
            )
        elif flag in ("-u", "--user"):
            users = set(value.split(","))
        elif flag in ("-j", "--jobs"):
            ids = value.split(",")
        elif flag in ("-n", "--name"):
            names = set(value.split(","))
        elif flag == "-p":
            parts = set(value.split(","))
        elif flag in ("-o", "--format"):
            fmt = value
        elif flag in ("-O", "--Format"):
            fields = value
    jobs = sorted(known_jobs(state, at), key=lambda j: int(j["id"]))
    if ids:
        jobs = [j for j in jobs if j["id"] in ids]
        if not jobs:
            print("slurm_load_jobs error: Invalid job id specified", file=sys.stderr)
            return 1
    jobs = [
        j
        for j in jobs
        if (not states or j["state"].split(" ")[0] in states)
        and (not users or j["user"] in users)
        and (not names or j["name"] in names)
        and (not parts or set(str(j["partition"]).split(",")) & parts)
    ]
    if engine.switch(state, "squeue-garbage"):
        print("Message of the day: the controller moves on Friday")
    if fields:
        spec = [re.match(r"([A-Za-z]+)(?::\.?(\d*))?(.*)", f) for f in fields.split(",")]
        for job in jobs:
            out = []
            for m in spec:
                if m is not None:
                    out.append(_squeue_value(state, job, m.group(1), at) + m.group(3))
            print("".join(out))
        return 0
    if header:
        print(fmt)
    for job in jobs:
        print(_percent(state, job, fmt, at))
    return 0


# ----------------------------------------------------------------------------------- sacct


def _parse_when(text: str, at: float) -> float:
    """``now``, ``now-7days``, ``now+1hours``, ``now-3600``, ``midnight``, ISO date/time."""
    text = text.strip()
    units = {"": 1, "seconds": 1, "minutes": 60, "hours": 3600, "days": 86400, "weeks": 604800}
    m = re.fullmatch(r"now(?:([-+])(\d+)([a-z]*))?", text)
    if m:
        sign = -1 if m.group(1) == "-" else 1
        return at + sign * int(m.group(2) or 0) * units.get(m.group(3), 1)
    if text in ("midnight", "today"):
        return at - at % 86400
    for form in ("%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d", "%m/%d/%y"):
        try:
            return float(time.mktime(time.strptime(text, form)) - time.timezone)
        except ValueError:
            continue
    raise Usage(f"sacct: error: Invalid time specification: {text}")


def _tres(job: Job) -> str:
    if job["start"] is None:
        return ""
    gpus = int(job["gpus"]) * int(job["nodes_req"])
    gres = f",gres/gpu={gpus}" if gpus else ""
    return f"billing={job['cpus']},cpu={job['cpus']}{gres},node={job['nodes_req']}"


def _sacct_value(job: Job, key: str, at: float, step: str) -> str:
    ran = engine.elapsed(job, at)
    pending = job["start"] is None
    state = job["state"] + (
        f" by {job['cancelled_by']}" if job["cancelled_by"] and not step else ""
    )
    cpu_time = job.get("cpu_time")
    values: dict[str, Any] = {
        "jobid": (job.get("array_id") or job["id"]) + step,
        "jobidraw": job["id"] + step,
        "state": state,
        "exitcode": job["exit_code"],
        "reason": job["reason"],
        "nodelist": "None assigned" if pending else job["node_list"],
        "elapsed": engine.duration(ran),
        "elapsedraw": int(ran),
        "timelimit": "" if step else engine.duration(job["time_limit"]),
        "timelimitraw": "" if step else int((job["time_limit"] or 0) // 60),
        "partition": "" if step else job["partition"],
        "submit": engine.stamp(job["submit"]),
        # A job cancelled before it ran: SLURM records its start as the cancel.
        "start": engine.stamp(job["start"] if job["start"] is not None else job["end"]),
        "end": engine.stamp(job["end"]),
        "alloccpus": 0 if pending else job["cpus"],
        "alloctres": _tres(job),
        "totalcpu": engine.duration(cpu_time) + ".000" if cpu_time is not None else "00:00:00",
        "maxrss": job["max_rss"] if step else "",
        "user": "" if step else job["user"],
        "workdir": "" if step else job["work_dir"],
        "jobname": "batch" if step else job["name"],
        "account": job["account"],
    }
    return str(values.get(key.lower(), ""))


def sacct(state: State, argv: list[str]) -> int:
    """``sacct``: accounting rows of the controller's and the history's jobs.

    Long because: one linear pass over the tool's options as the real sacct reads them
    (window, states, ids, names, format, separators), then one loop printing the rows.
    """
    if engine.switch(state, "sacct-garbage"):
        print("Welcome to \x1b[1mpolar\x1b[0m, the GPU cluster of the lab")
        return 0
    at = engine.now(state)
    allocations, header, sep = False, True, "|"
    fields = "JobID,JobName,Partition,Account,AllocCPUS,State,ExitCode"
    ids: list[str] = []
    users: set[str] = set()
    names: set[str] = set()
    since: float | None = None
    until = at
    parsable = False
    for flag, value in flags(
        argv,
        {
            "-j",
            "-u",
            "-S",
            "-E",
            "-o",
            "--jobs",
            "--user",
            "--name",
            "--starttime",
            "--endtime",
            "--format",
            "--delimiter",
        },
    ):
        if flag in ("-X", "--allocations"):
            allocations = True
        elif flag in ("-n", "--noheader"):
            header = False
        elif flag in ("-P", "--parsable2"):
            parsable = True
        elif flag == "--delimiter":
            sep = value
        elif flag in ("-o", "--format"):
            fields = value
        elif flag in ("-j", "--jobs"):
            ids = value.split(",")
        elif flag in ("-u", "--user"):
            users = set(value.split(","))
        elif flag == "--name":
            names = set(value.split(","))
        elif flag in ("-S", "--starttime"):
            since = _parse_when(value, at)
        elif flag in ("-E", "--endtime"):
            until = _parse_when(value, at)
    if not parsable:
        sep = " "
    if since is None and not ids:
        since = at - at % 86400
    keys = [f.split("%")[0] for f in fields.split(",") if f]
    jobs = engine.history(engine.world_dir()) + sorted(
        state["jobs"].values(), key=lambda j: int(j["id"])
    )
    if header:
        print(sep.join(keys))
    for job in jobs:
        if ids and job["id"] not in ids and job.get("array_id") not in ids:
            continue
        if users and job["user"] not in users:
            continue
        if names and job["name"] not in names:
            continue
        ended_before = job["end"] is not None and since is not None and job["end"] < since
        if since is not None and not ids and (float(job["submit"]) > until or ended_before):
            continue
        if not ids and job["start"] is None and job.get("eligible", 0) is None:
            continue  # never eligible (held, waiting on a dependency): only -j finds it
        print(sep.join(_sacct_value(job, k, at, "") for k in keys))
        if not allocations and job["start"] is not None:
            print(sep.join(_sacct_value(job, k, at, ".batch") for k in keys))
    return 0
