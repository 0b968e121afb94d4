"""What the fake cluster holds when it starts: nodes, partitions, limits, jobs, files, history.

The TAO jobs are seeded twice, as the real program would find them: as SLURM jobs of the
cluster (with their ``status.json``, logs and accounting) and as the workstation's records of
them in the store (:func:`seed_store`). Every state the screens show is there: running with
progress, pending for several reasons, suspended, a job retried after a node failure, complete,
failed, timed out, cancelled; with :func:`seed_world`'s ``pipeline`` a three-step pipeline.
Around them: colleagues' jobs on shared nodes, a drained and a down node, QOS and account
limits, and about 1,000 finished jobs of the user's history.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tao_slurm_tui.core.images import parse_image
from tao_slurm_tui.core.layout import JobPaths
from tao_slurm_tui.core.models import Attempt, JobRecord, Progress, TaoStatus
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.core.spec import DEFAULT_IMAGE, default_spec
from tao_slurm_tui.services.fakecluster import engine
from tao_slurm_tui.services.fakecluster.history import history_jobs, write_outputs
from tao_slurm_tui.services.fakecluster.world import World
from tao_slurm_tui.services.store import JobStore

FROZEN_TIME = 1_778_400_000.0
"""The snapshots' 'now' (2026-05-10 08:00:00 UTC)."""
USER = "researcher"
HOSTS = ("login1.example.org", "login2.example.org")
FAKE_HOST = HOSTS[0]
HOST_KEYS = {
    HOSTS[0]: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIH0R4ga7ew20yhaVzGqZSID8tgafVWK6TiNv0HkGXIg5",
    HOSTS[1]: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAPrJcNkpaTBRBv1oprFrIQarU6a41+UeLepcycoHwey",
}
"""The login hosts' host keys (the fake cluster's only; trusted nowhere real)."""
RESULTS = f"/lustre/fsw/users/{USER}"
PROFILE_NAME = "fake"
LOG_LINES = 300
"""Lines of each seeded attempt's main.out and main.err."""
INPUT = "/lustre/data/coco/train.json"
"""An input path that exists on the fake cluster."""
HOUR = 3600


def demo_profile(**over: Any) -> Profile:
    """The profile of the fake cluster (``over`` changes fields)."""
    fields: dict[str, Any] = {
        "user": USER,
        "hostnames": list(HOSTS),
        "port": 22,
        "ssh_key_path": "~/.ssh/id_ed25519",
        "partition": "polar,polar3,gpu-long",
        "base_results_dir": RESULTS,
        "container_runtime": "pyxis",
    }
    fields.update(over)
    return Profile(**fields)


def job_spec(name: str, **over: Any) -> dict[str, Any]:
    """A seeded job's spec: the profile's defaults, a DINO command, one input."""
    spec = default_spec(demo_profile(), name=name)
    spec.update(command=f"dino train -e /specs/{name}.yaml", inputs=[f"lustre://{INPUT}"])
    spec.update(over)
    return spec


@dataclass
class Run:
    """One SLURM job of a seeded TAO job (an attempt)."""

    slurm_id: int
    state: str
    node: str = ""
    ran: int = 0
    """Seconds it ran (for a live job: until now)."""
    ended: int | None = None
    """Seconds before now it ended (None: has not)."""
    exit_code: str = ""
    reason: str = ""
    limit: int = 4 * HOUR
    est_in: int | None = None
    """Seconds from now SLURM expects a pending job to start."""
    retry_reason: str = ""
    dependency: str = ""


@dataclass
class Seeded:
    """One TAO job: its record and its SLURM jobs."""

    name: str
    status: TaoStatus
    runs: list[Run]
    spec: dict[str, Any] = field(default_factory=dict)
    progress: Progress = field(default_factory=Progress)
    message: str = ""
    train: tuple[int, int, int] | None = None
    """(epochs written, max epochs, seconds an epoch) of a running job."""
    verdict: str = ""
    """How a finished job's run ended: SUCCESS (TAO 7.3 writes no such line: its last lines are
    RUNNING "Train finished successfully.") or FAILURE (a FAILURE line)."""


