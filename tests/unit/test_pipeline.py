"""TAO pipelines without a cluster: the ``[[then]]`` spec contract and its errors, the rendered
steps, the schema migration, grouping for the CLI/queue, and the monitor's decisions (cancel the
rest after a failed step, re-point a retried step's dependant) on recorded SLURM output."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tao_slurm_tui.commands.status import format_table
from tao_slurm_tui.core import pipelines
from tao_slurm_tui.core.models import Attempt, JobRecord, SubmitResult, TaoStatus
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.core.render import preview_scripts, render_job, render_sbatch
from tao_slurm_tui.core.spec import ResolvedJob, SpecDraft, resolve
from tao_slurm_tui.errors import BadInput
from tao_slurm_tui.remote.connection import CommandResult
from tao_slurm_tui.services.monitor import Monitor
from tao_slurm_tui.services.store import JobStore
from tao_slurm_tui.services.store_schema import MIGRATIONS, SCHEMA_VERSION
from tests.unit.test_monitor import FakeCluster, sq

IMAGE = "nvcr.io/nvidia/tao/tao-toolkit:6.26.3-pyt"
PROFILE = Profile(user="u", hostnames=["h"], partition="polar", base_results_dir="/r")

PIPELINE_TOML = f"""
name = "dino"
image = "{IMAGE}"
command = "dino train -e /specs/train.yaml"
num_gpus = 4
time_hours = 2

[env]
SEED = 7

[[then]]
action = "evaluate"
command = "dino evaluate -e /specs/eval.yaml"
num_gpus = 1
time_hours = 0.5

[then.env]
SPLIT = "val"

[[then]]
action = "export"
command = "dino export -e /specs/export.yaml"
"""

SINGLE = {"name": "dino", "image": IMAGE, "command": "dino train"}


def step_toml(extra: str) -> str:
    return f'name = "d"\nimage = "{IMAGE}"\ncommand = "c"\n[[then]]\naction = "ev"\n{extra}'


def resolved(text: str, *, source: str = "spec") -> ResolvedJob:
    """A TOML spec resolved on PROFILE (BadInput: the CLI's one sentence)."""
    return resolve(SpecDraft.from_text(text, source=source), PROFILE).require()


def resolved_table(table: dict[str, Any]) -> ResolvedJob:
    return resolve(SpecDraft(table), PROFILE).require()


# ------------------------------------------------------------------------------------ spec


def test_then_tables_become_steps_inheriting_the_parent() -> None:
    steps = [step.spec for step in resolved(PIPELINE_TOML).steps]
    assert [s.name for s in steps] == ["dino", "dino-evaluate", "dino-export"]
    train, evaluate, export = steps
    assert (train.num_gpus, evaluate.num_gpus, export.num_gpus) == (4, 1, 4)
    # A step that shortens the wall time gets the derived timeout, not the parent's.
    assert (evaluate.time_hours, evaluate.timeout_hours) == (0.5, 0.475)
    assert (export.time_hours, export.timeout_hours) == (2, 1.9)
    assert evaluate.env == {"SEED": "7", "SPLIT": "val"} and export.env == {"SEED": "7"}
    assert all(s.image == IMAGE and not s.then for s in steps)
    assert [s.command for s in steps][1] == "dino evaluate -e /specs/eval.yaml"


def test_a_step_may_ask_for_another_gpu_type() -> None:
    job = resolved(
        f'name = "d"\nimage = "{IMAGE}"\ncommand = "c"\ngpu_type = "h100"\n'
        '[[then]]\naction = "ev"\ncommand = "e"\ngpu_type = "a100"\nnum_gpus = 1\n'
        '[[then]]\naction = "ex"\ncommand = "x"\n'
    )
    train, evaluate, export = (step.spec for step in job.steps)
    assert (train.gpu_type, evaluate.gpu_type, export.gpu_type) == ("h100", "a100", "h100")
    assert "--gres=gpu:a100:1" in render_sbatch(job.steps[1].plan)


def test_a_single_job_is_unchanged() -> None:
    job = resolved_table(SINGLE)
    assert "then" not in job.spec.model_dump(mode="json")
    assert "then" not in job.spec.to_toml()
    assert [step.spec for step in job.steps] == [job.spec]
    script = render_sbatch(job.steps[0].plan)
    assert "TAO_PIPELINE" not in script and "TAO_PREVIOUS" not in script
    assert render_job(job) == script


def test_a_pipeline_round_trips_through_toml() -> None:
    job = resolved(PIPELINE_TOML)
    again = resolved(job.spec.to_toml())
    assert again.spec == job.spec and "None" not in job.spec.to_toml()
    assert [s.plan for s in again.steps] == [s.plan for s in job.steps]


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        ('command = "x"\nnum_gpus = -1', "step 2 ('ev'): field 'num_gpus' must be at least 0"),
        (
            'command = "x"\naccount = "y"',
            "step 2 ('ev'): field 'account' is not a known field of a",
        ),
        ('command = ""', "step 2 ('ev'): field 'command' must not be empty"),
        ('command = "x"\ntimeout_hours = 9', "step 2 ('ev'): field 'timeout_hours' must be below"),
        ('command = "x"\nnum_gpus = true', "step 2 ('ev'): field 'num_gpus' must be a number"),
        ('command = "x"\n[then.env]\nNGC_API_KEY = "k"', "step 2 ('ev'): field 'env' may not set"),
        (
            'command = "x"\n[then.env]\nTAO_PREVIOUS_RESULTS_DIR = "/x"',
            "step 2 ('ev'): field 'env' may not set 'TAO_PREVIOUS_RESULTS_DIR'",
        ),
        ('command = "x"\n[[then]]\naction = "ev"\ncommand = "y"', "step 3 ('ev'): its job id"),
        ('command = "x"\ntime_hours = 9', "step 2 ('ev'): time_hours = 9 is above the wall-time"),
    ],
)
def test_a_bad_step_is_one_sentence_naming_the_step_and_field(extra: str, words: str) -> None:
    with pytest.raises(BadInput) as caught:
        resolved(step_toml(extra), source="p.toml")
    message = str(caught.value)
    assert message.startswith(f"p.toml: {words}"), message
    assert message.count(".\n") == 0 and message.endswith(".")


