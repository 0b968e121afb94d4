"""The rules only the cluster can settle: its partitions, its nodes' size, its file system.

Each function judges one step of a job against facts a service gathered from the cluster
(:mod:`tao_slurm_tui.core.cluster_facts`, and which paths exist) and returns '' or one sentence
that names the spec key to change (the composer shows it under that field, in its label's
words). :data:`tao_slurm_tui.core.spec.rules.RULES` runs them; without their facts (offline, not
fetched yet) they say nothing and SLURM keeps the last word. Pure.

How SLURM counts what a job asks of a node (``core/shaping.py``): one task per node, and on a
single node with several GPUs that task gets ``cpus_per_task`` CPUs for every GPU's process --
the default 16 with 4 GPUs is 64 CPUs on one node. Without ``--mem`` the job gets
``DefMemPerCPU`` per CPU (or ``DefMemPerNode``) of the partition; an exclusive job gets the
whole node.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tao_slurm_tui.core import storage
from tao_slurm_tui.core.cluster_facts import (
    NodeRequest,
    PartitionFacts,
    Partitions,
    fits,
    most_cpus,
    most_gpus,
    with_gpus,
)
from tao_slurm_tui.core.launch import LaunchPlan, shape_of
from tao_slurm_tui.core.partitions import split_partitions
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.core.shaping import shape_resources
from tao_slurm_tui.core.spec.model import JobSpec
from tao_slurm_tui.core.words import plural


def _partitions(spec: JobSpec, profile: Profile) -> list[str]:
    return split_partitions(spec.partition) or list(profile.partitions)


def _names(names: Sequence[str]) -> str:
    return ", ".join(repr(n) for n in names)


def _where(parts: Sequence[PartitionFacts]) -> str:
    names = [p.name for p in parts]
    return f"partition {names[0]!r}" if len(names) == 1 else f"partitions {_names(names)}"


def partition_problem(spec: JobSpec, profile: Profile, partitions: Partitions | None) -> str:
    """Every partition the step may run in exists on the cluster."""
    if not partitions:
        return ""
    unknown = [p for p in _partitions(spec, profile) if p not in partitions]
    if not unknown:
        return ""
    have = ", ".join(sorted(partitions))
    which = _names(unknown)
    noun = "partition" if len(unknown) == 1 else "partitions"
    if spec.partition:
        return f"The cluster has no {noun} {which} (it has {have}); choose one of those."
    return (
        f"The profile's {noun} {which} does not exist on the cluster (it has {have}); set "
        "the partition here, or fix the profile's in set-up."
    )


def _known(spec: JobSpec, profile: Profile, partitions: Partitions | None) -> list[PartitionFacts]:
    """The step's partitions the cluster described with their nodes."""
    if not partitions:
        return []
    named = [partitions.get(p) for p in _partitions(spec, profile)]
    return [p for p in named if p is not None and p.nodes]


def _request(plan: LaunchPlan) -> NodeRequest:
    shape = plan.shape
    return NodeRequest(
        cpus=shape.cpus_per_task * shape.ntasks_per_node,
        gpus=shape.gpus_per_node,
        gpu_type=shape.gpu_type,
        exclusive=shape.exclusive,
    )


def _asked(
    spec: JobSpec, plan: LaunchPlan | None, profile: Profile, partitions: Partitions | None
) -> tuple[list[PartitionFacts], NodeRequest] | None:
    """The step's partitions described with their nodes, and what it asks of one node (None:
    nothing to judge: no plan, or the cluster did not describe them)."""
    known = _known(spec, profile, partitions)
    return (known, _request(plan)) if plan is not None and known else None


def node_gpus_problem(
    spec: JobSpec, plan: LaunchPlan | None, profile: Profile, partitions: Partitions | None
) -> str:
    """A node of one of the step's partitions has the GPUs it asks of one node."""
    asked = _asked(spec, plan, profile, partitions)
    if asked is None:
        return ""
    known, request = asked
    if any(with_gpus(p.nodes, request) for p in known):
        return ""
    kind = request.gpu_type
    if kind and not any(most_gpus(p, kind) for p in known):
        return ""  # no node has the type at all: the GPU-type rule says so
    best = max(most_gpus(p, kind) for p in known)
    typed = f" {kind}" if kind else ""
    return (
        f"num_gpus = {spec.num_gpus} asks for {request.gpus}{typed} GPUs on one node, but no "
        f"node of {_where(known)} has more than {best}; ask for at most {best} per node "
        "(and more nodes for more GPUs)."
    )


