"""The named rules a spec must pass beyond its schema, and what they may look at.

Each :class:`Rule` looks at one step of the job (a :class:`Subject`: the job itself, or one of
its ``[[then]]`` steps merged with it), the profile and the :class:`ResolveContext` -- what the
fronts know that is not in the spec: the partitions' limits, the jobs already submitted, the
cluster's capacity. A rule names the fields it reads (``needs``); while one of them is still
wrong in the draft the rule stays silent, so the user sees each problem once, where it is.

Rules are pure and run in the order of :data:`RULES`, after the schema and before the launch
plan (:func:`tao_slurm_tui.core.spec.resolve`). The CLI and the composer go through the same
list, so they refuse the same things in the same words.

Where the coming checks plug in (see docs/ARCHITECTURE.md, "Resolving a spec"):

* **The ``[tao]`` table** (issue 20) is the first :data:`DraftStage` (:func:`tao_table`): it
  runs on the draft's table before the schema, fills ``image`` and ``command`` from the TAO
  catalogue (an explicit ``image`` wins), reads ``spec_file`` relative to
  :attr:`SpecDraft.base_dir`, merges ``[tao.spec]`` and reports the experiment spec's problems
  under ``tao``. The catalogue comes in :attr:`ResolveContext.tao`; the schema keeps the
  ``tao`` table (:class:`~tao_slurm_tui.core.spec.model.TaoJob`) in the stored spec.
* **Cluster checks** (:mod:`tao_slurm_tui.core.spec.cluster_rules`: the partition exists, the
  GPUs, CPUs and memory asked of one node fit a node of the partition, mount sources, inputs
  and the experiment spec's paths exist) read facts a service gathered in one round trip
  (:attr:`ResolveContext.partitions`, :attr:`ResolveContext.paths`; None while unknown: a rule
  without its facts stays silent, as the GPU-type rule does without a capacity report). The
  ones that need the resource shape read ``subject.plan``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from tao_slurm_tui.core.capacity_report import CapacityReport, gpu_type_problem
from tao_slurm_tui.core.cluster_facts import Partitions
from tao_slurm_tui.core.launch import LaunchPlan
from tao_slurm_tui.core.models import JobRecord
from tao_slurm_tui.core.partitions import PartitionLimits, check_wall_time, split_partitions
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.core.spec import cluster_rules
from tao_slurm_tui.core.spec.draft import SpecDraft
from tao_slurm_tui.core.spec.model import JobSpec
from tao_slurm_tui.core.spec.problems import Problem
from tao_slurm_tui.core.spec.slice_rule import checkpoint_problem
from tao_slurm_tui.core.spec.tao_source import TaoContext
from tao_slurm_tui.core.spec.tao_stage import tao_stage


@dataclass(frozen=True)
class ResolveContext:
    """What the rules need that is not in the draft; every field may be left out (unknown)."""

    partition_limits: PartitionLimits | None = None
    """MaxTime per partition in seconds (None: the packaged list; a partition missing from
    the table is not checked, SLURM has the last word)."""
    jobs: Mapping[str, JobRecord] = field(default_factory=lambda: MappingProxyType({}))
    """The profile's stored jobs by id: a submitted one takes its name (empty: not checked)."""
    profile_name: str = ""
    """The profile's name, for the sentence about a name already taken."""
    capacity: CapacityReport | None = None
    """The cluster's capacity while fresh (None: GPU types are not checked)."""
    partitions: Partitions | None = None
    """The cluster's partitions with the shapes of their nodes (None: unknown; partitions and
    node sizes are not checked)."""
    paths: Mapping[str, bool] | None = None
    """Cluster paths known to exist (True) or not (False); a path missing from it is not
    checked (None: nothing known)."""
    tao: TaoContext | None = None
    """The profile's TAO catalogue and schemas (None: not loaded; a ``[tao]`` table then
    cannot be resolved and says so)."""
    similar_runs: Mapping[Any, Any] = field(default_factory=lambda: MappingProxyType({}))
    """Seconds per epoch of the profile's TAO trainings by (network, nodes, GPUs per node)
    (:func:`~tao_slurm_tui.core.spec.slice_rule.similar_runs`; empty: not checked)."""


