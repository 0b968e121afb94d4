"""One resolve for every front: each rule, both shapes of a draft, pipelines, the problems by
field and the one sentence -- and the CLI and the composer refusing the same drafts in the same
words. Also the pending-reason words both fronts share."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from textual.widgets import Label

from tao_slurm_tui.cli import main
from tao_slurm_tui.core.capacity import parse_capacity_output
from tao_slurm_tui.core.capacity_report import CapacityReport, build_report
from tao_slurm_tui.core.models import Attempt, JobRecord
from tao_slurm_tui.core.partitions import HOUR
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.core.render import render_job, render_sbatch
from tao_slurm_tui.core.slurm import explain_reason
from tao_slurm_tui.core.spec import (
    Problem,
    Resolution,
    ResolveContext,
    SpecDraft,
    resolve,
    stored_step,
)
from tao_slurm_tui.core.spec import rules as spec_rules
from tao_slurm_tui.errors import BadInput
from tao_slurm_tui.services.fakecluster.demo import Demo
from tao_slurm_tui.widgets.job_cells import reason_in_words
from tao_slurm_tui.widgets.spec_form import in_words
from tests.capacity_data import GOLDEN

IMAGE = "nvcr.io/nvidia/tao/tao-toolkit:6.26.3-pyt"

GOOD: dict[str, Any] = {
    "name": "rules-1",
    "image": IMAGE,
    "command": "dino train -e /specs/train.yaml",
    "time_hours": 4,
    "timeout_hours": 3.8,
    "partition": "polar",
}

LIMITS = {"polar": 4 * HOUR, "long": 48 * HOUR}

PROFILE = Profile(user="u", hostnames=["h"], partition="polar", base_results_dir="/r")

CAPACITY: CapacityReport = build_report(
    parse_capacity_output((GOLDEN / "synthetic.txt").read_text(encoding="utf-8"))
)
"""A recorded cluster: polar has a100 GPUs, batch a100 and v100."""


def check(
    table: dict[str, Any],
    profile: Profile = PROFILE,
    **context: Any,
) -> Resolution:
    context.setdefault("partition_limits", LIMITS)
    return resolve(SpecDraft(table), profile, ResolveContext(**context))


def submitted(job_id: str, slurm_id: str = "7", **fields: Any) -> JobRecord:
    return JobRecord(
        id=job_id, profile="p", submitted=True, attempts=[Attempt(0, slurm_id)], **fields
    )


# ----------------------------------------------------------------------------------- resolve


def test_a_good_spec_resolves_to_one_planned_step() -> None:
    resolution = check(GOOD)
    job = resolution.require()
    assert resolution.problems == () and resolution.by_field() == {} and resolution.sentence() == ""
    (step,) = job.steps
    assert step.name == "rules-1" and step.pipeline_id == "" and step.index == 0
    assert step.plan.partition == "polar" and step.plan.time_limit == "04:00:00"
    assert step.plan.paths.sbatch == "/r/sbatch/job_rules-1.sbatch"


def test_both_shapes_of_a_draft_resolve_alike(tmp_path: Path) -> None:
    path = tmp_path / "spec.toml"
    path.write_text(tomli_w.dumps(GOOD), encoding="utf-8")
    from_file = resolve(SpecDraft.from_file(path), PROFILE).require()
    from_form = resolve(SpecDraft(GOOD), PROFILE).require()
    assert from_file.spec == from_form.spec
    assert [s.plan for s in from_file.steps] == [s.plan for s in from_form.steps]
    assert from_file.source == str(path) and from_form.source == "spec"
    assert SpecDraft.from_file(path).base_dir == tmp_path  # where relative paths are read from


def test_wall_time_over_the_partition_limit_is_a_problem_of_time_hours() -> None:
    resolution = check({**GOOD, "time_hours": 10})
    assert list(resolution.by_field()) == ["time_hours"]
    assert "'polar' (MaxTime 4 h)" in resolution.by_field()["time_hours"]
    # The CLI's sentence is the rule's own, as the composer shows it under the field.
    assert resolution.sentence() == resolution.by_field()["time_hours"]
    assert [p.rule for p in resolution.problems] == ["wall time"]
    assert check({**GOOD, "time_hours": 10, "partition": "long"}).by_field() == {}


def test_wall_time_is_checked_once_against_the_limits_given() -> None:
    # Without limits the packaged list (4 h queues) decides; a partition it does not name is
    # left to SLURM.
    assert check({**GOOD, "time_hours": 10}, partition_limits=None).job is None
    assert check({**GOOD, "time_hours": 10, "partition": "long"}, partition_limits=None).job


def test_wall_time_is_checked_even_when_other_fields_are_wrong() -> None:
    resolution = check({**GOOD, "name": "bad name!", "command": "", "time_hours": 10})
    assert {"name", "command", "time_hours"} <= set(resolution.by_field())
    assert resolution.sentence().endswith("(2 more fields with problems).")


def test_profile_partitions_are_used_when_the_spec_names_none() -> None:
    long_profile = PROFILE.model_copy(update={"partition": "long"})
    data = {**GOOD, "partition": "", "time_hours": 10}
    assert check(data, long_profile).by_field() == {}
    assert "time_hours" in check(data).by_field()


def test_a_bad_number_is_reported_once_without_a_wall_time_message() -> None:
    errors = check({**GOOD, "time_hours": "ten"}).by_field()
    assert list(errors) == ["time_hours"] and "must be a number" in errors["time_hours"]


def test_the_profile_fills_what_the_spec_leaves_out() -> None:
    short = PROFILE.model_copy(update={"time_hours": 2.0, "timeout_hours": 1.5})
    data = {k: v for k, v in GOOD.items() if k not in ("time_hours", "timeout_hours")}
    spec = check(data, short).require().spec
    assert (spec.time_hours, spec.timeout_hours) == (2.0, 1.5)


def test_gpu_type_is_checked_against_the_capacity_when_known() -> None:
    data = {**GOOD, "gpu_type": "v100"}
    assert check(data).job is not None  # no capacity report: SLURM judges it
    resolution = check(data, capacity=CAPACITY)
    problem = resolution.by_field()["gpu_type"]
    assert "No node of partition 'polar' has GPU type 'v100' (it has a100)" in problem
    assert check({**data, "partition": "batch"}, capacity=CAPACITY).job is not None
    # A malformed type is the schema's problem, said once.
    bad = check({**GOOD, "gpu_type": "a/b"}, capacity=CAPACITY).by_field()
    assert "such as a100 or h100" in bad["gpu_type"]


def test_a_name_submitted_in_the_profile_is_taken() -> None:
    jobs = {"rules-1": submitted("rules-1", "123")}
    resolution = check(GOOD, jobs=jobs, profile_name="work")
    assert resolution.by_field() == {
        "name": "A job named 'rules-1' was already submitted in profile 'work' (SLURM job 123); "
        "give the new job another name."
    }
    # A record an earlier try left unsubmitted is not taken: submit reconciles it by name.
    unsent = dataclasses.replace(jobs["rules-1"], submitted=False, attempts=[])
    assert check(GOOD, jobs={"rules-1": unsent}).job is not None


def test_a_pipeline_submitted_part_way_may_be_submitted_again() -> None:
    pipeline = {**GOOD, "then": [{"action": "ev", "command": "e"}]}
    first = submitted("rules-1", pipeline_id="rules-1", pipeline_step=0)
    assert check(pipeline, jobs={"rules-1": first}).job is not None  # the rest is submitted
    # The same name as a single job, or as another pipeline's step, is taken.
    assert "name" in check(GOOD, jobs={"rules-1": first}).by_field()
    other = submitted("rules-1-ev", pipeline_id="x", pipeline_step=1)
    problem = check(pipeline, jobs={"rules-1-ev": other}).by_field()["then"]
    assert problem.startswith("step 2 ('ev'): A job named 'rules-1-ev' was already submitted")


def test_no_partition_anywhere_is_a_problem_of_partition() -> None:
    bare = PROFILE.model_copy(update={"partition": ""})
    resolution = check({**GOOD, "partition": ""}, bare)
    assert resolution.by_field() == {
        "partition": "no partition: set 'partition' in the spec or in the profile."
    }
    assert [p.rule for p in resolution.problems] == ["plan"]


def test_a_profile_problem_is_not_a_spec_field() -> None:
    relative = PROFILE.model_copy(update={"base_results_dir": "tao"})
    resolution = check(GOOD, relative)
    assert list(resolution.by_field()) == [""]
    assert resolution.sentence().startswith("base_results_dir 'tao' must be an absolute path")
    assert resolution.schema_sentence() == ""  # the file is a spec; the profile is wrong


def test_problems_by_field_and_the_one_sentence() -> None:
    resolution = resolve(
        SpecDraft({**GOOD, "num_gpus": -1, "bogus": 1}, source="job.toml"), PROFILE
    )
    errors = resolution.by_field()
    assert errors["num_gpus"] == "must be at least 0 (got -1)"
    assert errors["bogus"].startswith("is not a known field; allowed fields: name, image")
    assert resolution.sentence() == (
        "job.toml: field 'num_gpus' must be at least 0 (got -1) (1 more field with problems)."
    )
    assert resolution.schema_sentence() == resolution.sentence()
    with pytest.raises(BadInput) as caught:
        resolution.require()
    assert str(caught.value) == resolution.sentence() and caught.value.exit_code == 2


def test_every_step_of_a_pipeline_is_resolved_and_planned_once() -> None:
    pipeline = {
        **GOOD,
        "time_hours": 2,
        "timeout_hours": 1.5,
        "env": {"SEED": "1"},
        "then": [
            {"action": "ev", "command": "e", "num_gpus": 1, "env": {"SPLIT": "val"}},
            {"action": "ex", "command": "x", "partition": "long", "time_hours": 10},
        ],
    }
    job = check(pipeline).require()
    assert [(s.name, s.index, s.pipeline_id) for s in job.steps] == [
        ("rules-1", 0, "rules-1"),
        ("rules-1-ev", 1, "rules-1"),
        ("rules-1-ex", 2, "rules-1"),
    ]
    first, evaluate, export = job.steps
    assert evaluate.plan.environment["SPLIT"] == "val" and evaluate.plan.environment["SEED"] == "1"
    assert evaluate.plan.environment["TAO_PREVIOUS_RESULTS_DIR"] == "/r/results/rules-1"
    assert export.plan.environment["TAO_PREVIOUS_RESULTS_DIR"] == "/r/results/rules-1-ev"
    assert export.plan.time_limit == "10:00:00" and first.plan.time_limit == "02:00:00"
    # A later step's rule names the step, under ``then``.
    over = {**pipeline, "then": [{"action": "ev", "command": "e", "time_hours": 9}]}
    problem = check(over).by_field()["then"]
    assert problem.startswith("step 2 ('ev'): time_hours = 9 is above the wall-time limit")


def test_a_stored_step_comes_back_as_planned_without_the_rules() -> None:
    (step,) = check(GOOD).require().steps
    record = step.record("p", submitted=True)
    assert record.spec == step.spec.model_dump(mode="json") and record.plan["version"] == 1
    assert record.base_results_dir == "/r"
    # Another profile and limits since: the stored step is what was submitted.
    moved = PROFILE.model_copy(update={"partition": "long", "base_results_dir": "/elsewhere"})
    again = stored_step(record, moved)
    assert again.plan == step.plan and again.spec == step.spec
    assert render_sbatch(again.plan) == render_sbatch(step.plan)


def test_a_draft_stage_and_a_rule_plug_in_without_a_new_entry_point(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The seams issue 20 ([tao]) and issue 26 (cluster checks) use: a stage before the
    schema that may fill fields and report problems, and a rule on every step."""

    def tao_stage(
        table: Any, draft: SpecDraft, context: ResolveContext
    ) -> tuple[dict[str, Any], list[Problem]]:
        out = {k: v for k, v in table.items() if k != "network"}
        out.setdefault("image", IMAGE)  # the catalogue's image, unless the spec names one
        if table.get("network") == "nope":
            return out, [Problem("tao", "names no network of the catalogue")]
        return out, []

    def cpus_fit(subject: spec_rules.Subject, profile: Profile, context: ResolveContext) -> str:
        assert subject.plan is not None  # a rule may read the step's shape
        return "too many CPUs for one node" if subject.plan.shape.cpus_per_task > 32 else ""

    rule = spec_rules.Rule("cpus fit", "cpus_per_task", frozenset({"cpus_per_task"}), cpus_fit)
    monkeypatch.setattr("tao_slurm_tui.core.spec.resolver.DRAFT_STAGES", (tao_stage,))
    monkeypatch.setattr("tao_slurm_tui.core.spec.resolver.RULES", (*spec_rules.RULES, rule))
    without_image = {k: v for k, v in GOOD.items() if k != "image"}
    assert check({**without_image, "network": "x", "cpus_per_task": 8}).job is not None
    refused = check({**without_image, "network": "nope", "cpus_per_task": 64})
    assert refused.by_field() == {
        "tao": "names no network of the catalogue",
        "cpus_per_task": "too many CPUs for one node",
    }
    assert [p.rule for p in refused.problems] == ["schema", "cpus fit"]