def seeded_jobs() -> list[Seeded]:
    """Jobs in every state the screens show, newest first."""
    return [
        Seeded("dino-train-1", TaoStatus.RUNNING, [Run(1051, "RUNNING", "gpu-a01", 4324)],
               progress=Progress(epoch=6, max_epoch=19, eta="0:41:10", status="RUNNING",
                                 time_per_epoch="0:03:10", kpi={"train_loss": 0.3636},
                                 message="Training loop in progress"),
               train=(7, 20, 190)),
        Seeded("yolo-finetune", TaoStatus.PENDING,
               [Run(1052, "PENDING", reason="Resources", est_in=6 * HOUR + 1800)]),
        Seeded("seg-large", TaoStatus.PENDING, [Run(1053, "PENDING", reason="Priority")],
               spec={"num_nodes": 2, "num_gpus": 8}),
        Seeded("classify-long", TaoStatus.PENDING,
               [Run(1054, "PENDING", reason="PartitionTimeLimit", limit=48 * HOUR)],
               spec={"time_hours": 48.0, "timeout_hours": 47.5}),
        Seeded("bert-retried", TaoStatus.RUNNING,
               [Run(1040, "NODE_FAIL", "gpu-b03", 4239, ended=3 * HOUR + 120, exit_code="0:0",
                    retry_reason="NODE_FAIL on gpu-b03"),
                Run(1049, "RUNNING", "gpu-a02", 10890)],
               progress=Progress(epoch=2, max_epoch=9, eta="2:04:57", status="RUNNING",
                                 time_per_epoch="0:17:51"),
               message="Retried after NODE_FAIL on gpu-b03.", train=(3, 10, 1071)),
        Seeded("mae-pretrain", TaoStatus.PAUSED, [Run(1044, "SUSPENDED", "gpu-a03", 1200)],
               message="SLURM suspended the job (SUSPENDED)."),
        Seeded("dep-waiter", TaoStatus.PENDING,
               [Run(1055, "PENDING", reason="Dependency", dependency="afterok:1051")]),
        Seeded("detect-ok", TaoStatus.COMPLETE,
               [Run(1031, "COMPLETED", "gpu-a01", 11400, ended=6 * HOUR + 50 * 60,
                    exit_code="0:0")],
               progress=Progress(epoch=19, max_epoch=19, status="RUNNING",
                                 message="Train finished successfully."),
               message="Train finished successfully.", verdict="SUCCESS"),
        Seeded("detect-bad", TaoStatus.ERROR,
               [Run(1030, "FAILED", "gpu-a04", 192, ended=10 * HOUR + 56 * 60, exit_code="1:0")],
               message="Parameter validation error: dataset.train_data_sources is empty.",
               verdict="FAILURE"),
        Seeded("timeout-job", TaoStatus.ERROR,
               [Run(1021, "TIMEOUT", "gpu-a02", 4 * HOUR, ended=16 * HOUR, exit_code="0:15")],
               message="The job hit its wall time (04:00:00)."),
        Seeded("ocr-stop", TaoStatus.CANCELED,
               [Run(1020, "CANCELLED", "gpu-a01", 2700, ended=20 * HOUR, exit_code="0:15")],
               message="Canceled by the user."),
        Seeded("unet-small", TaoStatus.COMPLETE,
               [Run(1012, "COMPLETED", "gpu-a03", 3130, ended=26 * HOUR, exit_code="0:0")],
               progress=Progress(epoch=9, max_epoch=9, status="RUNNING",
                                 message="Train finished successfully."), verdict="SUCCESS"),
    ]  # fmt: skip


def seeded_pipeline() -> list[Seeded]:
    """A three-step pipeline, first step first: ``rtdetr`` (train) complete,
    ``rtdetr-evaluate`` running, ``rtdetr-export`` held by its dependency."""
    half = {"num_gpus": 1, "time_hours": 0.5, "timeout_hours": 0.475}
    return [
        Seeded("rtdetr", TaoStatus.COMPLETE,
               [Run(1060, "COMPLETED", "gpu-a01", 9612, ended=20 * 60, exit_code="0:0")],
               spec={"num_gpus": 4},
               progress=Progress(epoch=4, max_epoch=4, status="RUNNING",
                                 message="Train finished successfully."),
               message="Train finished successfully.", verdict="SUCCESS"),
        Seeded("rtdetr-evaluate", TaoStatus.RUNNING,
               [Run(1061, "RUNNING", "gpu-a02", 760, limit=1800)],
               spec={**half, "command": "rtdetr evaluate -e /specs/eval.yaml"},
               progress=Progress(epoch=1, max_epoch=4, status="RUNNING"), train=(2, 5, 300)),
        Seeded("rtdetr-export", TaoStatus.PENDING,
               [Run(1062, "PENDING", reason="Dependency", limit=1800,
                    dependency="afterok:1061")],
               spec={**half, "command": "rtdetr export -e /specs/export.yaml"}),
    ]  # fmt: skip


