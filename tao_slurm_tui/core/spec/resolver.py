"""One way from a draft to a job that can run: :func:`resolve`, and the stored form of its steps.

``resolve(draft, profile, context)`` runs, in order:

1. the draft stages (:data:`~tao_slurm_tui.core.spec.rules.DRAFT_STAGES`: none yet; the
   ``[tao]`` table comes here), then the profile's defaults for the wall time, timeout and
   requeue the draft leaves out;
2. the schema (:class:`~tao_slurm_tui.core.spec.model.JobSpec`): every field's own rules;
3. the pipeline: each ``[[then]]`` step merged with its parent and checked as a job spec of its
   own, its job id unique and short enough;
4. the launch plan of every step (:func:`~tao_slurm_tui.core.launch.plan_step`), computed
   once: the partition and account a step leaves out come from the profile, and every value
   must fit an ``#SBATCH`` line;
5. the rules (:data:`~tao_slurm_tui.core.spec.rules.RULES`) on every step: the wall time
   against the partitions' MaxTime, the GPU type against the capacity, the name against the
   jobs already submitted.

It returns a :class:`Resolution`: the :class:`ResolvedJob` (every step with its plan), or the
problems by field. When the schema refuses some fields, the rules still judge the others (a
wall time above the limit shows while the name is still empty), so the user sees every problem
at once. Submit, render, the start estimate and the store take the resolved job; nothing after
this module checks or plans a spec again.

A stored step (:meth:`ResolvedStep.record`, :func:`stored_step`) is the step's spec and its plan
as JSON. Loading one for a retry runs no rule: the job runs again as it was planned. A job
stored by a version before plans were stored (an empty plan) gets its plan made from its stored
spec and the current profile -- without the rules, as those versions did.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import ValidationError

from tao_slurm_tui.core.launch import LaunchPlan, PlanRefused, pipeline_env, plan_step
from tao_slurm_tui.core.models import JobRecord
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.core.spec.draft import SpecDraft, too_deep, with_profile_defaults
from tao_slurm_tui.core.spec.model import DEFAULT_IMAGE, JobSpec, step_data
from tao_slurm_tui.core.spec.problems import (
    SCHEMA,
    Problem,
    Refused,
    by_field,
    first_field_problem,
    one_sentence,
    schema_problems,
)
from tao_slurm_tui.core.spec.rules import DRAFT_STAGES, RULES, ResolveContext, Subject
from tao_slurm_tui.errors import BadInput

MAX_JOB_ID = 64
"""Longest job id (a step's is ``<name>-<action>``)."""


@dataclass(frozen=True)
class ResolvedStep:
    """One step of a resolved job: its own spec and its launch plan."""

    spec: JobSpec
    """The step as its own job spec (no ``[[then]]``), the profile's defaults applied."""
    plan: LaunchPlan
    """Every value of its batch script but what the submission adds."""
    pipeline_id: str = ""
    """The pipeline's id (its first step's name); '' for a single job."""
    index: int = 0
    """0 for the first step (or a single job)."""

    @property
    def name(self) -> str:
        """The step's job id."""
        return self.spec.name

    def record(self, profile: str, **fields: Any) -> JobRecord:
        """The step as the store keeps it: its spec and plan as JSON, its place in the pipeline
        (``fields``: the record's other values)."""
        return JobRecord(
            id=self.name,
            profile=profile,
            spec=self.spec.model_dump(mode="json"),
            plan=self.plan.to_json(),
            base_results_dir=self.plan.paths.base,
            pipeline_id=self.pipeline_id,
            pipeline_step=self.index,
            **fields,
        )


@dataclass(frozen=True)
class ResolvedJob:
    """A job that passed every rule: its spec and every step, planned."""

    spec: JobSpec
    """The job as validated (its ``[[then]]`` steps included), the profile's defaults applied."""
    steps: tuple[ResolvedStep, ...]
    """The job itself, then one step per ``[[then]]`` table."""
    source: str = "spec"
    """Where it came from (the spec file), for sentences."""

    @property
    def name(self) -> str:
        """The job's id (a pipeline's: its first step's)."""
        return self.spec.name


@dataclass(frozen=True)
class Resolution:
    """What :func:`resolve` made of a draft: the job, or what to fix."""

    source: str
    """How sentences name the draft."""
    job: ResolvedJob | None = None
    """The resolved job; None when there are problems."""
    problems: tuple[Problem, ...] = field(default_factory=tuple)
    """Everything to fix, in the spec's order, then the rules' order."""
    spec: JobSpec | None = None
    """The draft as a valid spec when its schema passed, even if a rule refused it (its
    defaults filled: what a form shows)."""

    def by_field(self) -> dict[str, str]:
        """Field → one message (the composer's inline errors); empty when resolved."""
        return by_field(self.problems)

    def sentence(self) -> str:
        """The first problem as one sentence naming the draft, with how many more fields have
        problems (the CLI's message); '' when resolved."""
        return one_sentence(self.problems, self.source) if self.problems else ""

    def schema_sentence(self) -> str:
        """The one sentence of the problems with the spec itself ('' when it is a spec, even
        if the profile or the cluster refuse it): for a file checked before the composer
        shows it."""
        own = [p for p in self.problems if p.rule == SCHEMA]
        return one_sentence(own, self.source) if own else ""

    def require(self) -> ResolvedJob:
        """The resolved job.

        Raises:
            Refused: the draft has problems (:meth:`sentence`, and the problems by field).
        """
        if self.job is None:
            raise Refused(self.problems, self.source)
        return self.job


def resolve(
    draft: SpecDraft, profile: Profile, context: ResolveContext | None = None
) -> Resolution:
    """Check ``draft`` against every rule and plan each of its steps on ``profile``.

    Args:
        draft: the form's values or a spec file's table.
        profile: supplies the defaults for the wall time, timeout and requeue, the partitions
            and account a spec leaves out, the node size and the results root.
        context: what else the rules may look at (limits, jobs submitted, capacity); default
            nothing known (the packaged partition limits, no name or GPU-type check).
    """
    context = context or ResolveContext()
    problems: list[Problem] = []
    table: Any = draft.table
    for stage in DRAFT_STAGES:
        table, found = stage(table, draft, context)
        problems += found
    table = with_profile_defaults(table, profile)
    try:
        job, subjects, found = _subjects(table)
    except RecursionError:
        problem = Problem("", too_deep(draft.source), "sentence")
        return Resolution(draft.source, None, (*problems, problem))
    problems += found
    steps, found = _plan_and_check(subjects, profile, context)
    problems += found
    if problems or job is None:
        return Resolution(draft.source, None, tuple(problems), job)
    return Resolution(draft.source, ResolvedJob(job, steps, draft.source), spec=job)


# ----------------------------------------------------------------------------------- stages


_PLACEHOLDERS: dict[str, Any] = {"name": "draft", "image": DEFAULT_IMAGE, "command": "true"}
"""Stand-ins for required fields the schema refused, so the rules can judge the others."""


def _subjects(table: dict[str, Any]) -> tuple[JobSpec | None, list[Subject], list[Problem]]:
    """The schema, then the pipeline's steps: (the job when valid, every step for the rules,
    the problems)."""
    try:
        job = JobSpec.model_validate(table)
    except ValidationError as exc:
        problems = schema_problems(exc, table)
        salvaged = _salvage(table, {p.field for p in problems})
        return None, [salvaged] if salvaged else [], problems
    subjects, problems = _pipeline(job)
    return job, subjects, problems


def _salvage(table: dict[str, Any], bad: set[str]) -> Subject | None:
    """The job's valid fields over stand-ins for the refused ones (None if even that fails):
    the rules judge what the user got right while the rest is still wrong."""
    kept = {k: v for k, v in table.items() if k not in bad and k != "then"}
    stand_ins = {k: v for k, v in _PLACEHOLDERS.items() if k not in kept}
    try:
        spec = JobSpec.model_validate({**kept, **stand_ins})
    except ValidationError:
        return None
    steps = table.get("then")
    pipeline = table.get("name", "") if isinstance(steps, list) and steps else ""
    return Subject(
        spec,
        pipeline_id=pipeline if isinstance(pipeline, str) else "",
        unknown=frozenset(bad | set(stand_ins)),
    )


def _pipeline(job: JobSpec) -> tuple[list[Subject], list[Problem]]:
    """The job and each ``[[then]]`` step merged with it, checked as job specs of their own."""
    if not job.then:
        return [Subject(job)], []
    parent = job.model_dump(mode="json", exclude_unset=True)
    parent.pop("then", None)
    subjects = [Subject(job.model_copy(update={"then": []}), pipeline_id=job.name)]
    problems: list[Problem] = []
    seen = {job.name}
    for index, step in enumerate(job.then, start=1):
        data = step_data(parent, step)
        where = f"step {index + 1} ({step.action!r})"
        problem = _step_problem(data["name"], seen)
        if not problem:
            try:
                spec = JobSpec.model_validate(data)
            except ValidationError as exc:
                field_name, message = first_field_problem(exc)
                problem = f"field '{field_name}' {message}"
            else:
                subjects.append(Subject(spec, index, step.action, job.name))
        if problem:
            problems.append(Problem("then", f"{where}: {problem}", "located"))
        seen.add(data["name"])
    return subjects, problems


def _step_problem(name: str, seen: set[str]) -> str:
    if len(name) > MAX_JOB_ID:
        return (
            f"its job id {name!r} is longer than {MAX_JOB_ID} characters; shorten the job's "
            "name or the action"
        )
    if name in seen:
        return (
            f"its job id {name!r} is already used by an earlier step; give every action its "
            "own name"
        )
    return ""


def _plan_and_check(
    subjects: Sequence[Subject], profile: Profile, context: ResolveContext
) -> tuple[tuple[ResolvedStep, ...], list[Problem]]:
    """Every step's launch plan, then the rules on it; a pipeline's later steps see the
    previous one's results dir."""
    steps: list[ResolvedStep] = []
    problems: list[Problem] = []
    previous = ""
    for subject in subjects:
        env = (
            pipeline_env(subject.pipeline_id, subject.index, previous)
            if subject.pipeline_id and not subject.unknown
            else None
        )
        try:
            plan: LaunchPlan | None = plan_step(subject.spec, profile, pipeline_env=env)
        except PlanRefused as refused:
            plan = None
            if refused.field not in subject.unknown:
                problems.append(subject.problem(refused.field, refused.sentence, "plan"))
        planned = replace(subject, plan=plan)
        problems += [p for rule in RULES if (p := rule.run(planned, profile, context))]
        if plan is not None:
            previous = plan.paths.results_dir
            steps.append(ResolvedStep(subject.spec, plan, subject.pipeline_id, subject.index))
    return tuple(steps), problems


# ----------------------------------------------------------------------------------- stored


def stored_step(
    record: JobRecord, profile: Profile, *, previous_results_dir: str = ""
) -> ResolvedStep:
    """A step as the store kept it (:meth:`ResolvedStep.record`), for a retry: no rule runs.

    A record without a plan (stored by a version before plans were stored) or with one this
    version cannot read is planned again from its stored spec on ``profile`` (as those versions
    did on every retry), under its own results root; ``previous_results_dir`` is then the
    previous pipeline step's results dir.

    Raises:
        BadInput: such a record cannot be planned on ``profile`` (no partition, say).
    """
    spec = _stored_spec(record.spec)
    if record.plan:
        try:
            plan = LaunchPlan.from_json(record.plan)
        except ValueError:
            pass
        else:
            return ResolvedStep(spec, plan, record.pipeline_id, record.pipeline_step)
    env = (
        pipeline_env(record.pipeline_id, record.pipeline_step, previous_results_dir)
        if record.pipeline_id
        else None
    )
    base = record.base_results_dir or profile.results_root
    try:
        plan = plan_step(spec, profile, base=base, pipeline_env=env)
    except PlanRefused as refused:
        raise BadInput(refused.sentence) from None
    return ResolvedStep(spec, plan, record.pipeline_id, record.pipeline_step)


def _stored_spec(data: dict[str, Any]) -> JobSpec:
    """A stored step's spec as it was validated when submitted (not validated again)."""
    values = {key: data[key] for key in JobSpec.model_fields if key in data and key != "then"}
    return JobSpec.model_construct(**values)