def test_a_step_without_an_action_says_so() -> None:
    with pytest.raises(BadInput, match=r"^spec: step 2: field 'action' is required\.$"):
        resolved_table({**SINGLE, "then": [{"command": "x"}]})


def test_too_long_step_id_is_refused() -> None:
    resolution = resolve(
        SpecDraft({**SINGLE, "name": "n" * 60, "then": [{"action": "evaluate", "command": "x"}]}),
        PROFILE,
    )
    assert "longer than 64 characters" in resolution.by_field()["then"]


def test_a_clone_of_the_stored_steps_is_the_same_pipeline() -> None:
    """The store keeps each step's resolved spec; the queue's clone writes the pipeline back
    from them (every step's own resources, its GPU type too) and resolves to the same jobs."""
    job = resolved(
        PIPELINE_TOML.replace(
            "num_gpus = 1\n", 'num_gpus = 1\ngpu_type = "a100"\ncpus_per_task = 2\n'
        )
    )
    records = [step.record("p", submitted=True) for step in job.steps]
    clone = resolved_table(pipelines.pipeline_spec(records))
    dumps = [[s.spec.model_dump(mode="json") for s in j.steps] for j in (clone, job)]
    assert dumps[0] == dumps[1]
    assert [s.plan for s in clone.steps] == [s.plan for s in job.steps]
    assert clone.steps[1].plan.shape.gres == "gpu:a100:1"


# ------------------------------------------------------------------------------------ render


def test_every_step_renders_with_its_dependency_and_the_previous_results_dir() -> None:
    job = resolved(PIPELINE_TOML)
    scripts = preview_scripts(job)
    assert len(scripts) == 3
    assert "--dependency" not in scripts[0]
    assert "export TAO_PIPELINE_ID=dino" in scripts[0] and "TAO_PREVIOUS" not in scripts[0]
    for index, script in enumerate(scripts[1:], start=1):
        assert "#SBATCH --dependency=afterok:<SLURM id of the previous step>" in script
        previous = ["dino", "dino-evaluate"][index - 1]
        assert f"export TAO_PREVIOUS_RESULTS_DIR=/r/results/{previous}" in script
        assert f"export TAO_PIPELINE_STEP={index + 1}" in script
        # The container sees them (Pyxis passes only the listed variables).
        assert "TAO_PREVIOUS_RESULTS_DIR" in re.search(r"--container-env=(\S+)", script).group(1)  # type: ignore[union-attr]
    assert "#SBATCH --gres=gpu:1" in scripts[1]
    text = render_job(job)
    assert "# ===== step 2 of 3: dino-evaluate, after dino completed =====" in text