def _log_lines(stream: str, attempt: int, count: int) -> list[str]:
    if stream == "err":
        return [
            f"[attempt {attempt + 1}] WARNING: dataloader worker {i % 8} slow ({i * 3 % 97} ms)"
            for i in range(count)
        ]
    lines = [f"[attempt {attempt + 1}] Starting training on {count} steps"]
    for i in range(1, count):
        epoch = i // 20 + 1
        lines.append(
            f"Epoch {epoch:>2}/20 step {i:>4}: loss={1.0 / (1 + i * 0.01):.4f} lr=0.0001 "
            f"throughput={900 + i % 50} img/s"
        )
    if attempt == 0:
        lines.append("NCCL WARN NET/IB : Got completion with error 12, opcode 0, len 0")
    return lines


# ----------------------------------------------------------------------------------- the cluster


def _nodes() -> list[dict[str, Any]]:
    def node(
        name: str, parts: str, kind: str, gpus: int, state: str = "IDLE", **why: str
    ) -> dict[str, Any]:
        return {"name": name, "partitions": parts.split(","), "gpu_type": kind, "gpus": gpus,
                "cpus": 64, "mem_mb": 512_000, "state": state, **why}  # fmt: skip

    return [
        node("gpu-a01", "polar", "a100", 8),
        node("gpu-a02", "polar", "a100", 8),
        node("gpu-a03", "polar", "a100", 8),
        node("gpu-a04", "polar", "a100", 8, "IDLE+DRAIN",
             reason="Xid 79: GPU has fallen off the bus", reason_by="admin",
             reason_time="2026-05-10T06:40:00"),
        node("gpu-b01", "polar3", "h100", 8),
        node("gpu-b02", "polar3", "h100", 8),
        node("gpu-b03", "polar3", "h100", 8, "DOWN*", reason="Not responding",
             reason_by="slurm", reason_time="2026-05-10T05:10:40"),
        node("gpu-c01", "gpu-long", "v100", 4),
        node("gpu-c02", "gpu-long", "v100", 4),
    ]  # fmt: skip


def _colleagues(state: engine.State, at: float) -> list[engine.Job]:
    """Other users' jobs on the shared nodes (what makes the capacity view busy)."""
    rows = [
        ("2210", "kim", "polar", "RUNNING", 1, 2, "gpu-a02"),
        ("2211", "kim", "polar", "RUNNING", 1, 4, "gpu-a03"),
        ("2230", "ortiz", "polar3", "RUNNING", 1, 8, "gpu-b02"),
        ("2240", "ortiz", "gpu-long", "RUNNING", 1, 1, "gpu-c01"),
        ("2250", "kim", "polar3", "PENDING", 2, 8, ""),
    ]
    return [
        engine.new_job(
            state,
            id=job_id,
            name=f"{user}-job",
            user=user,
            account="vision",
            partition=part,
            state=job_state,
            nodes_req=nodes,
            cpus=16 * nodes,
            gpus=gpus,
            node_list=where,
            reason="Resources" if job_state == "PENDING" else "None",
            time_limit=(48 if part == "gpu-long" else 4) * HOUR,
            submit=at - 2 * HOUR,
            start=at - HOUR if where else None,
            pinned=True,
        )
        for job_id, user, part, job_state, nodes, gpus, where in rows
    ]


