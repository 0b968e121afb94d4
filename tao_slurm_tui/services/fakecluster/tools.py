"""The fake cluster's SLURM tools: one small program per call, answering in SLURM 22.05's formats.

The world puts a wrapper per tool on ``PATH`` (``squeue``, ``sacct``, ``sbatch``, ``scancel``,
``scontrol``, ``sinfo``, ``sacctmgr``, ``srun``, ``id``; ``hostname`` and ``enroot`` on the
compute node ``srun`` reaches); each starts ``python -IS`` on :func:`main` with its name.
Standard library only. They understand the flags the services pass (explicit ``-O``/``-o``/
``--format`` field lists, ``-P``, ``--delimiter``, ``-n``/``-h``, ``-X``, ``-D``, ``-j``, ``-u``,
``-t``, ``--name``, ``-S``/``-E``, ``--test-only``, ``--hold``, ...) and print what SLURM prints,
errors on stderr with SLURM's words and exit statuses. A test's failure switch
(``World.fail``) makes a tool fail the way SLURM does when its daemon is down.
"""

from __future__ import annotations

import os
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


class Usage(Exception):
    """A flag the tool does not know: print SLURM's complaint, exit 1."""


def _args(argv: list[str], valued: set[str]) -> Iterator[tuple[str, str]]:
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