# ----------------------------------------------------------------------------------- CLI = TUI


def _fake_case(**over: Any) -> dict[str, Any]:
    return {**GOOD, "name": "shared-1", "use_sqsh": False, **over}


CASES: dict[str, tuple[dict[str, Any], str]] = {
    # case: (draft table, the field the composer shows the first problem at)
    "wall time": (_fake_case(time_hours=10), "time_hours"),
    "bad name": (_fake_case(name="bad name!"), "name"),
    "name taken": (_fake_case(name="detect-ok"), "name"),
    "gpu type": (_fake_case(gpu_type="h100"), "gpu_type"),
    "step wall time": (
        _fake_case(
            time_hours=2,
            timeout_hours=1.5,
            then=[{"action": "ev", "command": "e", "time_hours": 9}],
        ),
        "then",
    ),
    "unknown key": (_fake_case(gpus=2), "gpus"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_cli_and_the_composer_refuse_alike(
    case: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from tao_slurm_tui.app import make_app
    from tao_slurm_tui.config import Settings
    from tao_slurm_tui.screens.composer import ComposerScreen
    from tests.tui.waits import settle, wait_for

    table, field = CASES[case]
    path = tmp_path / "spec.toml"
    path.write_text(tomli_w.dumps(table), encoding="utf-8")
    # The command line (demo mode: the fake cluster, which knows 'detect-ok').
    monkeypatch.setenv("TAO_SLURM_TUI_DEMO", "1")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    capsys.readouterr()
    assert main(["submit", "--dry-run", str(path)]) == 2
    cli = capsys.readouterr().err
    assert cli.count("\n") == 1 and cli.startswith("tao-slurm-tui: ")

    async def composer() -> str:
        """The composer's message for the field, with the same file loaded (a fresh fake
        cluster, seeded as the CLI's demo is, under the same profile name)."""
        demo = Demo(tmp_path / "composer-demo", workstation=False)
        fake = demo.backend()
        try:
            await fake.capacity()  # what the composer's estimate leaves cached
            app = make_app(fake, settings=Settings(poll_interval=3600), cursor_blink=False)
            async with app.run_test(size=(120, 36)) as pilot:
                screen = ComposerScreen(app.ctx, dict(table), base_dir=tmp_path)
                await app.push_screen(screen)
                await settle(pilot)
                await pilot.press("ctrl+s")  # a submit attempt shows every problem
                await wait_for(pilot, lambda: field in screen.errors, f"the problem of {field}")
                message = screen.errors[field]
                where = {"then": "#steps-error", "gpus": "#problems"}.get(field, f"#e-{field}")
                label = screen.query_one(where, Label)
                await wait_for(
                    pilot, lambda: in_words(message) in str(label.render()), "the message"
                )
                return message
        finally:
            await fake.close()
            demo.close()

    message = asyncio.run(composer())
    # The same words: the CLI's one sentence carries the composer's message for the field.
    assert message.rstrip(".") in cli, (message, cli)


@pytest.mark.parametrize(
    "data",
    [
        GOOD,
        {**GOOD, "time_hours": 10},
        {**GOOD, "num_gpus": -1, "bogus": 1},
        {**GOOD, "partition": "gpu-long", "time_hours": 40, "timeout_hours": 39},
    ],
)
async def test_the_demo_uses_the_real_rules_with_the_fake_clusters_limits(
    data: dict[str, Any], tmp_path: Path
) -> None:
    demo = Demo(tmp_path / "demo", workstation=False)
    fake = demo.backend()
    try:
        limits = await fake.partition_limits()  # scontrol show partition on the fake cluster
        assert limits == {"polar": 4 * HOUR, "polar3": 4 * HOUR, "gpu-long": 48 * HOUR}
        expected = resolve(
            SpecDraft(data),
            fake.profile,
            ResolveContext(partition_limits=limits, profile_name=fake.profile_name),
        )
        got = fake.resolve(SpecDraft(data), names=False)
        assert got.problems == expected.problems
        if expected.job is not None and got.job is not None:
            assert fake.render(got.job) == render_job(expected.job)
    finally:
        await fake.close()
        demo.close()


# ----------------------------------------------------------------------------------- reasons


@pytest.mark.parametrize(
    ("reason", "words"),
    [
        ("Resources", "no free nodes"),
        ("(Priority)", "lower priority"),
        ("ReqNodeNotAvail, UnavailableNodes:vm", "node unavail."),
        ("QOSSomethingNew", "QOS limit"),
        ("SomethingNew", "SomethingNew"),
        ("None", ""),
        ("", ""),
    ],
)
def test_short_reasons_come_from_core_slurm(reason: str, words: str) -> None:
    assert explain_reason(reason, short=True) == words
    assert reason_in_words(reason) == words