def seed_world(world: World, now: float | None = FROZEN_TIME, *, pipeline: bool = False,
               quiet: bool = False, history: int = 1000) -> None:  # fmt: skip
    """Fill a new world: the cluster, its files and (``quiet``: none of) the user's jobs.

    Args:
        world: the world to fill.
        now: the frozen clock; None lets the cluster's clock run with the real one.
        pipeline: also the three-step pipeline of :func:`seeded_pipeline`.
        quiet: no TAO job and no colleague on the polar nodes (another cluster of the overview).
        history: finished jobs in the user's accounting history.
    """
    import time

    at = now if now is not None else time.time()
    world.host_keys.update(HOST_KEYS)
    jobs = [] if quiet else seeded_jobs() + (seeded_pipeline() if pipeline else [])
    with world.edit() as state:
        state["clock"] = {"frozen": now, "offset": 0.0}
        state.update(nodes=_nodes(), uid=4242, next_id=1101, epoch_seconds=30, max_epoch=10)
        state["partitions"] = [
            {"name": "polar", "default": True, "max_time": 4 * HOUR},
            {"name": "polar3", "max_time": 4 * HOUR},
            {"name": "gpu-long", "max_time": 48 * HOUR},
        ]
        state["qos"] = [{"name": "normal", "maxtrespu": "gres/gpu=16", "maxjobspu": 8}]
        state["assocs"] = [
            {"account": "tao", "user": "", "qos": "normal", "grptres": "gres/gpu=48"},
            {"account": "tao", "user": USER, "qos": "normal", "grptres": "gres/gpu=24"},
            {"account": "vision", "user": "kim", "qos": "normal"},
        ]
        state["default_accounts"] = {USER: "tao"}
        # What nvidia-smi shows in the running jobs (node_tools): dino trains hard, the
        # pipeline's evaluation uses one GPU of its four, the others sit idle.
        state["gpu_load"] = {"1051": ["all 87 61440"], "1061": ["0 64 20480"]}
        # Multifactor priority (priority_tools): a researcher who used a lot lately.
        state["fairshare"] = {USER: 0.38, "kim": 0.71, "ortiz": 0.22}
        state.update(max_age=6 * HOUR, favor_small=True)
        state["shares"] = [
            {"account": "tao", "user": USER, "raw_shares": 1, "norm_shares": 0.25,
             "raw_usage": 8123456, "effective_usage": 0.41, "fairshare": 0.38},
        ]  # fmt: skip
        state["wait"] = {"polar": 2 * HOUR, "polar3": 40 * 60, "gpu-long": 6 * HOUR}
        colleagues = _colleagues(state, at)
        if quiet:
            colleagues = [j for j in colleagues if j["partition"] != "polar"]
        for job in colleagues:
            state["jobs"][job["id"]] = job
        for seeded in jobs:
            for number, run in enumerate(seeded.runs):
                job = _cluster_job(state, seeded, number, run, at)
                state["jobs"][job["id"]] = job
    _write_files(world, jobs, at)
    # A frozen clock (tests, snapshots) shares the outputs; a demo keeps its own.
    write_outputs(world, history_jobs(at, history), shared=now is not None)
    world.freeze(now)


def _cluster_job(
    state: engine.State, seeded: Seeded, number: int, run: Run, at: float
) -> engine.Job:
    spec = job_spec(seeded.name, **seeded.spec)
    paths = JobPaths(RESULTS, seeded.name)
    live = run.ended is None
    end = None if live else at - run.ended  # type: ignore[operator]
    start = None
    if run.state != "PENDING":
        start = (at if live else float(end or at)) - run.ran
    job = engine.new_job(
        state,
        id=str(run.slurm_id),
        name=seeded.name,
        account="tao",
        partition=spec["partition"],
        state=run.state,
        reason=run.reason or "None",
        dependency=run.dependency,
        nodes_req=spec["num_nodes"],
        cpus=spec["cpus_per_task"] * spec["num_nodes"],
        gpus=spec["num_gpus"],
        time_limit=run.limit,
        submit=(start or at) - 600,
        start=start,
        end=end,
        est_start=at + run.est_in if run.est_in is not None else None,
        exit_code=run.exit_code or "0:0",
        node_list=run.node,
        work_dir=RESULTS,
        stdout=paths.main_out(str(run.slurm_id)),
        stderr=paths.main_err(str(run.slurm_id)),
        script=paths.sbatch,
        cpu_time=int(spec["cpus_per_task"] * run.ran * 0.62) if start is not None else None,
        max_rss="21480M" if start is not None else "",
        pinned=run.state == "PENDING",
    )
    if start is not None:  # its batch script ran: the run events it wrote
        engine.run_event(state, job, "start", start, run.node)
        if end is not None and run.state != "NODE_FAIL":
            engine.run_event(state, job, "end", end, f"rc={engine.exit_status(job['exit_code'])}")
    if run.state == "SUSPENDED":
        job["suspended_at"] = at
    if run.state == "CANCELLED":
        job["cancelled_by"] = "4242"
    if seeded.train is not None and live and run.state == "RUNNING":
        written, most, every = seeded.train
        job["train"] = {
            "status_json": paths.subtask_status_json("train"), "max_epoch": most,
            "epoch_seconds": every, "epoch0": written, "bumps": 0, "written": written, "t0": at,
            "success": "Train finished successfully.",
        }  # fmt: skip
    return job