def _cpus_fitting(spec: JobSpec, profile: Profile, most: int) -> int:
    """The largest ``cpus_per_task`` (up to the spec's) whose request fits ``most`` CPUs on one
    node (0: none does: too many GPUs for the node's CPUs)."""
    for cpus in range(min(spec.cpus_per_task, most), 0, -1):
        shape = shape_of(spec.model_copy(update={"cpus_per_task": cpus}), profile)
        if shape.cpus_per_task * shape.ntasks_per_node <= most:
            return cpus
    return 0


def node_cpus_problem(
    spec: JobSpec, plan: LaunchPlan | None, profile: Profile, partitions: Partitions | None
) -> str:
    """A node with the GPUs the step asks for also has the CPUs it asks for."""
    asked = _asked(spec, plan, profile, partitions)
    if asked is None:
        return ""
    known, request = asked
    candidates = [(p, with_gpus(p.nodes, request)) for p in known]
    candidates = [(p, nodes) for p, nodes in candidates if nodes]
    if not candidates:
        return ""  # the GPU rule speaks
    if any(request.cpus <= most_cpus(nodes, p) for p, nodes in candidates):
        return ""
    most = max(most_cpus(nodes, p) for p, nodes in candidates)
    why = ""
    if request.cpus != spec.cpus_per_task:
        why = (
            f" ({spec.cpus_per_task} CPUs per task × {request.gpus} GPUs: the one "  # noqa: RUF001
            "task on the node runs every GPU's process)"
        )
    where = _where([p for p, _ in candidates])
    fitting = _cpus_fitting(spec, profile, most)
    todo = (
        f"set cpus_per_task to at most {fitting}"
        if fitting
        else "ask for fewer GPUs per node (their processes need a CPU each)"
    )
    return (
        f"cpus_per_task = {spec.cpus_per_task} asks for {request.cpus} CPUs on one node{why}, "
        f"but the nodes of {where} have at most {most}; {todo}."
    )


def node_memory_problem(
    spec: JobSpec, plan: LaunchPlan | None, profile: Profile, partitions: Partitions | None
) -> str:
    """A node with the GPUs and CPUs the step asks for has the memory SLURM gives it."""
    asked = _asked(spec, plan, profile, partitions)
    if asked is None:
        return ""
    known, request = asked
    roomy = [(p, [n for n in with_gpus(p.nodes, request) if n.cpus >= request.cpus]) for p in known]
    roomy = [(p, nodes) for p, nodes in roomy if nodes]
    if not roomy:
        return ""  # the GPU or CPU rule speaks
    if any(fits(n, p, request) for p, nodes in roomy for n in nodes):
        return ""
    partition, nodes = roomy[0]
    memory = request.memory_mb(partition) or 0
    largest = max(n.memory_mb for n in nodes)
    per_cpu = partition.def_mem_per_cpu_mb
    how = (
        f"DefMemPerCPU {per_cpu} MB × {request.cpus} CPUs"  # noqa: RUF001
        if per_cpu
        else f"DefMemPerNode of partition {partition.name!r}"
    )
    return (
        f"cpus_per_task = {spec.cpus_per_task} gets the job {memory} MB of memory on one node "
        f"({how}), more than the {largest} MB of the largest node of {_where([partition])}; "
        "ask for fewer CPUs per task."
    )


def _sources(mounts: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(mount.split(":", 1)[0] for mount in mounts))


