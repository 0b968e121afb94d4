"""Write a state DB as an earlier release wrote it, with jobs in it; dump it as SQL.

Run from a checkout of that release (its own ``tao_slurm_tui`` on ``sys.path``), e.g.::

    git worktree add /tmp/v1 c168c53^        # the last commit with schema 1
    PYTHONPATH=/tmp/v1 python tests/faults/old_state_dbs/make_old_state_dbs.py OUT.sql

The releases that wrote each schema (the last commit before the next step was added):
1: ``c168c53^``, 2: ``df1c590^``, 3: ``be0d322^``, 4: ``3727d54^``. Whatever that release's
``JobStore``, ``JobRecord`` and ``Attempt`` accept is used; the file is written by that code
alone (its pragmas, its columns, its defaults), then dumped with ``iterdump`` plus its
``user_version``.
"""

from __future__ import annotations

import dataclasses
import sqlite3
import sys
import tempfile
from pathlib import Path

from tao_slurm_tui.core.models import Attempt, JobRecord, TaoStatus
from tao_slurm_tui.services.store import SCHEMA_VERSION, JobStore


def known(cls: type, fields: dict[str, object]) -> dict[str, object]:
    """The fields this release's dataclass has (a later release added some)."""
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in fields.items() if k in names}


def attempt(number: int, slurm_id: str, **fields: object) -> Attempt:
    return Attempt(number=number, slurm_job_id=slurm_id, **known(Attempt, fields))  # type: ignore[arg-type]


def record(job_id: str, **fields: object) -> JobRecord:
    return JobRecord(id=job_id, profile="sandbox", **known(JobRecord, fields))  # type: ignore[arg-type]


def main(out: Path) -> None:
    clock = iter(range(1_764_500_000, 1_764_600_000, 7))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "state.db"
        store = JobStore(path, clock=lambda: float(next(clock)))
        spec = {
            "name": "dino-train",
            "image": "nvcr.io/nvidia/tao/tao-toolkit:5.5.0-pyt",
            "command": "dino train -e /specs/train.yaml",
            "num_gpus": 4,
            "num_nodes": 1,
            "time_hours": 4.0,
            "env": {"WANDB_MODE": "offline"},
        }
        store.create_job(record("dino-train", spec=spec, base_results_dir="/home/slurmtest/tao"))
        store.mark_submitted(
            "sandbox",
            "dino-train",
            attempt(
                0,
                "101",
                login_host="login1",
                state="NODE_FAIL",
                nodes="tao-n2",
                submit_time="2026-11-28T10:00:00",
                start_time="2026-11-28T10:01:00",
                end_time="2026-11-28T11:00:00",
                elapsed="00:59:00",
                time_limit="04:00:00",
                partition="polar",
                retry_reason="node failure",
                restarts=1,
                timeout_restarts=1,
            ),
        )
        store.add_attempt(
            "sandbox",
            "dino-train",
            attempt(
                1,
                "117",
                login_host="login2",
                state="RUNNING",
                nodes="tao-n1",
                partition="polar",
                submit_time="2026-11-28T11:00:05",
                start_time="2026-11-28T11:00:30",
            ),
        )
        store.update_job(
            "sandbox",
            "dino-train",
            status=TaoStatus.RUNNING,
            slurm_state="RUNNING",
            message="Retry 1 of 10: node failure",
            progress={"epoch": 3, "max_epoch": 10, "kpi": {"loss": 0.42}},
        )
        store.add_event("sandbox", "dino-train", "retry", "retried as SLURM job 117")
        store.create_job(
            record(
                "cls-eval",
                spec={"name": "cls-eval", "num_gpus": 1},
                base_results_dir="/home/slurmtest/tao",
            )
        )
        store.mark_submitted(
            "sandbox", "cls-eval", attempt(0, "99", state="COMPLETED", exit_code="0:0")
        )
        store.update_job("sandbox", "cls-eval", status=TaoStatus.COMPLETE, slurm_state="COMPLETED")
        store.create_job(record("never-sent", spec={"name": "never-sent"}))
        pipeline = dict(pipeline_id="pl-1", pipeline_step=1)
        store.create_job(record("pl-1-evaluate", spec={"name": "pl-1-evaluate"}, **pipeline))
        other = record("other-cluster", spec={"name": "x"}, status=TaoStatus.CANCELED)
        store.create_job(dataclasses.replace(other, profile="cluster2"))
        store.close()
        db = sqlite3.connect(path)
        version = int(db.execute("PRAGMA user_version").fetchone()[0])
        assert version == SCHEMA_VERSION, (version, SCHEMA_VERSION)
        mode = db.execute("PRAGMA journal_mode").fetchone()[0]
        lines = [f"-- state DB as written by a release with schema {version} ({mode} mode)"]
        lines += [line for line in db.iterdump()]
        lines.append(f"PRAGMA user_version = {version};")
        db.close()
    out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