TAO_DATASET = "/home/slurmtest/datasets/classification"
"""The TAO examples' dataset (examples/tao/classification_pyt.yaml), as on the sandbox."""


def _write_files(world: World, jobs: list[Seeded], at: float) -> None:
    """Logs and status.json of the seeded jobs, an input, the SQSH cache, Pyxis."""
    for seeded in jobs:
        paths = JobPaths(RESULTS, seeded.name)
        for number, run in enumerate(seeded.runs):
            if run.state == "PENDING":
                continue
            for stream, path in (("out", paths.main_out), ("err", paths.main_err)):
                target = world.local(path(str(run.slurm_id)))
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text("\n".join(_log_lines(stream, number, LOG_LINES)) + "\n")
        lines = _status_lines(seeded, at)
        if lines:
            target = world.local(paths.subtask_status_json("train"))
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("".join(json.dumps(line) + "\n" for line in lines))
    for where, data in (
        (INPUT, b'{"images": []}\n'),
        (parse_image(DEFAULT_IMAGE).sqsh_cache_path(f"{RESULTS}/sqsh"), b"hsqs" + bytes(60)),
    ):
        target = world.local(where)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    # The dataset of examples/tao-*.toml, where the sandbox keeps it (make demo opens them).
    for split in ("train", "val", "test"):
        world.local(f"{TAO_DATASET}/{split}").mkdir(parents=True, exist_ok=True)
    plugin = Path(world.root) / "usr/lib/x86_64-linux-gnu/slurm/spank_pyxis.so"
    plugin.parent.mkdir(parents=True, exist_ok=True)
    plugin.write_bytes(b"\x7fELF")
    conf = Path(world.root) / "etc/slurm"
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "plugstack.conf").write_text(f"required {plugin}\n")
    (conf / "slurm.conf").write_text("ClusterName=fake\n")