@dataclass(frozen=True)
class Subject:
    """One step of the job as the rules see it."""

    spec: JobSpec
    """The step as its own job spec (the job itself: without its ``[[then]]`` steps)."""
    index: int = 0
    """0: the job itself; N: its N-th ``[[then]]`` step."""
    action: str = ""
    """The step's action ('' for the job itself)."""
    pipeline_id: str = ""
    """The pipeline's id (the job's name) when the job has ``[[then]]`` steps, else ''."""
    unknown: frozenset[str] = frozenset()
    """Fields whose value is not the user's (the schema refused it): rules needing one stay
    silent."""
    plan: LaunchPlan | None = None
    """The step's launch plan, once planned (rules that need the resource shape read it)."""

    def problem(self, field: str, sentence: str, rule: str) -> Problem:
        """``rule``'s sentence about ``field`` of this step (a later step's names the step)."""
        if self.index == 0:
            return Problem(field, sentence, "sentence", rule)
        where = f"step {self.index + 1} ({self.action!r})"
        return Problem("then", f"{where}: {sentence.rstrip('.')}", "located", rule)


RuleCheck = Callable[[Subject, Profile, ResolveContext], str]
"""A rule's test: '' when the step passes, else one sentence saying what to do."""


@dataclass(frozen=True)
class Rule:
    """A named check of one step beyond the schema."""

    name: str
    """What it checks, in a word or two (for documentation and tests)."""
    field: str
    """The spec key its problem is shown at."""
    needs: frozenset[str]
    """Fields it reads: while one of them is wrong in the draft, it stays silent."""
    check: RuleCheck
    """The test."""

    def run(self, subject: Subject, profile: Profile, context: ResolveContext) -> Problem | None:
        """The rule's problem with ``subject`` (None: passes, or cannot be judged yet)."""
        if self.needs & subject.unknown:
            return None
        sentence = self.check(subject, profile, context)
        return subject.problem(self.field, sentence, self.name) if sentence else None


def partitions_of(spec: JobSpec, profile: Profile) -> list[str]:
    """The partitions a step may run in: its own, else the profile's."""
    return split_partitions(spec.partition) or list(profile.partitions)


def wall_time(subject: Subject, profile: Profile, context: ResolveContext) -> str:
    """The wall time fits the MaxTime of every partition the step may run in."""
    partitions = partitions_of(subject.spec, profile)
    return check_wall_time(subject.spec.time_hours, partitions, context.partition_limits) or ""


def gpu_type(subject: Subject, profile: Profile, context: ResolveContext) -> str:
    """A node of the step's partitions has GPUs of the asked type (known from a capacity
    report; nothing is said without one)."""
    if context.capacity is None:
        return ""
    partitions = partitions_of(subject.spec, profile)
    return gpu_type_problem(context.capacity, partitions, subject.spec.gpu_type)


def name_free(subject: Subject, profile: Profile, context: ResolveContext) -> str:
    """No job of the profile was submitted under the step's name -- except the same step of
    the same pipeline, submitted by an earlier try that stopped part way (it is kept, and the
    rest of the pipeline submitted)."""
    record = context.jobs.get(subject.spec.name)
    if record is None or not record.submitted:
        return ""  # unknown, or an earlier try that never reached SLURM (submit reconciles)
    resumed = (
        bool(subject.pipeline_id)
        and record.pipeline_id == subject.pipeline_id
        and record.pipeline_step == subject.index
    )
    return "" if resumed else name_taken(record, context.profile_name)


def name_taken(record: JobRecord, profile_name: str) -> str:
    """The sentence for a name already submitted in the profile."""
    return (
        f"A job named '{record.id}' was already submitted in profile '{profile_name}' "
        f"(SLURM job {record.slurm_job_id or '?'}); give the new job another name."
    )


def partition_known(subject: Subject, profile: Profile, context: ResolveContext) -> str:
    """The step's partitions exist on the cluster."""
    return cluster_rules.partition_problem(subject.spec, profile, context.partitions)