def mounts_problem(spec: JobSpec, profile: Profile, paths: Mapping[str, bool] | None) -> str:
    """Every mount source exists on the cluster (Pyxis stops the job at once otherwise; without
    a container runtime there is nothing to mount)."""
    if not paths or profile.container_runtime != "pyxis":
        return ""
    missing = [s for s in _sources(spec.container_mounts) if paths.get(s) is False]
    if not missing:
        return ""
    what = "source" if len(missing) == 1 else "sources"
    verb = "does" if len(missing) == 1 else "do"
    return (
        f"container_mounts: {what} {', '.join(missing)} {verb} not exist on the cluster, so "
        "Pyxis would stop the job as it starts; remove the mount or fix the path (the job's "
        "results dir is mounted anyway)."
    )


def inputs_problem(spec: JobSpec, paths: Mapping[str, bool] | None) -> str:
    """Every input path exists on the cluster."""
    if not paths:
        return ""
    missing = [p for p in spec.resolved_inputs() if paths.get(p) is False]
    return _missing_sentence("inputs", "input path", missing)


def spec_paths_problem(spec: JobSpec, paths: Mapping[str, bool] | None) -> str:
    """Every cluster path in ``specs`` (the TAO experiment spec) exists on the cluster."""
    if not paths:
        return ""
    # Paths under ``specs`` only: a TAO dataset path is named with its key by the check phase.
    labelled = spec.labelled_paths().items()
    missing = [p for p, key in labelled if key.startswith("specs") and paths.get(p) is False]
    return _missing_sentence("specs", "path", missing)


def _missing_sentence(field: str, word: str, missing: Sequence[str]) -> str:
    if not missing:
        return ""
    verb = "does" if len(missing) == 1 else "do"
    return (
        f"{field}: {plural(len(missing), word)} {verb} not exist on the cluster: "
        f"{', '.join(missing)}; stage the data on the shared filesystem or fix the "
        f"{'path' if len(missing) == 1 else 'paths'}."
    )


def cluster_paths(spec: JobSpec, profile: Profile) -> list[str]:
    """Every cluster path the path rules ask about: inputs, paths in ``specs`` and (under
    Pyxis) mount sources, checked with ``test -e`` in one round trip."""
    mounts = _sources(spec.container_mounts) if profile.container_runtime == "pyxis" else []
    return list(dict.fromkeys([*spec.paths_to_check(), *mounts]))


def draft_paths(table: Mapping[str, Any], profile: Profile) -> list[str]:
    """The cluster paths of a draft worth a ``test -e`` while it is being written (its mount
    sources under Pyxis, its inputs): what :func:`cluster_paths` will ask of the resolved job,
    taken from a table that may not be a valid spec yet."""
    paths: list[str] = []
    mounts = table.get("container_mounts")
    if profile.container_runtime == "pyxis" and isinstance(mounts, list):
        paths += [m.split(":", 1)[0] for m in mounts if isinstance(m, str) and m.startswith("/")]
    inputs = table.get("inputs")
    for item in inputs if isinstance(inputs, list) else []:
        try:
            paths.append(storage.convert_path(str(item)))
        except storage.PathError:
            continue
    return list(dict.fromkeys(paths))


def fit_defaults(
    table: Mapping[str, Any], profile: Profile, partitions: Partitions | None
) -> dict[str, Any]:
    """A new job's defaults made to fit the cluster: at most the GPUs a node of its first
    partition has, and the most CPUs per task (up to the default) that the node then gives --
    so the form never starts with a value the cluster cannot satisfy."""
    out = dict(table)
    names = split_partitions(str(out.get("partition") or "")) or profile.partitions
    facts = partitions.get(names[0]) if partitions and names else None
    if facts is None or not facts.nodes:
        return out
    nodes, gpus, cpus = int(out["num_nodes"]), int(out["num_gpus"]), int(out["cpus_per_task"])
    gpus = min(gpus, most_gpus(facts, ""))
    most = most_cpus(with_gpus(facts.nodes, NodeRequest(0, gpus)), facts)
    for candidate in range(min(cpus, most), 0, -1):
        shape = shape_resources(
            nodes,
            gpus,
            candidate,
            max_gpus_per_node=profile.max_gpus_per_node,
            max_cpus_per_task=profile.max_cpus_per_task,
        )
        if shape.cpus_per_task * shape.ntasks_per_node <= most:
            out.update(num_gpus=gpus, cpus_per_task=candidate)
            break
    return out
