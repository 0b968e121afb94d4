"""The fake ``sbatch`` (a submission or a ``--test-only`` estimate) and ``scancel``."""

from __future__ import annotations

import os
import sys

from tao_slurm_tui.services.fakecluster import engine
from tao_slurm_tui.services.fakecluster.engine import Job, State
from tao_slurm_tui.services.fakecluster.queue_tools import DOWN, Usage, flags

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
    for flag, value in flags(argv, SBATCH_VALUED):
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
    for flag, value in [*flags(directives, SBATCH_VALUED), *cli]:
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
    """``sbatch``: submit (or ``--test-only`` estimate) a batch script.

    Long because: one linear pass, as the real sbatch answers: refusals first (the
    failure switch, the partition, the request), then the estimate or the job.
    """
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
            # TAO 7.3 writes <results_dir>/<subtask>/status.json.
            "status_json": f"{base}/results/{job['name']}/train/status.json",
            "max_epoch": int(state.get("max_epoch", 10)),
            "epoch_seconds": state.get("epoch_seconds", 30),
            "epoch0": 0,
            "bumps": 0,
            "written": 0,
            "t0": None,
            "success": "Train finished successfully.",
        }


# ----------------------------------------------------------------------------------- scancel


def scancel(state: State, argv: list[str]) -> int:
    """``scancel ID...``: end every live job named (SLURM's errors for the others)."""
    at = engine.now(state)
    rc = 0
    for _flag, value in flags(argv, set()):
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