def _status_lines(seeded: Seeded, at: float) -> list[dict[str, Any]]:
    """The job's ``train/status.json`` as TAO 7.3 writes it (0-based epochs, no SUCCESS line)."""

    def line(status: str, message: str = "", **more: Any) -> dict[str, Any]:
        entry: dict[str, Any] = {**more, "date": "5/10/2026", "time": "8:0:0", "status": status,
                                 "verbosity": "INFO"}  # fmt: skip
        if message:
            entry["message"] = message
        return entry

    def epoch_line(done: int, total: int, every: int) -> dict[str, Any]:
        return line("RUNNING", "Training loop in progress", epoch=done - 1, step=done * 20,
                    max_epoch=total - 1, max_step=total * 20, time_per_epoch=_eta(every),
                    time_per_step=_eta(every // 20), eta=_eta((total - done) * every),
                    kpi={"train_loss": round(1.0 / (1 + done * 0.25), 4)})  # fmt: skip

    start = [line("STARTED", "Starting Training Loop.")]
    if seeded.train is not None:
        written, most, every = seeded.train
        return start + [epoch_line(e, most, every) for e in range(1, written + 1)]
    if seeded.verdict == "SUCCESS":
        most = (seeded.progress.max_epoch or 0) + 1
        return [*start, epoch_line(most, most, 190), line("RUNNING", "Training loop complete."),
                line("RUNNING", "Train finished successfully.")]  # fmt: skip
    if seeded.verdict == "FAILURE":
        return [*start, line("FAILURE", seeded.message)]
    return []


def _eta(seconds: int) -> str:
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


# ----------------------------------------------------------------------------------- the store


def seed_store(
    store: JobStore, profile_name: str, now: float = FROZEN_TIME, *, pipeline: bool = False
) -> None:
    """The workstation's records of the seeded jobs (as earlier submissions left them)."""
    for index, seeded in enumerate(seeded_jobs()):
        store.create_job(_record(seeded, profile_name, now - HOUR * index, now - 60 * index, now))
    if pipeline:
        for index, seeded in enumerate(seeded_pipeline()):
            record = _record(seeded, profile_name, now + 50 + index, now, now)
            record.pipeline_id, record.pipeline_step = "rtdetr", index
            store.create_job(record)


def _record(
    seeded: Seeded, profile_name: str, created: float, updated: float, at: float
) -> JobRecord:
    attempts = []
    for number, run in enumerate(seeded.runs):
        end = None if run.ended is None else at - run.ended
        start = None if run.state == "PENDING" else (end if end is not None else at) - run.ran
        attempts.append(
            Attempt(
                number=number,
                slurm_job_id=str(run.slurm_id),
                login_host=FAKE_HOST,
                state=run.state,
                partition="polar",
                time_limit=engine.duration(run.limit),
                submit_time=engine.stamp((start or at) - 600),
                start_time=engine.stamp(start) if start is not None else "",
                end_time=engine.stamp(end) if end is not None else "",
                elapsed=engine.duration(run.ran),
                nodes=run.node,
                exit_code=run.exit_code,
                reason=run.reason,
                est_start=engine.stamp(at + run.est_in) if run.est_in is not None else "",
                retry_reason=run.retry_reason,
            )
        )
    return JobRecord(
        id=seeded.name,
        profile=profile_name,
        spec=job_spec(seeded.name, **seeded.spec),
        base_results_dir=RESULTS,
        status=seeded.status,
        slurm_state=seeded.runs[-1].state,
        attempts=attempts,
        submitted=True,
        message=seeded.message,
        progress=seeded.progress,
        created_at=created,
        updated_at=updated,
    )


def authorize(world: World, public_key: str) -> None:
    """Put a public key into the account's ``~/.ssh/authorized_keys`` on the cluster."""
    path = world.local(f"{world.home}/.ssh/authorized_keys")
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(public_key.strip() + "\n")
    os.chmod(path, 0o600)


def setup_workstation(
    world: World,
    profile: Profile,
    *,
    trusted: tuple[str, ...] = HOSTS[:1],
    authorized: bool = True,
) -> None:
    """The workstation side: a key pair at the profile's key path (made once, mode 0600), the
    ``trusted`` login hosts in its known_hosts (the first one: the second is left for the
    set-up screen to trust), the key authorized on the cluster."""
    import asyncssh

    from tao_slurm_tui.remote.hostkeys import trust_host_key

    key = Path(profile.ssh_key_path or "~/.ssh/id_ed25519").expanduser()
    if not key.exists():
        key.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        private = asyncssh.generate_private_key("ssh-ed25519")
        private.write_private_key(str(key))
        private.write_public_key(str(key) + ".pub")
        key.chmod(0o600)
    known = profile.known_hosts_path
    text = known.read_text(encoding="utf-8") if known.exists() else ""
    for host in trusted:
        if HOST_KEYS[host].split()[1] not in text:
            trust_host_key(known, host, profile.port, HOST_KEYS[host])
    if authorized:
        authorize(world, Path(str(key) + ".pub").read_text(encoding="utf-8"))


def add_job(
    world: World, store: JobStore, profile_name: str, seeded: Seeded, created: float
) -> JobRecord:
    """A job submitted meanwhile (from another terminal): on the cluster and in the store."""
    at = world.now()
    with world.edit() as state:
        for number, run in enumerate(seeded.runs):
            job = _cluster_job(state, seeded, number, run, at)
            state["jobs"][job["id"]] = job
    _write_files(world, [seeded], at)
    return store.create_job(_record(seeded, profile_name, created, at, at))