def node_gpus(subject: Subject, profile: Profile, context: ResolveContext) -> str:
    """A node of the partition has the GPUs the step asks of one node."""
    return cluster_rules.node_gpus_problem(subject.spec, subject.plan, profile, context.partitions)


def node_cpus(subject: Subject, profile: Profile, context: ResolveContext) -> str:
    """Such a node has the CPUs the step asks of it."""
    return cluster_rules.node_cpus_problem(subject.spec, subject.plan, profile, context.partitions)


def node_memory(subject: Subject, profile: Profile, context: ResolveContext) -> str:
    """Such a node has the memory SLURM gives the step."""
    return cluster_rules.node_memory_problem(
        subject.spec, subject.plan, profile, context.partitions
    )


def mounts_exist(subject: Subject, profile: Profile, context: ResolveContext) -> str:
    """The mount sources exist on the cluster."""
    return cluster_rules.mounts_problem(subject.spec, profile, context.paths)


def inputs_exist(subject: Subject, profile: Profile, context: ResolveContext) -> str:
    """The input paths exist on the cluster."""
    return cluster_rules.inputs_problem(subject.spec, context.paths)


def spec_paths_exist(subject: Subject, profile: Profile, context: ResolveContext) -> str:
    """The cluster paths in the experiment spec exist."""
    return cluster_rules.spec_paths_problem(subject.spec, context.paths)


_SHAPE = frozenset({"partition", "num_nodes", "num_gpus", "gpu_type", "cpus_per_task"})

PATH_RULES: tuple[Rule, ...] = (
    Rule("mount sources", "container_mounts", frozenset({"container_mounts"}), mounts_exist),
    Rule("inputs", "inputs", frozenset({"inputs"}), inputs_exist),
    Rule("spec paths", "specs", frozenset({"specs"}), spec_paths_exist),
)
"""The rules on the cluster's file system (the submission's check phase runs them too)."""


def checkpoints_fit(subject: Subject, profile: Profile, context: ResolveContext) -> str:
    """A TAO training's checkpoint interval fits in one slice, by a similar run's epochs."""
    return checkpoint_problem(subject.spec, subject.plan, context.similar_runs)


RULES: tuple[Rule, ...] = (
    Rule("partition", "partition", frozenset({"partition"}), partition_known),
    Rule("wall time", "time_hours", frozenset({"time_hours", "partition"}), wall_time),
    Rule("GPU type", "gpu_type", frozenset({"gpu_type", "partition"}), gpu_type),
    Rule("node GPUs", "num_gpus", _SHAPE, node_gpus),
    Rule("node CPUs", "cpus_per_task", _SHAPE, node_cpus),
    Rule("node memory", "cpus_per_task", _SHAPE, node_memory),
    *PATH_RULES,
    Rule("name free", "name", frozenset({"name"}), name_free),
    Rule("checkpoints fit a slice", "tao", frozenset({"tao", "timeout_hours"}), checkpoints_fit),
)
"""Every rule beyond the schema, in the order their problems are listed."""


def path_problems(subject: Subject, profile: Profile, exists: Mapping[str, bool]) -> list[Problem]:
    """What :data:`PATH_RULES` say of ``subject`` given which paths exist (the submission's
    check phase: the same words as the form's)."""
    context = ResolveContext(paths=exists)
    return [p for rule in PATH_RULES if (p := rule.run(subject, profile, context))]


DraftStage = Callable[
    [Mapping[str, Any], SpecDraft, ResolveContext], tuple[dict[str, Any], list[Problem]]
]
"""A step on the draft's table before the schema sees it: returns the table it makes of it
(e.g. the ``[tao]`` table turned into ``image``, ``command`` and ``specs``) and what it found
wrong. It must not change the table it is given."""


def tao_table(
    table: Mapping[str, Any], draft: SpecDraft, context: ResolveContext
) -> tuple[dict[str, Any], list[Problem]]:
    """The ``[tao]`` table: network and action → image, command and the checked experiment
    spec (:mod:`~tao_slurm_tui.core.spec.tao_stage`)."""
    return tao_stage(table, draft, context.tao)


DRAFT_STAGES: tuple[DraftStage, ...] = (tao_table,)
"""The draft stages, in order."""