# ------------------------------------------------------------------------------------ store


def test_a_version_2_file_gains_the_pipeline_columns(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    db = sqlite3.connect(path)
    db.executescript(MIGRATIONS[0] + MIGRATIONS[1])
    db.execute("INSERT INTO jobs (profile, id, created_at, updated_at) VALUES ('p', 'old', 1, 1)")
    db.execute("PRAGMA user_version = 2")
    db.commit()
    db.close()
    with JobStore(path) as store:
        assert store.schema_version == SCHEMA_VERSION
        old = store.require("p", "old")
        assert (old.pipeline_id, old.pipeline_step) == ("", 0)
        assert "pipeline_id" not in old.status_json()
        for step in range(2):
            store.create_job(
                JobRecord(id=f"pl{step}", profile="p", pipeline_id="pl0", pipeline_step=step)
            )
        assert [j.id for j in store.pipeline("p", "pl0")] == ["pl0", "pl1"]
        assert store.require("p", "pl1").status_json()["pipeline_step"] == 2


# ------------------------------------------------------------------------------------ grouping


def step(job_id: str, index: int, status: TaoStatus, pipeline: str = "p") -> JobRecord:
    return JobRecord(
        id=job_id,
        profile="x",
        status=status,
        pipeline_id=pipeline,
        pipeline_step=index,
        attempts=[Attempt(0, str(100 + index))],
    )


def test_grouping_keeps_order_and_names_the_step_in_progress() -> None:
    single = JobRecord(id="solo", profile="x")
    jobs = [
        step("p-export", 2, TaoStatus.PENDING),
        single,
        step("p", 0, TaoStatus.COMPLETE),
        step("p-evaluate", 1, TaoStatus.RUNNING),
    ]
    grouped = pipelines.group(jobs)
    assert isinstance(grouped[0], pipelines.Pipeline) and grouped[1] is single
    pipe = grouped[0]
    assert [s.id for s in pipe.steps] == ["p", "p-evaluate", "p-export"]
    assert pipe.status is TaoStatus.RUNNING and pipe.position == "2/3"
    assert pipe.summary == "step 2/3 evaluate running"
    table = format_table(jobs)
    assert "pipeline p" in table and "  2/3 p-evaluate" in table


def test_pipeline_status_is_the_earliest_failure() -> None:
    failed = pipelines.Pipeline(
        "p",
        (
            step("p", 0, TaoStatus.COMPLETE),
            step("p-e", 1, TaoStatus.ERROR),
            step("p-x", 2, TaoStatus.CANCELED),
        ),
    )
    assert failed.status is TaoStatus.ERROR and failed.summary == "step 2/3 e error"
    done = pipelines.Pipeline(
        "p", (step("p", 0, TaoStatus.COMPLETE), step("p-e", 1, TaoStatus.COMPLETE))
    )
    assert done.status is TaoStatus.COMPLETE and done.summary == "all 2 steps complete"


def test_submit_json_lists_every_step() -> None:
    first = SubmitResult("p", "10", "/r")
    first.steps = [SubmitResult("p-e", "11", "/r")]
    data = first.to_json()
    assert data["pipeline_id"] == "p"
    assert [s["slurm_job_id"] for s in data["steps"]] == ["10", "11"]
    assert SubmitResult("solo", "9", "/r").to_json() == {
        "id": "solo",
        "slurm_job_id": "9",
        "job_dir": "/r",
    }


# ------------------------------------------------------------------------------------ monitor


class PipelineCluster(FakeCluster):
    """Also answers ``scontrol update`` (the re-point) with each step's exit status."""

    def __init__(self, names: dict[str, str]) -> None:
        super().__init__()
        self.names = names  # SLURM id -> TAO id

    async def run(self, command: Any, *, framed: bool = False, **kw: Any) -> CommandResult:
        cmd = command if isinstance(command, str) else " ".join(command)
        if "scontrol update" in cmd:
            self.calls.append(cmd)
            mark = re.search(r"M=(@@tao-mon:[0-9a-f]+:)", cmd).group(1)  # type: ignore[union-attr]
            lines = [f"{mark}{self.names[i]} 0" for i in re.findall(r"JobId=(\d+)", cmd)]
            return CommandResult(cmd, 0, "\n".join([*lines, f"{mark}end"]) + "\n", "", "h")
        return await super().run(command, framed=framed, **kw)


def add_step(store: JobStore, job_id: str, index: int, *attempts: Attempt, **kw: Any) -> None:
    store.create_job(
        JobRecord(
            id=job_id,
            profile="p",
            base_results_dir="/r",
            submitted=True,
            attempts=list(attempts),
            pipeline_id="pl",
            pipeline_step=index,
            **kw,
        )
    )


def monitor(cluster: FakeCluster, store: JobStore) -> Monitor:
    return Monitor(cluster, store, "p", PROFILE, lock_path=store.path.parent / "lock")  # type: ignore[arg-type]


@pytest.fixture
def store(tmp_path: Path) -> JobStore:
    return JobStore(tmp_path / "state.db")


async def test_a_failed_step_cancels_the_rest_once(store: JobStore) -> None:
    add_step(store, "pl", 0, Attempt(0, "100"), status=TaoStatus.COMPLETE)
    add_step(store, "pl-ev", 1, Attempt(0, "101"), status=TaoStatus.ERROR)
    add_step(store, "pl-ex", 2, Attempt(0, "102"))
    add_step(store, "pl-up", 3, Attempt(0, "103"))
    cluster = PipelineCluster({})
    for sid in ("102", "103"):
        cluster.squeue[sid] = sq(sid, "PENDING", "DependencyNeverSatisfied")
    mon = monitor(cluster, store)
    result = await mon.tick()
    assert cluster.calls[1:] == ["scancel 102 103"]
    for job_id in ("pl-ex", "pl-up"):
        job = store.require("p", job_id)
        assert job.status is TaoStatus.CANCELED
        assert job.message == "Canceled: the previous step failed (pl-ev ended Error)."
    assert {e.job_id for e in result.events if e.kind == "canceled"} == {"pl-ex", "pl-up"}
    cluster.calls.clear()
    await mon.tick()
    assert cluster.calls == []  # nothing active any more: no command at all


async def test_a_retried_step_re_points_the_next_one_once(store: JobStore) -> None:
    add_step(store, "pl", 0, Attempt(0, "100"), status=TaoStatus.COMPLETE)
    add_step(
        store,
        "pl-ev",
        1,
        Attempt(0, "101", state="FAILED", retry_reason="NCCL"),
        Attempt(1, "201"),
    )
    add_step(store, "pl-ex", 2, Attempt(0, "102"))
    cluster = PipelineCluster({"102": "pl-ex"})
    cluster.squeue["201"] = sq("201", "PENDING", "Priority")
    cluster.squeue["102"] = sq("102", "PENDING", "DependencyNeverSatisfied")
    mon = monitor(cluster, store)
    await mon.tick()
    assert len(cluster.calls) == 2
    assert "scontrol update JobId=102 Dependency=afterok:201" in cluster.calls[1]
    events = [e.text for e in store.events("p", "pl-ex") if e.kind == "dependency"]
    assert events and events[0].endswith("afterok:201")
    assert store.require("p", "pl-ex").status is TaoStatus.PENDING
    # squeue still says DependencyNeverSatisfied until SLURM re-evaluates: not moved twice.
    cluster.calls.clear()
    await mon.tick()
    assert len(cluster.calls) == 1 and "squeue" in cluster.calls[0]


async def test_a_step_not_yet_retried_is_left_alone(store: JobStore) -> None:
    # The previous step failed but the monitor has not decided yet (no retry, not Error).
    add_step(store, "pl", 0, Attempt(0, "100", state="FAILED"))
    add_step(store, "pl-ev", 1, Attempt(0, "101"))
    cluster = PipelineCluster({"101": "pl-ev"})
    cluster.squeue["100"] = sq("100", "PENDING", "BeginTime")
    cluster.squeue["101"] = sq("101", "PENDING", "DependencyNeverSatisfied")
    mon = monitor(cluster, store)
    await mon.tick()
    assert len(cluster.calls) == 1  # the tick's one round trip, nothing else
    assert not store.require("p", "pl-ev").status.terminal


async def test_cancel_of_a_step_takes_the_later_steps_in_one_scancel(store: JobStore) -> None:
    add_step(store, "pl", 0, Attempt(0, "100"), status=TaoStatus.RUNNING)
    add_step(store, "pl-ev", 1, Attempt(0, "101"))
    add_step(store, "pl-ex", 2, Attempt(0, "102"))
    cluster = PipelineCluster({})
    mon = monitor(cluster, store)
    await mon.cancel("pl-ev")
    assert cluster.calls == ["scancel 101 102"]
    assert store.require("p", "pl").status is TaoStatus.RUNNING
    assert store.require("p", "pl-ev").message == "Canceled by the user."
    assert (
        store.require("p", "pl-ex").message == "Canceled: the previous step was canceled (pl-ev)."
    )
    steps = await mon.cancel_pipeline("pl")
    assert cluster.calls[-1] == "scancel 100"
    assert [s.status for s in steps] == [TaoStatus.CANCELED] * 3
    with pytest.raises(BadInput, match="no pipeline 'nope'"):
        await mon.cancel_pipeline("nope")


# ------------------------------------------------------------------------------------ CLI


@pytest.fixture
def demo(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("TAO_SLURM_TUI_DEMO", "1")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    spec = tmp_path / "pipe.toml"
    spec.write_text(PIPELINE_TOML, "utf-8")
    return spec


def test_cli_submit_prints_every_step(demo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tao_slurm_tui.cli import main

    # The dry run first: once submitted, the names are taken (a dry run checks them too).
    assert main(["submit", "--dry-run", str(demo)]) == 0
    out = capsys.readouterr().out
    assert out.count("#!/bin/bash") == 3
    assert "# ===== step 3 of 3: dino-export, after dino-evaluate completed =====" in out
    assert main(["submit", str(demo)]) == 0
    assert capsys.readouterr().out.split() == ["dino", "dino-evaluate", "dino-export"]
    assert main(["render", str(demo)]) == 0
    assert capsys.readouterr().out.count("#SBATCH --dependency=afterok:<SLURM id") == 2


def test_cli_cancel_needs_a_job_or_a_pipeline(
    demo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tao_slurm_tui.cli import main

    assert main(["cancel"]) == 2
    assert "either a job id" in capsys.readouterr().err
    assert main(["cancel", "x", "--pipeline", "y"]) == 2
    assert main(["cancel", "--pipeline", "nope"]) == 2
    err = capsys.readouterr().err
    assert "nope" in err and "Traceback" not in err


# ------------------------------------------------------------------------------------ queue rows


def test_queue_rows_group_a_pipeline_under_its_parent_row() -> None:
    from tao_slurm_tui.widgets.pipeline_rows import (
        PipelineRow,
        queue_rows,
        row_label,
        row_order,
    )

    jobs = [
        step("p-export", 2, TaoStatus.PENDING),
        JobRecord(id="solo", profile="x", created_at=5),
        step("p-evaluate", 1, TaoStatus.RUNNING),
        step("p", 0, TaoStatus.COMPLETE),
    ]
    rows = queue_rows(jobs, collapsed=set())
    assert [r.id for r in rows] == ["pipeline:p", "p", "p-evaluate", "p-export", "solo"]
    assert [row_label(r) for r in rows[:4]] == [
        "▾ p · 2/3 evaluate",
        "  ├ 1 p",
        "  ├ 2 evaluate",
        "  └ 3 export",
    ]
    parent = rows[0]
    assert isinstance(parent, PipelineRow) and parent.status is TaoStatus.RUNNING
    assert parent.slurm_job_id == "101"  # the step in progress's SLURM job
    assert [r.id for r in queue_rows(jobs, collapsed={"p"})] == ["pipeline:p", "solo"]
    assert row_label(queue_rows(jobs, collapsed={"p"})[0]).startswith("▸ p")
    by_key = {r.id: r for r in rows}
    for reverse in (False, True):
        order = row_order(by_key, lambda job: job.id, reverse=reverse)
        at = order.index("pipeline:p")
        assert order[at : at + 4] == ["pipeline:p", "p", "p-evaluate", "p-export"]