def _known(state: State, at: float) -> list[Job]:
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
    """``squeue``: the controller's jobs, filtered; ``-O``/``-o`` formats."""
    if "--version" in argv:
        print(f"slurm {state['version']}")
        return 0
    if engine.switch(state, "squeue"):
        print(DOWN["squeue"], file=sys.stderr)
        return 1
    at = engine.now(state)
    states: set[str] = {"PENDING", "RUNNING", "SUSPENDED", "COMPLETING", "CONFIGURING"}
    users: set[str] = set()
    ids: list[str] = []
    names: set[str] = set()
    parts: set[str] = set()
    header, fmt, fields = True, "%i %P %j %u %T %M %l %D %R", ""
    for flag, value in _args(
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
    jobs = sorted(_known(state, at), key=lambda j: int(j["id"]))
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
        "start": engine.stamp(job["start"]),
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
    """``sacct``: accounting rows of the controller's and the history's jobs."""
    if "--version" in argv:
        print(f"slurm {state['version']}")
        return 0
    if engine.switch(state, "sacct"):
        print(DOWN["sacct"], file=sys.stderr)
        return 1
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
    for flag, value in _args(
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
        print(sep.join(_sacct_value(job, k, at, "") for k in keys))
        if not allocations and job["start"] is not None:
            print(sep.join(_sacct_value(job, k, at, ".batch") for k in keys))
    return 0


# ----------------------------------------------------------------------------------- sbatch


def _seconds(text: str) -> int:
    """SLURM's time forms: ``M``, ``M:S``, ``H:M:S``, ``D-H``, ``D-H:M``, ``D-H:M:S``."""
    days, _, rest = text.rpartition("-")
    parts = [int(p) for p in rest.split(":")]
    if days:
        parts += [0] * (3 - len(parts))
        h, m, s = parts
        return int(days) * 86400 + h * 3600 + m * 60 + s
    if len(parts) == 1:
        return parts[0] * 60
    if len(parts) == 2:
        return parts[0] * 60 + parts[1]
    return parts[0] * 3600 + parts[1] * 60 + parts[2]


SBATCH_VALUED = {
    "-p", "-t", "-N", "-J", "-o", "-e", "-d", "-A", "-x", "-c", "-D", "-n", "-q",
    "--partition", "--time", "--nodes", "--job-name", "--output", "--error", "--dependency",
    "--account", "--exclude", "--cpus-per-task", "--ntasks-per-node", "--gres", "--mem",
    "--export", "--open-mode", "--signal", "--qos", "--gpus-per-node", "--chdir", "--ntasks",
    "--constraint", "--comment", "--mail-type", "--gpus",
}  # fmt: skip


def _request(state: State, argv: list[str]) -> tuple[dict[str, str], list[str], str]:
    """(options, switches, script path): the script's ``#SBATCH`` lines, then the command line."""
    cli: list[tuple[str, str]] = []
    script = ""
    for flag, value in _args(argv, SBATCH_VALUED):
        if flag:
            cli.append((flag, value))
        elif not script:
            script = value
    lines: list[str] = []
    if script:
        try:
            with open(script, encoding="utf-8") as handle:
                lines = handle.read().splitlines()
        except OSError:
            raise Usage(f"sbatch: error: Unable to open file {script}") from None
    directives: list[str] = []
    for line in lines:
        if line.startswith("#SBATCH"):
            directives += line[len("#SBATCH") :].split()
        elif line.strip() and not line.startswith("#"):
            break
    long = {"-p": "--partition", "-t": "--time", "-N": "--nodes", "-J": "--job-name",
            "-o": "--output", "-e": "--error", "-d": "--dependency", "-A": "--account",
            "-x": "--exclude", "-c": "--cpus-per-task", "-q": "--qos", "-D": "--chdir"}  # fmt: skip
    options: dict[str, str] = {}
    switches: list[str] = []
    for flag, value in [*_args(directives, SBATCH_VALUED), *cli]:
        name = long.get(flag, flag)
        if flag and (value or name in SBATCH_VALUED):
            options[name] = value
        elif flag:
            switches.append(name)
    return options, switches, script


def _gpus(options: dict[str, str]) -> tuple[int, str]:
    gres = options.get("--gres", "") or (
        f"gpu:{options['--gpus-per-node']}" if "--gpus-per-node" in options else ""
    )
    for item in gres.split(","):
        parts = item.split(":")
        if parts[0] == "gpu" and len(parts) >= 2:
            return int(parts[-1]), parts[1] if len(parts) == 3 else ""
    return 0, ""


def _partition(state: State, name: str) -> Job | None:
    if not name:
        return next((p for p in state["partitions"] if p.get("default")), None)
    return next((p for p in state["partitions"] if p["name"] == name), None)


def _fitting(state: State, part: Job, gpus: int, kind: str) -> list[Job]:
    return [
        n
        for n in state["nodes"]
        if part["name"] in n["partitions"]
        and int(n["gpus"]) >= gpus
        and (not kind or n["gpu_type"] == kind)
    ]


def sbatch(state: State, argv: list[str]) -> int:
    """``sbatch``: submit (or ``--test-only`` estimate) a batch script."""
    if "--version" in argv:
        print(f"slurm {state['version']}")
        return 0
    options, switches, script = _request(state, argv)
    refusal = engine.switch(state, "sbatch")
    if refusal:
        message = DOWN["sbatch"] if refusal == "fail" else f"sbatch: error: {refusal}"
        print(message, file=sys.stderr)
        return 1
    parts = options.get("--partition", "")
    part = _partition(state, parts.split(",")[0])
    if part is None:
        print(
            "sbatch: error: Batch job submission failed: Invalid partition name specified",
            file=sys.stderr,
        )
        return 1
    gpus, kind = _gpus(options)
    nodes = int(options.get("--nodes", "1").split("-")[0])
    limit = _seconds(options["--time"]) if "--time" in options else int(part["max_time"] or 3600)
    fitting = _fitting(state, part, gpus, kind)
    if len(fitting) < nodes:
        print(
            "sbatch: error: Batch job submission failed: Requested node configuration is not "
            "available",
            file=sys.stderr,
        )
        return 1
    at = engine.now(state)
    cpus = (
        int(options.get("--cpus-per-task", "1"))
        * int(options.get("--ntasks-per-node", "1"))
        * nodes
    )
    if "--test-only" in switches:
        free = [
            n
            for n in fitting
            if n["state"] in ("IDLE", "MIXED") and engine.gpus_free(state, n) >= gpus
        ]
        wait = 0.0
        if len(free) < nodes:
            base = float(state.get("wait", {}).get(part["name"], 3600))
            wait = base * min(1.0, limit / float(part["max_time"] or limit))
        where = free[0]["name"] if len(free) >= nodes else fitting[0]["name"]
        print(
            f"sbatch: Job {state['next_id']} to start at {engine.stamp(at + wait)} using "
            f"{cpus} processors on nodes {where} in partition {part['name']}",
            file=sys.stderr,
        )
        return 0
    name = options.get("--job-name", os.path.basename(script) or "sbatch")
    job = engine.add_job(
        state,
        name=name,
        partition=parts or part["name"],
        account=options.get("--account", ""),
        held="--hold" in switches or "-H" in switches,
        reason="JobHeldUser" if ("--hold" in switches or "-H" in switches) else "Priority",
        dependency=options.get("--dependency", ""),
        nodes_req=nodes,
        cpus=cpus,
        gpus=gpus,
        gpu_type=kind,
        time_limit=limit,
        exclude=options.get("--exclude", ""),
        work_dir=engine.cluster_text(state["root"], os.getcwd()),
        script=engine.cluster_text(state["root"], os.path.abspath(script)),
    )
    _files(state, job, options)
    if limit > int(part["max_time"] or limit):
        job.update(reason="PartitionTimeLimit", pinned=True)
    print(job["id"] if "--parsable" in switches else f"Submitted batch job {job['id']}")
    return 0


def _files(state: State, job: Job, options: dict[str, str]) -> None:
    """The job's output paths (``%j``, ``%x``), and its training when it runs a TAO job."""

    def fill(path: str) -> str:
        path = path.replace("%j", job["id"]).replace("%x", job["name"])
        return path if path.startswith("/") else f"{job['work_dir']}/{path}"

    job["stdout"] = fill(options.get("--output", "slurm-%j.out"))
    job["stderr"] = fill(options.get("--error", "")) if "--error" in options else job["stdout"]
    marker = "/slurm-logs/"
    if marker in job["stdout"]:
        base = job["stdout"].split(marker)[0]
        job["train"] = {
            "status_json": f"{base}/results/{job['name']}/status.json",
            "max_epoch": int(state.get("max_epoch", 10)),
            "epoch_seconds": state.get("epoch_seconds", 30),
            "epoch0": 0,
            "bumps": 0,
            "written": 0,
            "t0": None,
            "success": "Training finished successfully.",
        }


# ----------------------------------------------------------------------------------- scancel


def scancel(state: State, argv: list[str]) -> int:
    """``scancel ID...``: end every live job named (SLURM's errors for the others)."""
    if engine.switch(state, "scancel"):
        print(DOWN["scancel"], file=sys.stderr)
        return 1
    at = engine.now(state)
    rc = 0
    for _flag, value in _args(argv, set()):
        job = state["jobs"].get(value)
        if job is None:
            print(f"scancel: error: Kill job error on job id {value}: Invalid job id specified",
                  file=sys.stderr)  # fmt: skip
            rc = 1
            continue
        if not engine.live(job):
            print(f"scancel: error: Kill job error on job id {value}: Job/step already "
                  "completing or completed", file=sys.stderr)  # fmt: skip
            continue
        running = job["start"] is not None
        engine.end_job(state, job, "CANCELLED", at, "0:15" if running else "0:0")
        job["cancelled_by"] = str(state.get("uid", 4242))
    return rc


# ----------------------------------------------------------------------------------- scontrol


def _node_line(state: State, node: Job) -> str:
    used = node["gpus"] - engine.gpus_free(state, node)
    cpus = sum(
        int(j["cpus"]) // max(1, int(j["nodes_req"]))
        for j in state["jobs"].values()
        if j["state"] in ("RUNNING", "SUSPENDED") and node["name"] in j["node_list"].split(",")
    )
    base = node["state"]
    if base in ("IDLE", "MIXED"):
        base = "IDLE" if not used else ("ALLOCATED" if used >= node["gpus"] else "MIXED")
    kind = node["gpu_type"]
    mem = int(node["mem_mb"])
    line = (
        f"NodeName={node['name']} Arch=x86_64 CoresPerSocket=16 CPUAlloc={cpus} "
        f"CPUEfctv={node['cpus']} CPUTot={node['cpus']} CPULoad=1.00 AvailableFeatures={kind} "
        f"ActiveFeatures={kind} Gres=gpu:{kind}:{node['gpus']}(S:0-1) NodeAddr={node['name']} "
        f"NodeHostName={node['name']} Version={state['version']} RealMemory={mem} "
        f"AllocMem={mem * cpus // int(node['cpus'])} FreeMem=400000 Sockets=2 Boards=1 "
        f"State={base} ThreadsPerCore=1 TmpDisk=0 Weight=1 "
        f"Partitions={','.join(node['partitions'])} "
        f"CfgTRES=cpu={node['cpus']},mem={mem}M,billing={node['cpus']},gres/gpu={node['gpus']} "
        f"AllocTRES=cpu={cpus},gres/gpu={used},gres/gpu:{kind}={used}"
    )
    if node.get("reason"):
        line += f" Reason={node['reason']} [{node['reason_by']}@{node['reason_time']}]"
    return line


def _partition_line(state: State, part: Job) -> str:
    nodes = [n for n in state["nodes"] if part["name"] in n["partitions"]]
    cpus = sum(int(n["cpus"]) for n in nodes)
    return (
        f"PartitionName={part['name']} AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL "
        f"AllocNodes=ALL Default={'YES' if part.get('default') else 'NO'} QoS=N/A "
        f"DefaultTime=01:00:00 DisableRootJobs=NO ExclusiveUser=NO GraceTime=0 Hidden=NO "
        f"MaxNodes=UNLIMITED MaxTime={engine.duration(part['max_time'])} MinNodes=0 LLN=NO "
        f"MaxCPUsPerNode=UNLIMITED Nodes={','.join(n['name'] for n in nodes)} "
        f"PriorityJobFactor=1 PriorityTier=1 RootOnly=NO ReqResv=NO OverSubscribe=NO "
        f"OverTimeLimit=NONE PreemptMode=OFF State={part.get('state', 'UP')} TotalCPUs={cpus} "
        f"TotalNodes={len(nodes)} SelectTypeParameters=NONE JobDefaults=(null) "
        f"DefMemPerNode=UNLIMITED MaxMemPerNode=UNLIMITED"
    )


def _job_line(state: State, job: Job, at: float) -> str:
    return (
        f"JobId={job['id']} JobName={job['name']} UserId={job['user']}(1000) GroupId="
        f"{job['user']}(1000) Account={job['account']} QOS={job['qos']} JobState={job['state']} "
        f"Reason={job['reason']} Dependency={job['dependency'] or '(null)'} RunTime="
        f"{engine.duration(engine.elapsed(job, at))} TimeLimit={engine.duration(job['time_limit'])}"
        f" SubmitTime={engine.stamp(job['submit'])} StartTime={engine.stamp(job['start'])} "
        f"EndTime={engine.stamp(job['end'])} Partition={job['partition']} NodeList="
        f"{job['node_list'] or '(null)'} NumNodes={job['nodes_req']} NumCPUs={job['cpus']} "
        f"WorkDir={engine.local(state, job['work_dir'])} "
        f"StdErr={engine.local(state, job['stderr'] or job['stdout'])} StdIn=/dev/null "
        f"StdOut={engine.local(state, job['stdout'])}"
    )


def scontrol(state: State, argv: list[str]) -> int:
    """``scontrol show node|partition|job|config``, ``release``, ``update JobId= Dependency=``."""
    words = [a for a in argv if a not in ("-o", "--oneliner")]
    if words[:1] == ["--version"]:
        print(f"slurm {state['version']}")
        return 0
    if engine.switch(state, "scontrol"):
        print(DOWN["scontrol"], file=sys.stderr)
        return 1
    at = engine.now(state)
    if words[:2] == ["show", "node"]:
        for node in state["nodes"]:
            print(_node_line(state, node))
    elif words[:2] == ["show", "partition"]:
        for part in state["partitions"]:
            print(_partition_line(state, part))
    elif words[:2] == ["show", "job"]:
        known = {j["id"]: j for j in _known(state, at)}
        job = known.get(words[2] if len(words) > 2 else "")
        if job is None:
            print("slurm_load_jobs error: Invalid job id specified", file=sys.stderr)
            return 1
        print(_job_line(state, job, at))
    elif words[:2] == ["show", "config"]:
        print(f"Configuration data as of {engine.stamp(at)}")
        print(f"AccountingStorageEnforce = {state['enforce']}")
        print("ClusterName             = fake")
        print(f"MinJobAge               = {state['min_job_age']} sec")
    elif words[:1] == ["release"]:
        for job_id in ",".join(words[1:]).split(","):
            job = state["jobs"].get(job_id)
            if job is None:
                print(f"Invalid job id specified for job {job_id}", file=sys.stderr)
                return 1
            job["held"] = False
            job["reason"] = "Priority"
    elif words[:1] == ["update"]:
        fields = dict(w.split("=", 1) for w in words[1:] if "=" in w)
        job = state["jobs"].get(fields.get("JobId", ""))
        if job is None or not engine.live(job):
            print("slurm_update error: Invalid job id specified", file=sys.stderr)
            return 1
        if "Dependency" in fields:
            job["dependency"] = fields["Dependency"]
    else:
        print(f"scontrol: error: Invalid command: {' '.join(words)}", file=sys.stderr)
        return 1
    return 0


# ----------------------------------------------------------------------------------- sinfo


def sinfo(state: State, argv: list[str]) -> int:
    """``sinfo -h -o '%P|%l'`` and ``sinfo -h -p P -o %n``."""
    if "--version" in argv:
        print(f"slurm {state['version']}")
        return 0
    fmt, only = "%P %l", ""
    for flag, value in _args(argv, {"-o", "-p", "--format", "--partition"}):
        if flag in ("-o", "--format"):
            fmt = value
        elif flag in ("-p", "--partition"):
            only = value
    if "%n" in fmt:
        for node in state["nodes"]:
            if not only or only in node["partitions"]:
                print(fmt.replace("%n", node["name"]))
        return 0
    for part in state["partitions"]:
        if only and part["name"] != only:
            continue
        name = part["name"] + ("*" if part.get("default") else "")
        print(fmt.replace("%P", name).replace("%l", engine.short_duration(part["max_time"])))
    return 0


# ----------------------------------------------------------------------------------- sacctmgr


def sacctmgr(state: State, argv: list[str]) -> int:
    """``sacctmgr -nP show qos|assoc|user ... format=...`` (as our capacity and doctor ask)."""
    if "--version" in argv:
        print(f"slurm {state['version']}")
        return 0
    if engine.switch(state, "sacctmgr"):
        print(DOWN["sacctmgr"], file=sys.stderr)
        return 1
    words = [a for a in argv if not a.startswith("-")]
    where: dict[str, set[str]] = {}
    fmt: list[str] = []
    for word in words[2:]:
        key, eq, value = word.partition("=")
        if key.lower() == "format":
            fmt = [f.lower() for f in value.split(",")]
        elif eq:
            where[key.lower().rstrip("s")] = set(value.split(","))
        elif word != "where":
            where["user"] = {word}
    kind = words[1] if len(words) > 1 else ""
    if kind == "qos":
        rows = state["qos"]
    elif kind == "assoc":
        rows = [
            a
            for a in state["assocs"]
            if (not where.get("user") or a["user"] in where["user"])
            and (not where.get("account") or a["account"] in where["account"])
        ]
    elif kind == "user":
        rows = [
            {"user": u, "defaultaccount": acct}
            for u, acct in state["default_accounts"].items()
            if not where.get("user") or u in where["user"]
        ]
    else:
        print(f"sacctmgr: error: Unknown option: {kind}", file=sys.stderr)
        return 1
    for row in rows:
        print("|".join(str(row.get(f, "")) for f in fmt))
    return 0


# ----------------------------------------------------------------------------------- the rest


def srun(state: State, argv: list[str]) -> int:
    """``srun --help`` (Pyxis' flags) and the doctor's one-task check on a compute node."""
    if "--help" in argv:
        print("Usage: srun [OPTIONS(0)... [executable(0) [args(0)...]]]")
        if state.get("pyxis", True):
            print("      --container-image=[USER@][REGISTRY#]IMAGE[:TAG]|PATH")
        return 0
    if "--version" in argv:
        print(f"slurm {state['version']}")
        return 0
    first = next((i for i, a in enumerate(argv) if not a.startswith("-")), len(argv))
    command = argv[first:]
    idle = next((n["name"] for n in state["nodes"] if n["state"] in ("IDLE", "MIXED")), "")
    world = engine.world_dir()
    env = dict(os.environ, TAO_FAKE_NODE=idle, SLURM_CONF=f"{state['root']}/etc/slurm/slurm.conf")
    env["PATH"] = f"{world}/nodebin:{env.get('PATH', '')}"
    sys.stdout.flush()
    os.execvpe(command[0], command, env)


def hostname(state: State, argv: list[str]) -> int:
    """The compute node ``srun`` runs on."""
    print(os.environ.get("TAO_FAKE_NODE", "login1"))
    return 0


def enroot(state: State, argv: list[str]) -> int:
    """``enroot version`` on a compute node."""
    print("3.4.1")
    return 0


def user_id(state: State, argv: list[str]) -> int:
    """``id -un`` / ``id -u``: the cluster account."""
    if "-un" in argv or ("-u" in argv and "-n" in argv):
        print(state["user"])
    elif "-u" in argv:
        print(state.get("uid", 4242))
    else:
        uid = state.get("uid", 4242)
        print(
            f"uid={uid}({state['user']}) gid={uid}({state['user']}) groups={uid}({state['user']})"
        )
    return 0


TOOLS: dict[str, Callable[[State, list[str]], int]] = {
    "squeue": squeue,
    "sacct": sacct,
    "sbatch": sbatch,
    "scancel": scancel,
    "scontrol": scontrol,
    "sinfo": sinfo,
    "sacctmgr": sacctmgr,
    "srun": srun,
    "id": user_id,
    "hostname": hostname,
    "enroot": enroot,
}
"""Every tool the world puts on ``PATH``, by name."""

READ_ONLY = {"sinfo", "id", "hostname", "enroot", "sacctmgr"}


def main(name: str) -> None:
    """Run tool ``name`` on ``sys.argv[1:]`` against the world of :data:`engine.WORLD_VARIABLE`."""
    argv = sys.argv[1:]
    runs_command = name == "srun" and "--help" not in argv and "--version" not in argv
    try:
        with engine.locked(engine.world_dir(), write=name not in READ_ONLY) as state:
            if name not in READ_ONLY:
                engine.catch_up(state)
            rc = 0 if runs_command else TOOLS[name](state, argv)
    except Usage as exc:
        print(str(exc), file=sys.stderr)
        sys.exit(1)
    sys.stdout.flush()
    if runs_command:
        srun(state, argv)  # a compute node runs the command (after the state lock is let go)
    sys.exit(rc)
