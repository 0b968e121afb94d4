"""The fake ``scontrol``, ``sinfo``, ``sacctmgr``, ``srun``, ``id`` and a compute node's
``hostname`` and ``enroot``."""

from __future__ import annotations

import os
import sys

from tao_slurm_tui.services.fakecluster import engine, node_tools
from tao_slurm_tui.services.fakecluster.engine import Job, State
from tao_slurm_tui.services.fakecluster.queue_tools import flags, known_jobs

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
    at = engine.now(state)
    if words[:2] == ["show", "node"]:
        for node in state["nodes"]:
            print(_node_line(state, node))
    elif words[:2] == ["show", "partition"]:
        for part in state["partitions"]:
            print(_partition_line(state, part))
    elif words[:2] == ["show", "job"]:
        known = {j["id"]: j for j in known_jobs(state, at)}
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
    """``sinfo -h -o '%P|%l'``, ``sinfo -h -o '%P|%c|%m|%G|%D'`` (one line per partition and
    node shape) and ``sinfo -h -p P -o %n``."""
    fmt, only = "%P %l", ""
    for flag, value in flags(argv, {"-o", "-p", "--format", "--partition"}):
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
        line = fmt.replace("%P", name).replace("%l", engine.short_duration(part["max_time"]))
        if "%c" not in fmt:
            print(line)
            continue
        # One line per node shape of the partition, as sinfo groups nodes alike.
        shapes: dict[tuple[str, str, str], int] = {}
        for node in state["nodes"]:
            if part["name"] in node["partitions"]:
                gres = f"gpu:{node['gpu_type']}:{node['gpus']}(S:0-1)"
                key = (str(node["cpus"]), str(node["mem_mb"]), gres)
                shapes[key] = shapes.get(key, 0) + 1
        for (cpus, mem, gres), count in shapes.items():
            print(
                line.replace("%c", cpus).replace("%m", mem).replace("%G", gres)
                .replace("%D", str(count))
            )  # fmt: skip
    return 0


# ----------------------------------------------------------------------------------- sacctmgr


def sacctmgr(state: State, argv: list[str]) -> int:
    """``sacctmgr -nP show qos|assoc|user ... format=...`` (as our capacity and doctor ask)."""
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
    """``srun --help`` (Pyxis' flags), the doctor's one-task check on a compute node, and a
    step in a running job (``--jobid``: :func:`.node_tools.step`)."""
    if "--help" in argv:
        print("Usage: srun [OPTIONS(0)... [executable(0) [args(0)...]]]")
        if state.get("pyxis", True):
            print("      --container-image=[USER@][REGISTRY#]IMAGE[:TAG]|PATH")
        return 0
    first = next((i for i, a in enumerate(argv) if not a.startswith("-")), len(argv))
    command = argv[first:]
    jobid = next((a.split("=", 1)[1] for a in argv[:first] if a.startswith("--jobid=")), "")
    if jobid:
        job = state["jobs"].get(jobid)
        if job is None or job["state"] != "RUNNING":
            why = (
                "Invalid job id specified"
                if job is None
                else "Job/step already completing or completed"
            )
            print(
                f"srun: error: Unable to confirm allocation for job {jobid}: {why}", file=sys.stderr
            )
            sys.stdout.flush()
            os._exit(1)
    idle = next((n["name"] for n in state["nodes"] if n["state"] in ("IDLE", "MIXED")), "")
    world = engine.world_dir()
    env = dict(os.environ, TAO_FAKE_NODE=idle, SLURM_CONF=f"{state['root']}/etc/slurm/slurm.conf")
    env["PATH"] = f"{world}/nodebin:{env.get('PATH', '')}"
    if any(a == "--jobid" or a.startswith("--jobid=") for a in argv[:first]):
        return node_tools.step(state, argv[:first], command, env)
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
